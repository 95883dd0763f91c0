"""Reading failure rules (failure_rules.py) from YAML files and VO classifier packages.

``check(path)`` names every bad rule with its file and line (``glidein-tracing rules
--check``). ``RuleBook`` is what the forwarder holds: the rules of a file or a directory,
re-read when a file changes. A file that turns bad never stops anything: its last good rules
stay in force (none, if it never was good) and the problem is logged once per version of the
file. Classifiers come from the entry-point group ``glidein_tracing.failure_classifiers``:
each entry point names a callable taking ``Facts`` and returning None or a mapping with
``domain``, ``service``, ``label``, ``advice`` and optionally ``rule``. A classifier that fails
to load or raises is logged once and skipped, and its answers are checked like a rule's.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from .rules import (CODE_FIELDS, DOMAINS, ENTRY_POINT_GROUP, KINDS, MAX_VALUE, RULE_KEYS,
                            SERVICE, TEXT_FIELDS, Decision, Rule, RuleSet, pattern_problem)

log = logging.getLogger(__name__)

RELOAD_S = 10.0        # the forwarder looks for changed rule files at most this often
FILE_KEYS = ("clients", "rules")


def rule_files(path) -> list[Path]:
    """The YAML files of a rules location: the file itself, or a directory's *.yaml/*.yml
    in name order."""
    path = Path(path)
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
    return [path]


def parse_file(path) -> tuple[list[Rule], list[str]]:
    """(rules, problems) of one file; each problem is ``FILE:LINE: ...``."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return [], [f"{path}: cannot read: {exc.strerror or exc}"]
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return [], [f"{path}:{mark.line + 1 if mark else 1}: not valid YAML: {getattr(exc, 'problem', exc)}"]
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
    problems += [f"{who}: {problem}" for problem in _decision_problems(values)]
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


def _decision_problems(values: dict) -> list[str]:
    """What is wrong with a rule's (or a classifier's) answer: name, domain, service, label."""
    problems = []
    if not values.get("name"):
        problems.append("name: missing")
    if not values.get("label"):
        problems.append("label: missing")
    domain = values.get("domain")
    if domain not in DOMAINS:
        problems.append(f"domain: one of {', '.join(DOMAINS)}, not {domain!r}")
    elif domain == SERVICE and not values.get("service"):
        problems.append("service: missing (the domain service names its service)")
    elif domain != SERVICE and values.get("service"):
        problems.append("service: only with domain service")
    return problems


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


def check(path) -> tuple[int, list[str]]:
    """(good rules, problems) of a rules file or directory, names unique across its files."""
    count, problems, names = 0, [], {}
    files = rule_files(path)
    if not files or not files[0].exists():
        return 0, [f"{path}: no such rules file or directory"]
    for file in files:
        rules, file_problems = parse_file(file)
        problems += file_problems
        for rule in rules:
            if rule.name in names:
                problems.append(f"{rule.source}: rule {rule.name}: name already used at {names[rule.name]}")
            names.setdefault(rule.name, rule.source)
        count += len(rules)
    return count, problems


class PluginClassifier:
    """One entry point's classifier, made safe: its errors are logged once and skipped, its
    answers checked (a bad answer counts as none) and bounded."""

    def __init__(self, name: str, function):
        self.name, self.function, self.said = name, function, set()

    def __call__(self, facts) -> Decision | None:
        try:
            answer = self.function(facts)
        except Exception as exc:  # a VO's code: never the forwarder's end
            self._once("raised", f"failure classifier {self.name} raised {type(exc).__name__}: {exc}")
            return None
        if answer is None:
            return None
        values = {k: str(answer.get(k) or "")[:MAX_VALUE] for k in ("domain", "service", "label", "advice", "rule")
                  } if hasattr(answer, "get") else {}
        values["name"] = f"{self.name}:{values.get('rule') or 'classifier'}"[:MAX_VALUE]
        problems = _decision_problems(values)
        if problems:
            self._once("answer", f"failure classifier {self.name} answered badly ({'; '.join(problems)}): ignored")
            return None
        return Decision(values["name"], values["domain"], values["service"], values["label"], values["advice"])

    def _once(self, kind: str, message: str):
        """Log the first problem of each kind (a classifier may fail on every failure)."""
        if kind not in self.said:
            log.warning(message)
            self.said.add(kind)


def load_classifiers() -> list[PluginClassifier]:
    """Every classifier installed under the entry-point group (those that load)."""
    from importlib.metadata import entry_points
    out = []
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        try:
            function = point.load()
        except Exception as exc:  # a broken VO package must not stop the forwarder
            log.warning("failure classifier %s (%s) does not load: %s: %s", point.name, point.value,
                        type(exc).__name__, exc)
            continue
        if callable(function):
            out.append(PluginClassifier(point.name, function))
        else:
            log.warning("failure classifier %s (%s) is not callable: skipped", point.name, point.value)
    return out


class RuleBook:
    """The rules in force from a file or directory (and the installed classifiers): re-read
    when a file changes, at most every ``reload_s``; a bad file keeps its last good rules."""

    def __init__(self, path, *, classifiers=True, reload_s: float = RELOAD_S):
        self.path = Path(path)
        self.reload_s = reload_s
        self.classifiers = load_classifiers() if classifiers else []
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
        """Every file's rules in force, in order; a name met twice keeps its first rule (the
        other is logged once)."""
        seen, out = {}, []
        for file in files:
            for rule in self._files.get(file, (None, []))[1]:
                if rule.name not in seen:
                    seen[rule.name] = rule.source
                    out.append(rule)
                elif ("twice", rule.source) not in self._said:
                    self._said.add(("twice", rule.source))
                    log.warning("failure rules %s: rule %s: name already used at %s; this one is ignored",
                                rule.source, rule.name, seen[rule.name])
        return out
