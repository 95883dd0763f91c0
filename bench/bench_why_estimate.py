#!/usr/bin/env python3
"""Backtest of ``why``'s start estimate (glidein_tracing/why/estimate.py; not a test: figures
go to bench/README.md).

1. A synthetic glidein table (glidein_tracing.testing.synth_table, what ``python -m bench.synth
   --table DIR`` writes) over ``--days`` days: each entry has its planted queue-wait median
   (lognormal waits), its validation failures and its wait for a first job.
2. For each of the last ``--held-out`` days: the estimator sees only the 7 days before that
   day's start (``now`` = the day's start) and gives each entry its 80 % interval.
3. The actual starts of that day: every glidein submitted at an entry that day starts a
   request; a glidein that delivers a job ends it (its first job's start); one that fails
   before any job passes the request to the next glidein the Factory submitted there after the
   failure. Glideins that ran and got no job start no request and take none over.
4. Coverage: the share of actual starts inside the interval (target 75-85 %); again for the
   requests still waiting at the interval's median, against the estimate given that wait
   (``waited``); and the planted queue-wait medians beside the estimated ones.

Usage: python -m bench.bench_why_estimate [--glideins 60000] [--days 14] [--held-out 4] [--seed 3]
       [--quick]   (8,000 glideins over 10 days, 1 held-out day: the test suite's smoke run)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time

import numpy as np

from bench.quick import parse_args
from glidein_tracing.analysis.dataset import open_dataset
from glidein_tracing.testing.synth import SynthConfig, entry_profiles
from glidein_tracing.testing.synth_table import write_table
from glidein_tracing.why.estimate import DAYS, Estimator

DAY = 86400.0


def requests(table, since: float, until: float) -> dict:
    """entry -> the actual times from request to start of the requests begun in [since, until)."""
    data = open_dataset(table)
    rows = data.con.execute("""
        SELECT entry, epoch(submitted_at),
               CASE WHEN jobs > 0 THEN epoch(job_started_at[1]) END,
               CASE WHEN outcome = 'validation_failed' THEN epoch(node_start_at) + setup_s ELSE epoch(ended_at) END
        FROM glideins
        WHERE submitted_at IS NOT NULL AND (jobs > 0 OR outcome = 'validation_failed' OR failed)
        ORDER BY entry, 2""").fetchall()
    out: dict = {}
    by_entry: dict = {}
    for entry, submitted, first_job, failure in rows:
        by_entry.setdefault(entry, []).append((submitted, first_job, failure))
    for entry, glideins in by_entry.items():
        submitted = np.array([g[0] for g in glideins])
        starts = []
        for index in np.nonzero((submitted >= since) & (submitted < until))[0]:
            current = index
            while glideins[current][1] is None:            # failed: the next one submitted after the failure
                current = int(np.searchsorted(submitted, glideins[current][2]))
                if current >= len(glideins):
                    break
            else:
                starts.append(glideins[current][1] - submitted[index])
        out[entry] = np.array(starts)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--glideins", type=int, default=60000)
    parser.add_argument("--days", type=float, default=14.0)
    parser.add_argument("--held-out", type=int, default=4)
    parser.add_argument("--seed", type=int, default=3)
    args = parse_args(parser, argv, glideins=8000, days=10.0, held_out=1)
    cfg = SynthConfig(glideins=args.glideins, seed=args.seed, period_s=args.days * DAY)
    planted = {p.name: p.queue_median_s for p in entry_profiles(cfg)}
    with tempfile.TemporaryDirectory() as table:
        counts = write_table(cfg, table)
        print(f"table: {counts['glideins']:,} glideins over {args.days:g} days, {len(planted)} entries; "
              f"held-out days: the last {args.held_out} of those whose 7 days before are in the table")
        inside, total, inside_waited, total_waited, cpu = 0, 0, 0, 0, 0.0
        estimated_queue: dict = {}
        last_full = int(args.days) - 2       # the last day whose requests' replacements are all in the table
        for day in range(last_full - args.held_out + 1, last_full + 1):
            now = cfg.start + day * DAY
            actual = requests(table, now, now + DAY)
            estimator = Estimator(table, now=now, days=DAYS)
            day_inside = day_total = 0
            for entry, starts in sorted(actual.items()):
                started = time.process_time()
                estimate = estimator.estimate((entry,))
                cpu += time.process_time() - started
                if estimate.get("low_s") is None or not len(starts):
                    continue
                estimated_queue.setdefault(entry, []).append(estimate["queue_wait_median_s"])
                hit = (starts >= estimate["low_s"]) & (starts <= estimate["high_s"])
                day_inside, day_total = day_inside + int(hit.sum()), day_total + len(starts)
                waited = estimate["median_s"]
                later = starts[starts > waited] - waited
                given = estimator.estimate((entry,), waited=waited)
                if given.get("low_s") is not None and len(later):
                    inside_waited += int(((later >= given["low_s"]) & (later <= given["high_s"])).sum())
                    total_waited += len(later)
            inside, total = inside + day_inside, total + day_total
            print(f"held-out day {day + 1}: {day_total:,} starts, {100.0 * day_inside / max(day_total, 1):.1f} % "
                  "inside the 80 % interval")
        print(f"coverage of the 80 % interval: {100.0 * inside / max(total, 1):.1f} % of {total:,} actual starts "
              "(target 75-85 %)")
        print(f"coverage given the wait so far (the interval's median): "
              f"{100.0 * inside_waited / max(total_waited, 1):.1f} % of {total_waited:,} starts")
        for entry in sorted(estimated_queue):
            print(f"  {entry}: planted queue-wait median {planted[entry]:.0f} s, "
                  f"estimated {np.median(estimated_queue[entry]):.0f} s")
        print(f"CPU per estimate (one entry, 7 days): {1000.0 * cpu / max(1, sum(map(len, estimated_queue.values()))):.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
