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

from opentelemetry.trace import StatusCode

from .rules import SERVICE, Facts, RuleSet
from ..core import conventions as c
from ..core.converter.readable_span import with_attributes

TAIL_EVENTS = (c.GLIDEIN_LOG_TAIL, c.JOB_LOG_TAIL)
# the attributes a decision sets, on the glidein's root and on a job span
FAILURE = {
    "glidein": {"domain": c.GLIDEIN_FAILURE_DOMAIN, "evidence": c.GLIDEIN_FAILURE_EVIDENCE,
                "rule": c.GLIDEIN_FAILURE_RULE, "label": c.GLIDEIN_FAILURE_LABEL,
                "advice": c.GLIDEIN_FAILURE_ADVICE, "service": c.GLIDEIN_FAILURE_SERVICE,
                "downtime": c.GLIDEIN_FAILURE_DOWNTIME},
    "job": {"domain": c.JOB_FAILURE_DOMAIN, "evidence": c.JOB_FAILURE_EVIDENCE,
            "rule": c.JOB_FAILURE_RULE, "label": c.JOB_FAILURE_LABEL,
            "advice": c.JOB_FAILURE_ADVICE, "service": c.JOB_FAILURE_SERVICE,
            "downtime": c.JOB_FAILURE_DOWNTIME},
}


class FailureAttribution:
    """What the forwarder holds: the rules in force (a RuleBook, or a fixed RuleSet) and the
    declared downtimes; ``apply`` is its one call per glidein."""

    def __init__(self, rules=None, downtimes=None):
        self.rules = rules
        self.downtimes = downtimes

    def new_pass(self):
        """A forwarder pass begins: classifiers disabled in the last one are tried again."""
        classifiers = getattr(self.rules, "classifiers", None)
        if classifiers:
            classifiers.new_pass()

    def end_pass(self):
        """A forwarder pass ends: the classifiers' worker and all it started are killed."""
        classifiers = getattr(self.rules, "classifiers", None)
        if classifiers:
            classifiers.close()

    def classifiers_disabled(self) -> int:
        """How many classifiers this pass disabled (failed, slow, or answered badly)."""
        classifiers = getattr(self.rules, "classifiers", None)
        return classifiers.disabled if classifiers else 0

    def _ruleset(self) -> RuleSet | None:
        return self.rules.current() if hasattr(self.rules, "current") else self.rules

    def apply(self, spans: list) -> list:
        """The glidein's spans, those of its failures re-decided by the rules and marked when
        inside a declared downtime; spans without a failure are returned as they are."""
        root = next((s for s in spans if s.parent is None and (s.attributes or {}).get(c.STAGE) == c.STAGE_GLIDEIN),
                    None)
        if root is None:
            return spans
        ruleset = self._ruleset()
        root_attrs = root.attributes or {}
        places = [str(root_attrs.get(k) or "") for k in (c.GLIDEIN_SITE, c.GLIDEIN_ENTRY)]
        client = str(root_attrs.get(c.GLIDEIN_CLIENT) or "")
        out, decided = [], {}   # decided: a job span's id -> its changes
        for span in spans:
            attrs = span.attributes or {}
            who = "glidein" if span is root else "job"
            if FAILURE[who]["domain"] not in attrs or attrs.get(c.GLIDEIN_USER_VIEW):
                out.append(span)
                continue
            facts = (_glidein_facts(root, spans, client) if span is root else _job_facts(span, client))
            when = _glidein_failed_at(root, spans) if span is root else span.end_time / 1e9
            changes = self._decide(who, facts, ruleset, places, when)
            if changes and who == "job":
                decided[span.context.span_id] = changes
            out.append(with_attributes(span, changes) if changes else span)
        return [_with_job_verdict(span, decided) for span in out] if decided else out

    def _decide(self, who: str, facts: Facts, ruleset, places: list, when: float) -> dict:
        names, changes = FAILURE[who], {}   # attribute names of this kind of failure
        decision = ruleset.classify(facts) if ruleset is not None else None
        if decision is not None:
            changes = {names["domain"]: decision.domain, names["rule"]: decision.rule,
                       names["label"]: decision.label, names["evidence"]: f"{names['rule']}={decision.rule}"}
            if decision.domain == SERVICE:
                changes[names["service"]] = decision.service
            if decision.advice:
                changes[names["advice"]] = decision.advice
        if self.downtimes is not None and len(self.downtimes):
            where = places + ([decision.service] if decision is not None and decision.service else [])
            downtime = self.downtimes.find(where, when)
            if downtime is not None:
                changes[names["downtime"]] = downtime.describe()
        return changes


def _with_job_verdict(span, decided: dict):
    """A job's span in its user's trace (``job on glidein``) with its job's decision too."""
    if span.name != c.SPAN_JOB_ON_GLIDEIN or not (span.attributes or {}).get(c.GLIDEIN_USER_VIEW):
        return span
    for link in span.links:
        changes = decided.get(link.context.span_id)
        if changes is not None and (link.attributes or {}).get(c.GLIDEIN_LINK_KIND) == c.LINK_GLIDEIN_JOB:
            return with_attributes(span, changes)
    return span


def _tails(spans) -> str:
    return "\n".join(str((e.attributes or {}).get(c.LOG_LINES, "")) for s in spans for e in s.events
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
    own = [s for s in spans if (s.attributes or {}).get(c.STAGE) != c.STAGE_JOB]
    failed = [s for s in own if s is not root and _failed(s)]
    messages = [m for m in [_description(root)] + [_description(s) for s in failed] if m]
    holds = [s for s in own if (s.attributes or {}).get(c.STAGE) == c.STAGE_FACTORY_HELD]
    hold = holds[-1].attributes if holds else {}
    return Facts(kind="glidein", domain=str(attrs.get(c.GLIDEIN_FAILURE_DOMAIN, "")),
                 error_type=str(attrs.get(c.ERROR_TYPE, "")), message="\n".join(dict.fromkeys(messages)),
                 log_tail=_tails(own), hold_reason=str(hold.get(c.FACTORY_HOLD_REASON, "")),
                 exit_code=_int(attrs.get(c.FACTORY_RETURN_VALUE)),
                 hold_reason_code=_int(hold.get(c.FACTORY_HOLD_REASON_CODE)), client=client)


def _job_facts(span, client: str) -> Facts:
    attrs = span.attributes or {}
    return Facts(kind="job", domain=str(attrs.get(c.JOB_FAILURE_DOMAIN, "")),
                 error_type=str(attrs.get(c.ERROR_TYPE, "")), message=_description(span),
                 log_tail=_tails([span]), hold_reason=str(attrs.get(c.JOB_HOLD_REASON, "")),
                 exit_code=_int(attrs.get(c.JOB_EXIT_CODE)),
                 hold_reason_code=_int(attrs.get(c.JOB_HOLD_REASON_CODE)), client=client)


def _glidein_failed_at(root, spans) -> float:
    """When a glidein failed: the end of its first failed stage, else of the glidein."""
    ends = [s.end_time for s in spans if s is not root and (s.attributes or {}).get(c.STAGE) != c.STAGE_JOB
            and _failed(s) and s.end_time]
    return (min(ends) if ends else root.end_time or root.start_time) / 1e9
