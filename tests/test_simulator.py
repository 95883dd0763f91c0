"""Whole simulated glideins (glidein_tracing.simulator) with our real hooks staged as a
Factory would stage them: success with jobs, validation failure, SIGTERM, SIGKILL."""

import base64


import pytest

from glidein_tracing.core.sections import JOURNAL_SECTION
from glidein_tracing.core.converter import convert, parse_iso
from glidein_tracing.core.ids import GlideinIdentity, format_traceparent, span_id
from glidein_tracing.core.journal import parse_lines, read_journal
from glidein_tracing.simulator import Job, Scenario, simulate_glidein
from tests.support.span_nesting import outside_parent

USER_TP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def journal_from_stderr(result):
    data = result.journal_from_stderr()
    assert data is not None, "no GlideinTracingJournal section in stderr"
    events, report = parse_lines(data)
    assert report.skipped_total == 0, report.summary()
    return events


def find(events, op, key=None):
    return [e for e in events if e.op == op and (key is None or e.key == key)]


def test_success_with_three_jobs(tmp_path):
    scenario = Scenario(jobs=[Job(duration_s=0.4), Job(duration_s=0.3, traceparent=USER_TP),
                              Job(duration_s=0.2, exit_code=3)])
    result = simulate_glidein(tmp_path, scenario)
    assert result.exit_code == 0
    assert result.leftovers == []           # cleanup ended the sampler and its sleep
    events = journal_from_stderr(result)
    # the glidein's own records, and the copy of the journal in stderr == the file
    assert result.journal_path.read_bytes() == result.journal_from_stderr()
    records = find(events, "record")
    ids = [e.key for e in records]
    assert ids[0] == "main/setup_script.sh" and ids[-1] == "condor_startup.sh"
    assert "entry/cat_consts.sh" in ids and "main/gconditional_TRACING_setup.sh" in ids
    assert all(e.fields["@status"] == "OK" for e in records)
    trace = GlideinIdentity(scenario.factory, scenario.name, scenario.entry, scenario.schedd,
                            str(scenario.cluster), str(scenario.proc)).trace_id
    assert find(events, "start", "glidein")[0].fields["@trace_id"] == trace
    assert find(events, "attr", "glidein")[0].fields["glidein.site"] == scenario.site
    # the wrapper started each job, the exit hook ended it, the history has them too
    starts = [e for e in find(events, "start") if e.key.startswith("job/")]
    ends = [e for e in find(events, "end") if e.key.startswith("job/")]
    assert len(starts) == 3 and [e.key for e in ends] == [e.key for e in starts]
    assert [e.fields["@status"] for e in ends] == ["OK", "OK", "ERROR"]
    assert ends[2].fields["job.exit_code:i"] == "3"
    assert [e.key for e in find(events, "history")] == [e.key for e in starts]
    ad = base64.b64decode(find(events, "history")[1].fields["@ad"]).decode()
    assert f'TraceParent = "{USER_TP}"' in ad
    # job environments: ours when the job had none, the user's kept
    assert result.job_env(0)["TRACEPARENT"] == format_traceparent(trace, span_id(trace, starts[0].key))
    assert result.job_env(1)["TRACEPARENT"] == USER_TP
    assert starts[1].links == [USER_TP]
    assert result.job_env(0)["GLIDEIN_Factory"] == scenario.factory
    assert result.job_env(0)["GLIDEIN_ClusterId"] == str(scenario.cluster)
    # the condor phase, its shutdown by the DaemonShutdown expression (Max_Tail) after the
    # last job, teardown, root end
    condor_end = find(events, "end", "condor")[0]
    assert condor_end.fields["glidein.shutdown.reason"] == "daemon_shutdown"
    assert find(events, "end", "glidein")[0].fields["glidein.outcome"] == "ok"
    # the glidein's own sections are still there, untouched
    sections = result.sections()
    assert {"MasterLog", "StartdLog", "StartdHistoryLog", JOURNAL_SECTION} <= set(sections)
    assert "=== Encoded XML description of glidein activity ===" in result.stderr()
    assert "<status>OK</status>" in result.stdout()


def test_validation_failure(tmp_path):
    scenario = Scenario(fail_script=("check_disk.sh", "WN_Resource"), jobs=[Job()])
    result = simulate_glidein(tmp_path, scenario)
    assert result.exit_code == 1
    events = journal_from_stderr(result)
    records = find(events, "record")
    assert records[-1].key == "main/check_disk.sh"
    assert records[-1].fields["@status"] == "ERROR" and records[-1].fields["@failure"] == "WN_Resource"
    assert not [e for e in records if e.key == "condor_startup.sh"]
    assert not [e for e in events if e.key.startswith("job/")]     # no job ran
    assert find(events, "end", "setup")[0].fields["@status"] == "ERROR"
    root_end = find(events, "end", "glidein")[0]
    assert root_end.fields["glidein.outcome"] == "validation_failed"
    assert root_end.fields["@error.type"] == "WN_Resource"
    assert "Validation error in" in result.stderr()


def test_sigterm_during_condor_phase(tmp_path):
    result = simulate_glidein(tmp_path, Scenario(jobs=[Job(duration_s=20)], sigterm_at_s=1.0))
    assert result.exit_code == 0
    events = journal_from_stderr(result)
    assert find(events, "end", "condor")[0].fields["glidein.shutdown.reason"] == "sigterm"
    assert find(events, "end", "glidein")[0].fields["glidein.outcome"] == "terminated"
    # HTCondor ends the job after condor_startup.sh's record (and here after the glidein's
    # end): in the returned journal and in the one left on disk, the job ends within `condor`
    on_disk, report = read_journal(result.journal_path)
    for journal in (events, on_disk):
        spans = {s.attributes["glidein.stage"]: s for s in convert(journal)
                 if not s.attributes.get("glidein.user_view")}
        job, condor, root = spans["job"], spans["condor.start"], spans["glidein"]
        assert job.end_time <= condor.end_time <= root.end_time
    assert job.attributes["job.end_cut_reason"] == "sigterm"
    assert job.attributes["job.recorded_end_s"] > root.end_time / 1e9


def test_sigkill_during_setup_leaves_the_journal_on_disk(tmp_path):
    result = simulate_glidein(tmp_path, Scenario(sigkill_at_stage="setup", jobs=[Job()]))
    assert result.killed
    assert result.journal_from_stderr() is None      # nothing ran at exit
    events, report = read_journal(result.journal_path)
    assert find(events, "start", "glidein") and find(events, "start", "setup")
    assert not find(events, "end")


def test_tracing_off_changes_nothing(tmp_path):
    result = simulate_glidein(tmp_path, Scenario(tracing=False, jobs=[Job(duration_s=0.2)]))
    assert result.exit_code == 0
    assert result.journal_path is None and result.journal_from_stderr() is None
    assert "TRACEPARENT" not in result.job_env(0)
    assert "gconditional_TRACING" not in result.stdout()


def test_sigkilled_glidein_still_yields_a_trace_of_what_happened(tmp_path):
    import subprocess
    import sys

    from glidein_tracing.exporters.store import read_store
    scenario = Scenario(sigkill_at_stage="setup", jobs=[Job()])
    result = simulate_glidein(tmp_path / "g", scenario)
    assert result.killed
    store = tmp_path / "store"
    out = subprocess.run([sys.executable, "-m", "glidein_tracing", "export", "--journal",
                          str(result.journal_path), "--store", str(store)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    trace = GlideinIdentity(scenario.factory, scenario.name, scenario.entry, scenario.schedd,
                            str(scenario.cluster), str(scenario.proc)).trace_id
    spans = {s["attributes"]["glidein.stage"]: s for s in read_store(store)[trace]}
    root, setup = spans["glidein"], spans["setup"]
    assert root["attributes"]["glidein.incomplete"] is True
    assert root["attributes"]["glidein.outcome"] == "incomplete"
    assert setup["attributes"]["glidein.closed_by"] == "converter"
    assert setup["end_ns"] == root["end_ns"] > setup["start_ns"]


SCENARIOS = {
    "jobs": Scenario(jobs=[Job(duration_s=0.4), Job(duration_s=0.3, exit_code=2)],
                     knobs={"GLIDEIN_TRACING_SAMPLE_PERIOD": "1"}),
    "fail_main": Scenario(fail_script=("check_disk.sh", "WN_Resource")),
    "fail_after_entry": Scenario(fail_script=("check_site.sh", "VO_Config", "after")),
    "sigterm": Scenario(jobs=[Job(duration_s=20)], sigterm_at_s=1.0),
    "sigkill_condor": Scenario(jobs=[Job(duration_s=20)], sigkill_at_stage="condor"),
}


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_stage_lies_within_its_parent_and_nothing_outlives_the_glidein(tmp_path, name):
    result = simulate_glidein(tmp_path, SCENARIOS[name])
    if result.killed:        # SIGKILL: nothing ran at exit; the journal on disk is all there is
        events, report = read_journal(result.journal_path)
    else:
        if name != "sigterm":   # on SIGTERM glidein_startup.sh does not wait for HTCondor's
            assert result.leftovers == []     # shutdown (docs/hooks.md): its stand-in may linger
        events, report = parse_lines(result.journal_from_stderr())
    spans = convert(events, report)
    assert outside_parent(spans) == []
    stages = {s.attributes["glidein.stage"]: s for s in spans}
    if name != "sigkill_condor":
        # setup ends where GlideinWMS's setup ends: the last script's start, or the failing
        # script's end; every validation script inside it. GlideinWMS's records are in whole
        # seconds: a failure within the second our setup hook started it ends setup at its start
        records = [e for e in events if e.op == "record"]
        condor = [r for r in records if r.key == "condor_startup.sh"]
        last = condor[0].fields["@tstart"] if condor else records[-1].fields["@tend"]
        # (placed inside the second the record names: docs/span-conventions.md, Times)
        recorded = int(parse_iso(last) * 1e9)
        assert max(recorded, stages["setup"].start_time) <= stages["setup"].end_time < recorded + 10**9
    if name == "fail_after_entry":
        # a user after_entry file runs before GlideinWMS's own after-list scripts
        ids = [e.key for e in events if e.op == "record"]
        assert ids[-1] == "main/check_site.sh" and "main/check_proxy.sh" not in ids
        assert "main/cvmfs_setup.sh" in ids and "main/singularity_setup.sh" in ids
    if name == "jobs":
        assert stages["glidein"].attributes["glidein.cpus"] == 1
        assert stages["glidein"].attributes["glidein.site"] == SCENARIOS[name].site


def test_the_trace_id_is_published_in_the_startd_ad_and_every_jobs_environment(tmp_path):
    """GlideinWMS's way: condor_vars with PUBLISH Y (STARTD_ATTRS) and USER_ENV + (the job's
    STARTER_JOB_ENVIRONMENT), so `condor_status -af GLIDEIN_TraceId` and the job see them."""
    from glidein_tracing.core.ids import GlideinIdentity, span_id
    from glidein_tracing.simulator import Job, Scenario, simulate_glidein
    scenario = Scenario(jobs=[Job(duration_s=0.2)])
    result = simulate_glidein(tmp_path, scenario)
    trace = GlideinIdentity(scenario.factory, scenario.name, scenario.entry, scenario.schedd,
                            str(scenario.cluster), str(scenario.proc)).trace_id
    config = (result.work_dir / "condor_config").read_text()
    attrs = next(line for line in config.splitlines() if line.startswith("STARTD_ATTRS"))
    assert {"GLIDEIN_TraceId", "GLIDEIN_TraceParent"} <= set(attrs.split("=", 1)[1].replace(",", " ").split())
    assert f'GLIDEIN_TraceId="{trace}"' in config
    assert f'GLIDEIN_TraceParent="00-{trace}-{span_id(trace, "glidein")}-01"' in config
    env = next(line for line in config.splitlines() if line.startswith("STARTER_JOB_ENVIRONMENT"))
    assert f"'GLIDEIN_TraceId={trace}'" in env


@pytest.mark.parametrize("python,reason", [("/nonexistent/python3", "does not exist"),
                                           ("NOT_EXECUTABLE", "is not executable by ")])
def test_a_python_that_cannot_run_is_said_once_on_stderr_and_in_a_note(tmp_path, python, reason):
    if python == "NOT_EXECUTABLE":
        python = tmp_path / "python3"
        python.write_text("#!/bin/sh\nexit 0\n")
        python.chmod(0o644)
    scenario = Scenario(jobs=[Job(duration_s=0.2)], knobs={
        "GLIDEIN_TRACING_EXPORT_MODE": "live", "GLIDEIN_TRACING_ENDPOINT": "http://127.0.0.1:9",
        "GLIDEIN_TRACING_PYTHON": str(python)})
    result = simulate_glidein(tmp_path / "glidein", scenario)
    assert result.exit_code == 0
    # like GlideinWMS's own warnings (`WARN <date> ...`), once in the glidein's whole stderr
    said = [line for line in result.stderr().splitlines() if "GLIDEIN_TRACING_PYTHON=" in line]
    assert len(said) == 1 and said[0].startswith("WARN ") and reason in said[0]
    assert "the Factory forwarder sends the spans" in said[0]
    events, _ = parse_lines(result.journal_from_stderr())
    notes = [e.fields["@msg"] for e in events if e.op == "note" and "@msg" in e.fields]
    assert [n for n in notes if f"GLIDEIN_TRACING_PYTHON={python} {reason}" in n]
    assert not [n for n in notes if n.startswith("live export")]       # said once: no repeat
    assert not [e for e in events if e.op == "export"]                 # nothing was tried
