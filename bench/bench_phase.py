"""Benchmark: what job phases and a failed job's log tail cost (issue 23).

1. The phase command against the bare command, in the same run: one shell (dash and bash)
   runs N times `"$P" p -- /bin/true` and N times `/bin/true`; the cost of a phase is the
   difference divided by N (target: at most 5 ms). The command runs from a job's copy, with a
   TRACEPARENT, spooling as in a job. For scale, the same loop through a `#!/bin/sh` script
   that only execs the command: what any shell-script wrapper costs before doing anything.
2. The job-exit hook of a failed job with a 1 GB stdout, with the log tail on
   (GLIDEIN_TRACING_JOB_LOG_TAIL_LINES=50) and off (0), alternated: a glidein is simulated
   once (real hooks, work dir kept), then its installed exit hook runs again and again as
   the starter runs it (final ad on stdin, `exit`, in the job's scratch dir), with the journal
   restored before every run (target: at most 50 ms added). The 1 GB log is sparse but for
   its last lines: `tail -c` seeks, so what it costs is the same for a dense one. Then the
   same hook with a hostile spool of a million phases against none (it reads 4 MB, keeps 500).
3. The node's redaction (issue 33): the same hook, the log tail on, the 1 GB log ending in
   lines of which every fifth holds a secret, with the installed library as shipped against
   the same library whose gt_redact returns its text unchanged, alternated (target: at most
   50 ms added).

    python -m bench.bench_phase [--phases 200] [--runs 20] [--redaction-only]
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import quick

REPO = Path(__file__).resolve().parents[1]

from glidein_tracing.simulator import Job, Scenario, simulate_glidein  # noqa: E402

PHASE = REPO / "glidein_tracing" / "node" / "hooks" / "gconditional_TRACING_phase.sh"
TP = "00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-bbbbbbbbbbbbbbbb-01"


def loop_ms(shell: str, body: str, n: int, env: dict) -> float:
    script = f'i=0; while [ $i -lt {n} ]; do {body}; i=$((i + 1)); done'
    start = time.perf_counter()
    subprocess.run([shell, "-c", script], env=env, check=True, stdin=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def phase_cost(shell: str, n: int, rounds: int) -> tuple:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / ".glidein_tracing"
        d.mkdir()
        shutil.copy(PHASE, d / "phase")
        (d / "phase").chmod(0o755)
        passthrough = Path(tmp) / "exec_only"
        passthrough.write_text('#!/bin/sh\nexec "$@"\n')
        passthrough.chmod(0o755)
        env = {"PATH": os.environ["PATH"], "TRACEPARENT": TP, "P": str(d / "phase"), "X": str(passthrough)}
        bare, phased, script = [], [], []
        for _ in range(rounds):
            bare.append(loop_ms(shell, "/bin/true", n, env))
            script.append(loop_ms(shell, '"$X" /bin/true', n, env))
            phased.append(loop_ms(shell, '"$P" p -- /bin/true', n, env))
            (d / "phases.gtp").unlink(missing_ok=True)
        b, x, p = statistics.median(bare), statistics.median(script), statistics.median(phased)
        return b / n, x / n, p / n, (p - b) / n


def failed_job_glidein(root: Path):
    result = simulate_glidein(root, Scenario(jobs=[Job(script='echo "job output"; exit 2\n')]))
    work = result.work_dir
    scratch = next((work / "execute").glob("dir_*_1"))
    return work, scratch


def hook_ms(hook: Path, scratch: Path, ad: bytes, journal: Path, saved: bytes) -> float:
    journal.write_bytes(saved)
    env = dict(os.environ, _CONDOR_SCRATCH_DIR=str(scratch))
    start = time.perf_counter()
    subprocess.run([str(hook), "exit"], input=ad, cwd=scratch, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def tail_cost(runs: int) -> tuple:
    with tempfile.TemporaryDirectory() as tmp:
        work, scratch = failed_job_glidein(Path(tmp))
        log = scratch / "_condor_stdout"
        with open(log, "wb") as f:        # 1 GB: sparse, then real lines at its end
            f.truncate(1 << 30)
            f.seek(0, 2)
            f.write(b"".join(b"line %d of the job's output, done\n" % i for i in range(2000)))
        config = work / "glidein_config"
        base = config.read_text()
        hook = work / "glidein_tracing" / "job_exit_hook"
        ad = (scratch / ".final.ad").read_bytes()
        journal = work / "glidein_tracing" / "journal.gtj"
        saved = journal.read_bytes()
        times = {50: [], 0: []}
        for _ in range(runs):
            for lines in (50, 0):
                config.write_text(base + f"GLIDEIN_TRACING_JOB_LOG_TAIL_LINES {lines}\n")
                times[lines].append(hook_ms(hook, scratch, ad, journal, saved))
        journal.write_bytes(saved)
        config.write_text(base + "GLIDEIN_TRACING_JOB_LOG_TAIL_LINES 50\n")
        hook_ms(hook, scratch, ad, journal, saved)
        assert b"job.log_tail" not in journal.read_bytes()   # the converter names the event
        assert b"@log.source=_condor_stdout" in journal.read_bytes()
        on, off = statistics.median(times[50]), statistics.median(times[0])
        hostile = hostile_spool_ms(hook, scratch, ad, journal, saved, runs)
        return on, off, on - off, log.stat().st_size, hostile


def hostile_spool_ms(hook, scratch, ad, journal, saved, runs) -> tuple:
    """The exit hook with no spool, and with a hostile one: a million phases (~90 MB), of
    which it reads 4 MB and keeps 500."""
    spool_dir = next(d for d in (scratch / ".glidein_tracing").iterdir() if (d / "phase").exists())
    spool = spool_dir / "phases.gtp"
    spool.unlink(missing_ok=True)
    none = statistics.median(hook_ms(hook, scratch, ad, journal, saved) for _ in range(runs))
    trace = "a" * 32
    with open(spool, "w") as f:
        for i in range(1_000_000):
            f.write(f"gtp1\tstart\t1.5\t{trace}\t{i + 1:016x}\tbbbbbbbbbbbbbbbb\tp{i}\n")
    size = spool.stat().st_size
    full = statistics.median(hook_ms(hook, scratch, ad, journal, saved) for _ in range(runs))
    spool.unlink()
    return none, full, size


SECRET_LINES = b"".join(
    (b"step %d: curl -H 'Authorization: Bearer abcdefgh%06d' --password=hunter%d https://u:p%d@h/x\n" % (i, i, i, i)
     if i % 5 == 0 else b"line %d of the job's output, done\n" % i) for i in range(2000))


def redaction_cost(runs: int) -> tuple:
    """(exit hook ms with the node's redaction, without it, added): a failed job's 1 GB log
    whose last lines hold secrets, the log tail on (50 lines)."""
    with tempfile.TemporaryDirectory() as tmp:
        work, scratch = failed_job_glidein(Path(tmp))
        with open(scratch / "_condor_stdout", "wb") as f:
            f.truncate(1 << 30)
            f.seek(0, 2)
            f.write(SECRET_LINES)
        config = work / "glidein_config"
        config.write_text(config.read_text() + "GLIDEIN_TRACING_JOB_LOG_TAIL_LINES 50\n")
        lib = Path(next(line.split(" ", 1)[1] for line in config.read_text().splitlines()
                        if line.startswith("GLIDEIN_TRACING_LIB ")))
        shipped = lib.read_text()
        unredacted = shipped + "\nGT_AWK_REDACT='function gt_redact(s) { return s }'\n"
        hook = work / "glidein_tracing" / "job_exit_hook"
        ad = (scratch / ".final.ad").read_bytes()
        journal = work / "glidein_tracing" / "journal.gtj"
        saved = journal.read_bytes()
        times = {"on": [], "off": []}
        for _ in range(runs):
            for kind, text in (("on", shipped), ("off", unredacted)):
                lib.write_text(text)
                times[kind].append(hook_ms(hook, scratch, ad, journal, saved))
        lib.write_text(shipped)
        hook_ms(hook, scratch, ad, journal, saved)
        tails = b"".join(base64.b64decode(f[len(b"@log.data="):]) for line in journal.read_bytes().splitlines()
                         for f in line.split(b"\t") if f.startswith(b"@log.data="))
        assert b"step 1995:" in tails and b"hunter" not in tails     # the tail is there, redacted
        on, off = statistics.median(times["on"]), statistics.median(times["off"])
        return on, off, on - off


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--phases", type=int, default=200, help="phases per loop (default 200)")
    parser.add_argument("--rounds", type=int, default=5, help="loops of each kind (default 5)")
    parser.add_argument("--runs", type=int, default=20, help="exit-hook runs of each kind (default 20)")
    parser.add_argument("--redaction-only", action="store_true", help="only part 3 (the node's redaction)")
    args = quick.parse_args(parser, argv, phases=5, rounds=1, runs=1)
    if args.redaction_only:
        return print_redaction(args.runs)
    print("| shell | bare ms/command | through a script that only execs it | with phase ms/command | added ms/phase |")
    print("|---|---|---|---|---|")
    for name in ("dash", "bash"):
        shell = shutil.which(name)
        if shell is None:
            print(f"| {name} | not installed | | | |")
            continue
        bare, script, phased, added = phase_cost(shell, args.phases, args.rounds)
        print(f"| {name} | {bare:.2f} | {script:.2f} | {phased:.2f} | {added:.2f} |")
    on, off, added, size, (none, full, spool) = tail_cost(args.runs)
    print()
    print("| job log | exit hook, tail on | tail off | added |")
    print("|---|---|---|---|")
    print(f"| {size / 2**30:.0f} GB | {on:.1f} ms | {off:.1f} ms | {added:.1f} ms |")
    print()
    print("| phase spool | exit hook (tail on) | without a spool | added |")
    print("|---|---|---|---|")
    print(f"| 1,000,000 phases ({spool / 2**20:.0f} MB) | {full:.1f} ms | {none:.1f} ms | {full - none:.1f} ms |")
    print()
    return print_redaction(args.runs)


def print_redaction(runs: int) -> int:
    on, off, added = redaction_cost(runs)
    print("| job log (1 GB, secrets in its last lines) | exit hook, redaction on | off | added |")
    print("|---|---|---|---|")
    print(f"| tail on, 50 lines | {on:.1f} ms | {off:.1f} ms | {added:.1f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
