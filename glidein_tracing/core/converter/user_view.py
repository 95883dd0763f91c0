"""The user's view: spans in the user's own trace, for every job that came with its user's
context (jobsub_lite's TRACEPARENT), so a user reading their trace sees where their job went.

- ``job on glidein``: where and when the job ran, child of the user's context, linked back
  to the glidein's job span;
- ``job.wait``: from the job's submission (``QDate``) to its start on the glidein, with what
  the glidein did meanwhile.
"""

from __future__ import annotations

import bisect

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Link
from opentelemetry.trace.status import Status, StatusCode

from .. import conventions as c
from .. import ids
from .draft import Draft, SpanDraft
from .readable_span import ns, readable_span, remote_context

_WHERE = (c.GLIDEIN_SITE, c.GLIDEIN_ENTRY, c.GLIDEIN_NAME, c.GLIDEIN_FACTORY)
_UNSET = Status(StatusCode.UNSET)
# the job's verdict (failure domain and how it was decided), on its span in the user's trace too
JOB_VERDICT = (c.JOB_FAILURE_DOMAIN, c.JOB_FAILURE_EVIDENCE, c.JOB_FAILURE_RULE, c.JOB_FAILURE_LABEL,
               c.JOB_FAILURE_ADVICE, c.JOB_FAILURE_SERVICE, c.JOB_FAILURE_DOWNTIME)
# events of the job's own span that its span in the user's trace carries too
USER_VIEW_EVENTS = frozenset({c.JOB_PHASE_MARK, c.JOB_LOG_TAIL})


def job_on_glidein_id(glidein_trace: str, job_key: str, user_trace: str) -> int:
    """The span id of a job's ``job on glidein`` in its user's trace."""
    return ids.span_id_int(user_trace, f"glidein/{glidein_trace}/{job_key}")


def _wait_id(glidein_trace: str, job_key: str, user_trace: str) -> int:
    """The span id of a job's ``job.wait`` in its user's trace."""
    return ids.span_id_int(user_trace, f"glidein/{glidein_trace}/{job_key}/wait")


def job_view_span_ids(glidein_trace: str, job_key: str, user_trace: str) -> set:
    """The span ids this module gives a job's own spans in its user's trace (the job's
    phases must not take one: phases.py)."""
    return {job_on_glidein_id(glidein_trace, job_key, user_trace), _wait_id(glidein_trace, job_key, user_trace)}


def user_trace_spans(draft: Draft, built: dict, resource: Resource) -> list[ReadableSpan]:
    """``job on glidein`` and ``job.wait`` for every job span in ``built`` (key -> the
    glidein's ``ReadableSpan``) whose journal span links to its user's context."""
    root = draft.root
    where = {k: root.attrs.get(k) or draft.resource_attrs.get(k) for k in _WHERE}
    where[c.HOST_NAME] = draft.resource_attrs.get(c.HOST_NAME)
    where = {k: v for k, v in where.items() if v not in (None, "")}
    out = []
    facts = None   # what every job.wait of this glidein needs, computed once
    for key, job in built.items():
        if not key.startswith("job/"):
            continue
        key_span = draft.spans[key]
        user = next((ids.parse_traceparent(v) for v in key_span.links if ids.parse_traceparent(v)), None)
        if user is None:
            continue
        user_trace, user_span, flags = user
        parent = remote_context(int(user_trace, 16), int(user_span, 16), flags)
        back = Link(job.context, {c.GLIDEIN_LINK_KIND: c.LINK_GLIDEIN_JOB,
                                  c.TRACEPARENT: ids.format_traceparent(
                                      draft.trace_id, ids.span_hex(job.context.span_id))})
        out.append(_job_on_glidein(draft, key_span, job, where, parent, back, resource))
        if facts is None:
            facts = _wait_facts(draft)
        wait = _job_wait(draft, key_span, job, where, facts, parent, back, resource)
        if wait is not None:
            out.append(wait)
    return out


def _job_on_glidein(draft: Draft, key_span: SpanDraft, job: ReadableSpan, where: dict, parent,
                    back: Link, resource: Resource) -> ReadableSpan:
    """Where and when the job ran, in its user's trace."""
    attrs = dict(where)
    attrs.update({c.STAGE: c.STAGE_JOB, c.GLIDEIN_USER_VIEW: True, c.GLIDEIN_TRACE_ID: draft.trace_id})
    for name in (c.JOB_GLOBAL_ID, c.JOB_OWNER, c.JOB_EXIT_CODE, c.JOB_EXIT_SIGNAL, c.JOB_SLOT) + JOB_VERDICT:
        if name in job.attributes:
            attrs[name] = job.attributes[name]
    user_trace = ids.trace_hex(parent.trace_id)
    return readable_span(
        name=c.SPAN_JOB_ON_GLIDEIN, resource=resource, trace_id=parent.trace_id,
        span_id=job_on_glidein_id(draft.trace_id, key_span.key, user_trace),
        parent=parent, status=job.status, start_ns=job.start_time, end_ns=job.end_time,
        attributes=draft.scrub(attrs), links=[back],
        events=[e for e in job.events if e.name in USER_VIEW_EVENTS])


def _wait_facts(draft: Draft) -> dict:
    """What every ``job.wait`` of this glidein reads, from one pass over its spans: its
    first job's start, its jobs' ends (sorted), its queue wait and validation time, and
    when its condor phase began."""
    job_starts, job_ends, queue_s = [], [], []
    for key, span in draft.spans.items():
        if key.startswith("job/"):
            if span.start is not None:
                job_starts.append(span.start)
            if span.end is not None:
                job_ends.append(span.end)
        elif span.stage == c.STAGE_FACTORY_QUEUE and span.end is not None:
            queue_s.append(span.end - span.start)
    glidein = {}
    if queue_s:
        glidein[c.GLIDEIN_QUEUE_WAIT_S] = round(sum(queue_s), 3)
    setup = draft.spans.get("setup")
    if setup is not None and setup.end is not None:
        glidein[c.GLIDEIN_VALIDATION_S] = round(setup.end - setup.start, 3)
    condor = draft.spans.get("condor")
    return {"first_job_start": min(job_starts, default=None), "job_ends": sorted(job_ends),
            "condor_start": condor.start if condor is not None else None, "attrs": glidein}


def _job_wait(draft: Draft, key_span: SpanDraft, job: ReadableSpan, where: dict, facts: dict, parent,
              back: Link, resource: Resource) -> ReadableSpan | None:
    """The user's view of why the job waited: ``job.wait`` from its submission (``QDate``)
    to its start on this glidein, with what the glidein did meanwhile (``facts``:
    ``_wait_facts``), or None without a QDate (or with one after the start: clocks disagree)."""
    qdate = key_span.attrs.get(c.JOB_QDATE)
    if not isinstance(qdate, int) or qdate <= 0 or ns(qdate) > job.start_time:
        return None
    root = draft.root
    first_job = key_span.start <= facts["first_job_start"]
    # a glidein submitted after the job was, and this is its first job: it came for the job
    new_glidein = first_job and root.start is not None and root.start >= qdate
    attrs = dict(where)
    attrs.update({c.STAGE: c.STAGE_JOB_WAIT, c.GLIDEIN_USER_VIEW: True, c.GLIDEIN_TRACE_ID: draft.trace_id,
                  c.JOB_WAIT_GLIDEIN: "new" if new_glidein else "idle",
                  c.JOB_WAIT_S: round(job.start_time / 1e9 - qdate, 3)})
    for name in (c.JOB_GLOBAL_ID, c.JOB_OWNER, c.JOB_NUM_JOB_STARTS):
        if name in key_span.attrs:
            attrs[name] = key_span.attrs[name]
    attrs.update(facts["attrs"])
    if not new_glidein:
        ends = facts["job_ends"]
        before = bisect.bisect_right(ends, key_span.start)   # jobs that ended before this one began
        idle_from = ends[before - 1] if before else facts["condor_start"]
        if idle_from is not None:
            attrs[c.JOB_WAIT_GLIDEIN_IDLE_S] = round(max(key_span.start - idle_from, 0.0), 3)
    user_trace = ids.trace_hex(parent.trace_id)
    return readable_span(
        name=c.STAGE_JOB_WAIT, resource=resource, trace_id=parent.trace_id,
        span_id=_wait_id(draft.trace_id, key_span.key, user_trace),
        parent=parent, status=_UNSET, start_ns=ns(qdate), end_ns=job.start_time,
        attributes=draft.scrub(attrs), links=[back])
