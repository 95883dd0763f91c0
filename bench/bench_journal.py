"""How big the journal section a glidein returns in its stderr is: a 48 h glidein with 100 jobs,
with the sampler's readings written one `sample` line each (the format before folding) and
folded per stage (gt_fold, docs/journal.md), measured in the same run; and how much stderr
tracing adds to a short glidein.

The 48 h glidein: the stage lines of one real simulated glidein (the hooks run by the
simulator: setup, per-script records, a job's start and end, teardown), its job lines repeated
for 100 jobs spread over 48 h, and a reading every GLIDEIN_TRACING_SAMPLE_PERIOD (default 30 s)
of plausible values (CPU climbing, memory, load, disk moving; seeded). The readings go through
the real shell functions, synthetically clocked: `gt_emit ... sample` for before, the
sampler's loop (gt_fold_boundary, gt_fold, gt_fold_flush) for after. The section is what the
cleanup hook prints: the name, the gzip|uuencode line, `begin-base64 644 -`, `gzip -c | base64`
(76 columns) and `====`.

    python -m bench.bench_journal              # --hours 48 --jobs 100 --period 30
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import quick

from glidein_tracing.core.journal import read_journal
from glidein_tracing.core.sections import JOURNAL_SECTION
from glidein_tracing.simulator import Job, Scenario, simulate_glidein

HOOKS = Path(__file__).resolve().parents[1] / "glidein_tracing" / "node" / "hooks"
SECTION_HEAD = f"{JOURNAL_SECTION}\n======== gzip | uuencode =============\nbegin-base64 644 -\n"
DRIVER = r'''
. "$HOOKS/gconditional_TRACING_lib.sh"; . "$HOOKS/gconditional_TRACING_stages.sh"
gt_fold_watch
while IFS=' ' read -r cmd rest; do
    case $cmd in
        R) read -r t GT_R_UT GT_R_ST GT_R_RSS GT_R_N GT_R_L1 GT_R_DF GT_R_HWM <<< "$rest"
           if [ "$MODE" = before ]; then
               gt_emit "$t" sample - "r.utime=$GT_R_UT" "r.stime=$GT_R_ST" "r.rss=$GT_R_RSS" \
                   "r.procs:i=$GT_R_N" "r.load1=$GT_R_L1" "r.disk_free=$GT_R_DF"
           else
               ! gt_fold_boundary || gt_fold_flush
               GT_R_MPEAK=
               gt_fold "$t"
           fi ;;
        L) printf '%s\n' "$rest" >> "$GT_JOURNAL" ;;
        M) printf '%s\n' "$MARK" >> "$GT_CONFIG" ;;
        E) [ "$MODE" = before ] || gt_fold_flush ;;
    esac
done
'''
MARK = "# --- Last Script values ---"


def section_bytes(journal: Path) -> int:
    """Bytes of the stderr section the cleanup hook prints for this journal."""
    body = subprocess.run(f'gzip -c "{journal}" | base64', shell=True, check=True,
                          capture_output=True).stdout
    return len(SECTION_HEAD) + len(body) + len("====\n")


def real_glidein(root: Path):
    """One simulated glidein with one job: its journal's lines, apart from the samples."""
    result = simulate_glidein(root, Scenario(jobs=[Job(duration_s=0.5)]))
    events, _ = read_journal(result.journal_path)
    text = result.journal_path.read_text().splitlines()
    return result, events, [line for line, e in zip(text, events) if e.op != "sample"]


def shift(line: str, dt: float, old_key: str = "", new_key: str = "") -> str:
    """A journal line moved by dt seconds (and, for a job, renamed)."""
    tag, time, rest = line.split("\t", 2)
    if old_key:
        rest = rest.replace(old_key, new_key)
    return f"{tag}\t{float(time) + dt:.6f}\t{rest}"


def long_glidein(lines: list[str], events, hours: float, jobs: int, period: float, seed: int = 7):
    """The commands for the driver: the real glidein's lines stretched to `hours` with `jobs`
    jobs, and a reading every `period` s. Returns (commands, closing lines)."""
    start = min(e.time for e in events)
    end_setup = next(e.time for e in events if e.op == "end" and e.key == "setup")
    job_lines = [(e, line) for e, line in zip((e for e in events if e.op != "sample"), lines)
                 if e.key.startswith("job/") and e.op in ("start", "end")]
    job_key = job_lines[0][0].key
    job_start = next(e.time for e, _ in job_lines if e.op == "start")
    head = [line for e, line in zip((e for e in events if e.op != "sample"), lines)
            if e.time <= end_setup and e.op != "end" and not e.key.startswith("job/")]
    tail = [line for e, line in zip((e for e in events if e.op != "sample"), lines)
            if (e.time > end_setup or (e.op == "end" and e.key == "setup")) and not e.key.startswith("job/")]
    total = hours * 3600
    setup_s = end_setup - start
    condor_s = total - setup_s - 60
    slot = condor_s / jobs
    timed = []                                   # (time, command)
    timed.append((end_setup, "M"))
    for j in range(jobs):
        t0 = end_setup + j * slot + 0.15 * slot  # a short idle before each job
        for e, line in job_lines:
            dt = t0 - job_start + (0 if e.op == "start" else 0.8 * slot - (e.time - job_start))
            timed.append((e.time + dt, "L " + shift(line, dt, job_key, f"{job_key}.{j}")))
    rng = random.Random(seed)
    utime = stime = 0.0
    rss, load, disk = 60e6, 1.0, 80e9
    t = start + 1.0
    while t < end_setup + condor_s:
        utime += rng.uniform(0.0, period * 0.9)
        stime += rng.uniform(0.0, period * 0.05)
        rss = min(max(rss * rng.uniform(0.9, 1.1), 10e6), 4e9)
        load = max(0.0, load + rng.uniform(-0.3, 0.3))
        disk -= rng.uniform(0, 2e6)
        hwm = rss * 1.3
        timed.append((t, f"R {t:.6f} {utime:.2f} {stime:.2f} {int(rss)} {rng.randint(5, 30)} "
                         f"{load:.2f} {int(disk)} {int(hwm)}"))
        t += period
    timed.sort(key=lambda c: c[0])
    closing = [shift(line, condor_s) for line in tail]
    return head, [c for _, c in timed] + ["E"], closing


def journal_size(workdir: Path, mode: str, head, commands, closing) -> int:
    journal, config = workdir / f"{mode}.gtj", workdir / f"{mode}.config"
    journal.write_text("\n".join(head) + "\n")
    config.write_text("")
    env = {"HOOKS": str(HOOKS), "GT_JOURNAL": str(journal), "GT_CONFIG": str(config),
           "MARK": MARK, "MODE": mode, "PATH": "/usr/bin:/bin"}
    subprocess.run(["bash", "-c", DRIVER], input="\n".join(commands) + "\n", text=True,
                   env=env, check=True)
    with open(journal, "a") as out:
        out.write("\n".join(closing) + "\n")
    events, report = read_journal(journal)
    assert not report.skipped_total, report.summary()
    return section_bytes(journal), sum(1 for e in events if e.op == "sample"), journal.stat().st_size


def short_glidein_stderr(root: Path) -> tuple[int, int]:
    """stderr bytes of a short glidein (one job) without and with tracing (default knobs)."""
    sizes = []
    for tracing in (False, True):
        result = simulate_glidein(root / f"short-{tracing}", Scenario(jobs=[Job(duration_s=0.5)],
                                                                      tracing=tracing))
        text = result.stderr_path.read_text()
        # the work dir's random name and dates vary between runs: compare sizes only
        sizes.append(len(text.encode()))
    return sizes[0], sizes[1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=float, default=48.0)
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--period", type=float, default=30.0, help="GLIDEIN_TRACING_SAMPLE_PERIOD")
    args = quick.parse_args(parser, argv, hours=1.0, jobs=2)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _, events, lines = real_glidein(root / "real")
        head, commands, closing = long_glidein(lines, events, args.hours, args.jobs, args.period)
        before = journal_size(root, "before", head, commands, closing)
        after = journal_size(root, "after", head, commands, closing)
        plain, traced = short_glidein_stderr(root)
    print(f"{args.hours:g} h glidein, {args.jobs} jobs, a reading every {args.period:g} s")
    for name, (section, samples, raw) in (("before (a line per reading)", before),
                                          ("after (folded per stage)", after)):
        print(f"  {name:30s} {samples:6d} sample lines, journal {raw / 1024:7.1f} KB, "
              f"section {section / 1024:6.1f} KB")
    print(f"  after / before: {after[0] / before[0]:.3f}")
    print(f"short glidein (one job), stderr: {plain / 1024:.1f} KB without tracing, "
          f"{traced / 1024:.1f} KB with: +{(traced - plain) / 1024:.1f} KB")
    print(f"journal section, {args.hours:g} h, {args.jobs} jobs: {after[0] / 1024:.0f} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
