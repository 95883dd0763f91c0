"""The job wrapper fragment inside a condor_job_wrapper.sh built as condor_startup.sh builds
it (#!/bin/sh header, fragments, `exec "$@"`), run by dash and by bash with a job ad: the job
always runs unchanged; it gets the job span's TRACEPARENT only when it has none of its own."""

import subprocess

import pytest

from glidein_tracing.core.ids import format_traceparent, span_id
from glidein_tracing.core.journal import read_journal
from tests.support.hook_support import HOOKS, SHELLS, config_get, make_glidein

USER_TP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
HEADER = """#!/bin/sh

# This script is started just before the user job
# It is referenced by the USER_JOB_WRAPPER
# /bin/sh is used for Busybox compatibility (small images)
if [ -n "$BASH_VERSION" ]; then
    # If in Bash, disable POSIX mode
    # shellcheck disable=SC3040
    set +o posix || echo "WARN: running in POSIX mode"
fi

"""
# a later fragment that records whatever of ours is still defined when the job is exec'd
LEAK_PROBE = """
( set; command -v gt_wrapper_run ) 2>/dev/null | grep -i '^gt_' > "$_CONDOR_SCRATCH_DIR/leaks.txt"
"""
TAIL = '\n# Condor job wrappers must replace its own image\nexec "$@"\n'
AD = """MyType = "Job"
ClusterId = 4242
ProcId = 0
GlobalJobId = "fake-submit.example.org#4242.0#1795318567"
Owner = "fakeuser"
AccountingGroup = "group_cms.fakeuser"
RequestCpus = 4
RequestMemory = 8000
RequestDisk = 2000000
Cmd = "/bin/sh"
QDate = 1795318567
NumJobStarts = 2
"""


@pytest.fixture
def glidein(tmp_path):
    g = make_glidein(tmp_path / "g")
    out = g.run_hook("gconditional_TRACING_setup.sh", "glidein_config", "main")
    assert out.returncode == 0 and "disabled" not in out.stderr
    wrapper = g.work / "condor_job_wrapper.sh"
    wrapper.write_text(HEADER + (HOOKS / "gconditional_TRACING_wrapper.sh").read_text()
                       + LEAK_PROBE + TAIL)
    wrapper.chmod(0o755)
    yield g
    g.stop()
    g.kill_sampler()


def run_job(g, shell, ad_text=AD, env=None, code=0, ad_name=".job.ad"):
    scratch = g.work / "execute" / f"dir_{shell}_{len(list((g.work).glob('execute/*')))}"
    scratch.mkdir(parents=True)
    job_env = {"PATH": "/usr/bin:/bin", "_CONDOR_SLOT": "slot1_1",
               "_CONDOR_SCRATCH_DIR": str(scratch)}
    if ad_text is not None:
        (scratch / ad_name).write_bytes(ad_text.encode() if isinstance(ad_text, str) else ad_text)
        job_env["_CONDOR_JOB_AD"] = str(scratch / ".job.ad")
    job_env.update(env or {})
    out = subprocess.run([shell, str(g.work / "condor_job_wrapper.sh"), "/bin/sh", "-c",
                          f'env > job.env; echo "job ran with $# args: $*"; exit {code}', "job", "a b"],
                         cwd=scratch, env=job_env, capture_output=True, text=True, timeout=30)
    seen = dict(line.split("=", 1) for line in (scratch / "job.env").read_text().splitlines()
                if "=" in line)
    return out, seen, scratch


def job_starts(g):
    events, report = read_journal(g.journal)
    assert report.skipped_total == 0, report.summary()
    return [e for e in events if e.op == "start" and e.key.startswith("job/")]


@pytest.mark.parametrize("shell", SHELLS)
def test_job_without_context_gets_the_job_span(glidein, shell):
    out, seen, scratch = run_job(glidein, shell, code=3)
    assert out.returncode == 3                       # the job's exit code, unchanged
    assert out.stdout == "job ran with 1 args: a b\n"  # arguments unchanged
    assert out.stderr == ""                          # nothing of ours in the job's stderr
    trace = config_get(glidein.config, "GLIDEIN_TRACING_TRACE_ID")
    key = "job/fake-submit.example.org#4242.0#1795318567"
    assert seen["TRACEPARENT"] == format_traceparent(trace, span_id(trace, key))
    (start,) = job_starts(glidein)
    assert start.key == key
    f = start.fields
    assert f["@stage"] == "job" and f["@parent"] == "condor"
    assert f["job.cluster_id:i"] == "4242" and f["job.proc_id:i"] == "0"
    assert f["job.owner"] == "fakeuser" and f["job.accounting_group"] == "group_cms.fakeuser"
    assert f["job.request_cpus:i"] == "4" and f["job.request_memory_mb:i"] == "8000"
    assert f["job.request_disk_kb:i"] == "2000000" and f["job.slot"] == "slot1_1"
    assert f["job.qdate:i"] == "1795318567" and f["job.num_job_starts:i"] == "2"   # the user's job.wait
    assert start.links == []
    assert (scratch / "leaks.txt").read_text() == ""   # no gt_ variable or function left


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("where", ["env", "ad", "ad_lowercase"])
def test_users_own_context_is_kept_and_linked(glidein, shell, where):
    ad, env = AD, {}
    if where == "env":
        env = {"TRACEPARENT": USER_TP}
    elif where == "ad":
        ad = AD + f'TraceParent = "{USER_TP}"\n'
        env = {"TRACEPARENT": USER_TP}   # jobsub_lite sets both
    else:
        ad = AD + f'traceparent = "{USER_TP}"\n'   # ClassAd names are case-insensitive
    out, seen, _ = run_job(glidein, shell, ad_text=ad, env=env)
    assert out.returncode == 0
    (start,) = job_starts(glidein)
    assert start.fields["job.user_traceparent"] == USER_TP
    assert start.links == [USER_TP]
    if env:
        assert seen["TRACEPARENT"] == USER_TP      # the user's value, untouched


@pytest.mark.parametrize("shell", SHELLS)
def test_hostile_ad_values_are_sanitized(glidein, shell):
    ad = ("ClusterId = 77\nProcId = 1\n"
          'GlobalJobId = "evil\\"host#77.1#1\t\tx"\n'
          'Owner = "' + "A" * 100000 + '"\n'
          'AccountingGroup = "group\x01\x02\x1b[31m\xff\xfe"\n'
          "RequestCpus = ifThenElse(true, 1, 2)\n"
          "RequestMemory = 1$(reboot)\n"
          'TraceParent = "not-a-traceparent\r\nInjected = 1"\n')
    out, seen, _ = run_job(glidein, shell, ad_text=ad.encode("latin-1"))
    assert out.returncode == 0
    (start,) = job_starts(glidein)
    f = start.fields
    assert "\t" not in start.key and start.key.startswith('job/evil"host#77.1#1')
    assert len(f["job.owner"]) == 1024
    assert f["job.accounting_group"].isprintable()
    assert "job.request_cpus:i" not in f and "job.request_memory_mb:i" not in f
    assert start.links == []                       # an invalid context is no link
    assert seen["TRACEPARENT"].startswith("00-")   # the job still gets our context
    assert max(len(line) for line in glidein.journal.read_bytes().split(b"\n")) <= 4000


@pytest.mark.parametrize("shell", SHELLS)
def test_missing_ad_still_runs_the_job(glidein, shell):
    out, seen, _ = run_job(glidein, shell, ad_text=None, code=5)
    assert out.returncode == 5 and out.stdout == "job ran with 1 args: a b\n"
    (start,) = job_starts(glidein)
    assert start.key.startswith("job/unknown.slot1_1.")
    events, _ = read_journal(glidein.journal)
    assert any(e.op == "note" and "no readable job ad" in e.fields["@msg"] for e in events)
    assert seen["TRACEPARENT"].startswith("00-")


@pytest.mark.parametrize("shell", SHELLS)
def test_tracing_off_leaves_the_job_alone(tmp_path, shell):
    # a glidein where the setup hook never ran: no library recorded in glidein_config
    g = make_glidein(tmp_path / "off")
    try:
        wrapper = g.work / "condor_job_wrapper.sh"
        wrapper.write_text(HEADER + (HOOKS / "gconditional_TRACING_wrapper.sh").read_text() + TAIL)
        out, seen, _ = run_job(g, shell, code=2)
        assert out.returncode == 2 and "TRACEPARENT" not in seen and out.stderr == ""
    finally:
        g.stop()


@pytest.mark.parametrize("shell", SHELLS)
def test_strict_wrapper_options_do_not_stop_the_job(tmp_path, shell):
    # another fragment may have turned on `set -eu`: ours must still never stop the job,
    # here with tracing off (no library) and so every lookup failing
    g = make_glidein(tmp_path / "strict")
    try:
        wrapper = g.work / "condor_job_wrapper.sh"
        wrapper.write_text(HEADER + "set -eu\n" + (HOOKS / "gconditional_TRACING_wrapper.sh").read_text() + TAIL)
        out, seen, _ = run_job(g, shell, ad_text=None, code=6)
        assert out.returncode == 6 and out.stdout == "job ran with 1 args: a b\n"
    finally:
        g.stop()
