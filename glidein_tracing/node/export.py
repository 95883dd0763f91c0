"""The node's export of one glidein: which of its spans go out now, and the journal's record
around the request, so that no span is sent twice (docs/hooks.md, Live export).

While the glidein runs (``ended``) only its stages that ended go (live.ended_stages); at
cleanup everything else. With a journal, what earlier exports sent or may have sent is left
out, as is what only the Factory can make whole, and the export is recorded before the
request (``sending``) and after it (``sent``; core/export_record.py). An export that cannot be
recorded is not made: the Factory forwarder sends those spans instead.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from ..core import export_record
from ..core.sampling import keep_glidein
from . import live

SAMPLED_OUT = "sampled out"      # the sampling ratio drops this glidein: nothing sent
NOTHING_LEFT = "nothing left"    # every span already went (or is not the node's to send)
OUT_OF_TIME = "out of time"      # the deadline passed before the request
UNRECORDED = "unrecorded"        # the journal could not record the export: nothing sent
SENT = "sent"
FAILED = "failed"                # the request failed (the record stays ``sending``)


@dataclass(frozen=True)
class ExportPolicy:
    """What an export of a glidein sends, and where it records that it did."""

    ended: bool = False               # a running glidein: only the stages that ended
    skip_root: bool = False           # the root is the Factory forwarder's (export mode 'both')
    journal: str | None = None        # the journal that records exports; None: none recorded
    sampling_ratio: float | None = None   # overrides the glidein's own


@dataclass(frozen=True)
class Exported:
    outcome: str
    spans: int = 0        # spans handed to the exporter
    problem: str = ""     # why an export was not recorded (UNRECORDED)

    @property
    def failed(self) -> bool:
        """Spans that should have gone did not (they stay in the journal, for the Factory)."""
        return self.outcome in (OUT_OF_TIME, UNRECORDED, FAILED)


def spans_to_send(spans, events, policy: ExportPolicy) -> list:
    """Of a glidein's converted ``spans`` (from its journal ``events``), those this export sends."""
    root_trace = spans[0].context.trace_id
    if policy.ended:
        spans = live.ended_stages(spans, events)
    if policy.skip_root:
        spans = [s for s in spans if s.parent is not None or s.context.trace_id != root_trace]
    if policy.journal:   # what earlier exports sent, or may have sent, is not sent again;
        exports = export_record.node_exports(events, spans)   # nor what the Factory makes whole
        spans = [s for s in spans if export_record.node_may_send(s) and exports.state(s) is None]
    return spans


def export_glidein(spans, events, policy: ExportPolicy, send: Callable[[list], bool],
                   deadline: float) -> Exported:
    """Export one glidein's ``spans`` through ``send`` (True: the backend took them) by
    ``deadline`` (time.monotonic), recorded in the policy's journal before and after."""
    if not keep_glidein(spans, policy.sampling_ratio, running=policy.ended):
        return Exported(SAMPLED_OUT)
    spans = spans_to_send(spans, events, policy)
    if not spans:
        return Exported(NOTHING_LEFT)
    if deadline - time.monotonic() <= 0:
        return Exported(OUT_OF_TIME)
    if policy.journal:
        try:
            export_record.record(policy.journal, export_record.SENDING, spans, time.time())
        except OSError as exc:   # unrecorded, a span could go twice: leave it to the Factory
            return Exported(UNRECORDED, problem=f"cannot record the export in {policy.journal}: {exc}")
    ok = send(spans)
    if ok and policy.journal:
        try:
            export_record.record(policy.journal, export_record.SENT, spans, time.time())
        except OSError:
            pass   # left as "sending": the Factory forwarder asks its backend before resending
    return Exported(SENT if ok else FAILED, len(spans))
