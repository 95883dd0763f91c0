"""Condor-G activity log -> Factory-side spans, read with HTCondor's own reader."""

import os
import subprocess
import sys

import pytest

from glidein_tracing.core.converter import convert
from glidein_tracing.factory.activity import identity_events, read_activity_log
from glidein_tracing.core.ids import GlideinIdentity
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from tests.support.fixtures import fixture_path


def factory_spans(activity):
    """The spans of a glidein's Factory-side events, with its identity (as assembly.py adds it)."""
    identity = GlideinIdentity("F", "N", "E", "S", str(activity.cluster), str(activity.proc))
    return convert(identity_events(identity, min((e.time for e in activity.events), default=0.0)) + activity.events)


def spans_by_stage(activity):
    out = {}
    for span in factory_spans(activity):
        out.setdefault(span.attributes["glidein.stage"], []).append(span)
    return out


def seconds(span):
    return (span.end_time - span.start_time) / 1e9


def test_real_format_grid_log_submit_queue_hold_release_abort():
    path = fixture_path("htcondor", "synthetic", "grid_universe_synthetic.log")
    activities, state, count = read_activity_log(path)
    assert count == 12 and state
    ran = spans_by_stage(activities[(4242, 0)])
    submit, queue = ran["factory.submit"][0], ran["factory.queue"][0]
    assert queue.start_time - submit.start_time == 6 * 10**9
    assert queue.start_time - submit.end_time == 1000        # stages that meet: 1 us apart (docs/span-conventions.md)
    assert seconds(queue) == 289
    assert ran["glidein"][0].attributes["factory.return_value"] == 0
    assert seconds(ran["glidein"][0]) == 7220
    held = spans_by_stage(activities[(4243, 0)])
    holds = sorted(held["factory.held"], key=lambda s: s.start_time)
    # the legacy stamp's guessed year is undone; the first hold ends 1 us before the queue after its release
    assert [h.end_time - h.start_time for h in holds] == [600 * 10**9 - 1000, 1740 * 10**9]
    assert holds[0].attributes["factory.hold_reason"].startswith("Error connecting to schedd")
    assert holds[1].attributes["factory.hold_reason_code"] == 3
    assert holds[1].status.status_code.name == "ERROR"       # removed while held
    assert held["glidein"][0].attributes["factory.removed"] is True


def test_reading_resumes_where_it_stopped(tmp_path):
    layout = FactoryLayout(logs=tmp_path)
    log = CondorGLog(layout)
    log.submit(5, 0, when=1795318000)
    first, state, n1 = read_activity_log(layout.activity_log)
    log.grid_submit(5, 0, when=1795318010)
    log.execute(5, 0, when=1795318100)
    saved = first[(5, 0)].state()
    second, state2, n2 = read_activity_log(layout.activity_log, state,
                                           lambda c, p: saved if (c, p) == (5, 0) else None)
    assert (n1, n2) == (1, 2)
    assert [e.op for e in second[(5, 0)].events] == ["end", "start", "end"]


@pytest.mark.parametrize("utc_iso", [False, True])
def test_local_and_utc_subsecond_stamps_give_the_same_instants(tmp_path, utc_iso):
    # write and read in a zone far from UTC: local stamps must be read as local, Z as UTC
    code = (
        "import sys, json\n"
        "from pathlib import Path\n"
        "from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout\n"
        "from glidein_tracing.factory.activity import read_activity_log\n"
        f"layout = FactoryLayout(logs=Path({str(tmp_path)!r}), utc_iso={utc_iso})\n"
        "log = CondorGLog(layout)\n"
        "log.submit(9, 0, when=1795318000.25)\n"
        "log.execute(9, 0, when=1795318100.75)\n"
        "acts, _, _ = read_activity_log(layout.activity_log)\n"
        "print(json.dumps([e.time for e in acts[(9, 0)].events]))\n")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, TZ="America/Chicago"),
                         capture_output=True, text=True, check=True).stdout
    times = __import__("json").loads(out)
    if utc_iso:
        assert min(times) == pytest.approx(1795318000.25) and max(times) == pytest.approx(1795318100.75)
    else:  # the default format has whole seconds only
        assert min(times) == 1795318000 and max(times) == 1795318100


def test_htcondor_test_log_with_fuzz_is_read_without_crashing():
    path = fixture_path("htcondor", "test_condor.log")
    activities, _, count = read_activity_log(path)
    assert count > 800
    for activity in activities.values():
        factory_spans(activity)


@pytest.mark.parametrize("value, want", [("false", False), ("true", True)])
def test_glidein_overload_enabled_from_the_job_ad_information_event(tmp_path, value, want):
    """GlideinWMS's submit file lists GlideinOverloadEnabled in job_ad_information_attrs, so
    HTCondor writes it in a 028 event after the glidein's events: it lands on the root once."""
    log = tmp_path / "activity.log"
    ad = (f"028 (7.000.000) 2025-03-10 16:40:06 Job ad information event triggered.\n"
          f"Proc = 0\nEventTime = \"2025-03-10T16:40:06\"\nTriggerEventTypeNumber = 0\n"
          f"GlideinOverloadEnabled = {value}\nCluster = 7\nEventTypeNumber = 28\n...\n")
    log.write_text("000 (7.000.000) 2025-03-10 16:40:06 Job submitted from host: <192.0.2.10:9618>\n...\n" + ad
                   + "001 (7.000.000) 2025-03-10 16:45:01 Job executing on host: condor ce.example.org\n...\n"
                   + ad.replace("16:40:06", "16:45:01"))
    activities, _, count = read_activity_log(log)
    assert count == 4
    root = spans_by_stage(activities[(7, 0)])["glidein"][0]
    assert root.attributes["glidein.overload_enabled"] is want
    assert sum("glidein.overload_enabled:b" in e.fields for e in activities[(7, 0)].events) == 1
