"""What the Factory's logs say, into the ledger: each Condor-G activity log read from where
the last pass stopped, and returned outputs no activity log mentions (rotated away).

A pass costs what is new since the last one: an activity log whose size and mtime have not
moved is not opened, and an entry directory is listed only when a file came or went in it
(outputs.EntryListing); outputs whose glidein the ledger knows are never looked at again."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from ..core.journal import Event
from . import ledger as ledger_mod
from .activity import read_activity_log
from .outputs import EntryDir, EntryListing, find_entry_dirs, output_name, parse_output_name
from .stats import ForwardStats

log = logging.getLogger("glidein_tracing.forward")


class Scanner:
    """The log trees under ``roots`` as this forwarder last saw them (kept between passes of
    one process; a new process lists each entry directory once, asking the ledger in one
    query which of its outputs are known)."""

    def __init__(self, roots, ledger: ledger_mod.Ledger):
        self.roots = [Path(r) for r in roots]
        self.ledger = ledger
        self.listings: dict = {}    # entry dir path -> EntryListing
        self._log_marks: dict = {}  # activity log path -> (size, mtime ns) when last read whole
        self.entries: list = []     # the entry directories the last scan found

    def scan(self, stats: ForwardStats, orphan_after_s: float):
        """Every entry under the roots: its activity logs' new events, then its orphan outputs
        older than ``orphan_after_s`` (seconds)."""
        self.entries = find_entry_dirs(self.roots)
        for entry in self.entries:
            listing = self.listings.get(entry.path)
            if listing is None:
                known = self.ledger.known_outputs(str(entry.path))
                listing = self.listings[entry.path] = EntryListing(entry, {output_name(c, p) for c, p in known})
            listing.refresh()
            for path in listing.activity_logs:
                self._read_if_grown(entry, path, stats)
            adopt_orphan_outputs(self.ledger, listing, orphan_after_s)
        gone = set(self.listings) - {entry.path for entry in self.entries}
        for path in gone:
            del self.listings[path]

    def _read_if_grown(self, entry: EntryDir, path: Path, stats: ForwardStats):
        try:
            st = os.stat(path)
            mark = (st.st_size, st.st_mtime_ns)
        except OSError:
            mark = None
        if mark is not None and self._log_marks.get(path) == mark:
            return
        if read_log(self.ledger, entry, path, stats) and mark is not None:
            self._log_marks[path] = mark   # read up to at least this size: unchanged, nothing new


def read_log(ledger: ledger_mod.Ledger, entry: EntryDir, path: Path, stats: ForwardStats) -> bool:
    """One activity log's new events: each glidein's Factory-side events and its end, with the
    reader's position, in one ledger transaction. False: the log could not be read."""
    try:
        restore = lambda c, p: ledger.activity_state(ledger_mod.glidein_key(str(entry.path), c, p))
        activities, state, count = read_activity_log(path, ledger.log_state(path), restore)
    except Exception as exc:  # unreadable or corrupt event log: keep going
        log.warning("cannot read activity log %s: %s", path, exc)
        stats.problem("unreadable_activity_log")
        return False
    with ledger.transaction():
        for (cluster, proc), activity in activities.items():
            if activity.after_end:
                stats.problem("activity_events_after_end", activity.after_end)
            gkey = ledger_mod.glidein_key(str(entry.path), cluster, proc)
            events = activity.events
            forgotten = None if ledger.knows(gkey) else ledger.forgotten(gkey)
            if forgotten is not None:
                if forgotten[1] is None:    # done and forgotten, its files back: sent already
                    stats.problem("forgotten_glidein_seen_again")
                    continue
                # forgotten while open: its root starts where its Factory events did, around the
                # Factory stages sent while it ran
                ledger.unforget(gkey)
                events = [Event(time=forgotten[1], op="start", key="glidein",
                                fields={"@name": "glidein", "@stage": "glidein"})] + list(events)
            ledger.upsert_glidein(gkey, str(entry.path), entry.instance, entry.entry, cluster, proc, str(path))
            ledger.append_events(gkey, events)
            ledger.save_activity_state(gkey, activity.state())
            if activity.ended_at is not None:
                ledger.mark_ended(gkey, activity.ended_at)
        ledger.save_log_state(path, state, count)
    stats.log_events += count
    return True


def adopt_orphan_outputs(ledger: ledger_mod.Ledger, listing: EntryListing, orphan_after_s: float):
    """A returned stderr whose glidein the activity logs never mentioned (rotated away): an
    ended glidein as of the file's time, once it has not changed for ``orphan_after_s``.
    Only outputs not yet settled are looked at."""
    now = time.time()
    entry = listing.entry
    for name in sorted(listing.waiting):
        cluster, proc = parse_output_name(name)
        gkey = ledger_mod.glidein_key(str(entry.path), cluster, proc)
        if ledger.remembers(gkey):      # known, or forgotten within the retention window
            listing.settle(name)
            continue
        try:
            mtime = (entry.path / name).stat().st_mtime
        except OSError:
            continue
        if now - mtime < orphan_after_s:
            continue
        with ledger.transaction():
            ledger.upsert_glidein(gkey, str(entry.path), entry.instance, entry.entry, cluster, proc)
            ledger.mark_ended(gkey, mtime)
        listing.settle(name)
