"""Benchmark: what the log tail adds to the cleanup hook of a failed glidein, and to the
job-exit hook of a failed job.

A glidein whose validation script fails is run once in the simulator (real hooks, the work
dir kept). Then the real cleanup hook runs on that work dir again and again, as
glidein_startup.sh runs it (`./gconditional_TRACING_cleanup.sh /abs/glidein_config` from
exec/cleanup), alternating GLIDEIN_TRACING_LOG_TAIL_LINES=50 (the default) and =0 (off),
with the journal restored before every run. Reported: the median wall time of each, and the
difference (target: at most 50 ms). Two logs: the glidein's own (a few KB), and the same with
64 MB of text before it (a huge log: `tail -c` seeks, so it should cost the same).

The job part (issue 45: a failed job's tail in the exit hook, redaction included): a glidein
with one failed job is simulated once, then its installed exit hook runs as the starter runs
it (final ad on stdin, `exit`, in the job's scratch dir), the journal restored before every
run, alternating three kinds: the tail on (GLIDEIN_TRACING_JOB_LOG_TAIL_LINES=50), off (0),
and on with the library's gt_redact returning its text unchanged (the same run's floor of
the tail without redaction). Two job logs of 2,000 lines: ordinary output, and the same with
every fifth line holding secrets (a Bearer header, a --password=, a URL password). Target:
the tail adds at most 8 ms quiet, 50 ms at load 10.

Then the same hook, tail off, with a hostile spool of a million phases (it reads 4 MB, keeps and
redacts 500 names and 500 marks) against none. With --compare-lib LIB, the tail on and the spool
also with LIB's gt_redact (e.g. an earlier commit's library, `git show
REV:glidein_tracing/node/hooks/gconditional_TRACING_lib.sh`).

    python -m bench.bench_log_tail [--runs 40] [--job] [--compare-lib LIB]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench import quick

REPO = Path(__file__).resolve().parents[1]

from glidein_tracing.simulator import Scenario, simulate_glidein  # noqa: E402
from bench.bench_phase import SECRET_LINES, failed_job_glidein, hook_ms, hostile_spool_ms  # noqa: E402

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


PLAIN_LINES = b"".join(b"line %d of the job's output, event %d done in 0.%d s\n" % (i, i * 37, i % 10)
                      for i in range(2000))


def job_tail_cost(runs: int, compare_lib: Path | None = None) -> dict:
    """{log label: (tail on, tail off, tail on without redaction[, tail on with the redaction of
    ``compare_lib``]) median ms} for the exit hook of a failed job."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="bench-job-tail-") as tmp:
        work, scratch = failed_job_glidein(Path(tmp))
        config = work / "glidein_config"
        base = config.read_text()
        lib = Path(next(line.split(" ", 1)[1] for line in base.splitlines() if line.startswith("GLIDEIN_TRACING_LIB ")))
        shipped = lib.read_text()
        unredacted = shipped + "\nGT_AWK_REDACT='function gt_redact(s) { return s }'\n"
        hook = work / "glidein_tracing" / "job_exit_hook"
        ad = (scratch / ".final.ad").read_bytes()
        journal = work / "glidein_tracing" / "journal.gtj"
        saved = journal.read_bytes()
        kinds = {"on": (50, shipped), "off": (0, shipped), "on, no redaction": (50, unredacted)}
        if compare_lib is not None:   # another version's gt_redact (its GT_AWK_REDACT) in this library
            other = re.search(r"^GT_AWK_REDACT='.*?^'$", compare_lib.read_text(), re.M | re.S)
            if other is None:
                raise SystemExit(f"no GT_AWK_REDACT in {compare_lib}")
            kinds["on, compared"] = (50, shipped + "\n" + other.group() + "\n")
        try:
            for label, text in (("ordinary output", PLAIN_LINES), ("every fifth line secrets", SECRET_LINES)):
                (scratch / "_condor_stdout").write_bytes(text)
                times = {kind: [] for kind in kinds}
                for round_ in range(runs + 1):
                    for kind, (lines, library) in kinds.items():   # alternated: load drifts hit all alike
                        config.write_text(base + f"GLIDEIN_TRACING_JOB_LOG_TAIL_LINES {lines}\n")
                        lib.write_text(library)
                        ms = hook_ms(hook, scratch, ad, journal, saved)
                        if round_:                                  # the first round warms up
                            times[kind].append(ms)
                out[label] = tuple(statistics.median(times[kind]) for kind in kinds)
            # the phases of a hostile spool (a million, 4 MB read, 500 names and 500 marks
            # redacted), tail off: (without a spool, with it) for this library and the compared
            config.write_text(base + "GLIDEIN_TRACING_JOB_LOG_TAIL_LINES 0\n")
            for kind in ("on", "on, compared"):
                if kind in kinds:
                    lib.write_text(kinds[kind][1])
                    out["spool " + kind] = hostile_spool_ms(hook, scratch, ad, journal, saved, runs)[:2]
        finally:
            lib.write_text(shipped)
            config.write_text(base)
            journal.write_bytes(saved)
    return out


def load1() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def print_job_tail(runs: int, compare_lib: Path | None = None):
    print(f"job-exit hook of a failed job, median of {runs} runs each (ms), load {load1()}")
    compared = f" {'on, ' + compare_lib.name + ' (added)':>24}" if compare_lib else ""
    print(f"{'job log (2,000 lines)':<28} {'tail on':>8} {'tail off':>9} {'added':>7} {'on, no redaction':>17}{compared}")
    results = job_tail_cost(runs, compare_lib)
    for label, (on, off, bare, *other) in ((k, v) for k, v in results.items() if not k.startswith("spool")):
        extra = f" {f'{other[0]:.1f} ({other[0] - off:.1f})':>24}" if other else ""
        print(f"{label:<28} {on:8.1f} {off:9.1f} {on - off:7.1f} {bare:17.1f}{extra}")
    for kind, name in (("spool on", "this library"), ("spool on, compared", compare_lib and compare_lib.name)):
        if kind in results:
            none, full = results[kind]
            print(f"1M-phase spool, {name}: {full:.1f} ms against {none:.1f} ms without a spool, added {full - none:.1f} ms")
    print(f"target: the job's tail adds at most 8 ms quiet, 50 ms at load 10 (load now {load1()})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--job", action="store_true", help="only the job-exit hook's part")
    parser.add_argument("--compare-lib", type=Path, metavar="LIB",
                        help="the job part also runs the tail with LIB's gt_redact (another version's library)")
    args = quick.parse_args(parser, argv, runs=1)
    if args.job:
        print_job_tail(args.runs, args.compare_lib)
        return
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
    print()
    print_job_tail(args.runs, args.compare_lib)


if __name__ == "__main__":
    main()
