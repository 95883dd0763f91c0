"""Live export from the worker node: what of a glidein may go out while it still runs, and
the journal's record of what went out.

The node exports a glidein in parts (docs/hooks.md, Live export): setup with its validation
spans once setup has ended, each job once it has ended, the rest at cleanup. A part is
exported only when it will not change any more, so the span that reaches the collector is
the span the returned journal would give. Every export is recorded in the journal with the
op ``export`` and the span ids it covers, in the state it reached:

- ``sending``: written before the request; alone (the export failed, timed out or was
  killed), the spans may or may not have arrived;
- ``sent``: the collector accepted them.

The node never sends a span of either state again; the Factory forwarder leaves out ``sent``
ones and asks its backend about ``sending`` ones before sending them (exactly once, as for
its own batches; at least once when it has no backend to ask).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core import conventions as c
from ..core import ids, journal
from ..core.failure import SHUTDOWN_SIGNALS

EXPORT_OP = "export"
SENDING, SENT = "sending", "sent"
STATES = (SENDING, SENT)
IDS_PER_LINE = 60          # 60 ids of 17 bytes fit in one journal value (1024 bytes)
LEGACY_MARK = "@exported"  # a note of cleanup hooks before per-stage export: "all" or "all-but-root"
# stages only the Factory can make whole: its own, the sleep after a failure, and the user's
# job.wait (it needs the glidein's queue time at the site)
FACTORY_ONLY = (c.FACTORY_STAGE_PREFIX, c.STAGE_POST_FAILURE_SLEEP, c.STAGE_JOB_WAIT)
# a job that ended this way may still change: its domain follows its glidein's (failure.py)
_UNSETTLED_EXITS = frozenset({"evict"})


@dataclass
class NodeExports:
    """What the node's live exports did, read from its journal."""

    states: dict = field(default_factory=dict)   # span id (16 hex) -> its last state
    legacy: str | None = None                    # "all" / "all-but-root" from older hooks

    def __bool__(self) -> bool:
        return bool(self.states or self.legacy)

    def state(self, span) -> str | None:
        """The state of one SDK span: its recorded state, or ``sent`` when an older hook said
        it sent everything. A stage the node cannot send has none, whatever a (forged)
        journal says: the node cannot hide the Factory's view."""
        if not node_may_send(span):
            return None
        recorded = self.states.get(format(span.context.span_id, "016x"))
        if recorded is not None or not self.legacy:
            return recorded
        return SENT if self.legacy == "all" or span.parent is not None else None


def node_may_send(span) -> bool:
    """Whether the node sends this span at all (``FACTORY_ONLY`` stages come from the Factory)."""
    return not str(span.attributes.get(c.STAGE, "")).startswith(FACTORY_ONLY)


def node_exports(events, spans) -> NodeExports:
    """The record of live exports in a glidein's journal events, for its ``spans`` only: ids
    of no span of the glidein are not kept (a hostile journal may name millions)."""
    known = {format(s.context.span_id, "016x") for s in spans}
    out = NodeExports()
    for event in events:
        if event.op == EXPORT_OP:
            state = event.fields.get("@state", "")
            if state in STATES:
                for sid in event.fields.get("@spans", "").lower().split():
                    if sid in known and out.states.get(sid) != SENT:   # sent stays sent
                        out.states[sid] = state
        elif event.op == "note" and LEGACY_MARK in event.fields:
            mark = event.fields[LEGACY_MARK]
            if mark in ("all", "all-but-root") and out.legacy != "all":
                out.legacy = mark
    return out


def record(path, state: str, spans, now: float) -> None:
    """Append the ``export`` lines for ``spans`` in ``state`` to the journal at ``path``
    (OSError when it cannot be written: then nothing may be sent)."""
    span_ids = [format(s.context.span_id, "016x") for s in spans]
    for at in range(0, len(span_ids), IDS_PER_LINE):
        journal.append(path, journal.format_line(
            now, EXPORT_OP, "-", {"@state": state, "@spans": " ".join(span_ids[at:at + IDS_PER_LINE])}))


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
    ended_ids = {ids.span_id_int(format(glidein_trace, "032x"), key) for key in ended}
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
