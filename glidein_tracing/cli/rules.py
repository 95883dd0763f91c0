"""Check failure rules: every bad rule named with its file and line.

`glidein-tracing rules --check FILE_OR_DIR` reads a rules file (or every *.yaml of a
directory, as the forwarder's `failure_rules:` setting does) and exits 0 when every rule is
good, 1 naming each problem, 2 when PATH is neither a file nor a directory (missing, a FIFO, a
device). `--list` prints the rules in force, in the order they are tried,
and the failure classifiers installed as packages. docs/failures.md describes the format.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import UserError
from ..core.inputs import check_input
from ..core.terminal import echo


def add_arguments(parser):
    parser.add_argument("--check", metavar="PATH", required=True, help="a rules file or directory")
    parser.add_argument("--list", action="store_true", help="also print every good rule, in order")


def run(args):
    from ..failure_rules.classifiers import installed
    from ..failure_rules.files import RuleBook, check

    path = Path(args.check)
    if not path.exists():
        raise UserError(f"{path}: no such rules file or directory")
    if not path.is_dir():
        check_input(path)          # a FIFO would block the read forever, a device never end
    count, problems = check(args.check)
    for problem in problems:
        echo(problem)
    if args.list:
        for rule in RuleBook(args.check, classifiers=False).current().rules:   # as the forwarder holds them
            d = rule.decision
            echo(f"{rule.name}\t{d.domain}{'/' + d.service if d.service else ''}\t{d.label}\t{rule.source}")
        for name in installed():
            echo(f"{name}:*\t(classifier package)")
    echo(f"{args.check}: {count} good rule(s) in force, {len(problems)} problem(s)")
    return 1 if problems else 0
