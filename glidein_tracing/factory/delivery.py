"""Exactly-once delivery of the forwarder's spans: ledger marks around every export, the
backend asked before any resend, one glidein's failure kept from stopping the others.

Exactly once: the ledger records a batch as ``sending`` (with its span ids) before the
export and ``done`` after it. Whatever may have arrived is asked of the backend before it is
sent again (``Backend.held``, the one place that asks, counting a span only when the
backend's copy says what ours says: receipts.py; each span in its own trace, the glidein's or
its user's): a batch a killed forwarder left
``sending``, an export that timed out or was only partly accepted, a glidein whose earlier
export failed, the node's live exports that failed or were cut, and the Factory stages of
running glideins (``sending``, then ``sent``). A backend that cannot say (no ``--query``) gets
them again, counted as ``resent_without_reconcile``.

Isolation: a batch that fails is retried glidein by glidein. A glidein that fails alone
while the collector takes other requests (other glideins, or an empty request) is the
glidein's fault: after ``MAX_ATTEMPTS`` such passes it is quarantined with its reason
(``forward --retry-quarantined`` releases it). When the collector takes nothing it is down:
the pass stops and no glidein is blamed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ..core import conventions as c, ids
from ..core import export_record
from ..core.crash_points import crash_point
from ..exporters.result import deliver
from . import ledger as ledger_mod
from .receipts import delivered, receipts_of
from .stats import ForwardStats

log = logging.getLogger("glidein_tracing.forward")

MAX_ATTEMPTS = 3  # passes a glidein may fail alone (others going through) before quarantine
DOWN_AFTER = 3  # glideins refused alone with nothing accepted: the collector is down
SENT, FAILED, MAYBE_SENT = "sent", "failed", "maybe sent"


def span_id_of(span) -> str:
    """A span's id as the ledger and the receipts write it (hex)."""
    return ids.span_hex(span.context.span_id)


class Backend:
    """Where spans went, asked what it already holds. ``receipts(trace_id)`` (hex) gives what
    it holds of a trace, span id (hex) -> receipt (receipts.py), or None when it cannot tell;
    no function: it never can."""

    def __init__(self, receipts=None):
        self.receipts = receipts

    def held(self, trace_id: str | None, spans, stats: ForwardStats, unasked: set = frozenset(),
             wait: bool = False) -> set:
        """Ids (hex) of ``spans`` (of one trace) the backend holds as we would send them: the
        same id is not enough, a span forged under it does not count (receipts.py). When it
        cannot tell, those of ``unasked`` (ids the caller may take as held without a backend)
        and the rest is sent again (``resent_without_reconcile``); with ``wait``, a backend
        that can be asked but did not answer raises BackendUnsure instead."""
        if not spans:
            return set()
        present = self.receipts(trace_id) if (self.receipts and trace_id) else None
        if present is not None:
            return delivered(spans, present)
        if wait and self.receipts and trace_id:
            raise BackendUnsure(trace_id)
        wanted = {span_id_of(s) for s in spans}
        if wanted - set(unasked):
            stats.problem("resent_without_reconcile")
        return wanted & set(unasked)


class BackendUnsure(Exception):
    """The backend can be asked what it holds but did not answer (down, an HTTP 500)."""


def jaeger_span_ids(query_url: str, timeout_s: float = 10.0):
    """A reconcile function: what Jaeger already holds of a trace, by span id, each with its
    receipt (receipts.py; None if Jaeger cannot tell)."""
    from ..exporters.jaeger_query import trace_spans

    def held(trace_id):
        spans = trace_spans(query_url, trace_id, timeout_s)
        return None if spans is None else receipts_of(spans)
    return held


def store_span_ids(directory):
    """A reconcile function for the embedded store: what it holds of a trace, by span id,
    each with its receipt (the trace's own lines, found through its index: no scan)."""
    from ..exporters.store import Store
    store = Store(directory)
    return lambda trace_id: receipts_of(store.trace(trace_id))


@dataclass
class PassState:
    accepted: bool = False  # the collector took at least one request in this pass
    failed_alone: list = field(default_factory=list)


class Sender:
    """Sends glideins' spans through ``exporter`` exactly once, keeping ``ledger`` in step.

    A batch entry is ``(glidein key, its spans, note)``; the spans of one glidein are one
    trace, so the exporter's ``Delivery`` (by trace id) says which glideins went through."""

    def __init__(self, exporter, ledger: ledger_mod.Ledger, backend: Backend, table):
        self.exporter = exporter
        self.ledger = ledger
        self.backend = backend
        self.table = table   # the glidein table (factory/sink.py): its rows claimed with "done"

    # -- what the backend has already ------------------------------------------------------
    def not_held(self, spans, stats: ForwardStats, wait: bool = False) -> list:
        """``spans`` less those the backend holds as we would send them, each asked of in its
        own trace: a glidein's spans are in its trace and in its users' (``job on glidein``,
        ``job.wait``, phases), and each trace is asked once. ``wait``: see Backend.held."""
        by_trace: dict = {}
        for span in spans:
            by_trace.setdefault(span.context.trace_id, []).append(span)
        held = set()
        for trace_id, group in by_trace.items():
            held |= self.backend.held(ids.trace_hex(trace_id), group, stats, wait=wait)
        return [s for s in spans if span_id_of(s) not in held]

    def early_sent(self, gkey, trace_id: str, spans, stats: ForwardStats) -> set:
        """Ids of a glidein's Factory stages sent while it ran: those marked ``sent``, and of
        those left ``sending`` (among ``spans``) the ones the backend holds (marked ``sent`` now)."""
        early = self.ledger.early_spans(gkey)
        if not early:     # nothing sent while it ran (most glideins): no id to compare
            return set()
        sent = {s for s, state in early.items() if state == "sent"}
        arrived = self.backend.held(trace_id, [s for s in spans if early.get(span_id_of(s)) == "sending"], stats)
        if arrived:
            with self.ledger.transaction():
                self.ledger.mark_early(gkey, arrived, "sent")
        return sent | arrived

    def not_sent_yet(self, gkey, trace_id: str, spans, journal, stats: ForwardStats) -> list:
        """An ended glidein's spans less its Factory stages sent while it ran and less those
        its node sent live (core/export_record.py, read from its ``journal`` events). The journal's word
        alone drops nothing the backend can be asked about: a span it says went out (``sent``
        or ``sending``) is left out when the backend holds it as we would send it. With no
        backend to ask, ``sent`` node stages are left out (else each would arrive twice) but
        never the root (the node's claim cannot drop the glidein's whole trace)."""
        early = self.early_sent(gkey, trace_id, spans, stats)
        if early:
            spans = [s for s in spans if span_id_of(s) not in early]
        exports = export_record.node_exports(journal, spans)
        if not exports:
            return spans
        claimed, trusted = {}, set()
        for span in spans:
            state = exports.state(span)
            if state in export_record.STATES:   # a job's span may be in its user's trace
                claimed.setdefault(ids.trace_hex(span.context.trace_id), []).append(span)
                if state == export_record.SENT and span.attributes.get(c.STAGE) != c.STAGE_GLIDEIN:
                    trusted.add(span_id_of(span))
        sent = set()
        for trace_id_of_group, group in claimed.items():
            sent |= self.backend.held(trace_id_of_group, group, stats, unasked=trusted)
        stats.spans_already_live += len(sent)
        return [s for s in spans if span_id_of(s) not in sent]

    # -- the Factory stages of running glideins ---------------------------------------------
    def send_early(self, batch, marks, stats: ForwardStats) -> bool:
        """Send running glideins' Factory stages (``marks``: (glidein key, span ids) pairs),
        ``sending`` in the ledger before and ``sent`` after; False when the export failed."""
        with self.ledger.transaction():
            for gkey, span_ids in marks:
                self.ledger.mark_early(gkey, span_ids, "sending")
        crash_point("after_early_mark")
        if not deliver(self.exporter, batch).ok:
            stats.export_failures += 1
            stats.problem("early_export_failed")  # stay "sending": reconciled before any resend
            return False
        crash_point("after_early_export")
        with self.ledger.transaction():
            for gkey, span_ids in marks:
                self.ledger.mark_early(gkey, span_ids, "sent")
        stats.early_spans_sent += len(batch)
        return True

    # -- ended glideins --------------------------------------------------------------------
    def send_isolating(self, batch_keys, stats: ForwardStats, pass_state: PassState) -> bool:
        """Send a batch; the glideins of a failed one that were not delivered, each alone.
        False: stop this pass (the collector is down, or hung and some are maybe sent)."""
        outcome, failed = self._send(batch_keys, stats)
        if outcome == MAYBE_SENT:
            return False
        if len(failed) < len(batch_keys):
            pass_state.accepted = True
        if len(batch_keys) == 1:
            pass_state.failed_alone.extend(key for key, _, _ in failed)
        else:
            for one in failed:
                outcome, still = self._send([one], stats)
                if outcome == MAYBE_SENT:
                    return False
                if still:
                    pass_state.failed_alone.append(one[0])
                else:
                    pass_state.accepted = True
        return pass_state.accepted or len(pass_state.failed_alone) < DOWN_AFTER

    def blame(self, pass_state: PassState, stats: ForwardStats):
        """Glideins that failed alone in a pass where others went through: their own fault.
        When nothing else was sent, an empty export asks whether the collector is up."""
        if not pass_state.failed_alone:
            return
        if not pass_state.accepted and not deliver(self.exporter, []).ok:
            return  # the collector is down: nobody's fault
        with self.ledger.transaction():
            for gkey in pass_state.failed_alone:
                attempts = self.ledger.failed_alone(gkey, "export refused for this glidein alone")
                if attempts >= MAX_ATTEMPTS:
                    reason = f"export refused for this glidein alone in {attempts} passes"
                    self.ledger.quarantine(gkey, reason)
                    log.warning("%s quarantined: %s", gkey, reason)
                    stats.quarantined += 1
                    stats.problem("quarantined")

    def resume(self, gkey, spans, note: str, stats: ForwardStats) -> bool:
        """A glidein left ``sending`` (a killed forwarder, a timed-out or partly accepted
        export): send what the backend lacks of the spans marked. When the backend can be
        asked but does not answer, it waits for a later pass (``reconcile_unavailable``):
        the spans may have arrived. False: still hung."""
        wanted = set(self.ledger.pending_spans(gkey))
        spans = [s for s in spans if not wanted or span_id_of(s) in wanted]
        try:
            spans = self.not_held(spans, stats, wait=True)
        except BackendUnsure:
            stats.problem("reconcile_unavailable")
            log.warning("%s: the backend did not say what it holds of a batch that may have arrived; "
                        "it waits for the next pass", gkey)
            return True
        return self._send([(gkey, spans, note)], stats)[0] != MAYBE_SENT

    def _send(self, batch_keys, stats: ForwardStats):
        """Export a batch: (outcome, the batch entries that failed and are back to "ended").
        Of a failed export, glideins delivered whole are done, those delivered in part stay
        "sending" (reconciled before any resend)."""
        spans = [s for _, group, _ in batch_keys for s in group]
        with self.ledger.transaction():
            for gkey, group, _ in batch_keys:
                if group:  # nothing to send (all present already, sampled out): no in-flight state
                    self.ledger.mark_sending(gkey, ids.trace_hex(group[0].context.trace_id),
                                             [span_id_of(s) for s in group])
        if spans:
            crash_point("after_mark_sending")
        delivery = deliver(self.exporter, spans) if spans else None
        if delivery is None or delivery.ok:
            crash_point("after_export")
            self._done(batch_keys, stats)
            return SENT, []
        stats.export_failures += 1
        if delivery.timed_out:   # it may have arrived: stay "sending", reconciled before any resend
            stats.problem("export_timed_out")
            log.warning("export of %d spans timed out; reconciled before any resend", len(spans))
            return MAYBE_SENT, list(batch_keys)
        trace_of = {gkey: group[0].context.trace_id for gkey, group, _ in batch_keys if group}
        done = [k for k in batch_keys if trace_of.get(k[0]) in delivery.delivered]
        maybe = [k for k in batch_keys if trace_of.get(k[0]) in delivery.partly]
        failed = [k for k in batch_keys if k not in done and k not in maybe]
        self._done(done, stats)
        if maybe:
            stats.problem("partly_sent")
        with self.ledger.transaction():
            for gkey, _, _ in failed:
                self.ledger.back_to_ended(gkey)
        log.warning("export of %d spans failed (%d glideins): %s; will retry", len(spans),
                    len(failed) + len(maybe), delivery.reason)
        return FAILED, failed

    def _done(self, batch_keys, stats: ForwardStats):
        with self.ledger.transaction():
            for gkey, group, note in batch_keys:
                self.ledger.mark_done(gkey, len(group), note)
            self.table.claim([gkey for gkey, _, _ in batch_keys])
        stats.glideins_done += len(batch_keys)
        stats.spans_sent += sum(len(group) for _, group, _ in batch_keys)
