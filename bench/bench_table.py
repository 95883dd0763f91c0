"""Benchmark: the glidein table's cost, against baselines measured in the same run.

1. Writing the table in a forwarder pass: `Forwarder.run_once()` over the same Factory log
   tree as bench_forwarder.py (OTLP/HTTP to a loopback sink in its own process), once with
   the table and once without; the rounds alternate the order, the least CPU of each is the
   figure. Target: the table adds at most 5 % to the pass.
2. Backfill from the embedded store: `glidein-tracing table --store` (table.backfill.from_store)
   over a synthetic store (glidein_tracing.analysis.synth), spans read per second (wall) and
   CPU per span (the main process and its workers). Target: at least 100,000 spans/s.
3. A busy day's compactions, which a single pass does not reach: ``--day-passes`` passes of
   ``--day-glideins`` glideins each (synthetic glideins' rows, new trace ids per pass) written
   into one day by ``writer.append`` as the forwarder's flush does, against the same files
   written without compaction (``writer.write_days``) in the same run: CPU per glidein, the
   compactions' share, files left in the day. Their cost belongs to the table's share of a
   pass, amortised.

    python -m bench.bench_table [--glideins 400] [--jobs 10] [--rounds 3] [--store-glideins 20000]
                                [--day-passes 729] [--day-glideins 100]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from bench.bench_forwarder import FACTORY, build_tree, measure, start_sink  # noqa: E402
from bench.calibration import calibrate  # noqa: E402

from glidein_tracing.analysis import synth  # noqa: E402
from glidein_tracing.exporters.otlp import make_otlp_exporter  # noqa: E402
from glidein_tracing.factory.forwarder import Forwarder  # noqa: E402
from glidein_tracing.factory.ledger import Ledger  # noqa: E402
from glidein_tracing.table import backfill  # noqa: E402
from glidein_tracing.table.sink import TableSink  # noqa: E402


class _Timed:
    """A table sink whose add, claim and flush add their CPU time to ``spent``."""

    def __init__(self, sink, spent: dict):
        self.sink, self.spent = sink, spent

    def __getattr__(self, name):
        method = getattr(self.sink, name)

        def timed(*args):
            start = time.process_time()
            try:
                return method(*args)
            finally:
                self.spent[name] = self.spent.get(name, 0.0) + time.process_time() - start
        return timed


def forwarder_pass(work: Path, glideins: int, jobs: int, endpoint: str, with_table: bool, spent: dict):
    """(stats, wall, cpu) of one pass over a fresh tree; the table's own CPU in ``spent``."""
    layout = build_tree(work, glideins, jobs)
    ledger = Ledger(work / "ledger.sqlite")
    table = _Timed(TableSink(work / "table", ledger), spent) if with_table else None
    forwarder = Forwarder([layout.logs], make_otlp_exporter(endpoint, 30), ledger, FACTORY, grace_s=1,
                          batch_spans=2000, table=table)
    return measure(forwarder.run_once)


def table_overhead(args, endpoint) -> None:
    import pyarrow.parquet  # noqa: F401  a forwarder imports it once, in its first pass: not a pass's cost
    best = {True: None, False: None}
    for index in range(args.rounds):
        for with_table in ((True, False) if index % 2 else (False, True)):
            work = Path(tempfile.mkdtemp(prefix="gt-bench-table-"))
            spent: dict = {}
            try:
                stats, wall, cpu = forwarder_pass(work, args.glideins, args.jobs, endpoint, with_table, spent)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            if with_table:
                assert stats.table_rows == args.glideins, stats.table_rows
            if best[with_table] is None or cpu < best[with_table][2]:
                best[with_table] = (stats.spans_sent, wall, cpu, spent)
    for with_table, (spans, wall, cpu, _) in best.items():
        print(f"forwarder pass {'with the table   ' if with_table else 'without the table'}: {spans} spans, "
              f"{wall:.2f} s wall, {cpu:.2f} s CPU")
    ratio = best[True][2] / best[False][2] - 1
    print(f"the table adds {100 * ratio:+.1f} % CPU to a pass (wall {100 * (best[True][1] / best[False][1] - 1):+.1f} %); "
          f"target at most 5 %: {'met' if ratio <= 0.05 else 'NOT met'}")
    spent = best[True][3]
    own = sum(spent.values())
    print("the table's own CPU in that pass: " + ", ".join(
        f"{name} {1000 * seconds / args.glideins:.2f} ms" for name, seconds in sorted(spent.items()))
        + f" per glidein; {1000 * own / args.glideins:.2f} ms in all, {100 * own / (best[True][2] - own):.1f} % "
        f"of the rest of the pass")


def _children_cpu() -> float:
    """CPU seconds of this process's ended children (the backfill's workers): on a machine
    others load, CPU per span compares runs where spans per second cannot."""
    times = os.times()
    return times.children_user + times.children_system


def backfill_rate(args) -> None:
    work = Path(tempfile.mkdtemp(prefix="gt-bench-backfill-"))
    try:
        cfg = synth.SynthConfig(glideins=args.store_glideins, seed=3, period_s=7 * 86400)
        counts = synth.write_store(cfg, work / "store")
        print(f"store: {counts}")
        for workers in (1, os.cpu_count() or 1):
            target = work / f"table-{workers}"
            children = _children_cpu()
            report, wall, cpu = measure(lambda: backfill.from_store(work / "store", target, workers=workers))
            workers_cpu = _children_cpu() - children
            rate = report.spans / wall
            print(f"backfill from the store, {workers} process(es): {report.spans} spans, {report.glideins} rows, "
                  f"{wall:.2f} s wall ({cpu:.2f} s CPU in the main process, {workers_cpu:.2f} s in the workers; "
                  f"{1e6 * (cpu + workers_cpu) / report.spans:.1f} us of CPU per span): {rate:,.0f} spans/s; "
                  f"target at least 100,000 spans/s: {'met' if rate >= 100_000 else 'NOT met'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _pass_rows(glideins: int):
    """Rows of synthetic glideins (rows.glidein_values of their spans) to write pass after pass."""
    from glidein_tracing.table.readable import decode_line
    from glidein_tracing.table.rows import glidein_values
    work = Path(tempfile.mkdtemp(prefix="gt-bench-day-"))
    try:
        synth.write_store(synth.SynthConfig(glideins=glideins, seed=5, period_s=86400), work / "store")
        values = [glidein_values(decode_line(line)) for path in sorted((work / "store").rglob("*.jsonl"))
                  for line in path.read_bytes().splitlines() if line]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return values


def day_of_passes(args) -> None:
    from glidein_tracing.table import layout, writer
    from glidein_tracing.table.rows import GLIDEIN_COLUMNS, JOB_COLUMNS
    base = _pass_rows(args.day_glideins)
    at, job_at = GLIDEIN_COLUMNS.index("trace_id"), JOB_COLUMNS.index("trace_id")
    day = layout.day_of(base[0][0][GLIDEIN_COLUMNS.index("ended_at")])

    def batch(k):
        glideins, jobs = [], []
        for index, (row, job_rows) in enumerate(base):
            trace = f"{k:016x}{index:016x}"
            glideins.append(row[:at] + (trace,) + row[at + 1:])
            jobs += [job[:job_at] + (trace,) + job[job_at + 1:] for job in job_rows]
        return {day: glideins}, {day: jobs}
    glideins = args.day_passes * len(base)
    results = {}
    for compacting in (False, True):
        table = Path(tempfile.mkdtemp(prefix="gt-bench-day-table-"))
        wall = cpu = 0.0
        try:
            for k in range(args.day_passes):    # each pass's rows made outside the timing
                glidein_rows, job_rows = batch(k)
                token = writer.new_token()

                def write():
                    with layout.locked(table):
                        if compacting:
                            writer.append(table, glidein_rows, job_rows, token)
                        else:
                            writer.write_days(table, "glideins", glidein_rows, token)
                            writer.write_days(table, "jobs", job_rows, token)
                _, pass_wall, pass_cpu = measure(write)
                wall, cpu = wall + pass_wall, cpu + pass_cpu
            files = len(layout.part_files(layout.day_dir(table, "glideins", day)))
            results[compacting] = (wall, cpu, files)
        finally:
            shutil.rmtree(table, ignore_errors=True)
    (_, plain, plain_files), (wall, cpu, files) = results[False], results[True]
    print(f"a day of {args.day_passes} passes of {len(base)} glideins: written with compaction "
          f"{1000 * cpu / glideins:.3f} ms CPU per glidein ({wall:.1f} s wall), {files} glidein files left; "
          f"without compaction {1000 * plain / glideins:.3f} ms ({plain_files} files): the compactions add "
          f"{1000 * (cpu - plain) / glideins:.3f} ms per glidein")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--glideins", type=int, default=400)
    parser.add_argument("--jobs", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--store-glideins", type=int, default=20000, help="0: no backfill run")
    parser.add_argument("--day-passes", type=int, default=729, help="0: no day of passes")
    parser.add_argument("--day-glideins", type=int, default=100)
    args = parser.parse_args()
    _, endpoint, sink = start_sink()
    before = calibrate()
    try:
        print(f"glideins per pass: {args.glideins}, jobs each: {args.jobs}, rounds: {args.rounds}, "
              f"cores: {os.cpu_count()}")
        table_overhead(args, endpoint)
    finally:
        sink.terminate()
    if args.store_glideins:
        backfill_rate(args)
    if args.day_passes:
        day_of_passes(args)
    print(f"machine speed (bench/calibration.py, lower is faster): {before:.0f} ms before, {calibrate():.0f} ms after")


if __name__ == "__main__":
    main()
