"""Reading failure rules (failure_rules.py) from YAML files.

``check(path)`` names every bad rule with its file and line (``glidein-tracing rules
--check``, ``forward --check-config``). ``RuleBook`` is what the forwarder holds: the rules of
a file or a directory, re-read when a file changes. Both read through the same two functions
(``parse_file``, ``in_force``), so a file the check accepts is one the forwarder uses. A file
that turns bad never stops anything: its last good rules stay in force (none, if it never was
good) and the problem is logged once per version of the file. A rules file is bounded: at most
``MAX_FILE_BYTES``, nested at most ``MAX_DEPTH`` deep, no YAML aliases, and a book holds at most
``MAX_RULES`` rules. VO classifier packages are run by classifiers.py.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from ..core.inputs import read_input
from .rules import (CODE_FIELDS, KINDS, MAX_VALUE, RULE_KEYS, TEXT_FIELDS, Decision, Rule, RuleSet,
                    decision_problems, pattern_problem)

log = logging.getLogger(__name__)

RELOAD_S = 10.0        # the forwarder looks for changed rule files at most this often
FILE_KEYS = ("clients", "rules")
MAX_FILE_BYTES = 1024 * 1024    # a rules file: a VO's few hundred rules are tens of KiB
MAX_DEPTH = 12                  # nesting: file > rules > rule > match > list is 5
MAX_RULES = 2000                # rules in force in a book (all its files)


def rule_files(path) -> list[Path]:
    """The YAML files of a rules location: the file itself, or a directory's *.yaml/*.yml
    in name order."""
    path = Path(path)
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
    return [path]


def parse_file(path) -> tuple[list[Rule], list[str]]:
    """(rules, problems) of one file; each problem is ``FILE:LINE: ...``. A file too large, too
    deep, with aliases or with more than ``MAX_RULES`` rules gives no rules."""
    import yaml

    path = Path(path)
    try:
        data = read_input(path, MAX_FILE_BYTES)       # a FIFO or a device refused: core/inputs.py
    except OSError as exc:
        return [], [f"{path}: cannot read: {exc.strerror or exc}"]
    if len(data) > MAX_FILE_BYTES:
        return [], [f"{path}:1: larger than {MAX_FILE_BYTES // 1024} KiB: not a rules file (split it)"]
    text = data.decode("utf-8", "replace")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)     # libyaml when the wheel has it: ~10x
    try:
        problem = _shape_problem(yaml.parse(text, Loader=loader))
        root = None if problem else yaml.compose(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return [], [f"{path}:{mark.line + 1 if mark else 1}: not valid YAML: {getattr(exc, 'problem', exc)}"]
    if problem:
        return [], [f"{path}:{problem}"]
    if root is None:
        return [], []
    if not isinstance(root, yaml.MappingNode):
        return [], [f"{path}:{root.start_mark.line + 1}: a rules file is a mapping with `rules:`"]
    problems, clients, rule_nodes = [], (), None
    for key_node, value_node in root.value:
        where = f"{path}:{key_node.start_mark.line + 1}"
        if key_node.value == "clients":
            clients = _strings(value_node)
            if clients is None:
                problems.append(f"{where}: clients: a list of Frontend client names (glidein.client)")
                clients = ()
        elif key_node.value == "rules":
            rule_nodes = value_node
        else:
            problems.append(f"{where}: unknown key {key_node.value!r} (known: {', '.join(FILE_KEYS)})")
    if not isinstance(rule_nodes, yaml.SequenceNode):
        problems.append(f"{path}:{root.start_mark.line + 1}: no `rules:` list")
        return [], problems
    if len(rule_nodes.value) > MAX_RULES:
        return [], problems + [f"{path}:{rule_nodes.start_mark.line + 1}: {len(rule_nodes.value)} rules, "
                               f"more than {MAX_RULES}: none used"]
    rules, names = [], set()
    for node in rule_nodes.value:
        rule, rule_problems = _rule(path, node, tuple(clients))
        if rule is not None and rule.name in names:
            rule_problems.append(f"{rule.source}: rule {rule.name}: name used twice")
        problems.extend(rule_problems)
        if rule is not None and not rule_problems:
            names.add(rule.name)
            rules.append(rule)
    return rules, problems


def _shape_problem(events) -> str | None:
    """``LINE: why`` when the YAML nests deeper than ``MAX_DEPTH`` or uses an alias, read from
    its events before any node is built (the node builder recurses: a deep file would end it
    with RecursionError)."""
    import yaml
    depth = 0
    for event in events:
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                return f"{event.start_mark.line + 1}: nested more than {MAX_DEPTH} deep: not a rules file"
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        elif isinstance(event, yaml.AliasEvent):
            return f"{event.start_mark.line + 1}: a YAML alias (*{event.anchor}): write each rule out"
    return None


def _strings(node) -> tuple | None:
    import yaml
    if isinstance(node, yaml.ScalarNode) and node.value:
        return (node.value,)
    if isinstance(node, yaml.SequenceNode) and all(isinstance(n, yaml.ScalarNode) for n in node.value):
        return tuple(n.value for n in node.value)
    return None


def _rule(path: Path, node, clients: tuple) -> tuple[Rule | None, list[str]]:
    """One rule from its YAML node: (rule, []) or (None or a partial rule, problems)."""
    import yaml
    line = node.start_mark.line + 1
    if not isinstance(node, yaml.MappingNode):
        return None, [f"{path}:{line}: a rule is a mapping (name, match, domain, label, ...)"]
    fields = {k.value: v for k, v in node.value}
    name = fields["name"].value if isinstance(fields.get("name"), yaml.ScalarNode) else ""
    who = f"{path}:{line}: rule {name or '(no name)'}"
    problems = [f"{who}: unknown key {key!r} (known: {', '.join(RULE_KEYS)})"
                for key in fields if key not in RULE_KEYS]
    values = {}
    for key in ("name", "domain", "service", "label", "advice"):
        value = fields.get(key)
        if value is None:
            continue
        if not isinstance(value, yaml.ScalarNode) or len(value.value) > MAX_VALUE:
            problems.append(f"{who}: {key}: a short string (at most {MAX_VALUE} characters)")
        else:
            values[key] = value.value
    problems += [f"{who}: {problem}" for problem in decision_problems(values)]
    kinds = _strings(fields["applies_to"]) if "applies_to" in fields else KINDS
    if kinds is None or not set(kinds) <= set(KINDS):
        problems.append(f"{who}: applies_to: glidein, job or both")
        kinds = KINDS
    patterns, codes, match_problems = _conditions(fields.get("match"))
    problems += [f"{who}: {problem}" for problem in match_problems]
    rule = Rule(name=name, source=f"{path}:{line}", patterns=patterns, codes=codes, kinds=tuple(kinds),
                clients=clients, decision=Decision(name, values.get("domain", ""), values.get("service", ""),
                                                   values.get("label", ""), values.get("advice", "")))
    return rule, problems


def _conditions(node) -> tuple[tuple, tuple, list[str]]:
    """(patterns, codes, problems) of a rule's ``match:`` mapping."""
    import yaml
    if not isinstance(node, yaml.MappingNode) or not node.value:
        return (), (), [f"match: a mapping of at least one of {', '.join(TEXT_FIELDS + CODE_FIELDS)}"]
    patterns, codes, problems = [], [], []
    for key_node, value_node in node.value:
        field = key_node.value
        if field in TEXT_FIELDS:
            if not isinstance(value_node, yaml.ScalarNode) or value_node.value == "":
                problems.append(f"match.{field} (line {value_node.start_mark.line + 1}): a pattern (a string)")
                continue
            problem = pattern_problem(value_node.value)
            if problem:
                problems.append(f"match.{field} (line {value_node.start_mark.line + 1}): {problem}")
            else:
                patterns.append((field, value_node.value))
        elif field in CODE_FIELDS:
            values = _strings(value_node)
            try:
                codes.append((field, frozenset(int(v) for v in values)))
            except (TypeError, ValueError):
                problems.append(f"match.{field} (line {value_node.start_mark.line + 1}): a list of integers")
        else:
            problems.append(f"match: unknown condition {field!r} (known: {', '.join(TEXT_FIELDS + CODE_FIELDS)})")
    return tuple(patterns), tuple(codes), problems


def in_force(files_rules) -> tuple[list[Rule], list[str]]:
    """The rules in force of a book, from each file's rules in file order, and the problems:
    a name met again keeps its first rule; rules beyond ``MAX_RULES`` are left out."""
    seen, out, problems = {}, [], []
    for rules in files_rules:
        for rule in rules:
            if rule.name in seen:
                problems.append(f"{rule.source}: rule {rule.name}: name already used at {seen[rule.name]}")
            elif len(out) >= MAX_RULES:
                problems.append(f"{rule.source}: rule {rule.name}: more than {MAX_RULES} rules in force: "
                                "this one and the later ones are left out")
                return out, problems
            else:
                seen[rule.name] = rule.source
                out.append(rule)
    return out, problems


def check(path) -> tuple[int, list[str]]:
    """(rules in force, problems) of a rules file or directory, read as the forwarder reads it."""
    files = rule_files(path)
    if not files and Path(path).is_dir():
        return 0, [f"{path}: a directory with no rules file in it (*.yaml or *.yml)"]
    if not files or not files[0].exists():
        return 0, [f"{path}: no such rules file or directory"]
    parsed = [parse_file(file) for file in files]
    rules, problems = in_force(rules for rules, _ in parsed)
    return len(rules), [p for _, file_problems in parsed for p in file_problems] + problems


class RuleBook:
    """The rules in force from a file or directory (and the installed classifiers): re-read
    when a file changes, at most every ``reload_s``; a bad file keeps its last good rules."""

    def __init__(self, path, *, classifiers=True, reload_s: float = RELOAD_S):
        from .classifiers import Classifiers
        self.path = Path(path)
        self.reload_s = reload_s
        self.classifiers = Classifiers() if classifiers else None
        self._files: dict = {}        # path -> (signature, rules in force)
        self._said: set = set()       # (path, signature) whose problems were logged
        self._checked = None
        self._rules = RuleSet((), self.classifiers)

    def current(self) -> RuleSet:
        now = time.monotonic()
        if self._checked is None or now - self._checked >= self.reload_s:
            self._checked = now
            self._reload()
        return self._rules

    def _reload(self):
        if not self.path.exists():
            if ("missing", None) not in self._said:
                self._said.add(("missing", None))
                log.warning("failure rules %s: no such file or directory; keeping the last good rules", self.path)
            return
        files = rule_files(self.path)
        changed = set(self._files) - set(files)
        for file in files:
            try:
                stat = file.stat()
                signature = (stat.st_mtime_ns, stat.st_size)
            except OSError:
                continue
            if file in self._files and self._files[file][0] == signature:
                continue
            rules, problems = parse_file(file)
            changed.add(file)
            if problems:
                kept = self._files.get(file, (None, []))[1]
                if (file, signature) not in self._said:
                    self._said.add((file, signature))
                    log.warning("failure rules %s: %d problem(s), first: %s; keeping its last good rules (%d)",
                                file, len(problems), problems[0], len(kept))
                self._files[file] = (signature, kept)
            else:
                self._files[file] = (signature, rules)
        for gone in set(self._files) - set(files):
            del self._files[gone]
        if changed:
            self._rules = RuleSet(self._unique(files), self.classifiers)

    def _unique(self, files) -> list[Rule]:
        """Every file's rules in force, in order (``in_force``); each problem logged once."""
        rules, problems = in_force(self._files.get(file, (None, []))[1] for file in files)
        for problem in problems:
            if ("book", problem) not in self._said:
                self._said.add(("book", problem))
                log.warning("failure rules %s; ignored", problem)
        return rules
