"""Benchmark: the cost of keeping the forwarder's Prometheus metrics (docs/metrics.md), as a
share of a pass, against the same pass without them in the same run.

A pass is `Forwarder.run_once()` over the Factory log tree of bench_forwarder.py (OTLP/HTTP to
a loopback sink in its own process), writing the glidein table, into a table that already
holds ``--history`` synthetic glideins over ``--days`` days (testing/synth_table.py). With the
metrics, the pass records its tallies in the ledger (metrics.record_pass) and is followed by
``--scrapes`` collections (a 15 s scrape interval over a 60 s pass interval: 4), the first of
which reads the files the pass wrote; the history's files were read by a scrape before the
pass, as a running forwarder's were. Without them, record_pass does nothing and no scrape
runs. The rounds alternate the order; the least CPU of each is the figure. Target: the
metrics add under 2 % to a pass.

Also printed: a scrape that finds nothing new, and a restart's first scrape, which reads
every file of the table.

    python -m bench.bench_metrics [--glideins 400] [--jobs 10] [--history 200000] [--days 30]
                                  [--scrapes 4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from bench.bench_forwarder import build_tree, forwarder_settings, measure, start_sink
from bench.calibration import calibrate
from bench import quick

from glidein_tracing.factory import forwarder as forwarder_module
from glidein_tracing.factory.build import build_forwarder
from glidein_tracing.factory.factory_xml import default_log_retention
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.factory.metrics import ForwarderCollector
from glidein_tracing.testing import synth, synth_table


def collector_of(work: Path) -> ForwarderCollector:
    return ForwarderCollector("bench", work / "table", work / "ledger.sqlite", default_log_retention())


def scrape(collector) -> int:
    """One collection, as prometheus-client makes it at a scrape: its samples."""
    return sum(len(family.samples) for family in collector.collect())


def one_pass(args, history: Path, endpoint: str, with_metrics: bool):
    """(CPU of the pass, of its record_pass, of the scrapes after it, stats) over a fresh tree
    and a copy of the history."""
    work = Path(tempfile.mkdtemp(prefix="gt-bench-metrics-"))
    try:
        shutil.copytree(history, work / "table")
        layout = build_tree(work, args.glideins, args.jobs)
        forwarder = build_forwarder(forwarder_settings(layout, endpoint, work, str(work / "table")))
        collector = collector_of(work)
        if with_metrics:
            scrape(collector)          # the history, read by the scrapes before this pass
        recorded, spent = forwarder_module.record_pass, []

        def timed_record(*given):
            _, _, cpu = measure(lambda: recorded(*given))
            spent.append(cpu)
        forwarder_module.record_pass = timed_record if with_metrics else (lambda *_: None)
        try:
            stats, _, pass_cpu = measure(forwarder.run_once)
        finally:
            forwarder_module.record_pass = recorded
        scrapes_cpu = 0.0
        if with_metrics:
            for _ in range(args.scrapes):
                _, _, cpu = measure(lambda: scrape(collector))
                scrapes_cpu += cpu
        forwarder.ledger.close()
        return pass_cpu, sum(spent), scrapes_cpu, stats
    finally:
        shutil.rmtree(work, ignore_errors=True)


def share_of_a_pass(args, history: Path, endpoint: str) -> None:
    """The metrics' own CPU (record_pass in the pass, the scrapes after it) against the pass
    without them; and the two passes' difference, which the machine's noise blurs more."""
    best = {True: None, False: None}
    for index in range(args.rounds):
        for with_metrics in ((True, False) if index % 2 else (False, True)):
            pass_cpu, record_cpu, scrapes_cpu, stats = one_pass(args, history, endpoint, with_metrics)
            assert stats.table_rows == args.glideins, stats.table_rows
            if best[with_metrics] is None or pass_cpu + scrapes_cpu < best[with_metrics][0] + best[with_metrics][2]:
                best[with_metrics] = (pass_cpu, record_cpu, scrapes_cpu)
    (with_pass, record_cpu, scrapes_cpu), (without, _, _) = best[True], best[False]
    own = record_cpu + scrapes_cpu
    print(f"pass without metrics: {without:.3f} s CPU; with them: {with_pass:.3f} s CPU (record_pass "
          f"{1000 * record_cpu:.2f} ms of it) and {args.scrapes} scrapes after it {1000 * scrapes_cpu:.1f} ms")
    print("pass and scrapes against the pass without metrics: "
          f"{100 * ((with_pass + scrapes_cpu) / without - 1):+.2f} % "
          "(the machine's noise included)")
    print(f"the metrics' own CPU is {100 * own / without:.2f} % of a pass of {args.glideins} glideins; target under "
          f"2 %: {'met' if own < 0.02 * without else 'NOT met'}")


def restart_and_quiet_scrapes(history: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="gt-bench-metrics-"))
    try:
        shutil.copytree(history, work / "table")
        Ledger(work / "ledger.sqlite").close()
        collector = collector_of(work)
        samples, wall, cpu = measure(lambda: scrape(collector))
        print(f"a restart's first scrape (every file of the table read): {wall:.2f} s wall, {cpu:.2f} s CPU, "
              f"{samples} samples")
        _, wall, cpu = measure(lambda: scrape(collector))
        print(f"a scrape that finds no new file: {1000 * wall:.1f} ms wall, {1000 * cpu:.1f} ms CPU")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--glideins", type=int, default=400, help="glideins per pass")
    parser.add_argument("--jobs", type=int, default=10)
    parser.add_argument("--history", type=int, default=200_000, help="synthetic glideins already in the table")
    parser.add_argument("--days", type=int, default=30, help="days the history spans")
    parser.add_argument("--scrapes", type=int, default=4, help="scrapes per pass")
    parser.add_argument("--rounds", type=int, default=3)
    args = quick.parse_args(parser, glideins=10, jobs=2, history=500, days=2, scrapes=2, rounds=1)
    history = Path(tempfile.mkdtemp(prefix="gt-bench-metrics-history-"))
    _, endpoint, sink = start_sink()
    before = calibrate()
    try:
        synth_table.write_table(synth.SynthConfig(glideins=args.history, seed=9, period_s=args.days * 86400), history)
        print(f"glideins per pass: {args.glideins}, jobs each: {args.jobs}, history: {args.history} glideins over "
              f"{args.days} days, scrapes per pass: {args.scrapes}, rounds: {args.rounds}, cores: {os.cpu_count()}")
        share_of_a_pass(args, history, endpoint)
        restart_and_quiet_scrapes(history)
    finally:
        sink.terminate()
        shutil.rmtree(history, ignore_errors=True)
    print(f"machine speed (bench/calibration.py, lower is faster): {before:.0f} ms before, {calibrate():.0f} ms after")


if __name__ == "__main__":
    main()
