"""Failure domains: every failed glidein and job says who is to blame, and why."""

from pathlib import Path

import pytest
from opentelemetry.trace import StatusCode

from glidein_tracing.core import failure, ids
from glidein_tracing.core.converter import convert
from glidein_tracing.exporters.store import read_store
from glidein_tracing.core.journal import format_line, parse_lines
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from tests.support.factory_builders import identity
from tests.support.fixtures import fixture_path
from tests.support.journal_builders import iso_epoch, parse_otr_records, record_lines, root_lines
from test_forwarder import make_forwarder

DOCS = Path(__file__).resolve().parents[1] / "docs" / "failures.md"
TRACE = ids.GlideinIdentity("gwms_test_factory", "gwms_test_instance", "TEST_ENTRY",
                            "schedd_glideins2@localhost", "1234", "0").trace_id


def convert_lines(lines):
    events, report = parse_lines("".join(lines).encode())
    return convert(events, report)


def stage(spans, name):
    return [s for s in spans if s.attributes["glidein.stage"] == name]


def test_docs_table_is_the_module_table():
    text = DOCS.read_text()
    assert failure.render_domains_markdown() in text
    assert failure.render_markdown() in text
    # every domain a rule can give is a documented domain
    assert {row[2] for row in failure.cases()} - set(failure.DOMAINS) <= {
        "the glidein's domain (glidein when it has none)", "the glidein's domain"}


def test_real_validation_failure_is_the_site_by_its_glideinwms_type():
    records = parse_otr_records(fixture_path("glidein-run", "fail", "otr_outlist.list").read_text())
    spans = convert_lines(root_lines(iso_epoch(records[0]["tstart"]), TRACE) + record_lines(records))
    (root,) = stage(spans, "glidein")
    assert root.attributes["glidein.failure.domain"] == "site"
    assert root.attributes["glidein.failure.evidence"] == "error.type=WN_Resource"


@pytest.mark.parametrize("failure_type, domain", [
    ("VO_Proxy", "credentials"), ("VO_Config", "vo_config"), ("Network", "site"),
    ("Corruption", "site"), ("Config", "glidein")])
def test_each_glideinwms_failure_type_has_its_domain(failure_type, domain):
    record = {"id": "main/check.sh", "tstart": "2026-11-22T03:36:30+00:00",
              "tend": "2026-11-22T03:36:31+00:00", "status": "ERROR",
              "metrics": {"failure": failure_type}, "detail": "it broke"}
    spans = convert_lines(root_lines(iso_epoch(record["tstart"]), TRACE) + record_lines([record]))
    (root,) = stage(spans, "glidein")
    assert (root.attributes["glidein.failure.domain"], root.attributes["glidein.failure.evidence"]) \
        == (domain, f"error.type={failure_type}")


def test_a_healthy_glidein_has_no_domain():
    lines = root_lines(1000.0, TRACE) + [
        format_line(1010, "end", "setup", {"@status": "OK"}),
        format_line(1010, "start", "condor", {"@stage": "condor.start", "@name": "condor"}),
        format_line(1050, "end", "condor", {"@status": "OK"}),
        format_line(1052, "end", "glidein", {"glidein.outcome": "ok"})]
    (root,) = stage(convert_lines(lines), "glidein")
    assert "glidein.failure.domain" not in root.attributes


def glidein_with_job(job_end_fields, outcome="ok", job_ends=True):
    lines = root_lines(1000.0, TRACE) + [
        format_line(1010, "end", "setup", {"@status": "OK"}),
        format_line(1010, "start", "condor", {"@stage": "condor.start", "@name": "condor"}),
        format_line(1015, "start", "job/s#1.0#9", {"@stage": "job", "@name": "job", "@parent": "condor"})]
    if job_ends:
        lines.append(format_line(1025, "end", "job/s#1.0#9", job_end_fields))
        lines += [format_line(1050, "end", "condor", {}),
                  format_line(1052, "end", "glidein", {"glidein.outcome": outcome})]
    else:  # killed: nothing after the job started but one resource sample
        lines.append(format_line(1030, "sample", "-", {"r.utime": "2"}))
    spans = convert_lines(lines)
    (root,) = stage(spans, "glidein")
    (job,) = stage(spans, "job")
    return root, job


def test_a_job_failing_on_a_healthy_glidein_is_user_code():
    root, job = glidein_with_job({"@status": "ERROR", "@error.type": "job.exit_code",
                                  "job.exit_code:i": "3", "job.exit_by": "exit"})
    assert "glidein.failure.domain" not in root.attributes
    assert job.attributes["job.failure.domain"] == "user_code"
    assert job.attributes["job.failure.evidence"] == "error.type=job.exit_code"


def test_a_job_killed_with_its_terminated_glidein_is_preempted_not_user_code():
    root, job = glidein_with_job({"@status": "ERROR", "@error.type": "job.signal",
                                  "job.exit_signal:i": "15"}, outcome="terminated")
    assert root.attributes["glidein.failure.domain"] == "preempted"
    assert job.attributes["job.failure.domain"] == "preempted"
    assert job.attributes["job.failure.evidence"] == "job.exit_signal=15"


def test_a_job_cut_short_by_a_killed_glidein_is_failed_and_not_user_code():
    root, job = glidein_with_job({}, job_ends=False)
    assert root.attributes["glidein.outcome"] == "incomplete"
    assert root.attributes["glidein.failure.domain"] == "glidein"
    assert job.status.status_code == StatusCode.ERROR
    assert job.attributes["error.type"] == "job.cut_short"
    assert job.attributes["job.failure.domain"] == "glidein"
    assert job.attributes["job.failure.evidence"] == "glidein.closed_by=converter"


def test_job_hold_codes_decide_before_the_error_type():
    _, job = glidein_with_job({"@status": "ERROR", "@error.type": "job.hold", "job.exit_by": "hold",
                               "job.hold_reason_code:i": "4"})
    assert (job.attributes["job.failure.domain"], job.attributes["job.failure.evidence"]) == \
        ("credentials", "job.hold_reason_code=4")


@pytest.mark.parametrize("code, domain", [(4, "credentials"), (2, "grid"), (0, "grid"), (999, "grid")])
def test_glidein_held_by_condor_g_and_removed_is_decided_by_its_hold_code(tmp_path, code, domain):
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    log = CondorGLog(layout)
    log.submit(300, 0, when=1795318000.0 - 120)
    log.held(300, 0, "the CE said no", code=code, when=1795318000.0 - 100)
    log.aborted(300, 0, when=1795318000.0 - 10)
    forwarder = make_forwarder(layout, tmp_path / "store", tmp_path / "ledger.sqlite",
                               schedd="schedd_glideins2@factory.example.org")
    assert forwarder.run_once().glideins_done == 1
    spans = read_store(tmp_path / "store")[identity(layout, 300, 0).trace_id]
    (root,) = [s for s in spans if s["attributes"]["glidein.stage"] == "glidein"]
    assert root["attributes"]["glidein.failure.domain"] == domain
    assert root["attributes"]["glidein.failure.evidence"] == f"factory.hold_reason_code={code}"


def notes_of(span):
    return [e.attributes["message"] for e in span.events if e.name == "glidein_tracing.note"]


def test_a_failed_job_names_what_triage_lacks_and_derives_its_remote_host():
    lines = root_lines(1000.0, TRACE) + [
        format_line(1010, "end", "setup", {"@status": "OK"}),
        format_line(1010, "start", "condor", {"@stage": "condor.start", "@name": "condor"}),
        format_line(1015, "start", "job/s#1.0#9", {"@stage": "job", "@name": "job", "@parent": "condor",
                                                   "job.slot": "slot1_1"}),
        format_line(1025, "end", "job/s#1.0#9", {"@status": "ERROR", "@error.type": "job.exit_code",
                                                 "job.exit_code:i": "3", "r.utime": "7.5"}),
        format_line(1050, "end", "condor", {}),
        format_line(1052, "end", "glidein", {"glidein.outcome": "ok"})]
    (job,) = stage(convert_lines(lines), "job")
    # the slot it ran in, on this host (root_lines' host.name)
    assert job.attributes["job.remote_host"] == "slot1_1@wn01.example.org"
    assert notes_of(job) == ["failed job: unknown wall time, site, processor model"]


def test_a_failed_job_with_everything_known_has_no_note():
    lines = root_lines(1000.0, TRACE, **{"glidein.site": "SITE_X", "res.host.cpu.model.name": "EPYC"}) + [
        format_line(1010, "end", "setup", {"@status": "OK"}),
        format_line(1010, "start", "condor", {"@stage": "condor.start", "@name": "condor"}),
        format_line(1015, "start", "job/s#1.0#9", {"@stage": "job", "@name": "job", "@parent": "condor"}),
        format_line(1025, "end", "job/s#1.0#9", {
            "@status": "ERROR", "@error.type": "job.hold", "job.exit_by": "hold",
            "job.hold_reason": "over memory", "job.hold_reason_code:i": "34", "r.utime": "7.5",
            "job.wall_s:f": "10.0", "job.remote_host": "slot1_1@glidein@wn01"}),
        format_line(1050, "end", "condor", {}),
        format_line(1052, "end", "glidein", {"glidein.outcome": "ok"})]
    (job,) = stage(convert_lines(lines), "job")
    assert notes_of(job) == []
    assert (job.attributes["job.failure.domain"], job.attributes["job.failure.evidence"]) == \
        ("user_code", "job.hold_reason_code=34")
