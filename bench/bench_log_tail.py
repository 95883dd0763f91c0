"""Benchmark: what the log tail adds to the cleanup hook of a failed glidein.

A glidein whose validation script fails is run once in the simulator (real hooks, the work
dir kept). Then the real cleanup hook runs on that work dir again and again, as
glidein_startup.sh runs it (`./gconditional_TRACING_cleanup.sh /abs/glidein_config` from
exec/cleanup), alternating GLIDEIN_TRACING_LOG_TAIL_LINES=50 (the default) and =0 (off),
with the journal restored before every run. Reported: the median wall time of each, and the
difference (target: at most 50 ms). Two logs: the glidein's own (a few KB), and the same with
64 MB of text before it (a huge log: `tail -c` seeks, so it should cost the same).

    python -m bench.bench_log_tail [--runs 40]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench import quick

REPO = Path(__file__).resolve().parents[1]

from glidein_tracing.simulator import Scenario, simulate_glidein  # noqa: E402

HOOK = "gconditional_TRACING_cleanup.sh"


def failed_glidein(root: Path):
    result = simulate_glidein(root, Scenario(fail_script=("check_wn_drainstate.sh", "WN_Resource"),
                                             fail_sleep_s=0.1, keep_workdir=True))
    work = result.work_dir
    if work is None or not (work / "glidein_config").exists():
        raise SystemExit("the simulated glidein kept no work dir")
    return work


def set_knob(config: Path, base: str, lines: int):
    config.write_text(base + f"GLIDEIN_TRACING_LOG_TAIL_LINES {lines}\n")


def one_run(work: Path, journal: Path, saved: bytes) -> float:
    journal.write_bytes(saved)
    cleanup = work / ".gwms.d" / "exec" / "cleanup"
    start = time.perf_counter()
    subprocess.run(["bash", f"./{HOOK}", str(work / "glidein_config")], cwd=cleanup,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    return (time.perf_counter() - start) * 1000


def measure(work: Path, runs: int) -> dict:
    config = work / "glidein_config"
    base = config.read_text()
    journal = work / "glidein_tracing" / "journal.gtj"
    saved = journal.read_bytes()
    times = {50: [], 0: []}
    try:
        for _ in range(2):   # warm the page cache and bash
            for lines in times:
                set_knob(config, base, lines)
                one_run(work, journal, saved)
        for _ in range(runs):
            for lines in times:   # alternate, so drifts in machine load hit both alike
                set_knob(config, base, lines)
                times[lines].append(one_run(work, journal, saved))
    finally:
        config.write_text(base)
        journal.write_bytes(saved)
    return {lines: statistics.median(values) for lines, values in times.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    args = quick.parse_args(parser, argv, runs=1)
    with tempfile.TemporaryDirectory(prefix="bench-log-tail-") as tmp:
        work = failed_glidein(Path(tmp) / "glidein")
        logs = list((work / "logs").glob("*/*.err"))
        if not logs:
            raise SystemExit("the simulated glidein wrote no logs/<uuid>/<uuid>.err")
        err = logs[0]
        print(f"cleanup hook of a failed glidein, median of {args.runs} runs each (ms)")
        print(f"{'log':<32} {'tail on (50)':>12} {'tail off (0)':>12} {'added':>8}")
        own = err.read_bytes()
        for label, prefix in (("the glidein's own", b""),
                              ("64 MB before it", (b"x" * 127 + b"\n") * (64 * 1024 * 1024 // 128))):
            err.write_bytes(prefix + own)
            medians = measure(work, args.runs)
            print(f"{label + f' ({err.stat().st_size:,} B)':<32} {medians[50]:12.1f} {medians[0]:12.1f} "
                  f"{medians[50] - medians[0]:8.1f}")
        print("target: the log tail adds at most 50 ms")


if __name__ == "__main__":
    main()
