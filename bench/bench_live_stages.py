"""Live export of stages as they end, on the node: what each export costs, beside the bound.

1. One export as the sampler runs it (the real `glidein-tracing export --journal J --ended`,
   its own process, against a loopback OTLP receiver): setup with the recorded glidein's
   validation spans, then one finished job; wall and CPU time of the process, per export and
   per span, beside GLIDEIN_TRACING_EXPORT_TIMEOUT; the same export against an endpoint that
   never answers (cut by its own deadline).
2. The job's path: the job-exit hook run fresh, as HTCondor runs it, with live export on (it
   leaves live.pending and wakes the sampler) and off (the baseline), in the same run.
3. A simulated glidein (real hooks, live export on): from each job's end in the journal to its
   span at the receiver.
4. A collector that never answers: the gaps between one job's end and the next one's start on a
   simulated glidein exporting live to it, against the same glidein without live export
   (the baseline), both at once: the jobs run back to back as without tracing.

    .venv/bin/python -m bench.bench_live_stages [--runs 10] [--bound 5] [--job-scale 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench import quick

REPO = Path(__file__).resolve().parents[1]

from glidein_tracing.core import ids  # noqa: E402
from glidein_tracing.core.journal import format_line, parse_lines  # noqa: E402
from glidein_tracing.simulator import Job, Scenario, simulate_glidein  # noqa: E402
from tests.support.hook_support import fixture_dir, make_glidein  # noqa: E402
from tests.support.journal_builders import iso_epoch, parse_otr_records, record_lines, root_lines  # noqa: E402
from tests.support.live_export_support import hung_endpoint  # noqa: E402
from tests.support.otlp_receiver import CountingCollector, counting_collector  # noqa: E402

JOB = "job/submit.example.org#{n}.0#1795300000"


def running_glidein_journal(path: Path) -> int:
    """The journal of the recorded 'success' glidein as the sampler leaves it once setup has
    ended (its real per-script records); returns the number of validation records."""
    records = [r for r in parse_otr_records((fixture_dir("success") / "otr_outlist.list").read_text())
               if r["id"] != "condor_startup.sh"]
    start, end = iso_epoch(records[0]["tstart"]) - 1, iso_epoch(records[-1]["tend"])
    lines = root_lines(start, ids.GlideinIdentity("f", "g", "e", "s", "1", "0").trace_id)
    lines += record_lines(records)
    lines += [format_line(end, "end", "setup", {"@status": "OK"}),
              format_line(end, "start", "condor", {"@name": "condor", "@stage": "condor.start",
                                                   "@parent": "glidein"})]
    path.write_text("".join(lines))
    return len(records)


def add_job(path: Path, n: int, t: float):
    with path.open("a") as out:
        out.write(format_line(t, "start", JOB.format(n=n), {"@name": "job", "@stage": "job", "@parent": "condor"}))
        out.write(format_line(t + 60, "end", JOB.format(n=n), {"@status": "OK", "job.exit_by": "exit",
                                                               "job.exit_code:i": "0"}))


def timed(argv, env, cwd) -> tuple[float, float, int]:
    """(wall s, CPU s, exit code) of one process."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return time.monotonic() - start, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def export_ended(journal: Path, endpoint: str, bound: int):
    env = {**os.environ, "GLIDEIN_TRACING_ENDPOINT": endpoint}
    return timed([sys.executable, "-m", "glidein_tracing", "export", "--journal", str(journal), "--ended",
                  "--timeout", str(bound * 0.75)], env, journal.parent)


def per_export(tmp: Path, runs: int, bound: int, endpoint: str):
    setup_runs, job_runs, empty_runs = [], [], []
    for run in range(runs):
        journal = tmp / f"export{run}" / "journal.gtj"
        journal.parent.mkdir()
        n_records = running_glidein_journal(journal)
        before = len(CountingCollector.received)
        setup_runs.append(export_ended(journal, endpoint, bound) + (len(CountingCollector.received) - before,))
        empty_runs.append(export_ended(journal, endpoint, bound))
        add_job(journal, run, time.time())
        before = len(CountingCollector.received)
        job_runs.append(export_ended(journal, endpoint, bound) + (len(CountingCollector.received) - before,))
    print(f"1. one export as the sampler runs it (own process), bound GLIDEIN_TRACING_EXPORT_TIMEOUT={bound} s, "
          f"median of {runs}; the recorded glidein has {n_records} validation records")
    print("| export | spans | wall s | CPU s | wall / bound | wall per span ms |")
    print("|---|---|---|---|---|---|")
    for name, rows in (("setup + validations", setup_runs), ("one finished job", job_runs),
                       ("nothing new (a nudge with nothing ended)", [r + (0,) for r in empty_runs])):
        wall = statistics.median(r[0] for r in rows)
        cpu = statistics.median(r[1] for r in rows)
        spans = statistics.median(r[3] for r in rows)
        assert all(r[2] == 0 for r in rows), rows
        per_span = f"{wall / spans * 1000:.1f}" if spans else "-"
        print(f"| {name} | {spans:g} | {wall:.2f} | {cpu:.2f} | {wall / bound:.2f} | {per_span} |", flush=True)
    # late in a long glidein: the journal holds 900 jobs sent already (with their idle gaps, about
    # all the default span cap of 2,000 holds), and one more ends; each export reads the whole journal
    journal = tmp / "long" / "journal.gtj"
    journal.parent.mkdir()
    running_glidein_journal(journal)
    t = time.time()
    with journal.open("a") as out:
        for n in range(900):
            key = JOB.format(n=100000 + n)
            out.write(format_line(t + n, "start", key, {"@name": "job", "@stage": "job", "@parent": "condor"}))
            out.write(format_line(t + n + 0.5, "end", key, {"@status": "OK", "job.exit_by": "exit"}))
    export_ended(journal, endpoint, bound)
    late = []
    for run in range(runs):
        add_job(journal, run, t + 3000 + run * 100)
        before = len(CountingCollector.received)
        late.append(export_ended(journal, endpoint, bound) + (len(CountingCollector.received) - before,))
    wall, cpu = statistics.median(r[0] for r in late), statistics.median(r[1] for r in late)
    print(f"| one finished job after 900 sent ({journal.stat().st_size // 1024} KiB journal) | "
          f"{statistics.median(r[3] for r in late):g} | {wall:.2f} | {cpu:.2f} | {wall / bound:.2f} | {wall * 1000:.1f} |")
    with hung_endpoint() as endpoint_hung:
        hung = []
        for run in range(min(runs, 3)):
            journal = tmp / f"hung{run}" / "journal.gtj"
            journal.parent.mkdir()
            running_glidein_journal(journal)
            hung.append(export_ended(journal, endpoint_hung, bound))
    wall = statistics.median(r[0] for r in hung)
    print(f"| setup + validations, endpoint never answers (exit {hung[0][2]}) | - | {wall:.2f} | "
          f"{statistics.median(r[1] for r in hung):.2f} | {wall / bound:.2f} | - |")


def job_exit_path(tmp: Path, runs: int):
    """The job-exit hook, fresh each time, with the sampler's pid file saying live or not."""
    ad = 'GlobalJobId = "submit.example.org#77.0#1795300000"\nClusterId = 77\nProcId = 0\nExitCode = 0\n' \
         'ExitBySignal = false\nRemoteUserCpu = 1.5\nRemoteSysCpu = 0.2\nResidentSetSize = 2048\n'
    out = {}
    for mode in ("off", "live"):
        g = make_glidein(tmp / f"exit_{mode}", "success")
        try:
            assert g.run_hook("gconditional_TRACING_setup.sh", "glidein_config", "main").returncode == 0
            g.kill_sampler()
            sleeper = subprocess.Popen(["sleep", "600"])     # stands in for the sampler to wake
            stat = Path(f"/proc/{sleeper.pid}/stat").read_text().rsplit(") ", 1)[1].split()
            (g.work / "glidein_tracing" / "sampler.pid").write_text(
                f"{sleeper.pid} {stat[19]} {'live' if mode == 'live' else '-'}\n")
            hook = g.work / "glidein_tracing" / "job_exit_hook"
            walls = []
            for _ in range(runs):
                start = time.monotonic()
                subprocess.run([str(hook), "exit"], input=ad, text=True, cwd=g.work, check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                walls.append(time.monotonic() - start)
            sleeper.kill()
            sleeper.wait()
        finally:
            g.stop()
        out[mode] = statistics.median(walls) * 1000
    print(f"\n2. the job-exit hook, fresh process as HTCondor runs it, median of {runs}")
    print(f"| live export | ms | vs off |\n|---|---|---|\n| off (baseline) | {out['off']:.1f} | |\n"
          f"| on (leaves live.pending, wakes the sampler) | {out['live']:.1f} | {out['live'] / out['off']:.2f}x |")


def job_end_to_collector(tmp: Path, bound: int, endpoint: str, job_s: float = 3.0):
    jobs = [Job(duration_s=job_s) for _ in range(4)]
    result = simulate_glidein(tmp / "sim", Scenario(jobs=jobs, knobs={
        "GLIDEIN_TRACING_EXPORT_MODE": "live", "GLIDEIN_TRACING_ENDPOINT": endpoint,
        "GLIDEIN_TRACING_EXPORT_TIMEOUT": str(bound), "GLIDEIN_TRACING_PYTHON": sys.executable,
        "GLIDEIN_TRACING_SAMPLE_PERIOD": "30"}))
    events, _ = parse_lines(result.journal_from_stderr())
    trace = events[0].fields["@trace_id"]
    ended = max(e.time for e in events if e.op == "end" and e.key == "glidein")   # then cleanup exports
    print(f"\n3. a simulated glidein, 4 jobs of {job_s:g} s: from a job's end (journal) to its span at the receiver")
    print("| job | latency s | sent |\n|---|---|---|")
    for n, (when, key) in enumerate(sorted((e.time, e.key) for e in events if e.op == "end" and e.key.startswith("job/"))):
        arrived = CountingCollector.arrived.get((trace, ids.span_id(trace, key)))
        latency = f"{arrived[0] - when:.2f}" if arrived else "-"
        how = "-" if not arrived else ("while running" if arrived[0] < ended else "at cleanup")
        print(f"| {n + 1} | {latency} | {how} |")


def job_gaps_hung_collector(tmp: Path, bound: int, job_s: float = 4.0):
    """Gaps between jobs (next start - previous end, from the journal) with live export to a
    collector that never answers, and without live export: both glideins at once, so the
    baseline runs on the machine as loaded as the other (and the part takes half as long)."""
    gaps = {}
    with hung_endpoint() as hung:
        modes = {"no live export (baseline)": {"GLIDEIN_TRACING_EXPORT_MODE": "forward"},
                 "live export, collector never answers": {
                     "GLIDEIN_TRACING_EXPORT_MODE": "live", "GLIDEIN_TRACING_ENDPOINT": hung,
                     "GLIDEIN_TRACING_EXPORT_TIMEOUT": str(bound), "GLIDEIN_TRACING_PYTHON": sys.executable}}

        def simulated(index: int, knobs: dict):
            return simulate_glidein(tmp / f"gaps_{index}", Scenario(
                jobs=[Job(duration_s=job_s, idle_before_s=0.2) for _ in range(5)],
                knobs={**knobs, "GLIDEIN_TRACING_SAMPLE_PERIOD": "1"}))
        with ThreadPoolExecutor(len(modes)) as pool:
            results = dict(zip(modes, pool.map(simulated, range(len(modes)), modes.values())))
        for mode, result in results.items():
            events, _ = parse_lines(result.journal_from_stderr())
            starts = sorted(e.time for e in events if e.op == "start" and e.key.startswith("job/"))
            ends = sorted(e.time for e in events if e.op == "end" and e.key.startswith("job/"))
            gaps[mode] = [start - end for end, start in zip(ends, starts[1:])]
    base = statistics.median(gaps["no live export (baseline)"])
    print(f"\n4. gaps between 5 jobs of {job_s:g} s (0.2 s idle between them), export bound {bound} s")
    print("| glidein | median gap s | max gap s | median vs baseline |\n|---|---|---|---|")
    for mode, values in gaps.items():
        print(f"| {mode} | {statistics.median(values):.2f} | {max(values):.2f} | "
              f"{statistics.median(values) / base:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--bound", type=int, default=5, help="GLIDEIN_TRACING_EXPORT_TIMEOUT, s")
    parser.add_argument("--job-scale", type=float, default=1.0,
                        help="the simulated jobs' length in parts 3 and 4 (3 s and 4 s), times this")
    args = quick.parse_args(parser, runs=1, bound=1, job_scale=0.25)
    with tempfile.TemporaryDirectory(prefix="gt-bench-stages-") as tmp:
        with counting_collector() as endpoint:
            per_export(Path(tmp), args.runs, args.bound, endpoint)
        job_exit_path(Path(tmp), args.runs * 5)
        with counting_collector() as endpoint:
            job_end_to_collector(Path(tmp), args.bound, endpoint, 3.0 * args.job_scale)
        job_gaps_hung_collector(Path(tmp), args.bound, 4.0 * args.job_scale)


if __name__ == "__main__":
    main()
