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

Gone must mean gone for good: files moved aside (a restore, an rsync to a new host, a mount
point that is the entry directory) come back. So a glidein (and an activity log's reader
position) is forgotten only once its files stayed absent, sweep after sweep, for the
``min_days`` of their kind in ``<log_retention>`` (``job_logs`` for its output, ``condor_logs``
for its activity log: 2 and 3 days by GlideinWMS's defaults); a file seen again resets the
count. A forgotten glidein's id stays in the ledger (``forgotten``, 16 bytes a glidein) for the
retention window (``max_days``): one whose files come back later is recognised and not made a
new glidein sent a second time, and one forgotten while open that then ends gets a root from
its first Factory event, so it contains the Factory stages sent while it ran.

The glidein table is the long-term record: forgetting touches only the ledger. The sweep
runs on a process's first pass and then hourly; it reads only the rows past the cutoff and
the forgotten ids past the window, so its cost does not grow with the ledger's history.
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


def absent_days(log_retention: dict, activity_log: bool) -> float:
    """How long a glidein's files must stay absent before it is forgotten: the ``min_days``
    of its output's kind (``job_logs``) and, when an activity log named it, of that log's
    (``condor_logs``)."""
    kinds = ("job_logs", "condor_logs") if activity_log else ("job_logs",)
    return max(log_retention[kind]["min_days"] for kind in kinds)


def gone(path) -> bool:
    """Nothing at ``path``, not even a dangling link."""
    return not os.path.lexists(path)


def files_gone(entry_dir: str, cluster, proc, activity_log) -> bool:
    """Nothing on disk names the glidein any more: its ``job.C.P.err``/``.out`` and the
    activity log it was read from (None: known by its output alone) are gone."""
    base = os.path.join(entry_dir, f"job.{cluster}.{proc}")
    return gone(base + ".err") and gone(base + ".out") and (activity_log is None or gone(activity_log))


class Forgetting:
    """The ledger's forgetting, ``keep_days`` after a glidein ended at least, once its files
    stayed absent for ``absent_days``."""

    def __init__(self, ledger: ledger_mod.Ledger, log_retention: dict, every_s: float = SWEEP_EVERY_S):
        self.ledger = ledger
        self.log_retention = log_retention
        self.keep_days = keep_days(log_retention)
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
        done, kept = self._gone_for_good(self.ledger.finished_before(cutoff), present, now)
        orphans, _ = self._gone_for_good(self.ledger.open_before(cutoff), present, now)
        logs, absent, back = [], [], []     # an activity log's reader position: as a glidein's row
        for path, absent_since in self.ledger.log_paths():
            if str(Path(path).parent) not in present:
                continue
            if not gone(path):
                back += [path] if absent_since is not None else []
            elif absent_since is None:
                absent.append(path)
            elif now - absent_since >= self.log_retention["condor_logs"]["min_days"] * DAY_S:
                logs.append(path)
        with self.ledger.transaction():
            self.ledger.forget(done, cutoff, now)
            self.ledger.forget_open(orphans, now)
            self.ledger.mark_logs(absent, back, now)
            self.ledger.forget_logs(logs)
            self.ledger.prune_forgotten(now - self.keep_days * DAY_S)
        if kept:
            log.warning("%d glideins ended over %g days ago still have their output or activity log on disk: "
                        "kept in the ledger until GlideinWMS's log cleaner deletes them (is it running? "
                        "<log_retention> in glideinWMS.xml)", kept, self.keep_days)
        if orphans:
            log.warning("%d glideins never ended in the ledger and their activity log and output are gone (deleted "
                        "before the forwarder read their end, over %g days ago): forgotten, nothing of them was sent "
                        "but their Factory stages", len(orphans), self.keep_days)
        stats.glideins_forgotten += len(done) + len(orphans)
        return len(done) + len(orphans)

    def _gone_for_good(self, rows, present: set, now: float) -> tuple[list, int]:
        """(the keys of ``rows`` whose files stayed absent long enough, how many still have
        files on disk); marks in the ledger those found absent now and those come back."""
        forget, absent, back, kept = [], [], [], 0
        for gkey, entry_dir, cluster, proc, activity_log, absent_since in rows:
            if entry_dir not in present:
                continue
            if not files_gone(entry_dir, cluster, proc, activity_log):
                kept += 1
                back += [gkey] if absent_since is not None else []
            elif absent_since is None:
                absent.append(gkey)
            elif now - absent_since >= absent_days(self.log_retention, activity_log is not None) * DAY_S:
                forget.append(gkey)
        with self.ledger.transaction():
            self.ledger.mark_absent(absent, now)
            self.ledger.mark_present(back)
        return forget, kept
