"""Store-and-forward at the Factory: returned glidein journals + activity log -> spans, once.

One pass (``Forwarder.run_once``), each job in a module of its own:
0. glideins a killed forwarder left ``sending`` are reconciled first (delivery.py);
1. what is new in every Condor-G activity log goes into the ledger (scanning.py);
2. the Factory stages of glideins still running are sent as soon as they end;
3. every glidein that has ended and whose output is back (or whose grace period ran out) is
   read (returned.py: its identity, its journal checked to be its own; glidein_stdout.py:
   GlideinWMS's reading of its stdout, and whether it was asked to trace: one that was not
   and returned no journal is untraced), converted
   (assembly.py), sampled, and sent less what went already, in batches, exactly once, one
   failing glidein kept from stopping the others (delivery.py).

Glideins wait in the ledger, not in memory, and are read one at a time.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from ..core.converter import ConversionError
from ..core.errors import ConfigError
from ..core.inputs import file_stamp
from ..core.converter.clocks import life_bounds, within_life
from ..core.ids import span_id
from ..core.sampling import keep_glidein
from ..core.sections import DEFAULT_MAX_BYTES
from . import ledger as ledger_mod
from .assembly import SpanMaker, closed_factory_stages
from .delivery import Backend, PassState, Sender, span_id_of
from .glidein_stdout import read_returned_stdout, stdout_path
from .metrics import record_pass
from .name_check import FactoryNameCheck
from .returned import (FactoryNames, attributed_to_jobs, held_identity, identity, returned_journal,
                       stderr_path)
from .retention import Forgetting
from .scanning import Scanner
from .settings import ForwarderSettings
from .sink import NoTable
from .stats import ForwardStats
from ..core import conventions as c

log = logging.getLogger("glidein_tracing.forward")
IDLE_NOTE_S = 3600.0    # --follow: one short line per this much time with nothing new
FACTS_KEPT = 20         # configurations before the current one kept to judge glideins in flight


class Forwarder:
    """One Factory's forwarder, as its ``settings`` say (its log trees, grace, sampling,
    batches) and its ``facts`` (factory_xml.FactoryFacts: names, schedds, sites, which entries
    trace, log retention), with its ledger, where spans go (``exporter``, any SDK span exporter) and how to
    ask what arrived (``reconcile``: trace id -> receipts held, e.g. delivery.jaeger_span_ids).
    ``settle_s`` and ``max_section_bytes`` are not settings: tests shorten them."""

    def __init__(self, settings: ForwarderSettings, facts, exporter, ledger: ledger_mod.Ledger, *, reconcile=None,
                 table=None, failure_attribution=None, progress: bool = False, settle_s: float = 5.0,
                 max_section_bytes: int = DEFAULT_MAX_BYTES):
        self.settings = settings
        self.roots = [Path(r) for r in settings.logs]
        self.ledger = ledger
        self.grace_s = settings.grace
        self.settle_s = settle_s
        self.sampling_ratio = settings.sampling_ratio
        self.batch_spans = settings.batch_spans
        self.max_section_bytes = max_section_bytes
        self.progress = progress
        self.table = table or NoTable()   # the glidein table (factory/sink.py)
        self.sender = Sender(exporter, ledger, Backend(reconcile), self.table)
        self.failure_attribution = failure_attribution   # failure_rules.attribution.FailureAttribution
        self.scanner = Scanner(self.roots, ledger)
        self.name_check = None
        self._use_facts(facts)
        self._config_seen = file_stamp(settings.factory_config)
        self._facts_until: list = []   # (when replaced, facts) of the configurations before, oldest first

    def _use_facts(self, facts) -> None:
        """What the Factory's facts decide: its names, the entries' sites, the log retention the
        ledger forgets by, and the check of its name (kept, with what it confirmed, while the
        name stays)."""
        self.facts = facts
        self.names = FactoryNames(facts.name, facts.schedd, facts.entry_schedds)
        settings = self.settings
        self.spans = SpanMaker({c.SERVICE_NAME: settings.service_name} if settings.service_name else None,
                               tuple(n for n in settings.redact if n.strip()), facts.entry_sites)
        self.forgetting = Forgetting(self.ledger, facts.log_retention)
        if self.name_check is not None and self.name_check.facts.name == facts.name:
            self.name_check.facts = facts
        else:
            self.name_check = FactoryNameCheck(self.roots, facts, self.max_section_bytes)

    def follow_reconfig(self) -> None:
        """Read glideinWMS.xml again when it changed (a Factory reconfig: an entry that starts or
        stops tracing, a new entry, its site), so a forwarder that keeps running decides by what
        the Factory says now. One that cannot be read (caught mid-write, broken) is said once,
        and the facts read before are kept until it changes again."""
        stamp = file_stamp(self.settings.factory_config)
        if stamp == self._config_seen:
            return
        self._config_seen = stamp
        try:
            facts = self.settings.factory_facts()
        except ConfigError as exc:
            log.warning("%s changed but cannot be used; the Factory's facts read before are kept until it "
                        "changes again: %s", self.settings.factory_config, "; ".join(exc.problems))
            return
        self._facts_until = (self._facts_until + [(time.time(), self.facts)])[-FACTS_KEPT:]
        self._use_facts(facts)
        log.info("%s changed: the Factory's facts read again (%d entries, tracing: %s)", self.settings.factory_config,
                 len(facts.xml.entries), ", ".join(facts.xml.tracing_entries()) or "none")

    def asked_to_trace(self, entry: str, submitted: float | None):
        """Whether the Factory asked ``entry``'s glidein submitted at ``submitted`` to trace: by
        the configuration in force then (the one this forwarder saw last before it), so a
        reconfig that turns tracing on does not make the untraced glideins still in flight
        look like traced ones that returned no journal. None when glideinWMS.xml does not say."""
        if submitted is not None:
            for until, facts in self._facts_until:
                if submitted < until:
                    return facts.asked_to_trace(entry)
        return self.facts.asked_to_trace(entry)

    def run_once(self) -> ForwardStats:
        """One pass; ConfigError before anything is written when the Factory's name is wrong
        (FactoryNameCheck)."""
        self.follow_reconfig()
        self.name_check.check()
        started = time.time()
        stats = ForwardStats()
        if self.failure_attribution is not None:
            self.failure_attribution.new_pass()
        if self.reconcile_sending(stats):
            self.scan(stats)
            self.export_early(stats)
            self.export_ready(stats)
            if self.forgetting.due(time.time()):
                self.forgetting.sweep([entry.path for entry in self.scanner.entries], stats)
        stats.table_rows = self.table.flush()
        stats.table_quarantined = list(self.table.quarantined)
        if self.failure_attribution is not None:
            self.failure_attribution.end_pass()
            if self.failure_attribution.classifiers_disabled():
                stats.problem("classifier_disabled", self.failure_attribution.classifiers_disabled())
        for kind, count in stats.problems.items():
            self.ledger.bump(kind, count)
        record_pass(self.ledger, stats, started, time.time())
        return stats

    def follow(self, interval_s: float = 60.0, stop=lambda: False):
        """A pass every ``interval_s`` until ``stop()``: each pass that did something logs its
        summary; idle ones are quiet, but for one short line an hour (the service is alive)."""
        idle_since = None
        while not stop():
            stats = self.run_once()
            if not stats.idle():
                log.info("%s", stats.summary())
                idle_since = None
            elif idle_since is None:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since >= IDLE_NOTE_S:
                log.info("nothing new for %.0f minutes", (time.monotonic() - idle_since) / 60)
                idle_since = time.monotonic()
            deadline = time.monotonic() + interval_s
            while time.monotonic() < deadline and not stop():
                time.sleep(min(1.0, interval_s))

    def scan(self, stats: ForwardStats):
        self.scanner.scan(stats, orphan_after_s=max(self.settle_s, self.grace_s))

    def reconcile_sending(self, stats: ForwardStats) -> bool:
        """Batches marked ``sending`` when the last forwarder died: send what is missing.
        False: the exporter still hangs (try again next pass)."""
        for gkey in self.ledger.with_status(ledger_mod.SENDING):
            row = self.ledger.glidein(gkey)
            spans, note = self._spans_for(gkey, row, stats)
            if spans is None:
                with self.ledger.transaction():
                    self.ledger.mark_skipped(gkey, note)
                continue
            if not self.sender.resume(gkey, spans, note, stats):
                return False
        return True

    # -- the Factory's stages of glideins still running ---------------------------------------
    def export_early(self, stats: ForwardStats) -> bool:
        """Send the Factory stages (``factory.submit``, ``factory.queue``, ``factory.held``) of
        glideins still running as soon as the event that ends them has been read, so a glidein
        waiting at a site for hours is in Jaeger meanwhile (under its root's id; the root and
        the node's stages follow when it ends, less these)."""
        batch, marks = [], []
        for gkey in self.ledger.with_status(ledger_mod.OPEN):
            spans = self._early_spans_for(gkey, stats)
            if spans:
                batch.extend(spans)
                marks.append((gkey, [span_id_of(s) for s in spans]))
            if len(batch) >= self.batch_spans:      # batches as bounded as the final export's
                if not self.sender.send_early(batch, marks, stats):
                    return False
                batch, marks = [], []
        return self.sender.send_early(batch, marks, stats) if batch else True

    def _early_spans_for(self, gkey, stats: ForwardStats) -> list:
        """The ended Factory stages of one running glidein not sent yet."""
        activity = self.ledger.factory_events(gkey)
        closed = closed_factory_stages(activity)
        glidein = identity(self.names, self.ledger.glidein(gkey))
        if not closed or not glidein.schedd:   # no trace id the Factory can stand by yet
            return []
        todo = {span_id(glidein.trace_id, key) for key in closed}
        todo -= {s for s, state in self.ledger.early_spans(gkey).items() if state == "sent"}
        if not todo:
            return []
        spans = self.spans.factory_stages(glidein, activity)
        if self.sampling_ratio is not None and not keep_glidein(spans, self.sampling_ratio):
            return []
        todo -= self.sender.early_sent(gkey, glidein.trace_id, [s for s in spans if span_id_of(s) in todo], stats)
        return [s for s in spans if span_id_of(s) in todo]

    # -- ended glideins ----------------------------------------------------------------------
    def export_ready(self, stats: ForwardStats) -> bool:
        """Send every ended glidein whose output is back, in batches of ``batch_spans``.
        False: the pass stopped (the collector is down or hung)."""
        now = time.time()
        rows = {g: self.ledger.glidein(g) for g in self.ledger.with_status(ledger_mod.ENDED)}
        ready = [g for g, row in rows.items() if self._ready(row, now)]
        bar = _progress(len(ready), self.progress)
        batch, batch_keys = [], []
        pass_state = PassState()
        ok = True
        for gkey in ready:
            spans, note = self._spans_for(gkey, rows[gkey], stats)
            if spans is None:
                with self.ledger.transaction():
                    self.ledger.mark_skipped(gkey, note)
                stats.glideins_skipped += 1
                stats.problem("no_trace")
                bar.update(1)
                continue
            if spans and rows[gkey]["trace_id"]:  # tried before: some may have arrived
                spans = self.sender.not_held(spans, stats)
            batch.extend(spans)
            batch_keys.append((gkey, spans, note))
            if len(batch) >= self.batch_spans:
                ok = self.sender.send_isolating(batch_keys, stats, pass_state)
                bar.update(len(batch_keys))
                batch, batch_keys = [], []
                if not ok:
                    break
        if ok and batch_keys:
            ok = self.sender.send_isolating(batch_keys, stats, pass_state)
            bar.update(len(batch_keys))
        bar.close()
        self.sender.blame(pass_state, stats)
        return ok

    def _ready(self, row, now) -> bool:
        """Its output is back and has settled, or its grace period ran out."""
        if now - (row["ended_at"] or now) >= self.grace_s:
            return True
        try:
            return now - stderr_path(row).stat().st_mtime >= self.settle_s
        except OSError:
            return False

    def _spans_for(self, gkey, row, stats: ForwardStats):
        """(spans to send, note) of an ended glidein: (None, why) when it makes no trace,
        ([], "sampled out") when its sampling ratio leaves it out."""
        returned = returned_journal(self.names, row, stats, self.max_section_bytes)
        journal = returned.events
        glidein = identity(self.names, row, journal)
        if not glidein.schedd:
            stats.problem("unknown_schedd")
        journal, ignored = held_identity(glidein, self.spans.entry_sites.get(row["entry"]), journal)
        factory_events = self.ledger.factory_events(gkey)
        journal, outside = within_life(journal, life_bounds(factory_events, row["ended_at"]))
        if outside:
            log.warning("%s: %d journal lines dated outside the glidein's life; ignored", stderr_path(row), outside)
            stats.problem("lines_outside_life", outside)
        journal, moved = attributed_to_jobs(journal)
        if moved:
            log.warning("%s: %d journal lines no hook writes then (on validation scripts, records while a job "
                        "ran); given to the job that ran then", stderr_path(row), moved)
            stats.problem("lines_of_a_job", moved)
        if ignored:
            log.warning("%s: journal lines claim another %s for the glidein; ignored", stderr_path(row),
                        ", ".join(sorted(set(ignored))))
            stats.problem("identity_contradicted", len(ignored))
        stdout = read_returned_stdout(stdout_path(row))
        # whether it was asked to trace is the Factory's own config's to say (a job can cut the
        # stdout); only without glideinWMS.xml is it guessed from the stdout's PARAM_LIST
        asked = self.asked_to_trace(row["entry"], min((e.time for e in factory_events), default=None))
        asked = stdout.asked_to_trace if asked is None else asked
        untraced = stdout.output and not returned.sections and not asked
        try:
            spans = self.spans.glidein(glidein, factory_events, journal, returned.cut,
                                       row["ended_at"], stdout.facts, untraced=untraced,
                                       identity_ignored=len(ignored), outside_life=outside)
        except ConversionError as exc:
            return None, str(exc)
        if self.failure_attribution is not None:
            spans = self.failure_attribution.apply(spans)
        kept = keep_glidein(spans, self.sampling_ratio)
        refused = self.table.add(gkey, spans, kept)   # every glidein gets its row, sampled out or not
        if refused:     # forged or broken node reports: NULL in the table, named in the pass's summary
            stats.problem("implausible_values", refused)
        if not kept:
            stats.spans_sampled_out += len(spans)
            return [], "sampled out"
        return self.sender.not_sent_yet(gkey, glidein.trace_id, spans, journal, stats), ""


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
