"""Live export from the worker node: what of a glidein may go out while it still runs.

The node exports a glidein in parts (docs/hooks.md, Live export): setup with its validation
spans once setup has ended, each job once it has ended, the rest at cleanup. A part is
exported only when it will not change any more, so the span that reaches the collector is
the span the returned journal would give. What went out is recorded in the journal
(core/export_record.py).
"""

from __future__ import annotations

from ..core import conventions as c
from ..core import ids
from ..core.failure import SHUTDOWN_SIGNALS

# a job that ended this way may still change: its domain follows its glidein's (failure.py)
_UNSETTLED_EXITS = frozenset({"evict"})


def ended_stages(spans, events) -> list:
    """Of a running glidein's spans (converted from its journal ``events`` so far), those that
    will not change when the glidein ends: setup and its validation spans once the journal
    ended setup, and every job the journal ended after that (by its exit hook), with its span
    in the user's trace. Only ``end`` lines count: the converter closes what is still open
    (``glidein.closed_by``), and can date setup from the records alone. Left for later: the
    root, the condor phase, idle gaps, teardown, a job cut short, evicted or killed by a
    shutdown signal (its failure domain follows its glidein's), and ``job.wait`` (it needs
    the Factory's queue time)."""
    ended = {e.key for e in events if e.op == "end"}
    setup = next((s for s in spans if s.attributes.get(c.STAGE) == c.STAGE_SETUP), None)
    if setup is None or "setup" not in ended:
        return []
    glidein_trace = setup.context.trace_id
    ended_ids = {ids.span_id_int(ids.trace_hex(glidein_trace), key) for key in ended}
    out, jobs = [], set()
    for span in spans:
        stage = span.attributes.get(c.STAGE)
        if span.context.trace_id != glidein_trace:
            continue
        if span is setup or (stage == c.STAGE_VALIDATION and span.parent and span.parent.span_id == setup.context.span_id):
            out.append(span)
        elif stage == c.STAGE_JOB and span.context.span_id in ended_ids and _job_settled(span):
            out.append(span)
            jobs.add(span.context.span_id)
    for span in spans:   # a job's span in its user's trace links back to the job span
        if span.context.trace_id != glidein_trace and span.name == c.SPAN_JOB_ON_GLIDEIN \
                and any(link.context.span_id in jobs for link in span.links):
            out.append(span)
        elif span.attributes.get(c.STAGE) == c.STAGE_JOB_PHASE \
                and int(str(span.attributes.get(c.GLIDEIN_JOB_SPAN_ID, "0")), 16) in jobs:
            out.append(span)   # the job's phases go with it
    return out


def _job_settled(span) -> bool:
    """A job the exit hook ended whose failure domain does not follow its glidein's."""
    attrs = span.attributes
    if attrs.get(c.JOB_EXIT_BY) in _UNSETTLED_EXITS:
        return False
    return not (attrs.get(c.ERROR_TYPE) == "job.signal" and attrs.get(c.JOB_EXIT_SIGNAL) in SHUTDOWN_SIGNALS)
