"""The setup hooks against copies of a real glidein_config (recorded when the probe setup
script ran in a real glidein): they open the journal with the right identity and trace id,
publish their state with the glidein's own helpers, and never fail the glidein."""

import os
import shutil
import subprocess
import time

import pytest

from glidein_tracing.core.ids import GlideinIdentity
from glidein_tracing.core.journal import format_line, read_journal
from tests.support.hook_support import config_get, make_glidein, world_readable_tmp
from tests.support.waiting import HANG_S, wait_until


@pytest.fixture
def glidein_factory(tmp_path):
    made = []

    def make(run="success", **kwargs):
        g = make_glidein(tmp_path / f"g{len(made)}", run, **kwargs)
        made.append(g)
        return g
    yield make
    for g in made:
        g.stop()
        _stop_sampler(g)


def _stop_sampler(g):
    pidfile = g.work / "glidein_tracing" / "sampler.pid"
    if pidfile.exists():
        pid = int(pidfile.read_text().split()[0])
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


def _events(g, op=None, key=None):
    events, report = read_journal(g.journal)
    assert report.skipped_total == 0, report.summary()
    return [e for e in events if (op is None or e.op == op) and (key is None or e.key == key)]


@pytest.mark.parametrize("run", ["success", "fail"])
def test_setup_opens_root_span_with_identity_and_trace_id(glidein_factory, run):
    g = glidein_factory(run)
    out = g.run_hook("gconditional_TRACING_setup.sh", "glidein_config", "main")
    assert out.returncode == 0
    assert "disabled" not in out.stderr
    cfg = g.config
    ident = GlideinIdentity(*(config_get(cfg, k) for k in (
        "GLIDEIN_Factory", "GLIDEIN_Name", "GLIDEIN_Entry_Name",
        "CONDORG_SCHEDD", "CONDORG_CLUSTER", "CONDORG_SUBCLUSTER")))
    (root,) = _events(g, "start", "glidein")
    assert root.fields["@trace_id"] == ident.trace_id
    assert root.fields["glidein.factory"] == "gwms_test_factory"
    assert root.fields["glidein.name"] == "gwms_test_instance"
    assert root.fields["glidein.entry"] == "TEST_ENTRY"
    assert root.fields["glidein.schedd"] == "schedd_glideins2@localhost"
    assert root.fields["glidein.cluster:i"] == config_get(cfg, "CONDORG_CLUSTER")
    assert root.fields["glidein.proc:i"] == "0"
    assert root.fields["glidein.multi_index:i"] == "0"
    assert root.fields["glidein.uuid"] == config_get(cfg, "GLIDEIN_UUID")
    assert root.fields["glidein.client"] == "vofrontend_service.main"
    assert root.fields["res.service.name"] == "glidein"
    assert int(root.fields["res.host.cpu.logical_count:i"]) >= 1
    assert root.fields["res.os.type"] == "linux"
    # the root starts when glidein_startup.sh started (here: our stand-in process)
    assert abs(root.time - time.time()) < 60
    (setup,) = _events(g, "start", "setup")
    assert setup.time == root.time and setup.fields["@stage"] == "setup"
    # state for the other hooks, through the glidein's own gconfig_add
    assert config_get(cfg, "GLIDEIN_TRACING_TRACE_ID") == ident.trace_id
    assert config_get(cfg, "GLIDEIN_TRACING_JOURNAL") == str(g.journal)
    assert config_get(cfg, "GLIDEIN_TRACING_MULTI_INDEX") == "0"
    assert config_get(cfg, "GLIDEIN_TRACING_LIB") == str(g.main / "gconditional_TRACING_lib.sh")
    assert config_get(cfg, "GLIDEIN_TRACING_KNOBS") == str(g.main / "gconditional_TRACING_knobs.sh")
    # the exit hook: installed, checked, then configured for HTCondor
    hook = g.work / "glidein_tracing" / "job_exit_hook"
    assert hook.exists() and os.access(hook, os.X_OK) and not hook.stat().st_mode & 0o002
    assert config_get(cfg, "GLIDEIN_TRACING_HOOK_JOB_EXIT") == str(hook)
    assert config_get(cfg, "STARTER_DEFAULT_JOB_HOOK_KEYWORD") == "GLIDEIN_TRACING"
    condor_vars = (g.main / "condor_vars.lst").read_text().splitlines()
    assert "STARTER_DEFAULT_JOB_HOOK_KEYWORD C - + N N -" in condor_vars
    assert "GLIDEIN_TRACING_HOOK_JOB_EXIT C - + N N -" in condor_vars
    # reported to GlideinWMS like a real setup script
    assert 'id="gconditional_TRACING_setup.sh"' in (g.work / "otrb_output.xml").read_text()


def test_the_root_starts_when_glidein_startup_sh_started_to_the_hundredth(glidein_factory):
    """Its process start to the clock tick, on a boot time read to the hundredth (the kernel's
    btime has whole seconds: a start up to 1 s early, a validation 1 s too long)."""
    before = time.time()
    g = glidein_factory("success")     # starts the stand-in glidein_startup.sh
    after = time.time()
    assert g.run_hook("gconditional_TRACING_setup.sh", "glidein_config", "main").returncode == 0
    (root,) = _events(g, "start", "glidein")
    assert before - 0.02 <= root.time <= after + 0.02, (before, root.time, after)


def test_multirestart_index_changes_the_trace(glidein_factory):
    g = glidein_factory(multirestart=3)
    assert g.run_hook("gconditional_TRACING_setup.sh", "glidein_config", "main").returncode == 0
    (root,) = _events(g, "start", "glidein")
    assert root.fields["glidein.multi_index:i"] == "3"
    ident = GlideinIdentity("gwms_test_factory", "gwms_test_instance", "TEST_ENTRY",
                            "schedd_glideins2@localhost", config_get(g.config, "CONDORG_CLUSTER"), "0", "3")
    assert root.fields["@trace_id"] == ident.trace_id


def test_missing_identity_key_disables_tracing(glidein_factory):
    g = glidein_factory(drop_keys=("CONDORG_SCHEDD",))
    out = g.run_hook("gconditional_TRACING_setup.sh", "glidein_config", "main")
    assert out.returncode == 0
    assert "glidein_tracing: tracing disabled for this glidein" in out.stderr
    assert "CONDORG_SCHEDD" in out.stderr
    assert config_get(g.config, "GLIDEIN_TRACING_LIB") is None
    # the later hooks see no library and do nothing, successfully
    assert g.run_hook("gconditional_TRACING_cleanup.sh", str(g.config)).returncode == 0


def test_missing_add_config_line_source_disables_tracing(glidein_factory):
    g = glidein_factory()
    (g.work / "add_config_line.source").unlink()
    out = g.run_hook("gconditional_TRACING_setup.sh", "glidein_config", "main")
    assert out.returncode == 0
    assert "glidein_tracing: tracing disabled" in out.stderr


def test_read_only_work_dir_disables_tracing():
    root = world_readable_tmp()
    g = make_glidein(root)
    try:
        cmd = ["bash", str(g.main / "gconditional_TRACING_setup.sh"), "glidein_config", "main"]
        if os.geteuid() == 0:
            # root writes anywhere: run the hook as an unprivileged user, as glideins run
            if not shutil.which("setpriv"):
                pytest.skip("needs setpriv to drop root")
            for path in [root, *root.rglob("*")]:
                os.chown(path, 65534, 65534)
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + cmd
        g.work.chmod(0o555)
        out = subprocess.run(cmd, cwd=g.work, capture_output=True, text=True, timeout=30,
                             env={"PATH": "/usr/bin:/bin", "LANG": "C"})
        assert out.returncode == 0
        assert "glidein_tracing: tracing disabled for this glidein: cannot write" in out.stderr
        assert not g.journal.exists()
    finally:
        g.work.chmod(0o755)
        g.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("knob,value,problem,default", [
    ("GLIDEIN_TRACING_EXPORT_TIMEOUT", "abc", "is not an integer", "5"),
    ("GLIDEIN_TRACING_EXPORT_TIMEOUT", "99", "is outside 1..30", "5"),
    ("GLIDEIN_TRACING_EXPORT_MODE", "sometimes", "is not one of live|forward|both", "forward"),
    ("GLIDEIN_TRACING_SAMPLING_RATIO", "2.5", "is outside 0..1", "1.0"),
    ("GLIDEIN_TRACING_ENDPOINT", "jaeger:4318", "is not an http:// or https:// URL", ""),
])
def test_bad_knob_gives_default_and_note(glidein_factory, knob, value, problem, default):
    from glidein_tracing.core.knobs import BY_NAME
    ok, used, message = BY_NAME[knob].check(value)
    assert not ok and used == default
    g = glidein_factory(extra_config={knob: value})
    out = g.run_hook("gconditional_TRACING_setup.sh", "glidein_config", "main")
    assert out.returncode == 0
    # the same message as the Python knob table, on stderr and as a journal note
    assert f"glidein_tracing: {message}" in out.stderr
    assert problem in message
    notes = [e.fields["@msg"] for e in _events(g, "note")]
    assert message in notes
    # tracing itself still works
    assert _events(g, "start", "glidein")


def test_good_knobs_are_used(glidein_factory):
    g = glidein_factory(extra_config={"GLIDEIN_TRACING_SERVICE_NAME": "my glideins",
                                      "GLIDEIN_TRACING_SAMPLE_PERIOD": "1"})
    out = g.run_hook("gconditional_TRACING_setup.sh", "glidein_config", "main")
    assert out.returncode == 0 and "glidein_tracing:" not in out.stderr
    (root,) = _events(g, "start", "glidein")
    assert root.fields["res.service.name"] == "my glideins"
    # the detached sampler reads the process tree every second and folds its readings: a line
    # per run of readings, written when a stage starts or ends (here a job's start line). A
    # loaded machine reads less often: wait longer each time until a run holds three readings
    wait_s, job = 3.5, 0
    while True:
        time.sleep(wait_s)
        before, job = len(_events(g, "sample")), job + 1
        with open(g.journal, "a") as journal:
            journal.write(format_line(time.time(), "start", f"job/{job}.0", {"@parent": "condor"}) + "\n")
        assert wait_until(lambda: len(_events(g, "sample")) > before)
        folded = _events(g, "sample")[before:]
        if int(folded[0].fields["a.n:i"]) >= 3 or wait_s > HANG_S:
            break
        wait_s *= 2
    assert int(folded[0].fields["a.n:i"]) >= 3      # three readings or more, one line
    assert float(folded[0].fields["a.t0"]) < folded[0].time
    assert int(folded[0].fields["r.procs:i"]) >= 1 and int(folded[0].fields["r.hwm"]) > 0
    # the sampler leaves when the glidein's process is gone, writing the readings it holds
    time.sleep(2.5)
    g.stop()
    pid = int((g.work / "glidein_tracing" / "sampler.pid").read_text().split()[0])
    assert wait_until(lambda: not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z")
    last = _events(g, "sample")[-1]
    assert last.time > folded[0].time and int(last.fields.get("a.n:i", 1)) >= 1
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"


def test_the_sampler_leaves_soon_after_its_glidein_dies(glidein_factory):
    """Issue 42: the sampler slept in steps of up to 10 s and was still alive 2 s after
    glidein_startup.sh died. It now waits a second at a time (no fork) and checks its glidein
    after each, so it is gone long before its next 10 s step would have begun, having written
    the readings it held; it leaves no process behind."""
    g = glidein_factory(extra_config={"GLIDEIN_TRACING_SAMPLE_PERIOD": "60"})
    assert g.run_hook("gconditional_TRACING_setup.sh", "glidein_config", "main").returncode == 0
    pid = int((g.work / "glidein_tracing" / "sampler.pid").read_text().split()[0])
    time.sleep(1.5)                                  # the sampler took its first step and waits
    assert os.path.exists(f"/proc/{pid}")
    g.stop()
    died = time.monotonic()
    while os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split()[2] != "Z" \
            and time.monotonic() - died < 30:
        time.sleep(0.1)
    gone_after = time.monotonic() - died
    assert gone_after < 6, f"the sampler outlived its glidein by {gone_after:.1f} s (its step is 10 s)"
    children = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout.split()
    assert children == []
    assert _events(g, "sample")[-1].time >= _events(g, "start", "setup")[0].time
