"""When the ledger forgets a glidein: once nothing on disk can show it to the forwarder again.

A glidein reaches the ledger two ways: through the activity log that names it, and through
its returned stderr (an output no log names is adopted). The ledger's row is what keeps
either from making it a new glidein, sent a second time. So a glidein done (or skipped) is
forgotten only when both are gone for good: GlideinWMS's own log cleaner has deleted its
``job.C.P.out``/``.err`` and the activity log it was read from, and it ended longer ago than
the Factory keeps either (``max_days`` of ``job_logs`` and ``condor_logs`` in
glideinWMS.xml's ``<log_retention>``: past it the cleaner deletes them whatever the disk
use). An entry directory the pass did not find (an unmounted file system) forgets nothing.
Activity logs gone from their entry directory lose their reader position the same way.

A glidein can also stay open for good: its activity log was deleted before the event that ends
it was read (the forwarder stopped longer than the Factory keeps its logs, or the log deleted
under a glidein held for weeks). Every pass looks at every open glidein, so such rows would make
each pass cost more for years. An open glidein is forgotten, with a warning, once this ledger
has known it for longer than the Factory keeps its files and its activity log and outputs are
gone: nothing can end it any more.

The glidein table is the long-term record: forgetting touches only the ledger. The sweep
runs on a process's first pass and then hourly; it reads only the rows past the cutoff.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from . import ledger as ledger_mod
from .stats import ForwardStats

log = logging.getLogger("glidein_tracing.forward")

DAY_S = 86400.0
SWEEP_EVERY_S = 3600.0


def keep_days(log_retention: dict) -> float:
    """How long after its end a done glidein stays in the ledger at least: the longest the
    Factory keeps its output or its activity log (factory_xml.FactoryXml.log_retention's ``max_days``)."""
    return max(log_retention["job_logs"]["max_days"], log_retention["condor_logs"]["max_days"])


def gone(path) -> bool:
    """Nothing at ``path``, not even a dangling link."""
    return not os.path.lexists(path)


def files_gone(entry_dir: str, cluster, proc, activity_log) -> bool:
    """Nothing on disk names the glidein any more: its ``job.C.P.err``/``.out`` and the
    activity log it was read from (None: known by its output alone) are gone."""
    base = os.path.join(entry_dir, f"job.{cluster}.{proc}")
    return gone(base + ".err") and gone(base + ".out") and (activity_log is None or gone(activity_log))


class Forgetting:
    """The ledger's forgetting, ``keep_days`` after a glidein ended at least."""

    def __init__(self, ledger: ledger_mod.Ledger, keep_days: float, every_s: float = SWEEP_EVERY_S):
        self.ledger = ledger
        self.keep_days = keep_days
        self.every_s = every_s
        self._last_sweep = None

    def due(self, now: float) -> bool:
        return self._last_sweep is None or now - self._last_sweep >= self.every_s

    def sweep(self, entry_dirs, stats: ForwardStats, now: float | None = None) -> int:
        """Forget what can never be seen again in the entry directories found this pass
        (``entry_dirs``: their paths); the number of glideins forgotten."""
        now = time.time() if now is None else now
        self._last_sweep = now
        present = {str(p) for p in entry_dirs}
        cutoff = now - self.keep_days * DAY_S
        forget, kept = [], 0
        for gkey, entry_dir, cluster, proc, activity_log in self.ledger.finished_before(cutoff):
            if entry_dir not in present:
                continue
            if files_gone(entry_dir, cluster, proc, activity_log):
                forget.append(gkey)
            else:
                kept += 1
        orphans = [gkey for gkey, entry_dir, cluster, proc, activity_log in self.ledger.open_before(cutoff)
                   if entry_dir in present and files_gone(entry_dir, cluster, proc, activity_log)]
        logs = [path for path in self.ledger.log_paths()
                if str(Path(path).parent) in present and gone(path)]
        with self.ledger.transaction():
            self.ledger.forget(forget, cutoff)
            self.ledger.forget_open(orphans)
            self.ledger.forget_logs(logs)
        if kept:
            log.warning("%d glideins ended over %g days ago still have their output or activity log on disk: "
                        "kept in the ledger until GlideinWMS's log cleaner deletes them (is it running? "
                        "<log_retention> in glideinWMS.xml)", kept, self.keep_days)
        if orphans:
            log.warning("%d glideins never ended in the ledger and their activity log and output are gone (deleted "
                        "before the forwarder read their end, over %g days ago): forgotten, nothing of them was sent "
                        "but their Factory stages", len(orphans), self.keep_days)
        stats.glideins_forgotten += len(forget) + len(orphans)
        return len(forget) + len(orphans)
