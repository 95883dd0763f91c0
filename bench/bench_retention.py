"""Benchmark: 60 days of a Factory, time compressed: does the forwarder's history stay flat?

A simulated Factory finishes ``--per-day`` glideins a day (each a real returned stderr with
its journal section, and its Condor-G activity log, one log a day as GlideinWMS writes them)
for ``--days`` days. GlideinWMS's log cleaner is simulated too: outputs and activity logs
older than the retention (``--keep-days``, also set in the glideinWMS.xml the forwarder
reads, ``<log_retention>``) are deleted at each day's end. One forwarder pass a day, into the
embedded store with ``store_max_days`` = the retention. The clock the forwarder, ledger and
store read is the simulation's (one day per pass), so 60 days take minutes.

Per day: the ledger's size (its file after a checkpoint; freed pages are reused, never
given back) and rows, the store's size (files + index), the pass's CPU. With retention they
stay flat from the retention's end on; `--no-retention` runs the same days without the
cleaner and the store's bound, in the same process: the growth they stop.

    python -m bench.bench_retention [--days 60] [--per-day 300] [--keep-days 30] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time
from pathlib import Path

from glidein_tracing.exporters import store as store_mod
from glidein_tracing.exporters.store import store_files
from glidein_tracing.factory.build import build_forwarder
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.factory.settings import ForwarderSettings
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from bench.bench_forwarder import FACTORY, returned_glidein
from bench.calibration import calibrate
from bench import quick

DAY = 86400.0
XML = """<glidein factory_name="{f}" glidein_name="bench" schedd_name="schedd@bench">
  <log_retention>
    <condor_logs max_days="{days}" max_mbytes="100000" min_days="{condor_min}"/>
    <job_logs max_days="{days}" max_mbytes="100000" min_days="{job_min}"/>
  </log_retention>
  <entries/>
</glidein>
"""


class SimulatedClock:
    """time.time for the forwarder, ledger and store: the simulation's day."""

    def __init__(self, start: float):
        self.now = start
        self._real = time.time

    def __enter__(self):
        time.time = lambda: self.now
        self._today = store_mod._today
        store_mod._today = lambda: int(time.strftime("%Y%m%d", time.gmtime(self.now)))
        return self

    def __exit__(self, *exc):
        time.time = self._real
        store_mod._today = self._today


def one_day(layout: FactoryLayout, day: int, start: float, per_day: int, jobs: int):
    """``per_day`` glideins that ran and ended during the day starting at ``start``."""
    layout.log_nr = time.strftime("%Y%m%d", time.gmtime(start))
    log = CondorGLog(layout)
    for n in range(per_day):
        cluster, proc = 1000 * day + n // 100, n % 100
        begin = start + n * (DAY - 7200) / per_day
        returned_glidein(log, layout, cluster, proc, begin, jobs)
        end = begin + 200 + 70 * jobs
        for kind in ("err", "out"):
            os.utime(layout.output(cluster, proc, kind), (end, end))
        log.terminated(cluster, proc, 0, when=end)
    os.utime(layout.activity_log, (start + DAY - 3600, start + DAY - 3600))


def cleaner(layout: FactoryLayout, now: float, keep_days: float) -> int:
    """GlideinWMS's log cleaner: outputs and activity logs older than ``keep_days`` go."""
    removed = 0
    for path in layout.entry_dir.iterdir():
        if path.name.startswith(("job.", "condor_activity_")) and path.stat().st_mtime < now - keep_days * DAY:
            path.unlink()
            removed += 1
    return removed


def sizes(root: Path, ledger: Ledger) -> tuple:
    ledger.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    rows = ledger.db.execute("SELECT count(*) FROM glideins").fetchone()[0]
    ledger_bytes = sum(p.stat().st_size for p in root.glob("ledger.sqlite*"))
    store = root / "store"
    index = store / "index.sqlite"
    if index.exists():
        with sqlite3.connect(index) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store_bytes = sum(p.stat().st_size for p in store_files(store)) + sum(
        p.stat().st_size for p in store.glob("index.sqlite*"))
    return ledger_bytes, rows, store_bytes


def run(root: Path, days: int, per_day: int, keep_days: float, jobs: int, retention: bool) -> list:
    layout = FactoryLayout(logs=root / "logs", instance="bench", entry="RETENTION")
    layout.entry_dir.mkdir(parents=True)
    xml = root / "glideinWMS.xml"
    days_kept = keep_days if retention else 100000
    # GlideinWMS's default min_days (2, 3): how long files stay absent before a glidein is forgotten
    xml.write_text(XML.format(f=FACTORY, days=days_kept, job_min=min(2.0, days_kept), condor_min=min(3.0, days_kept)))
    settings = ForwarderSettings(logs=(str(layout.logs),), factory=FACTORY, grace=600,
                                 factory_config=str(xml), store=str(root / "store"), state=str(root / "ledger.sqlite"),
                                 store_max_days=keep_days if retention else None, table="none")
    first = time.time() - (days + 1) * DAY
    first -= first % DAY
    out = []
    with SimulatedClock(first) as clock:
        forwarder = build_forwarder(settings)
        for day in range(1, days + 1):
            start = first + (day - 1) * DAY
            one_day(layout, day, start, per_day, jobs)
            clock.now = start + DAY - 60
            if retention:
                cleaner(layout, clock.now, keep_days)
            cpu = time.process_time()
            stats = forwarder.run_once()
            cpu = time.process_time() - cpu
            ledger_bytes, rows, store_bytes = sizes(root, forwarder.ledger)
            out.append((day, stats.glideins_done, stats.glideins_forgotten, rows, ledger_bytes, store_bytes, cpu))
        forwarder.ledger.close()
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=int, default=60)
    parser.add_argument("--per-day", type=int, default=300)
    parser.add_argument("--keep-days", type=float, default=30.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--every", type=int, default=5, help="print every Nth day (and the last)")
    parser.add_argument("--no-retention", action="store_true", help="also the same days without retention")
    args = quick.parse_args(parser, days=4, per_day=5, keep_days=2.0, every=1)
    print(f"calibration: {calibrate():.1f} ms; {args.per_day} glideins a day, {args.jobs} jobs each, "
          f"retention {args.keep_days:g} days")
    runs = [("retention", True)] + ([("no retention", False)] if args.no_retention else [])
    for name, retention in runs:
        with tempfile.TemporaryDirectory(prefix="bench-retention-") as tmp:
            rows = run(Path(tmp), args.days, args.per_day, args.keep_days, args.jobs, retention)
        print(f"-- {name}")
        print(f"{'day':>4} {'done':>5} {'forgot':>6} {'ledger rows':>11} {'ledger KB':>10} {'store KB':>9} "
              f"{'pass CPU ms':>11}")
        for day, done, forgot, count, ledger_bytes, store_bytes, cpu in rows:
            if day % args.every == 0 or day == args.days or day == 1:
                print(f"{day:>4} {done:>5} {forgot:>6} {count:>11} {ledger_bytes / 1024:>10.0f} "
                      f"{store_bytes / 1024:>9.0f} {cpu * 1000:>11.0f}")
        late = [r for r in rows if r[0] > args.keep_days + 1]
        if late:
            def spread(i):
                values = [r[i] for r in late]
                return f"{min(values) / 1024:.0f}-{max(values) / 1024:.0f} KB"
            cpus = sorted(r[6] * 1000 for r in late)
            print(f"days {int(args.keep_days) + 2}-{args.days}: ledger {spread(4)}, store {spread(5)}, "
                  f"pass CPU median {cpus[len(cpus) // 2]:.0f} ms")


if __name__ == "__main__":
    main()
