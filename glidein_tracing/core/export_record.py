"""The journal's record of the worker node's live exports: the ``export`` lines the node
writes (``record``) and the Factory forwarder reads (``node_exports``), one format for both
sides (docs/hooks.md, Live export).

Every export is recorded in the journal with the op ``export`` and the span ids it covers,
in the state it reached:

- ``sending``: written before the request; alone (the export failed, timed out or was
  killed), the spans may or may not have arrived;
- ``sent``: the collector accepted them.

The node never sends a span of either state again; the Factory forwarder leaves out ``sent``
ones and asks its backend about ``sending`` ones before sending them (exactly once, as for
its own batches; at least once when it has no backend to ask).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import conventions as c, ids
from . import journal

EXPORT_OP = "export"
SENDING, SENT = "sending", "sent"
STATES = (SENDING, SENT)
IDS_PER_LINE = 60          # 60 ids of 17 bytes fit in one journal value (1024 bytes)
# stages only the Factory can make whole: its own, the sleep after a failure, and the user's
# job.wait (it needs the glidein's queue time at the site)
FACTORY_ONLY = (c.FACTORY_STAGE_PREFIX, c.STAGE_POST_FAILURE_SLEEP, c.STAGE_JOB_WAIT)


@dataclass
class NodeExports:
    """What the node's live exports did, read from its journal."""

    states: dict = field(default_factory=dict)   # span id (16 hex) -> its last state

    def __bool__(self) -> bool:
        return bool(self.states)

    def state(self, span) -> str | None:
        """The recorded state of one SDK span. A stage the node cannot send has none, whatever
        a (forged) journal says: the node cannot hide the Factory's view."""
        if not node_may_send(span):
            return None
        return self.states.get(ids.span_hex(span.context.span_id))


def node_may_send(span) -> bool:
    """Whether the node sends this span at all (``FACTORY_ONLY`` stages come from the Factory)."""
    return not str(span.attributes.get(c.STAGE, "")).startswith(FACTORY_ONLY)


def node_exports(events, spans) -> NodeExports:
    """The record of live exports in a glidein's journal events, for its ``spans`` only: ids
    of no span of the glidein are not kept (a hostile journal may name millions)."""
    out = NodeExports()
    known = None     # made at the first record: most journals have none
    for event in events:
        if event.op == EXPORT_OP:
            if known is None:
                known = {ids.span_hex(s.context.span_id) for s in spans}
            state = event.fields.get("@state", "")
            if state in STATES:
                for sid in event.fields.get("@spans", "").lower().split():
                    if sid in known and out.states.get(sid) != SENT:   # sent stays sent
                        out.states[sid] = state
    return out


def record(path, state: str, spans, now: float) -> None:
    """Append the ``export`` lines for ``spans`` in ``state`` to the journal at ``path``
    (OSError when it cannot be written: then nothing may be sent)."""
    span_ids = [ids.span_hex(s.context.span_id) for s in spans]
    for at in range(0, len(span_ids), IDS_PER_LINE):
        journal.append(path, journal.format_line(
            now, EXPORT_OP, "-", {"@state": state, "@spans": " ".join(span_ids[at:at + IDS_PER_LINE])}))
