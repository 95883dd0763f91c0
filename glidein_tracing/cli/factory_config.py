"""Print the glideinWMS.xml block that turns tracing on, or check a Factory config.

Without options: the <attrs> and <files> to paste into glideinWMS.xml (under <glidein> for
all entries, or under one <entry>), with the paths of the installed hook files. With
--validate FILE: every bad or missing knob and hook file, each with its fix (exit 1 when
something must be fixed; 2 when FILE cannot be read: missing, a directory, a FIFO). --set NAME=VALUE puts a value into the printed block.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..core.errors import UserError
from ..core.terminal import echo


def add_arguments(parser):
    parser.add_argument("--validate", metavar="GLIDEINWMS_XML", help="check a Factory configuration")
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE",
                        help="a knob value for the printed block (repeatable)")
    parser.add_argument("--hooks-dir", help="where the hook files are (default: installed package)")


def run(args):
    from ..core import knobs
    from ..factory.config import render_block, validate
    from ..factory.factory_xml import read_factory_xml

    if args.validate:
        findings = validate(args.validate)
        for finding in findings:
            echo(finding)
        errors = sum(1 for f in findings if f.level == "error")
        try:
            facts = read_factory_xml(args.validate)
        except ValueError:
            facts = None          # its finding says why
        if facts is not None:
            traced = facts.tracing_entries()
            echo(f"tracing on for {len(traced)} of {len(facts.entries)} entries" + (f": {', '.join(traced)}" if traced else ""))
        echo(f"{args.validate}: {errors} errors, {len(findings) - errors} warnings", file=sys.stderr)
        return 1 if errors else 0
    values = {}
    for item in args.set:
        name, sep, value = item.partition("=")
        if not sep:
            raise UserError(f"--set wants KNOB=VALUE, not {item!r}")
        knob = knobs.BY_NAME.get(name)
        if knob is None:
            raise UserError(f"unknown knob {name}; the knobs are listed in docs/knobs.md")
        ok, _, message = knob.check(value)
        if not ok:
            raise UserError(message)
        values[name] = value
    if args.hooks_dir and not Path(args.hooks_dir).is_dir():
        raise UserError(f"--hooks-dir {args.hooks_dir}: no such directory")
    sys.stdout.write(render_block(values, args.hooks_dir))
    return 0
