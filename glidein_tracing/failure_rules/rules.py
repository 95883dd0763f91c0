"""Failure rules: a VO's or an operator's own answer to "service or code?", from what a
failure said.

failure.py decides a failure's domain from what every trace holds (failure types, hold
codes, outcomes). It cannot read a log: a job that exits 1 because a CVMFS file was missing
is ``user_code`` there. A rules file (YAML, one per VO or Frontend group, a directory of them)
says what such texts mean::

    clients: [vofrontend_service.cms]   # optional: only glideins of these Frontend clients
    rules:
      - name: cvmfs-repository-missing  # unique; what *.failure.rule says
        match:                          # every condition given must hold
          log_tail: 'Failed to mount repository'   # RE2 patterns, searched anywhere
          exit_code: [65, 66]                      # integers
        domain: service                 # failure.DOMAINS or "service"
        service: cvmfs                  # with domain service: which service
        label: CVMFS repository missing # short, for the report
        advice: retry; tell the site    # optional

Conditions: ``log_tail``, ``message`` (the failure's status description), ``hold_reason``,
``error_type``, ``domain`` (the domain failure.py gave) are RE2 patterns; ``exit_code`` and
``hold_reason_code`` are lists of integers. ``applies_to`` (``glidein``, ``job``; default both)
limits a rule to one kind of failure. The first rule that matches decides, in file order, files
in name order; then the classifiers VO packages register under the entry-point group
``glidein_tracing.failure_classifiers``.

Patterns run on RE2 (no backtracking: time linear in the text whatever the pattern), over at
most the last ``MAX_TEXT`` characters of each text: a hostile log or a catastrophic pattern
cannot stall the forwarder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..core import failure

SERVICE = failure.SERVICE
DOMAINS = tuple(failure.DOMAINS)
TEXT_FIELDS = ("log_tail", "message", "hold_reason", "error_type", "domain")
CODE_FIELDS = ("exit_code", "hold_reason_code")
KINDS = ("glidein", "job")
RULE_KEYS = ("name", "match", "applies_to", "domain", "service", "label", "advice")
MAX_TEXT = 65536          # characters of a text searched: its end, where errors are
MAX_PATTERN = 4096        # characters of one pattern
MAX_VALUE = 256           # characters of a label, service, advice, rule name on a span
MAX_CACHED_TEXT = 512     # texts this short have their matches remembered
MAX_CACHE = 20_000        # remembered texts per field, and whole decisions (bounded memory)
ENTRY_POINT_GROUP = "glidein_tracing.failure_classifiers"
_UNSEEN = object()


class Facts(NamedTuple):
    """What one failure said: the input of every rule and classifier."""
    kind: str                      # "glidein" or "job"
    domain: str                    # failure.py's domain
    error_type: str = ""
    message: str = ""
    log_tail: str = ""
    hold_reason: str = ""
    exit_code: int | None = None
    hold_reason_code: int | None = None
    client: str = ""               # glidein.client: the Frontend client (name.group)


class Decision(NamedTuple):
    rule: str
    domain: str
    service: str = ""
    label: str = ""
    advice: str = ""


@dataclass(frozen=True)
class Rule:
    name: str
    source: str                    # "FILE:LINE"
    patterns: tuple                # ((field, pattern), ...)
    codes: tuple                   # ((field, frozenset of ints), ...)
    kinds: tuple
    clients: tuple                 # the file's clients: () for every client
    decision: Decision

    @property
    def conditions(self) -> int:
        return len(self.patterns) + len(self.codes)


def decision_problems(values: dict) -> list[str]:
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


def re2_options():
    import re2
    options = re2.Options()
    options.max_mem = 64 << 20     # a set of hundreds of patterns keeps its DFA
    options.log_errors = False
    return options


def pattern_problem(pattern: str) -> str | None:
    """Why RE2 refuses ``pattern`` (lookarounds, backreferences, bad syntax), or None."""
    import re2
    if len(pattern) > MAX_PATTERN:
        return f"pattern longer than {MAX_PATTERN} characters"
    try:
        re2.compile(pattern, re2_options())
    except re2.error as exc:
        text = exc.args[0] if exc.args else exc
        text = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
        return f"not a pattern the non-backtracking engine (RE2) accepts: {text}"
    return None


class RuleSet:
    """Rules compiled for speed: per text field one RE2 set of every rule's pattern (one
    search per field finds every rule it matches), per code field a table."""

    def __init__(self, rules=(), classifiers=None):
        import re2
        self.rules = list(rules)
        self.classifiers = classifiers          # classifiers.Classifiers, or None
        self._sets, self._cache, self._decided = {}, {}, {}
        self._codes: dict = {field: {} for field in CODE_FIELDS}
        for field in TEXT_FIELDS:
            members = [(i, p) for i, rule in enumerate(self.rules) for f, p in rule.patterns if f == field]
            if not members:
                continue
            search = re2.Set.SearchSet(re2_options())
            for _, pattern in members:
                search.Add(pattern)
            search.Compile()
            self._sets[field] = (search, [i for i, _ in members])
            self._cache[field] = {}
        for i, rule in enumerate(self.rules):
            for field, values in rule.codes:
                for value in values:
                    self._codes[field].setdefault(value, []).append(i)
        self._needed = [rule.conditions for rule in self.rules]
        self._text_fields = [(f, Facts._fields.index(f), self._cache[f]) for f in self._sets]
        self._code_fields = [(Facts._fields.index(f), t) for f, t in self._codes.items() if t]

    def __len__(self):
        return len(self.rules)

    def _search(self, field: str, text: str) -> tuple:
        """Indices of the rules whose ``field`` pattern ``text`` matches (one RE2 set search
        over the text's end), remembered for short texts."""
        search, owners = self._sets[field]
        hits = search.Match(text[-MAX_TEXT:].encode("utf-8", "replace"))
        found = tuple(owners[h] for h in hits) if hits else ()
        cache = self._cache[field]
        if len(text) <= MAX_CACHED_TEXT and len(cache) < MAX_CACHE:
            cache[text] = found
        return found

    def classify(self, facts: Facts) -> Decision | None:
        """The first rule (then classifier) that decides this failure, or None. Failures
        whose texts are all short repeat (the same message, exit code, no tail): their rule
        decision is remembered whole."""
        short = len(facts.log_tail) + len(facts.message) + len(facts.hold_reason) <= MAX_CACHED_TEXT
        decision = self._decided.get(facts, _UNSEEN) if short else _UNSEEN
        if decision is _UNSEEN:
            decision = self._rule_decision(facts)
            if short and len(self._decided) < MAX_CACHE:
                self._decided[facts] = decision
        if decision is not None or not self.classifiers:
            return decision
        return self.classifiers.classify(facts)

    def _rule_decision(self, facts: Facts) -> Decision | None:
        """The first rule that matches (fields by position, cached texts first)."""
        counts: dict = {}
        for field, index, cache in self._text_fields:
            text = facts[index] or ""
            found = cache.get(text)
            if found is None:
                found = self._search(field, text)
            for i in found:
                counts[i] = counts.get(i, 0) + 1
        for index, table in self._code_fields:
            for i in table.get(facts[index], ()):
                counts[i] = counts.get(i, 0) + 1
        if counts:
            needed = self._needed
            for i in sorted(i for i, n in counts.items() if n == needed[i]):
                rule = self.rules[i]
                if facts.kind in rule.kinds and (not rule.clients or facts.client in rule.clients):
                    return rule.decision
        return None
