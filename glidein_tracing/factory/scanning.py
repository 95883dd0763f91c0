"""What the Factory's logs say, into the ledger: each Condor-G activity log read from where
the last pass stopped, and returned outputs no activity log mentions (rotated away)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from . import ledger as ledger_mod
from .activity import read_activity_log
from .outputs import EntryDir, activity_logs, find_entry_dirs, returned_outputs
from .stats import ForwardStats

log = logging.getLogger("glidein_tracing.forward")


def scan_logs(roots, ledger: ledger_mod.Ledger, stats: ForwardStats, orphan_after_s: float):
    """Every entry under ``roots``: its activity logs' new events, then its orphan outputs
    older than ``orphan_after_s`` (seconds)."""
    for entry in find_entry_dirs(roots):
        for path in activity_logs(entry):
            read_log(ledger, entry, path, stats)
        adopt_orphan_outputs(ledger, entry, orphan_after_s)


def read_log(ledger: ledger_mod.Ledger, entry: EntryDir, path: Path, stats: ForwardStats):
    """One activity log's new events: each glidein's Factory-side events and its end, with the
    reader's position, in one ledger transaction."""
    try:
        restore = lambda c, p: ledger.activity_state(ledger_mod.glidein_key(str(entry.path), c, p))
        activities, state, count = read_activity_log(path, ledger.log_state(path), restore)
    except Exception as exc:  # unreadable or corrupt event log: keep going
        log.warning("cannot read activity log %s: %s", path, exc)
        stats.problem("unreadable_activity_log")
        return
    with ledger.transaction():
        for (cluster, proc), activity in activities.items():
            if activity.after_end:
                stats.problem("activity_events_after_end", activity.after_end)
            gkey = ledger_mod.glidein_key(str(entry.path), cluster, proc)
            ledger.upsert_glidein(gkey, str(entry.path), entry.instance, entry.entry, cluster, proc)
            ledger.append_events(gkey, activity.events)
            ledger.save_activity_state(gkey, activity.state())
            if activity.ended_at is not None:
                ledger.mark_ended(gkey, activity.ended_at)
        ledger.save_log_state(path, state, count)
    stats.log_events += count


def adopt_orphan_outputs(ledger: ledger_mod.Ledger, entry: EntryDir, orphan_after_s: float):
    """A returned stderr whose glidein the activity logs never mentioned (rotated away): an
    ended glidein as of the file's time, once it has not changed for ``orphan_after_s``."""
    now = time.time()
    for cluster, proc, path in returned_outputs(entry):
        gkey = ledger_mod.glidein_key(str(entry.path), cluster, proc)
        if ledger.glidein(gkey) is not None:
            continue
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if now - mtime < orphan_after_s:
            continue
        with ledger.transaction():
            ledger.upsert_glidein(gkey, str(entry.path), entry.instance, entry.entry, cluster, proc)
            ledger.mark_ended(gkey, mtime)
