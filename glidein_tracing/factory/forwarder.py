"""Store-and-forward at the Factory: returned glidein journals + activity log -> spans, once.

One pass (``Forwarder.run_once``):
1. read what is new in every Condor-G activity log (resuming at the saved reader position)
   and keep each glidein's Factory-side events in the ledger;
2. for every glidein that has ended (terminated or removed) and whose output is back (or
   whose grace period ran out), merge its Factory events with the journal sections of its
   returned stderr, convert, drop what the node already sent live, sample, and export in
   batches; only an export that succeeded marks the glidein done;
3. returned outputs with no activity record (rotated logs) are forwarded on their own.

Exactly once: the ledger records a batch as ``sending`` (with its span ids) before the
export and ``done`` after it. A forwarder killed in between finds the batch on restart and
asks the backend which of those spans it already holds (the store, or Jaeger's query API
when ``--query`` is given) before sending the rest. An export that timed out or was only
partly accepted may have arrived: its glideins stay ``sending`` and are reconciled the same
way before any resend, as is every glidein whose earlier export failed.

Isolation: a batch that fails is retried glidein by glidein. A glidein that fails alone
while the collector takes other requests (other glideins, or an empty request) is the
glidein's fault: after ``MAX_ATTEMPTS`` such passes it is quarantined with its reason
(``forward --retry-quarantined`` releases it). When the collector takes nothing it is
down: the pass stops and no glidein is blamed.

Memory is bounded per glidein, whatever it returned: its stderr is read up to
``MAX_STDERR_BYTES`` (its tail, where the journal is), its sections inflate to at most
``DEFAULT_MAX_TOTAL_BYTES`` together, at most ``MAX_JOURNAL_LINES`` lines are parsed and
at most ``MAX_SPANS`` spans made; what was cut is counted on the root. Glideins wait in
the ledger, not in memory, and are read one at a time.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import ids, live
from ..converter import ConversionError, convert
from ..journal import Event, parse_lines
from ..receipts import delivered, receipts_of
from ..sampling import keep_glidein
from ..sections import DEFAULT_MAX_BYTES, DEFAULT_MAX_TOTAL_BYTES, journal_sections
from . import ledger as ledger_mod
from .activity import identity_events, read_activity_log
from .outputs import EntryDir, activity_logs, find_entry_dirs, returned_outputs

log = logging.getLogger("glidein_tracing.forward")

MAX_STDERR_BYTES = 64 * 1024 * 1024
MAX_JOURNAL_LINES = 100_000  # per glidein, all sections together
MAX_SPANS = 20_000  # per glidein, whatever its journal's @max_spans (the knob allows more)
MAX_ATTEMPTS = 3  # passes a glidein may fail alone (others going through) before quarantine
DOWN_AFTER = 3  # glideins refused alone with nothing accepted: the collector is down


@dataclass
class ForwardStats:
    log_events: int = 0
    glideins_done: int = 0
    glideins_skipped: int = 0
    spans_sent: int = 0
    early_spans_sent: int = 0         # Factory stages of glideins still running
    spans_already_live: int = 0
    spans_sampled_out: int = 0
    export_failures: int = 0
    quarantined: int = 0
    problems: dict = field(default_factory=dict)

    def problem(self, kind: str, count: int = 1):
        self.problems[kind] = self.problems.get(kind, 0) + count

    def summary(self) -> str:
        text = (f"{self.log_events} log events read, {self.glideins_done} glideins forwarded "
                f"({self.spans_sent} spans), {self.early_spans_sent} Factory stages of running glideins sent, "
                f"{self.spans_already_live} spans already sent live, "
                f"{self.spans_sampled_out} sampled out, {self.glideins_skipped} skipped, "
                f"{self.export_failures} export failures, {self.quarantined} quarantined")
        if self.problems:
            text += "; problems: " + ", ".join(f"{k}={v}" for k, v in sorted(self.problems.items()))
        return text


class Forwarder:
    def __init__(self, roots, exporter, ledger: ledger_mod.Ledger, factory: str, *,
                 schedd: str | None = None, entry_schedds: dict | None = None,
                 grace_s: float = 600.0, settle_s: float = 5.0, sampling_ratio: float | None = None,
                 redact=(), batch_spans: int = 2000, reconcile=None,
                 max_section_bytes: int = DEFAULT_MAX_BYTES, progress: bool = False,
                 service_name: str | None = None):
        self.roots = [Path(r) for r in roots]
        self.exporter = exporter
        self.ledger = ledger
        self.factory = factory
        self.schedd = schedd
        self.entry_schedds = dict(entry_schedds or {})
        self.grace_s = grace_s
        self.settle_s = settle_s
        self.sampling_ratio = sampling_ratio
        self.redact = tuple(redact)
        self.batch_spans = batch_spans
        self.reconcile = reconcile
        self.max_section_bytes = max_section_bytes
        self.progress = progress
        self.resource_defaults = {"service.name": service_name} if service_name else None

    # -- 1. activity logs -----------------------------------------------------------------
    def scan(self, stats: ForwardStats):
        for entry in find_entry_dirs(self.roots):
            for path in activity_logs(entry):
                self._read_log(entry, path, stats)
            self._adopt_orphan_outputs(entry, stats)

    def _read_log(self, entry: EntryDir, path: Path, stats: ForwardStats):
        try:
            restore = lambda c, p: self.ledger.activity_state(
                ledger_mod.glidein_key(str(entry.path), c, p))
            activities, state, count = read_activity_log(path, lambda c, p: None,
                                                         self.ledger.log_state(path), restore)
        except Exception as exc:  # unreadable or corrupt event log: keep going
            log.warning("cannot read activity log %s: %s", path, exc)
            stats.problem("unreadable_activity_log")
            return
        with self.ledger.transaction():
            for (cluster, proc), activity in activities.items():
                if activity.after_end:
                    stats.problem("activity_events_after_end", activity.after_end)
                gkey = ledger_mod.glidein_key(str(entry.path), cluster, proc)
                self.ledger.upsert_glidein(gkey, str(entry.path), entry.instance, entry.entry, cluster, proc)
                self.ledger.append_events(gkey, activity.events)
                self.ledger.save_activity_state(gkey, activity.state())
                if activity.ended_at is not None:
                    self.ledger.mark_ended(gkey, activity.ended_at)
            self.ledger.save_log_state(path, state, count)
        stats.log_events += count

    def _adopt_orphan_outputs(self, entry: EntryDir, stats: ForwardStats):
        """A returned stderr whose glidein the activity logs never mentioned (rotated away)."""
        now = time.time()
        for cluster, proc, path in returned_outputs(entry):
            gkey = ledger_mod.glidein_key(str(entry.path), cluster, proc)
            if self.ledger.glidein(gkey) is not None:
                continue
            try:
                mtime = path.stat().st_mtime
            except OSError:
                continue
            if now - mtime < max(self.settle_s, self.grace_s):
                continue
            with self.ledger.transaction():
                self.ledger.upsert_glidein(gkey, str(entry.path), entry.instance, entry.entry, cluster, proc)
                self.ledger.mark_ended(gkey, mtime)

    # -- 2. export -------------------------------------------------------------------------
    @staticmethod
    def _stderr(row) -> Path:
        return Path(row["entry_dir"]) / f"job.{row['cluster']}.{row['proc']}.err"

    def _ready(self, row, now) -> bool:
        stderr = self._stderr(row)
        if now - (row["ended_at"] or now) >= self.grace_s:
            return True
        try:
            return now - stderr.stat().st_mtime >= self.settle_s
        except OSError:
            return False

    def _factory_schedd(self, row) -> str:
        """The glidein's schedd as the Factory knows it (its configuration), or ""."""
        return self.entry_schedds.get(row["entry"]) or self.schedd or ""

    def identity(self, row, journal_events=()) -> ids.GlideinIdentity:
        """Everything but the multi-glidein index comes from the Factory (ledger row and
        configuration); a journal only fills in the schedd for its own glidein when the
        Factory was not told it, and its claims were checked to agree (``_disagreement``)."""
        schedd, index = self._factory_schedd(row), "0"
        for event in journal_events:
            if event.op == "start" and event.key == "glidein":
                schedd = schedd or event.fields.get("glidein.schedd", "")
                index = event.fields.get("glidein.multi_index:i", index)
                break
        return ids.GlideinIdentity(self.factory, row["instance"], row["entry"], schedd,
                                   str(row["cluster"]), str(row["proc"]), index)

    def _journal(self, row, stats: ForwardStats):
        """Events of the glidein's returned journal, checked to be this glidein's, and what
        of it was cut (``{"sections": n, "bytes": n, "lines": n}``, counted on the root)."""
        path = self._stderr(row)
        cut = {"sections": 0, "bytes": 0, "lines": 0}
        try:
            with open(path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size > MAX_STDERR_BYTES:  # the journal is appended last: keep the tail
                    handle.seek(size - MAX_STDERR_BYTES)
                    cut["bytes"] += size - MAX_STDERR_BYTES
                text = handle.read(MAX_STDERR_BYTES).decode("utf-8", "replace")
        except OSError:
            return [], cut
        events = []
        lines_left = MAX_JOURNAL_LINES
        for section in journal_sections(text, self.max_section_bytes, DEFAULT_MAX_TOTAL_BYTES):
            if section.error:
                log.warning("%s: journal section %s", path, section.error)
                stats.problem("truncated_section" if section.truncated else "damaged_section")
                cut["sections"] += 1
                cut["bytes"] += section.cut_bytes
            data = section.data
            newlines = data.count(b"\n")
            if newlines > lines_left:
                at = -1
                for _ in range(lines_left):
                    at = data.find(b"\n", at + 1)
                data, dropped = data[:at + 1], newlines - lines_left
                cut["lines"] += dropped
                stats.problem("journal_lines_cut")
            lines_left -= min(newlines, lines_left)
            section_events, report = parse_lines(data)
            if report.skipped_total:
                log.warning("%s: %s", path, report.summary())
                stats.problem("bad_journal_lines")
            disagreement = self._disagreement(row, section_events)
            if disagreement:
                log.warning("%s: journal section claims another %s; ignored", path, disagreement)
                stats.problem("forged_identity")
                continue
            events.extend(section_events)
        return events, cut

    def _disagreement(self, row, events) -> str:
        """What a section's root claims that the Factory knows otherwise ("" when it agrees):
        cluster, proc, entry, factory, glidein name, the Factory's schedd, and the trace id
        those give. A section without a root claims nothing (its spans land in this trace)."""
        for event in events:
            if event.op != "start" or event.key != "glidein":
                continue
            fields = event.fields
            claims = {
                "cluster": (fields.get("glidein.cluster:i", fields.get("glidein.cluster")), str(row["cluster"])),
                "proc": (fields.get("glidein.proc:i", fields.get("glidein.proc")), str(row["proc"])),
                "entry": (fields.get("glidein.entry"), row["entry"]),
                "factory": (fields.get("glidein.factory"), self.factory),
                "name": (fields.get("glidein.name"), row["instance"]),
                "schedd": (fields.get("glidein.schedd"), self._factory_schedd(row) or None),
            }
            for what, (claimed, known) in claims.items():
                if claimed is not None and known is not None and str(claimed) != str(known):
                    return what
            claimed_trace = (fields.get("@trace_id") or "").lower()
            if claimed_trace and claimed_trace != self.identity(row, [event]).trace_id:
                return "trace id"
        return ""

    def _spans_for(self, gkey, stats: ForwardStats, row=None):
        row = row or self.ledger.glidein(gkey)
        activity = self.ledger.factory_events(gkey)
        journal, cut = self._journal(row, stats)
        identity = self.identity(row, journal)
        if not identity.schedd:
            stats.problem("unknown_schedd")
        events = list(activity) + list(journal)
        when = min((e.time for e in events), default=row["ended_at"] or time.time())
        events.extend(identity_events(identity, when))
        if any(cut.values()):
            events.append(Event(time=when, op="attr", key="glidein", fields={
                f"glidein_tracing.input.cut_{kind}:i": str(count) for kind, count in cut.items()}))
        if not journal:
            ran = any(e.key.startswith("factory.queue") and e.op == "end" for e in activity)
            events.append(Event(time=when, op="attr", key="glidein", fields={
                "glidein.outcome": "no_glidein_output" if ran else "never_ran"}))
        try:
            spans = convert(events, resource_defaults=self.resource_defaults, redact=self.redact,
                            trace_id=identity.trace_id, span_ceiling=MAX_SPANS)
        except ConversionError as exc:
            return None, str(exc)
        if not keep_glidein(spans, self.sampling_ratio):
            stats.spans_sampled_out += len(spans)
            return [], "sampled out"
        spans = self._without_early(gkey, identity.trace_id, spans, stats)
        node_exports = live.node_exports(journal, spans)
        if node_exports:
            spans = self._without_node_exports(spans, node_exports, stats)
        return spans, ""

    def _held(self, trace_id: str, spans) -> set | None:
        """Ids (hex) of ``spans`` (of one trace) the backend holds as we would send them
        (receipts.py: a span forged under the same id does not count); None when there is
        no backend to ask or it cannot tell."""
        held = self.reconcile(trace_id) if self.reconcile else None
        return None if held is None else delivered(spans, held)

    def _without_node_exports(self, spans, exports: live.NodeExports, stats: ForwardStats):
        """A glidein's spans less those its node sent live (live.py). With a backend to ask,
        every span the journal says went out (``sent`` or ``sending``) is looked up there,
        trace by trace (a job's span in its user's trace too), and only those it holds as we
        would send them are left out: a journal's word alone drops nothing. With none,
        ``sent`` ones are left out but the root (the node's claim cannot drop the glidein's
        whole trace), ``sending`` ones sent again (at least once)."""
        sent, claimed = set(), {}
        for span in spans:
            state = exports.state(span)
            if state in live.STATES:
                claimed.setdefault(span.context.trace_id, []).append((span, state))
        for trace_id, group in claimed.items():
            present = self._held(format(trace_id, "032x"), [span for span, _ in group])
            if present is not None:
                sent.update(s.context.span_id for s, _ in group if format(s.context.span_id, "016x") in present)
                continue
            trusted = [s for s, state in group if state == live.SENT and s.attributes.get("glidein.stage") != "glidein"]
            if len(trusted) < len(group):
                stats.problem("resent_without_reconcile")
            sent.update(s.context.span_id for s in trusted)
        stats.spans_already_live += len(sent)
        return [s for s in spans if s.context.span_id not in sent]

    # -- 2a. the Factory's stages of glideins still running -----------------------------------
    def export_early(self, stats: ForwardStats) -> bool:
        """Send the Factory stages (``factory.submit``, ``factory.queue``, ``factory.held``) of
        glideins still running as soon as the event that ends them has been read, so a glidein
        waiting at a site for hours is in Jaeger meanwhile (under its root's id; the root and
        the node's stages follow when it ends). Exactly once: their ids go in the ledger as
        ``sending`` before the export and ``sent`` after it; uncertain ones are reconciled, and
        the final export leaves the sent ones out."""
        batch, marks = [], []
        for gkey in self.ledger.with_status(ledger_mod.OPEN):
            spans = self._early_spans_for(gkey, stats)
            if spans:
                batch.extend(spans)
                marks.append((gkey, [format(s.context.span_id, "016x") for s in spans]))
            if len(batch) >= self.batch_spans:      # batches as bounded as the final export's
                if not self._send_early(batch, marks, stats):
                    return False
                batch, marks = [], []
        return self._send_early(batch, marks, stats) if batch else True

    def _send_early(self, batch, marks, stats: ForwardStats) -> bool:
        with self.ledger.transaction():
            for gkey, span_ids in marks:
                self.ledger.mark_early(gkey, span_ids, "sending")
        _crash_point("after_early_mark")
        if self.exporter.export(batch).name != "SUCCESS":
            stats.export_failures += 1
            stats.problem("early_export_failed")  # stay "sending": reconciled before any resend
            return False
        _crash_point("after_early_export")
        with self.ledger.transaction():
            for gkey, span_ids in marks:
                self.ledger.mark_early(gkey, span_ids, "sent")
        stats.early_spans_sent += len(batch)
        return True

    def _early_spans_for(self, gkey, stats: ForwardStats) -> list:
        """The ended Factory stages of one running glidein not sent yet."""
        row = self.ledger.glidein(gkey)
        events = self.ledger.factory_events(gkey)
        started = {e.key for e in events if e.op == "start"}
        closed = {e.key for e in events if e.op == "end" and e.key in started and e.key.startswith("factory.")}
        identity = self.identity(row)
        if not closed or not identity.schedd:   # no trace id the Factory can stand by yet
            return []
        known = self.ledger.early_spans(gkey)
        todo = {ids.span_id(identity.trace_id, key) for key in closed} - {s for s, st in known.items() if st == "sent"}
        if not todo:
            return []
        when = min(e.time for e in events)
        spans = convert(list(events) + identity_events(identity, when), resource_defaults=self.resource_defaults,
                        redact=self.redact, trace_id=identity.trace_id, span_ceiling=MAX_SPANS)
        if self.sampling_ratio is not None and not keep_glidein(spans, self.sampling_ratio):
            return []
        todo -= self._arrived(gkey, identity.trace_id, todo & {s for s, st in known.items() if st == "sending"},
                              spans, stats)
        return [s for s in spans if format(s.context.span_id, "016x") in todo]

    def _arrived(self, gkey, trace_id: str, uncertain: set, spans, stats: ForwardStats) -> set:
        """Of early spans whose export was cut short (ids in ``uncertain``, of ``spans``),
        those the backend holds as we would send them (marked sent)."""
        if not uncertain:
            return set()
        present = self._held(trace_id, [s for s in spans if format(s.context.span_id, "016x") in uncertain])
        if present is None:
            stats.problem("resent_without_reconcile")
            return set()
        arrived = uncertain & present
        if arrived:
            with self.ledger.transaction():
                self.ledger.mark_early(gkey, arrived, "sent")
        return arrived

    def _without_early(self, gkey, trace_id: str, spans, stats: ForwardStats):
        """A glidein's spans less the Factory stages already sent while it ran."""
        early = self.ledger.early_spans(gkey)
        if not early:
            return spans
        sent = {s for s, state in early.items() if state == "sent"}
        sent |= self._arrived(gkey, trace_id, {s for s, state in early.items() if state == "sending"}, spans, stats)
        return [s for s in spans if format(s.context.span_id, "016x") not in sent]

    def export_ready(self, stats: ForwardStats):
        now = time.time()
        rows = {g: self.ledger.glidein(g) for g in self.ledger.with_status(ledger_mod.ENDED)}
        ready = [g for g, row in rows.items() if self._ready(row, now)]
        bar = _progress(len(ready), self.progress)
        batch, batch_keys = [], []
        pass_state = _PassState()
        ok = True
        for gkey in ready:
            spans, note = self._spans_for(gkey, stats, rows[gkey])
            if spans is None:
                with self.ledger.transaction():
                    self.ledger.mark_skipped(gkey, note)
                stats.glideins_skipped += 1
                stats.problem("no_trace")
                bar.update(1)
                continue
            if spans and rows[gkey]["trace_id"]:  # tried before: some may have arrived
                spans = self._not_yet_present(rows[gkey]["trace_id"], spans, stats)
            batch.extend(spans)
            batch_keys.append((gkey, spans, note))
            if len(batch) >= self.batch_spans:
                ok = self._send_isolating(batch_keys, stats, pass_state)
                bar.update(len(batch_keys))
                batch, batch_keys = [], []
                if not ok:
                    break
        if ok and batch_keys:
            ok = self._send_isolating(batch_keys, stats, pass_state)
            bar.update(len(batch_keys))
        bar.close()
        self._blame(pass_state, stats)
        return ok

    def _not_yet_present(self, trace_id, spans, stats: ForwardStats):
        present = self._held(trace_id, spans)
        if present is None:
            stats.problem("resent_without_reconcile")
            return spans
        return [s for s in spans if format(s.context.span_id, "016x") not in present]

    def _send_isolating(self, batch_keys, stats: ForwardStats, pass_state) -> bool:
        """Send a batch; the glideins of a failed one that were not delivered, each alone.
        False: stop this pass (the collector is down, or hung and some are maybe sent)."""
        outcome, failed = self._send(batch_keys, stats)
        if outcome == _MAYBE_SENT:
            return False
        if len(failed) < len(batch_keys):
            pass_state.accepted = True
        if len(batch_keys) == 1:
            pass_state.failed_alone.extend(key for key, _, _ in failed)
        else:
            for one in failed:
                outcome, still = self._send([one], stats)
                if outcome == _MAYBE_SENT:
                    return False
                if still:
                    pass_state.failed_alone.append(one[0])
                else:
                    pass_state.accepted = True
        return pass_state.accepted or len(pass_state.failed_alone) < DOWN_AFTER

    def _blame(self, pass_state, stats: ForwardStats):
        """Glideins that failed alone in a pass where others went through: their own fault.
        When nothing else was sent, an empty export asks whether the collector is up."""
        if not pass_state.failed_alone:
            return
        if not pass_state.accepted:
            probe = self.exporter.export([])
            if probe.name != "SUCCESS":
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

    def _send(self, batch_keys, stats: ForwardStats):
        """Export a batch: (outcome, the batch entries that failed and are back to "ended").
        Of a failed export, glideins the exporter says were delivered are done, those partly
        delivered stay "sending" (reconciled before any resend)."""
        spans = [s for _, group, _ in batch_keys for s in group]
        with self.ledger.transaction():
            for gkey, group, _ in batch_keys:
                if group:  # nothing to send (all present already, sampled out): no in-flight state
                    self.ledger.mark_sending(gkey, format(group[0].context.trace_id, "032x"),
                                             [format(s.context.span_id, "016x") for s in group])
        if spans:
            _crash_point("after_mark_sending")
        result = self.exporter.export(spans) if spans else None
        if not spans or result.name == "SUCCESS":
            _crash_point("after_export")
            self._done(batch_keys, stats)
            return _SENT, []
        stats.export_failures += 1
        if getattr(self.exporter, "timed_out", False):
            # it may have arrived: stay "sending", reconciled before any resend
            stats.problem("export_timed_out")
            log.warning("export of %d spans timed out; reconciled before any resend", len(spans))
            return _MAYBE_SENT, list(batch_keys)
        delivered = getattr(self.exporter, "delivered", set())
        partial = getattr(self.exporter, "partial", set())
        done = [k for k in batch_keys if k[1] and k[1][0].context.trace_id in delivered]
        maybe = [k for k in batch_keys if k[1] and k[1][0].context.trace_id in partial]
        failed = [k for k in batch_keys if k not in done and k not in maybe]
        self._done(done, stats)
        if maybe:
            stats.problem("partly_sent")
        with self.ledger.transaction():
            for gkey, _, _ in failed:
                self.ledger.back_to_ended(gkey)
        log.warning("export of %d spans failed (%d glideins); will retry", len(spans), len(failed) + len(maybe))
        return _FAILED, failed

    def _done(self, batch_keys, stats: ForwardStats):
        with self.ledger.transaction():
            for gkey, group, note in batch_keys:
                self.ledger.mark_done(gkey, len(group), note)
        stats.glideins_done += len(batch_keys)
        stats.spans_sent += sum(len(group) for _, group, _ in batch_keys)

    # -- exactly once after a crash ---------------------------------------------------------
    def reconcile_sending(self, stats: ForwardStats):
        """Batches marked ``sending`` when the last forwarder died: send what is missing."""
        for gkey in self.ledger.with_status(ledger_mod.SENDING):
            wanted = set(self.ledger.pending_spans(gkey))
            row = self.ledger.glidein(gkey)
            spans, note = self._spans_for(gkey, stats)
            if spans is None:
                with self.ledger.transaction():
                    self.ledger.mark_skipped(gkey, note)
                continue
            present = self._held(row["trace_id"], spans) if row["trace_id"] else None
            if present is not None:
                spans = [s for s in spans if format(s.context.span_id, "016x") not in present]
            else:
                stats.problem("resent_without_reconcile")
            spans = [s for s in spans if format(s.context.span_id, "016x") in wanted or not wanted]
            if self._send([(gkey, spans, note)], stats)[0] == _MAYBE_SENT:
                return False  # still hung: try again next pass; a refusal is back in "ended"
        return True

    def run_once(self) -> ForwardStats:
        stats = ForwardStats()
        if self.reconcile_sending(stats):
            self.scan(stats)
            self.export_early(stats)
            self.export_ready(stats)
        for kind, count in stats.problems.items():
            self.ledger.bump(kind, count)
        return stats

    def follow(self, interval_s: float = 60.0, stop=lambda: False):
        while not stop():
            stats = self.run_once()
            log.info("%s", stats.summary())
            deadline = time.monotonic() + interval_s
            while time.monotonic() < deadline and not stop():
                time.sleep(min(1.0, interval_s))


def jaeger_span_ids(query_url: str, timeout_s: float = 10.0):
    """A reconcile function: the spans Jaeger already holds of a trace, by span id, each
    with its receipt (receipts.py; None if Jaeger cannot tell)."""
    from ..jaeger_query import trace_spans

    def held(trace_id):
        spans = trace_spans(query_url, trace_id, timeout_s)
        return None if spans is None else receipts_of(spans)
    return held


def store_span_ids(directory):
    """A reconcile function for the embedded store: its spans of a trace, by span id, each
    with its receipt (the trace's own lines, found through the index: no scan)."""
    from ..exporters.store import Store
    return Store(directory).receipts


_SENT, _FAILED, _MAYBE_SENT = "sent", "failed", "maybe sent"


@dataclass
class _PassState:
    accepted: bool = False  # the collector took at least one request in this pass
    failed_alone: list = field(default_factory=list)


def _crash_point(name: str):
    """Test hook: GLIDEIN_TRACING_CRASH_AT=<name> kills the forwarder right there (SIGKILL),
    so tests can prove a restart neither loses nor repeats spans."""
    if os.environ.get("GLIDEIN_TRACING_CRASH_AT") == name:
        os.kill(os.getpid(), 9)


class _NoBar:
    def update(self, n=1):
        pass

    def close(self):
        pass


def _progress(total: int, enabled: bool):
    if not enabled or total == 0:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, unit="glidein", desc="forwarding", leave=False)
