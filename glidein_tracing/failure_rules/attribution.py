"""Failure rules and declared downtimes applied to one glidein's spans.

The converter gives every failed glidein and job its domain (failure.py). This is the
second, optional step the forwarder takes on the converted spans: the VO's rules
(rule_files.RuleBook) read what each failure said (its message, log tail, exit code, hold
reason, error type) and may decide it better, and a failure inside a declared downtime
(downtimes.py) of its site, its entry or its service says so. Each decided failure gets, beside
``*.failure.domain``: ``*.failure.rule`` (the rule that decided it), ``*.failure.label``,
``*.failure.service`` (domain ``service``), ``*.failure.advice`` (when the rule gives one), and
its ``*.failure.evidence`` becomes ``*.failure.rule=NAME``. ``*.failure.downtime`` names the
declared downtime it fell in, whatever decided its domain.
"""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from .rules import SERVICE, Facts, RuleSet
from ..core.log_tail import LOG_TAIL_EVENT

JOB_LOG_TAIL_EVENT = "job.log_tail"
TAIL_EVENTS = (LOG_TAIL_EVENT, JOB_LOG_TAIL_EVENT)


class FailureAttribution:
    """What the forwarder holds: the rules in force (a RuleBook, or a fixed RuleSet) and the
    declared downtimes; ``apply`` is its one call per glidein."""

    def __init__(self, rules=None, downtimes=None):
        self.rules = rules
        self.downtimes = downtimes

    def _ruleset(self) -> RuleSet | None:
        return self.rules.current() if hasattr(self.rules, "current") else self.rules

    def apply(self, spans: list) -> list:
        """The glidein's spans, those of its failures re-decided by the rules and marked when
        inside a declared downtime; spans without a failure are returned as they are."""
        root = next((s for s in spans if s.parent is None and (s.attributes or {}).get("glidein.stage") == "glidein"),
                    None)
        if root is None:
            return spans
        ruleset = self._ruleset()
        root_attrs = root.attributes or {}
        places = [str(root_attrs.get(k) or "") for k in ("glidein.site", "glidein.entry")]
        client = str(root_attrs.get("glidein.client") or "")
        out = []
        for span in spans:
            attrs = span.attributes or {}
            who = "glidein" if span is root else "job"
            if f"{who}.failure.domain" not in attrs:
                out.append(span)
                continue
            facts = (_glidein_facts(root, spans, client) if span is root else _job_facts(span, client))
            when = _glidein_failed_at(root, spans) if span is root else span.end_time / 1e9
            changes = self._decide(who, facts, ruleset, places, when)
            out.append(_with_attributes(span, changes) if changes else span)
        return out

    def _decide(self, who: str, facts: Facts, ruleset, places: list, when: float) -> dict:
        changes = {}
        decision = ruleset.classify(facts) if ruleset is not None else None
        if decision is not None:
            changes = {f"{who}.failure.domain": decision.domain, f"{who}.failure.rule": decision.rule,
                       f"{who}.failure.label": decision.label,
                       f"{who}.failure.evidence": f"{who}.failure.rule={decision.rule}"}
            if decision.domain == SERVICE:
                changes[f"{who}.failure.service"] = decision.service
            if decision.advice:
                changes[f"{who}.failure.advice"] = decision.advice
        if self.downtimes is not None and len(self.downtimes):
            names = places + ([decision.service] if decision is not None and decision.service else [])
            downtime = self.downtimes.find(names, when)
            if downtime is not None:
                changes[f"{who}.failure.downtime"] = downtime.describe()
        return changes


def _tails(spans) -> str:
    return "\n".join(str((e.attributes or {}).get("log.lines", "")) for s in spans for e in s.events
                     if e.name in TAIL_EVENTS)


def _description(span) -> str:
    return str(span.status.description or "") if span.status is not None else ""


def _failed(span) -> bool:
    return span.status is not None and span.status.status_code == StatusCode.ERROR


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _glidein_facts(root, spans, client: str) -> Facts:
    """A failed glidein's facts: its root's type and outcome, its failed stages' messages and
    log tails, its last Condor-G hold, its exit code as the Factory saw it."""
    attrs = root.attributes or {}
    own = [s for s in spans if (s.attributes or {}).get("glidein.stage") != "job"]
    failed = [s for s in own if s is not root and _failed(s)]
    messages = [m for m in [_description(root)] + [_description(s) for s in failed] if m]
    holds = [s for s in own if (s.attributes or {}).get("glidein.stage") == "factory.held"]
    hold = holds[-1].attributes if holds else {}
    return Facts(kind="glidein", domain=str(attrs.get("glidein.failure.domain", "")),
                 error_type=str(attrs.get("error.type", "")), message="\n".join(dict.fromkeys(messages)),
                 log_tail=_tails(own), hold_reason=str(hold.get("factory.hold_reason", "")),
                 exit_code=_int(attrs.get("factory.return_value")),
                 hold_reason_code=_int(hold.get("factory.hold_reason_code")), client=client)


def _job_facts(span, client: str) -> Facts:
    attrs = span.attributes or {}
    return Facts(kind="job", domain=str(attrs.get("job.failure.domain", "")),
                 error_type=str(attrs.get("error.type", "")), message=_description(span),
                 log_tail=_tails([span]), hold_reason=str(attrs.get("job.hold_reason", "")),
                 exit_code=_int(attrs.get("job.exit_code")),
                 hold_reason_code=_int(attrs.get("job.hold_reason_code")), client=client)


def _glidein_failed_at(root, spans) -> float:
    """When a glidein failed: the end of its first failed stage, else of the glidein."""
    ends = [s.end_time for s in spans if s is not root and (s.attributes or {}).get("glidein.stage") != "job"
            and _failed(s) and s.end_time]
    return (min(ends) if ends else root.end_time or root.start_time) / 1e9


def _with_attributes(span, changes: dict) -> ReadableSpan:
    """The same span with ``changes`` over its attributes."""
    attrs = dict(span.attributes or {})
    attrs.update(changes)
    return ReadableSpan(name=span.name, context=span.context, parent=span.parent, resource=span.resource,
                        attributes=attrs, events=span.events, links=span.links, kind=span.kind,
                        instrumentation_scope=span.instrumentation_scope, status=span.status,
                        start_time=span.start_time, end_time=span.end_time)
