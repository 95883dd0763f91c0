"""How the glidein ended: its outcome, the sleep after a failed validation, who is to blame.

- ``glidein.outcome`` on the root: ``untraced`` for a glidein of an entry that does not trace
  (``glidein.traced=false``: the Factory's view only, never in error), else what a hook or the
  Factory said, else ``validation_failed`` (setup failed), ``incomplete`` (the converter had
  to close it) or ``ok``;
- ``post_failure_sleep``: after a validation failure, the end of teardown to the glidein's
  exit as the Factory saw it;
- failure domains (failure.py) on the root and on every failed job, with a failed job's triage.
"""

from __future__ import annotations

from .. import conventions as c
from .. import failure
from ..journal import Event
from .draft import ROOT, Draft, SpanDraft

# what a failed job's span should tell (job span or resource); any missing is named in a note
_JOB_TRIAGE = (("exit code or signal", (c.JOB_EXIT_CODE, c.JOB_EXIT_SIGNAL, c.JOB_HOLD_REASON)),
               ("remote host", (c.JOB_REMOTE_HOST,)), ("CPU time", ("r.utime",)),
               ("wall time", (c.JOB_WALL_S,)), ("site", (c.GLIDEIN_SITE,)),
               ("processor model", (c.HOST_CPU_MODEL_NAME,)))


def outcome(draft: Draft) -> None:
    """The root's ``glidein.outcome`` (a validation failure also fails the root), and the
    journal lines skipped as malformed, counted where a reader looks first."""
    root = draft.root
    setup = draft.spans.get("setup")
    if failure.untraced(root.attrs):
        root.attrs[c.GLIDEIN_OUTCOME] = c.OUTCOME_UNTRACED
        root.status, root.error_type, root.error_detail = "UNSET", "", ""
        return
    if c.GLIDEIN_OUTCOME in root.attrs:
        result = root.attrs[c.GLIDEIN_OUTCOME]
    elif setup and setup.status == "ERROR":
        result = c.OUTCOME_VALIDATION_FAILED
    elif root.closed_by_converter:
        result = c.OUTCOME_INCOMPLETE
    else:
        result = c.OUTCOME_OK
    root.attrs[c.GLIDEIN_OUTCOME] = result
    if result == c.OUTCOME_VALIDATION_FAILED:
        root.status, root.error_type = "ERROR", setup.error_type
        root.error_detail = setup.error_detail
    if draft.report.skipped_total:
        root.attrs[c.GLIDEIN_TRACING_JOURNAL_SKIPPED_LINES] = draft.report.skipped_total
        root.attrs[c.GLIDEIN_TRACING_JOURNAL_SKIPPED] = draft.report.summary()


def post_failure_sleep(draft: Draft) -> None:
    """After a validation failure GlideinWMS keeps the slot ~20 min (GLIDEIN_ToDie, its
    protection against black-hole nodes) after cleanup: the end of teardown to the
    glidein's exit as the Factory saw it, as its own stage. Only the Factory's end event
    knows the exit; without it (node export alone) there is no such span."""
    root, teardown = draft.root, draft.spans.get("teardown")
    if root.attrs.get(c.GLIDEIN_OUTCOME) != c.OUTCOME_VALIDATION_FAILED or teardown is None \
            or teardown.end is None or root.end is None:
        return
    if c.FACTORY_REMOVED in root.attrs:
        source = c.FACTORY_REMOVED
    elif c.FACTORY_TERMINATED_NORMALLY in root.attrs or c.FACTORY_RETURN_VALUE in root.attrs:
        source = c.FACTORY_TERMINATED
    else:
        return
    if root.end - teardown.end < 1.0:
        return
    span = draft.span(c.STAGE_POST_FAILURE_SLEEP)
    span.name = span.stage = c.STAGE_POST_FAILURE_SLEEP
    span.start, span.end = teardown.end, root.end
    span.attrs[c.GLIDEIN_SLEEP_REASON] = c.OUTCOME_VALIDATION_FAILED
    span.attrs[c.GLIDEIN_SLEEP_END_SOURCE] = source


def failure_domains(draft: Draft) -> None:
    """Who is to blame (failure.py): the root of a glidein that did not end ok, and
    every failed job, get their domain and the evidence that decided it."""
    root = draft.root
    holds = [draft.spans[k] for k in draft.keys_starting(c.STAGE_FACTORY_HELD)]
    hold_code = holds[-1].attrs.get(c.FACTORY_HOLD_REASON_CODE) if holds else None
    condor = draft.spans.get("condor")
    error_type = root.error_type or (condor.error_type if condor and condor.status == "ERROR" else "")
    verdict = failure.glidein_domain(root.attrs, error_type, hold_code)
    if verdict is not None:
        root.attrs[c.GLIDEIN_FAILURE_DOMAIN] = verdict.domain
        root.attrs[c.GLIDEIN_FAILURE_EVIDENCE] = verdict.evidence
        root.attrs[c.GLIDEIN_FAILED] = True    # one tag for "failed glideins" (docs/jaeger.md)
    for key in draft.keys_starting("job/"):
        span = draft.spans[key]
        if span.closed_by_converter and span.status != "OK":
            # the job never ended: its glidein ended first
            span.status, span.error_type = "ERROR", span.error_type or "job.cut_short"
            span.error_detail = span.error_detail or "the glidein ended while the job ran"
        if span.status == "ERROR":
            job = failure.job_domain(span.attrs, span.error_type, verdict, span.closed_by_converter)
            span.attrs[c.JOB_FAILURE_DOMAIN] = job.domain
            span.attrs[c.JOB_FAILURE_EVIDENCE] = job.evidence
            _job_triage(draft, key, span)


def _job_triage(draft: Draft, key: str, span: SpanDraft) -> None:
    """A failed job's where and how (production notes): the slot it ran in is its remote
    host when the ad did not say; what is still unknown is named in a note."""
    host = draft.resource_attrs.get(c.HOST_NAME)
    if c.JOB_REMOTE_HOST not in span.attrs and span.attrs.get(c.JOB_SLOT) and host:
        span.attrs[c.JOB_REMOTE_HOST] = f"{span.attrs[c.JOB_SLOT]}@{host}"
    known = dict(span.attrs)
    known.update(span.end_fields)
    known.update(draft.resource_attrs)
    if draft.spans[ROOT].attrs.get(c.GLIDEIN_SITE):
        known[c.GLIDEIN_SITE] = draft.spans[ROOT].attrs[c.GLIDEIN_SITE]
    missing = [what for what, names in _JOB_TRIAGE
               if not any(known.get(name) not in (None, "") for name in names)]
    if missing:
        draft.notes.append(Event(time=span.end, op="note", key=key, fields={
            "@msg": "failed job: unknown " + ", ".join(missing)}))
