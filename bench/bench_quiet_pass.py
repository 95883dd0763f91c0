"""Benchmark: a forwarder pass with nothing new, against the settled outputs on disk.

An entry directory holds N returned outputs (``job.C.P.err``) whose glideins the ledger has
done, and their activity log; nothing is new. Measured in the same run, for each N:
- ours: the CPU of `Forwarder.run_once()` in a forwarder that has made a pass already (the
  service's case), and of the first pass of a new process (it lists each entry directory
  once and asks the ledger in one query which outputs it knows);
- ours with one file new in the entry directory (a returned stdout): the directory is listed
  again, and only the new name looked at;
- naive: what a pass did before, over the same tree and ledger: every stderr's name sorted
  as a `Path`, and one ledger lookup per file.
Ours should stay flat with N; naive grows with it.

    python -m bench.bench_quiet_pass [--sizes 2000 20000 200000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from glidein_tracing.factory.build import build_forwarder
from glidein_tracing.factory.ledger import Ledger, glidein_key
from glidein_tracing.factory.outputs import find_entry_dirs
from glidein_tracing.factory.settings import ForwarderSettings
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from bench.calibration import calibrate
from bench import quick

FACTORY = "bench_factory"


def build(root: Path, outputs: int):
    """A tree of ``outputs`` settled outputs and a ledger that has them all done."""
    layout = FactoryLayout(logs=root / "logs", entry="QUIET")
    layout.entry_dir.mkdir(parents=True)
    log = CondorGLog(layout)
    log.submit(1, 0, when=time.time() - 7200)    # an activity log, already read
    log.terminated(1, 0, 0, when=time.time() - 7000)
    old = time.time() - 3600
    for n in range(outputs):
        path = layout.output(1000 + n, 0, "err")
        path.write_bytes(b"")
        os.utime(path, (old, old))
    os.utime(layout.entry_dir, (old, old))
    ledger = Ledger(root / "ledger.sqlite")
    entry = str(find_entry_dirs([layout.logs])[0].path)
    with ledger.transaction():
        for n in range(outputs):
            gkey = glidein_key(entry, 1000 + n, 0)
            ledger.upsert_glidein(gkey, entry, layout.instance, layout.entry, 1000 + n, 0)
            ledger.mark_ended(gkey, old)
            ledger.mark_done(gkey, 5)
    return layout, ledger


def forwarder(layout, ledger):
    settings = ForwarderSettings(logs=(str(layout.logs),), factory=FACTORY, grace=1, table="none")
    return build_forwarder(settings, exporter=InMemorySpanExporter(), ledger=ledger)


def cpu(fn) -> float:
    start = time.process_time()
    fn()
    return (time.process_time() - start) * 1000.0


def naive_pass(layout, ledger):
    """The old orphan check: a sorted glob of Path objects and a lookup per file."""
    entry = find_entry_dirs([layout.logs])[0]
    for path in sorted(entry.path.glob("job.*.err")):
        _, cluster, proc, _ = path.name.split(".")
        ledger.glidein(glidein_key(str(entry.path), int(cluster), int(proc)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000, 200000])
    parser.add_argument("--repeat", type=int, default=5)
    args = quick.parse_args(parser, sizes=[20, 40], repeat=1)
    print(f"calibration: {calibrate():.1f} ms")
    print(f"{'outputs':>8} {'quiet pass ms':>14} {'first pass ms':>14} {'naive ms':>10} {'one new file ms':>16}")
    rows = []
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix="bench-quiet-") as tmp:
            layout, ledger = build(Path(tmp), size)
            first = cpu(forwarder(layout, ledger).run_once)      # reads the activity log once
            firsts = [cpu(forwarder(layout, ledger).run_once) for _ in range(args.repeat)]
            service = forwarder(layout, ledger)
            service.run_once()
            quiet = [cpu(service.run_once) for _ in range(args.repeat)]
            one_new = []
            for n in range(args.repeat):
                layout.output(1, n + 1, "out").write_bytes(b"")
                os.utime(layout.entry_dir, (time.time() - 60, time.time() - 60))   # listed as settled
                one_new.append(cpu(service.run_once))
            naive = [cpu(lambda: naive_pass(layout, ledger)) for _ in range(args.repeat)]
            ledger.close()
        row = (size, statistics.median(quiet), statistics.median(firsts), statistics.median(naive),
               statistics.median(one_new))
        rows.append(row)
        print(f"{row[0]:>8} {row[1]:>14.2f} {row[2]:>14.1f} {row[3]:>10.1f} {row[4]:>16.1f}   "
              f"(very first pass {first:.0f} ms)")
    base = rows[0]
    for size, quiet, first, naive, new in rows[1:]:
        print(f"x{size // base[0]} outputs: quiet pass x{quiet / base[1]:.2f}, first pass x{first / base[2]:.2f}, "
              f"naive x{naive / base[3]:.2f}, one new file x{new / base[4]:.2f}")


if __name__ == "__main__":
    main()
