"""The job-exit hook as HTCondor's starter runs it: the installed copy, final ad on stdin,
one argument, cwd the job's scratch dir, the starter's environment; it closes the job span."""

import subprocess

import pytest

from glidein_tracing.core.journal import read_journal
from tests.support.hook_support import make_glidein

FINAL_AD = """ClusterId = 4242
ProcId = 0
GlobalJobId = "fake-submit.example.org#4242.0#1795318567"
Owner = "fakeuser"
ExitBySignal = {bysig}
ExitCode = {code}
{signal}RemoteUserCpu = 12.5
RemoteSysCpu = 1.25
ResidentSetSize = 2048
"""


@pytest.fixture
def glidein(tmp_path):
    g = make_glidein(tmp_path / "g")
    assert g.run_hook("gconditional_TRACING_setup.sh", "glidein_config", "main").returncode == 0
    yield g
    g.stop()
    g.kill_sampler()


def run_exit_hook(g, arg, ad, env=None):
    scratch = g.work / "execute" / "dir_1"
    scratch.mkdir(parents=True, exist_ok=True)
    hook = g.work / "glidein_tracing" / "job_exit_hook"
    full_env = {"PATH": "/usr/bin:/bin", "CONDOR_CONFIG": str(g.work / "condor_config")}
    full_env.update(env or {})
    return subprocess.run([str(hook), arg], input=ad, cwd=scratch, env=full_env,
                          capture_output=True, text=True, timeout=30)


def job_end(g):
    events, report = read_journal(g.journal)
    assert report.skipped_total == 0
    ends = [e for e in events if e.op == "end" and e.key.startswith("job/")]
    assert len(ends) == 1
    return ends[0]


def test_normal_exit(glidein):
    out = run_exit_hook(glidein, "exit", FINAL_AD.format(bysig="false", code=0, signal=""))
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
    end = job_end(glidein)
    assert end.key == "job/fake-submit.example.org#4242.0#1795318567"
    f = end.fields
    assert f["@status"] == "OK" and f["job.exit_code:i"] == "0" and f["job.exit_by"] == "exit"
    assert f["r.utime"] == "12.5" and f["r.stime"] == "1.25"
    assert f["job.rss_bytes:i"] == str(2048 * 1024)
    assert "job.exit_signal:i" not in f


@pytest.mark.parametrize("arg,ad,etype", [
    ("exit", FINAL_AD.format(bysig="false", code=2, signal=""), "job.exit_code"),
    ("exit", FINAL_AD.format(bysig="true", code="", signal="ExitSignal = 9\n"), "job.signal"),
    ("evict", FINAL_AD.format(bysig="false", code=0, signal=""), "job.evict"),
    ("hold", FINAL_AD.format(bysig="false", code=0, signal=""), "job.hold"),
])
def test_failed_ends_are_errors(glidein, arg, ad, etype):
    assert run_exit_hook(glidein, arg, ad).returncode == 0
    f = job_end(glidein).fields
    assert f["@status"] == "ERROR" and f["@error.type"] == etype and f["job.exit_by"] == arg


def test_found_through_condor_config_when_run_from_elsewhere(glidein, tmp_path):
    # a copy of the hook outside the work dir still finds the journal via $CONDOR_CONFIG
    copy = tmp_path / "hook_copy"
    copy.write_bytes((glidein.work / "glidein_tracing" / "job_exit_hook").read_bytes())
    copy.chmod(0o755)
    out = subprocess.run([str(copy), "exit"], input=FINAL_AD.format(bysig="false", code=0, signal=""),
                         env={"PATH": "/usr/bin:/bin", "CONDOR_CONFIG": str(glidein.work / "condor_config")},
                         capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert out.returncode == 0
    assert job_end(glidein).fields["@status"] == "OK"


def test_garbage_on_stdin_is_harmless(glidein):
    assert run_exit_hook(glidein, "exit", "\x00\x01 not an ad\n" * 1000).returncode == 0
    events, _ = read_journal(glidein.journal)
    assert any(e.op == "note" and "no job id" in e.fields["@msg"] for e in events)


def test_held_job_keeps_what_triage_needs(glidein):
    ad = FINAL_AD.format(bysig="false", code="", signal="") + (
        'HoldReason = "Error from slot1_1@wn01: Job has gone over memory limit of 2048 megabytes."\n'
        "HoldReasonCode = 34\nHoldReasonSubCode = 0\nRemoteWallClockTime = 812.0\n"
        'LastRemoteHost = "slot1_1@glidein_1234_0@wn01.example.org"\n')
    assert run_exit_hook(glidein, "hold", ad).returncode == 0
    f = job_end(glidein).fields
    assert f["job.hold_reason"].startswith("Error from slot1_1@wn01: Job has gone over memory")
    assert f["job.hold_reason_code:i"] == "34" and f["job.hold_reason_subcode:i"] == "0"
    assert f["job.wall_s:f"] == "812.0"
    assert f["job.remote_host"] == "slot1_1@glidein_1234_0@wn01.example.org"
