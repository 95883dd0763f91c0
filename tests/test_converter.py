import base64
import re

import pytest
from opentelemetry.trace import StatusCode

from glidein_tracing.core import ids
from glidein_tracing.core.converter import ConversionError, convert
from glidein_tracing.core.journal import format_line, parse_lines

from tests.support.fixtures import fixture_path
from tests.support.journal_builders import iso_epoch, parse_otr_records, record_lines, root_lines
from tests.support.span_nesting import outside_parent

IDENTITY = ids.GlideinIdentity("gwms_test_factory", "gwms_test_instance", "TEST_ENTRY",
                               "schedd_glideins2@localhost", "1234", "0")


def spans_of(lines):
    events, report = parse_lines("".join(lines).encode())
    return {s.attributes.get("glidein.stage") + ":" + s.name: s for s in convert(events, report)}, \
        convert(events, report)


def by_stage(spans, stage):
    return [s for s in spans if s.attributes["glidein.stage"] == stage]


def fixture_records(run):
    return parse_otr_records(fixture_path("glidein-run", run, "otr_outlist.list").read_text())


def test_real_success_records_become_validation_spans_with_their_own_times():
    records = fixture_records("success")
    start = iso_epoch(records[0]["tstart"]) - 0.4
    lines = root_lines(start) + record_lines(records)
    lines.append(format_line(start + 30, "end", "glidein", {}))
    _, spans = spans_of(lines)
    validations = by_stage(spans, "validation")
    scripts = [r for r in records if r["id"] != "condor_startup.sh"]
    assert [s.name for s in validations] == [r["id"] for r in scripts]
    for span, record in zip(validations, scripts):
        assert abs(span.start_time / 1e9 - iso_epoch(record["tstart"])) <= 1
        assert abs(span.end_time / 1e9 - iso_epoch(record["tend"])) <= 1
        assert span.status.status_code == StatusCode.OK
    condor = by_stage(spans, "condor.start")
    assert len(condor) == 1 and condor[0].attributes["condor.metric.AutoShutdown"] == "True"
    # with no job, the whole condor phase is one idle span
    (idle,) = by_stage(spans, "idle")
    assert idle.attributes["glidein.idle.kind"] == "no_job"
    assert idle.parent.span_id == condor[0].context.span_id
    (root,) = by_stage(spans, "glidein")
    assert format(root.context.trace_id, "032x") == IDENTITY.trace_id
    assert root.attributes["glidein.outcome"] == "ok"


def test_real_validation_failure_marks_the_script_setup_and_glidein():
    records = fixture_records("fail")
    start = iso_epoch(records[0]["tstart"])
    _, spans = spans_of(root_lines(start) + record_lines(records))
    failed = [s for s in by_stage(spans, "validation") if s.status.status_code == StatusCode.ERROR]
    assert [s.name for s in failed] == ["main/gwms_trace_setup.sh"]
    assert failed[0].attributes["error.type"] == "WN_Resource"
    assert "Forced validation failure" in failed[0].status.description
    (setup,) = by_stage(spans, "setup")
    assert setup.status.status_code == StatusCode.ERROR
    (root,) = by_stage(spans, "glidein")
    assert root.attributes["glidein.outcome"] == "validation_failed"
    assert root.status.status_code == StatusCode.ERROR


def test_killed_glidein_open_stages_close_at_last_known_time():
    lines = root_lines(1000.0, IDENTITY.trace_id)
    lines.append(format_line(1004.0, "sample", "-", {"r.utime": "1.5", "r.stime": "0.2"}))
    _, spans = spans_of(lines)
    (root,) = by_stage(spans, "glidein")
    (setup,) = by_stage(spans, "setup")
    assert setup.end_time == root.end_time == 1004 * 10**9
    assert setup.attributes["glidein.closed_by"] == "converter"
    assert root.attributes["glidein.incomplete"] is True
    assert root.attributes["glidein.outcome"] == "incomplete"


def test_jobs_links_idle_gaps_and_job_resources():
    user = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    lines = root_lines(1000.0, IDENTITY.trace_id) + [
        format_line(1010, "end", "setup", {}),
        format_line(1010, "start", "condor", {"@stage": "condor.start", "@name": "condor"}),
        format_line(1015, "start", "job/s#1.0#9", {"@stage": "job", "@name": "job", "@parent": "condor",
                                                   "job.user_traceparent": user}, links=[user]),
        format_line(1025, "end", "job/s#1.0#9", {"@status": "OK", "job.exit_code:i": "0",
                                                 "r.utime": "7.5", "r.stime": "0.5",
                                                 "job.rss_bytes:i": "104857600"}),
        format_line(1030, "start", "job/s#2.0#9", {"@stage": "job", "@name": "job", "@parent": "condor"}),
        format_line(1040, "end", "job/s#2.0#9", {"@status": "ERROR", "@error.type": "job_failed",
                                                 "job.exit_code:i": "3"}),
        format_line(1050, "end", "condor", {}),
        format_line(1050, "start", "teardown", {"@stage": "teardown", "@name": "teardown"}),
        format_line(1052, "end", "teardown", {}),
        format_line(1052, "end", "glidein", {}),
    ]
    _, spans = spans_of(lines)
    jobs = [j for j in by_stage(spans, "job") if not j.attributes.get("glidein.user_view")]
    assert len(jobs) == 2
    linked = [j for j in jobs if j.links]
    assert len(linked) == 1
    assert format(linked[0].links[0].context.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"
    assert format(linked[0].links[0].context.span_id, "016x") == "b7ad6b7169203331"
    assert linked[0].attributes["glidein.resource.cpu_user_s"] == 7.5
    assert linked[0].attributes["glidein.resource.max_rss_bytes"] == 104857600
    assert linked[0].attributes["glidein.resource.max_rss_source"] == "job.ResidentSetSize"
    failed = [j for j in jobs if j.status.status_code == StatusCode.ERROR]
    assert len(failed) == 1 and failed[0].attributes["job.exit_code"] == 3
    kinds = sorted((s.start_time // 10**9, s.attributes["glidein.idle.kind"]) for s in by_stage(spans, "idle"))
    assert kinds == [(1010, "before_first_job"), (1025, "between_jobs"), (1040, "tail")]
    condor_id = by_stage(spans, "condor.start")[0].context.span_id
    assert all(j.parent.span_id == condor_id for j in jobs)
    # the user's own trace gets a span, child of their context, linked back to the glidein job
    (view,) = [j for j in by_stage(spans, "job") if j.attributes.get("glidein.user_view")]
    assert format(view.context.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"
    assert format(view.parent.span_id, "016x") == "b7ad6b7169203331"
    assert view.links[0].context.span_id == linked[0].context.span_id
    assert view.links[0].context.trace_id == linked[0].context.trace_id
    assert view.attributes["host.name"] == "wn01.example.org"
    assert (view.start_time, view.end_time) == (linked[0].start_time, linked[0].end_time)


def test_frontend_request_context_links_submit_and_never_the_root():
    """The request's context is a link on factory.submit (setup without it); the root keeps
    it as attributes and carries no link: Jaeger's UI takes a span's first reference for its
    parent, and a root referencing another trace gets no critical path."""
    request = "00-11111111111111111111111111111111-2222222222222222-01"
    submit = [format_line(990, "start", "factory.submit", {"@stage": "factory.submit", "@name": "factory.submit"}),
              format_line(995, "end", "factory.submit", {})]
    for factory_lines, carrier in ((submit, "factory.submit"), ([], "setup")):
        lines = root_lines(1000.0, IDENTITY.trace_id, **{"glidein.request_traceparent": request}) + factory_lines + [
            format_line(1005, "end", "glidein", {}),
        ]
        _, spans = spans_of(lines)
        (root,) = by_stage(spans, "glidein")
        assert not root.links
        assert root.attributes["glidein.request_trace_id"] == "11111111111111111111111111111111"
        linked = [s for s in spans if s.links]
        assert [s.attributes["glidein.stage"] for s in linked] == [carrier]
        (link,) = linked[0].links
        assert link.attributes["glidein.link.kind"] == "frontend_request"
        assert format(link.context.span_id, "016x") == "2222222222222222"


def test_history_record_closes_a_job_the_exit_hook_missed():
    ad = fixture_path("htcondor", "synthetic", "startd_history_synthetic").read_text().split("\n*** ")[0]
    lines = root_lines(1741625000.0, IDENTITY.trace_id) + [
        format_line(1741625102, "start", "job/submit.example.org#4242.0#1741624806",
                    {"@stage": "job", "@name": "job", "@parent": "condor"}),
        format_line(1741632100, "history", "job/submit.example.org#4242.0#1741624806",
                    {"@ad": base64.b64encode(ad.encode()).decode()}),
    ]
    _, spans = spans_of(lines)
    (job,) = by_stage(spans, "job")
    assert job.end_time == 1741632026 * 10**9
    assert job.attributes["job.end_source"] == "StartdHistoryLog"
    assert job.attributes["glidein.resource.cpu_user_s"] == 600.0


def test_a_history_record_dated_outside_its_jobs_life_ends_nothing():
    """A StartdHistoryLog record is the node's word: one whose CompletionDate lies years after
    the record's own line (a job can write the history the cleanup hook reads) is skipped, and
    the job is closed as a killed glidein's are."""
    ad = fixture_path("htcondor", "synthetic", "startd_history_synthetic").read_text().split("\n*** ")[0]
    forged = re.sub(r"(?m)^CompletionDate = \d+", "CompletionDate = 2700000000", ad)
    assert forged != ad
    lines = root_lines(1741625000.0, IDENTITY.trace_id) + [
        format_line(1741625102, "start", "job/submit.example.org#4242.0#1741624806",
                    {"@stage": "job", "@name": "job", "@parent": "condor"}),
        format_line(1741632100, "history", "job/submit.example.org#4242.0#1741624806",
                    {"@ad": base64.b64encode(forged.encode()).decode()}),
    ]
    events, report = parse_lines("".join(lines).encode())
    (job,) = by_stage(convert(events, report), "job")
    assert job.end_time < 1741632200 * 10**9 and "job.end_source" not in job.attributes
    assert report.skipped.get("history record dated outside its job's life") == 1


def test_stage_resources_come_from_bracketing_samples():
    lines = root_lines(1000.0, IDENTITY.trace_id) + [
        format_line(1005, "sample", "-", {"r.utime": "2.0", "r.stime": "0.5", "r.rss": "9000000",
                                          "r.load1": "1.5", "r.disk_free": "4000000000"}),
        format_line(1010, "end", "setup", {"r.utime": "3.0", "r.stime": "0.75", "r.rss": "4000000",
                                           "r.load1": "1.25", "r.disk_free": "3900000000"}),
    ]
    _, spans = spans_of(lines)
    (setup,) = by_stage(spans, "setup")
    attrs = setup.attributes
    assert attrs["glidein.resource.cpu_user_s"] == pytest.approx(2.95)
    assert attrs["glidein.resource.cpu_system_s"] == pytest.approx(0.74)
    assert attrs["glidein.resource.rss_max_sampled_bytes"] == 9000000
    assert "glidein.resource.max_rss_bytes" not in attrs    # raw readings: no kernel peak
    assert attrs["glidein.resource.disk_free_bytes"] == 3900000000
    assert attrs["glidein.resource.disk_free_min_bytes"] == 3900000000
    assert attrs["glidein.resource.load1"] == 1.25
    assert attrs["glidein.resource.load1_max"] == 1.5


def test_conversion_is_deterministic_and_secrets_never_reach_spans():
    lines = root_lines(1000.0, "", **{"glidein.token": "eyJhbGciOi", "res.my.password": "hunter2",
                                      "custom.site_note": "keep me"})
    lines.append(format_line(1002, "end", "glidein", {}))
    events, _ = parse_lines("".join(lines).encode())
    first = convert(events, redact=["custom.site_note"])
    second = convert(events, redact=["custom.site_note"])
    assert [(s.context.trace_id, s.context.span_id) for s in first] == \
        [(s.context.trace_id, s.context.span_id) for s in second]
    assert format(first[0].context.trace_id, "032x") == IDENTITY.trace_id
    root = first[0]
    assert root.attributes["glidein.token"] == "REDACTED"
    assert root.attributes["custom.site_note"] == "REDACTED"
    assert root.resource.attributes["my.password"] == "REDACTED"


@pytest.mark.parametrize("value, secret", [
    ("Authorization: bEaReR abcdefgh12345", "abcdefgh12345"),   # any case, inside a longer value
    ("BASIC dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA"),
    ("EYJhbGciOiJSUzI1NiJ9.EYJzdWIiOiJ1c2VyIn0.sig", "EYJzdWIiOiJ1c2VyIn0"),  # a JWT whatever its case
    ("-----begin RSA PRIVATE KEY----- MIIEpAIB", "MIIEpAIB"),
])
def test_secret_values_are_redacted_whatever_their_name_and_case(value, secret):
    lines = root_lines(1000.0, "", **{"custom.note": value, "custom.plain": "basically fine"})
    lines.append(format_line(1002, "end", "glidein", {}))
    root = convert(parse_lines("".join(lines).encode())[0])[0]
    assert secret not in root.attributes["custom.note"]
    assert "REDACTED" in root.attributes["custom.note"]
    assert root.attributes["custom.plain"] == "basically fine"


def test_journal_without_root_or_identity_is_a_clear_error():
    events, _ = parse_lines(format_line(1, "sample", "-", {"r.utime": "1"}).encode())
    with pytest.raises(ConversionError, match="no glidein root"):
        convert(events)


def test_span_cap_keeps_the_earliest_jobs_and_counts_the_rest():
    lines = root_lines(1000.0, IDENTITY.trace_id, **{"@max_spans": "12", "@redact": "site.secret_note"})
    lines += [format_line(1010, "end", "setup", {}),
              format_line(1010, "start", "condor", {"@stage": "condor.start", "@name": "condor"})]
    for n in range(20):
        key = f"job/s#{n}.0#1"
        lines += [format_line(1011 + 2 * n, "start", key, {"@stage": "job", "@name": "job", "@parent": "condor"}),
                  format_line(1012 + 2 * n, "end", key, {"@status": "OK"})]
    lines += [format_line(1100, "end", "condor", {}), format_line(1101, "end", "glidein", {}),
              format_line(1001, "attr", "glidein", {"site.secret_note": "do not show"})]
    _, spans = spans_of(lines)
    assert len(spans) == 12
    (root,) = by_stage(spans, "glidein")
    jobs = by_stage(spans, "job")
    assert root.attributes["glidein_tracing.jobs_not_traced"] == 20 - len(jobs)
    assert min(j.start_time for j in jobs) == 1011 * 10**9        # the earliest kept
    assert root.attributes["site.secret_note"] == "REDACTED"      # the glidein's own REDACT knob


def test_a_stage_carries_only_what_was_measured_inside_it():
    # a 30 s sample window with a 0 s script inside it (the real case: 3 s of CPU in the
    # window must not land on the script), setup ending at the last script's start
    iso = "2026-11-22T03:36:{:02d}+00:00"
    lines = root_lines(1795318550.0, IDENTITY.trace_id)
    lines.append(format_line(1795318560.0, "sample", "-", {"r.utime": "1.0", "r.stime": "0.1", "r.rss": "9000"}))
    lines.append(format_line(1795318590.0, "sample", "-", {"r.utime": "4.05", "r.stime": "0.2", "r.rss": "7000"}))
    lines += record_lines([
        {"id": "main/check_proxy.sh", "tstart": iso.format(10), "tend": iso.format(10),
         "status": "OK", "metrics": {}, "detail": ""}])     # 1795318570
    lines.append(format_line(1795318600.0, "end", "glidein", {}))
    _, spans = spans_of(lines)
    (script,) = by_stage(spans, "validation")
    assert not [k for k in script.attributes if k.startswith("glidein.resource.")]
    (setup,) = by_stage(spans, "setup")       # ends at its last record, in its second: 1795318570
    assert setup.end_time == script.end_time
    assert 1795318570 * 10**9 < setup.end_time < 1795318571 * 10**9
    assert setup.attributes["glidein.resource.cpu_user_s"] == pytest.approx(0.95)  # 0.05 -> 1.0
    assert setup.attributes["glidein.resource.window_s"] == 10.0   # the part measured
    (root,) = by_stage(spans, "glidein")
    assert root.attributes["glidein.resource.cpu_user_s"] == pytest.approx(4.0)
    assert root.attributes["glidein.resource.rss_max_sampled_bytes"] == 3000000    # the largest reading


def _user_job_journal(qdate, job_start=1012.0, first_job_start=None):
    user = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    lines = root_lines(1000.0) + [
        format_line(999, "start", "factory.queue", {"@stage": "factory.queue", "@name": "factory.queue"}),
        format_line(1000, "end", "factory.queue", {}),
        format_line(1010, "start", "condor", {"@stage": "condor.start", "@name": "condor"})]
    if first_job_start is not None:
        lines += [format_line(first_job_start, "start", "job/a#1.0#1", {"@stage": "job", "@name": "job",
                                                                        "@parent": "condor"}),
                  format_line(first_job_start + 1, "end", "job/a#1.0#1", {})]
    lines += [format_line(job_start, "start", "job/a#2.0#1", {
                  "@stage": "job", "@name": "job", "@parent": "condor", "job.global_id": "a#2.0#1", "job.owner": "alice",
                  "job.qdate:i": str(int(qdate)), "job.num_job_starts:i": "1"}, links=[user]),
              format_line(job_start + 5, "end", "job/a#2.0#1", {}),
              format_line(1030, "end", "condor", {}),
              format_line(1031, "end", "glidein", {})]
    return convert(*parse_lines("".join(lines).encode()))


def test_the_users_trace_gets_why_the_job_waited():
    spans = _user_job_journal(qdate=900)
    (wait,) = [s for s in spans if s.name == "job.wait"]
    (job_on,) = [s for s in spans if s.name == "job on glidein"]
    assert wait.context.trace_id == 0x0af7651916cd43dd8448eb211c80319c == job_on.context.trace_id
    assert wait.parent.span_id == 0xb7ad6b7169203331 and wait.parent.is_remote
    assert (wait.start_time, wait.end_time) == (900 * 10**9, job_on.start_time)
    attrs = wait.attributes
    assert attrs["glidein.stage"] == "job.wait" and attrs["job.wait_s"] == 112.0
    assert attrs["job.wait.glidein"] == "new"          # the glidein was submitted after the job
    assert attrs["job.num_job_starts"] == 1 and attrs["glidein.entry"]
    # the user's name, so the documented `job.owner` search finds their own traces too
    assert attrs["job.owner"] == job_on.attributes["job.owner"] == "alice"
    assert "glidein.queue_wait_s" in attrs and "job.wait.glidein_idle_s" not in attrs
    assert wait.links[0].context.trace_id != wait.context.trace_id   # linked to the glidein's trace


def test_a_job_that_took_an_idle_glidein_says_how_long_the_glidein_idled():
    spans = _user_job_journal(qdate=1015, job_start=1020, first_job_start=1012)
    (wait,) = [s for s in spans if s.name == "job.wait"]
    assert wait.attributes["job.wait.glidein"] == "idle"
    assert wait.attributes["job.wait.glidein_idle_s"] == 7.0      # since the previous job ended
    # a QDate after the start (clocks disagree) or none: no job.wait span
    assert not [s for s in _user_job_journal(qdate=1100) if s.name == "job.wait"]


def test_each_link_says_its_kind():
    """The Frontend request's context on the root is that request, and a link any other
    journal line gives a stage is ``related``; the root's go on setup (no factory.submit)."""
    start = 1700000000.0
    cycle = "00-11111111111111111111111111111111-2222222222222222-01"
    request = "00-33333333333333333333333333333333-4444444444444444-01"
    other = "00-55555555555555555555555555555555-6666666666666666-00"
    lines = root_lines(start, **{"glidein.request_traceparent": request})
    lines.append(format_line(start + 1, "attr", "glidein", {}, links=[cycle]))
    lines.append(format_line(start + 2, "attr", "setup", {}, links=[other]))
    lines.append(format_line(start + 3, "end", "setup", {}))
    lines.append(format_line(start + 4, "end", "glidein", {}))
    _, spans = spans_of(lines)
    (root,) = by_stage(spans, "glidein")
    (setup,) = by_stage(spans, "setup")
    assert not root.links
    kinds = {link.attributes["traceparent"]: link.attributes["glidein.link.kind"] for link in setup.links}
    assert kinds == {cycle: "related", request: "frontend_request", other: "related"}
    (own,) = [link for link in setup.links if link.attributes["traceparent"] == other]
    assert not own.context.trace_flags.sampled   # the link keeps its context's flags


def _sigterm_journal(job_end_after_condor_s: float, root_end_after_condor_s: float):
    """The real SIGTERM glidein's records (../shared/fixtures/glidein-run/sigterm) with a job that
    HTCondor killed after condor_startup.sh's record ended, as real glideins show it."""
    records = fixture_records("sigterm")
    condor = next(r for r in records if r["id"] == "condor_startup.sh")
    c_start, c_end = iso_epoch(condor["tstart"]), iso_epoch(condor["tend"])
    job = "job/schedd#4242.0#1"
    lines = root_lines(iso_epoch(records[0]["tstart"]), IDENTITY.trace_id) + record_lines(records)
    lines += [format_line(c_start, "end", "setup", {"@status": "OK"}),
              format_line(c_start, "start", "condor", {"@name": "condor", "@stage": "condor.start"}),
              format_line(c_start + 1, "start", job, {"@name": "job", "@stage": "job", "@parent": "condor"}),
              format_line(c_end, "end", "condor", {"@status": "OK", "glidein.shutdown.reason": "sigterm"}),
              format_line(c_end, "start", "teardown", {"@name": "teardown", "@stage": "teardown"}),
              format_line(c_end + job_end_after_condor_s, "end", job,
                          {"@status": "ERROR", "@error.type": "job.evict", "job.exit_by": "evict"}),
              format_line(c_end + root_end_after_condor_s, "end", "teardown", {"@status": "OK"}),
              format_line(c_end + root_end_after_condor_s, "end", "glidein",
                          {"@status": "OK", "glidein.outcome": "terminated"})]
    return c_end, sorted(lines, key=lambda line: float(line.split("\t")[1]))


def test_sigterm_condor_ends_when_its_last_job_does():
    condor_record_end, lines = _sigterm_journal(job_end_after_condor_s=1.19, root_end_after_condor_s=2.5)
    _, spans = spans_of(lines)
    (condor,) = by_stage(spans, "condor.start")
    (job,) = [j for j in by_stage(spans, "job") if not j.attributes.get("glidein.user_view")]
    (root,) = by_stage(spans, "glidein")
    assert job.end_time == condor.end_time == round((condor_record_end + 1.19) * 1e6) * 1000
    assert condor.attributes["condor.end_source"] == "last_job"
    assert "job.end_cut_reason" not in job.attributes
    assert condor.end_time <= root.end_time
    assert outside_parent(spans, tolerance_s=0) == []


def test_sigterm_job_ended_after_the_glidein_is_cut_at_condor_end_with_the_reason():
    condor_record_end, lines = _sigterm_journal(job_end_after_condor_s=5.0, root_end_after_condor_s=2.5)
    _, spans = spans_of(lines)
    (condor,) = by_stage(spans, "condor.start")
    (job,) = [j for j in by_stage(spans, "job") if not j.attributes.get("glidein.user_view")]
    assert condor.end_time == condor_record_end * 10**9 and "condor.end_source" not in condor.attributes
    assert job.end_time == condor.end_time
    assert job.attributes["job.end_cut_reason"] == "sigterm"
    assert job.attributes["job.recorded_end_s"] == pytest.approx(condor_record_end + 5.0)
    assert outside_parent(spans, tolerance_s=0) == []


def test_sigterm_job_started_after_condors_whole_second_end_lies_within_condor():
    """A SIGTERM as a job starts: the hook's `start job` (date +%s.%N, ns digits) comes after
    condor_startup.sh's record ended at its whole second, and no `end` follows. The job is closed
    at its start and lasts 1 us; `condor` ends with it. Whatever the start's nanoseconds, the
    1 us is whole in the microseconds sent (an epoch float + 1e-6 can round to the start's own
    microsecond), so the job never ends 1 us after its parent."""
    second = 1796525108   # an epoch of the day: floats are ~0.24 us coarse there
    job = "job/schedd#4242.0#1"
    fixed = root_lines(second - 2, IDENTITY.trace_id) + [
        format_line(second - 1, "start", "condor", {"@name": "condor", "@stage": "condor.start"}),
        format_line(second, "end", "condor", {"@status": "OK", "glidein.shutdown.reason": "sigterm"}),
        format_line(second, "start", "teardown", {"@name": "teardown", "@stage": "teardown"}),
        format_line(second + 1.4, "end", "teardown", {"@status": "OK"}),
        format_line(second + 1.5, "end", "glidein", {"@status": "OK", "glidein.outcome": "terminated"})]
    job_start = format_line(0, "start", job, {"@name": "job", "@stage": "job", "@parent": "condor"})
    outside = []
    for nanos in range(123, 10**9, 4_999_777):      # 200 starts across the second, any ns
        start_text = f"{second}.{nanos:09d}"
        lines = fixed[:-3] + [job_start.replace("\t0.000000\t", f"\t{start_text}\t", 1)] + fixed[-3:]
        _, spans = spans_of(lines)
        (condor,) = by_stage(spans, "condor.start")
        (span,) = [j for j in by_stage(spans, "job") if not j.attributes.get("glidein.user_view")]
        assert span.attributes["glidein.closed_by"] == "converter"
        assert span.end_time - span.start_time == 1000 and span.end_time == condor.end_time
        outside += [start_text] if outside_parent(spans, tolerance_s=0) else []
    assert outside == []
