"""Several jobs at once on a partitionable glidein: the real wrapper and exit hook, run
concurrently for different slots, give each job its own span; idle is only the time with no
job at all."""

import subprocess
import threading

from glidein_tracing.core.converter import convert
from glidein_tracing.core.journal import format_line, read_journal

from test_hooks_wrapper import AD, glidein  # noqa: F401 (fixture)

JOBS = 4


def run_slot(g, index, results):
    scratch = g.work / "execute" / f"dir_slot{index}"
    scratch.mkdir(parents=True)
    ad = AD.replace("ProcId = 0", f"ProcId = {index}").replace("#4242.0#", f"#4242.{index}#")
    (scratch / ".job.ad").write_text(ad)
    env = {"PATH": "/usr/bin:/bin", "_CONDOR_SLOT": f"slot1_{index + 1}",
           "_CONDOR_SCRATCH_DIR": str(scratch), "_CONDOR_JOB_AD": str(scratch / ".job.ad")}
    job = subprocess.run(["/bin/sh", str(g.work / "condor_job_wrapper.sh"), "/bin/sh", "-c",
                          "sleep 0.6; env > job.env"], cwd=scratch, env=env, capture_output=True,
                         text=True, timeout=60)
    final = ad + "ExitCode = 0\nExitBySignal = false\nRemoteUserCpu = 0.5\nRemoteSysCpu = 0.1\n"
    hook = subprocess.run([str(g.work / "glidein_tracing" / "job_exit_hook"), "exit"], input=final,
                          cwd=scratch, env=env, capture_output=True, text=True, timeout=30)
    results[index] = (job.returncode, hook.returncode,
                      dict(l.split("=", 1) for l in (scratch / "job.env").read_text().splitlines() if "=" in l))


def test_jobs_at_once_each_get_their_own_span(glidein):  # noqa: F811
    results = {}
    threads = [threading.Thread(target=run_slot, args=(glidein, i, results)) for i in range(JOBS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(r[0] == 0 and r[1] == 0 for r in results.values())
    events, report = read_journal(glidein.journal)
    assert report.skipped_total == 0
    starts = {e.key for e in events if e.op == "start" and e.key.startswith("job/")}
    ends = {e.key for e in events if e.op == "end" and e.key.startswith("job/")}
    assert len(starts) == JOBS and starts == ends
    # each job got its own span's context
    parents = {r[2]["TRACEPARENT"].split("-")[2] for r in results.values()}
    assert len(parents) == JOBS
    # close the condor phase around them and convert: overlapping job spans, and idle only
    # before the first start and after the last end
    times = sorted(e.time for e in events if e.key.startswith("job/"))
    extra = [format_line(times[0] - 1, "start", "condor", {"@stage": "condor.start", "@name": "condor"}),
             format_line(times[-1] + 1, "end", "condor", {}),
             format_line(times[-1] + 2, "end", "glidein", {})]
    glidein.journal.open("a").write("".join(extra))
    events, _ = read_journal(glidein.journal)
    spans = convert(events)
    jobs = [s for s in spans if s.attributes["glidein.stage"] == "job"]
    assert len(jobs) == JOBS and len({s.context.span_id for s in jobs}) == JOBS
    assert {format(s.context.span_id, "016x") for s in jobs} == parents
    assert sorted({s.attributes["job.slot"] for s in jobs}) == [f"slot1_{i + 1}" for i in range(JOBS)]
    idle = sorted(s.attributes["glidein.idle.kind"] for s in spans if s.attributes["glidein.stage"] == "idle")
    assert idle == ["before_first_job", "tail"]
