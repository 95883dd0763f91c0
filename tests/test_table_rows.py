"""The glidein table's rows: durations equal the spans', GlideinWMS's quantities equal what
its Factory computes (its definitions by hand, the real recorded glideins' stdout, a simulated
glidein's stdout), and every column is documented."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from glidein_tracing.core import ids
from glidein_tracing.core.converter import convert
from glidein_tracing.core.journal import format_line, parse_lines, read_journal
from glidein_tracing.simulator import Job, Scenario, simulate_glidein
from glidein_tracing.table import gwms, schema
from glidein_tracing.table.readable import readable_spans

from tests.support.fixtures import fixture_path
from tests.support.journal_builders import iso_epoch, parse_otr_records, record_lines, root_lines
from tests.support.table_helpers import factory_view, glidein_rows

REPO = Path(__file__).resolve().parents[1]
NS = 10**9


def test_glideinwms_definitions_by_hand():
    # HTCondor never started: all validation and badput, no jobs
    out = gwms.quantities(gwms.GlideinRun(glidein_s=1203, factory_s=1210, validation_s=None,
                                          condor_started=False, condor_s=None))
    assert (out["gwms_lasted_s"], out["gwms_condor_lasted_s"], out["gwms_jobs_nr"]) == (1203, 0, 0)
    assert (out["waste_validation_mill"], out["waste_idle_mill"], out["waste_nosuccess_mill"],
            out["waste_badput_mill"]) == (1000, 0, 0, 1000)
    # no stdout banner: the Factory's execute-to-terminated time is the "best guess"
    assert gwms.quantities(gwms.GlideinRun(None, 300, None, False, None))["gwms_lasted_s"] == 300
    # a condor phase under 5 s is a total loss, and Lasted is at least CondorLasted
    short = gwms.quantities(gwms.GlideinRun(2, None, 1, True, 4, gwms.StarterSummary(1, 3, 3, 0)))
    assert (short["gwms_lasted_s"], short["gwms_condor_lasted_s"], short["gwms_jobs_nr"]) == (4, 4, 0)
    assert short["waste_badput_mill"] == 1000 and short["waste_validation_mill"] == 1000
    # a 2-core glidein: 3 jobs of 1000 s (exit 0), 500 s (exit 2), 300 s (signal)
    summary = gwms.starter_summary([(1000, gwms.GOOD_ZERO), (500, gwms.GOOD_NONZERO), (300, gwms.BAD_SIGNAL)], 2)
    assert summary == gwms.StarterSummary(3, 1800, 500, 250)
    out = gwms.quantities(gwms.GlideinRun(4000, None, 100, True, 3800, summary))
    assert (out["gwms_lasted_s"], out["gwms_jobs_lasted_s"], out["gwms_jobs_goodput_s"],
            out["gwms_jobs_terminated_s"]) == (4000, 1800, 500, 750)
    assert out["waste_validation_mill"] == 1000 * 100 / 4000
    assert out["waste_idle_mill"] == 1000 * (3800 - 1800) / 3800
    assert out["waste_nosuccess_mill"] == 1000 * (1800 - 500) / 1800
    assert out["waste_badput_mill"] == 1000 * (4000 - 750) / 4000
    # goodput never above the jobs' time; no job time: no nosuccess
    capped = gwms.quantities(gwms.GlideinRun(100, None, 10, True, 90, gwms.StarterSummary(1, 50, 80, 0)))
    assert capped["gwms_jobs_goodput_s"] == 50 and capped["waste_nosuccess_mill"] == 0
    assert gwms.quantities(gwms.GlideinRun(100, None, 10, True, 90))["waste_nosuccess_mill"] == 0


def test_job_classes_as_the_starterlog_counts_them():
    assert gwms.job_class(0, None, "exit") == gwms.GOOD_ZERO
    assert gwms.job_class(3, None, "exit") == gwms.GOOD_NONZERO
    assert gwms.job_class(None, 9, "exit") == gwms.BAD_SIGNAL
    assert gwms.job_class(None, None, "evict") == gwms.BAD_SIGNAL
    assert gwms.job_class(None, None, None) == gwms.BAD_OTHER


def _span(trace, key, stage, start, end, parent="glidein", attrs=None, status=0, name=None):
    return {"trace_id": trace, "span_id": ids.span_id(trace, key),
            "parent_span_id": ids.span_id(trace, parent) if parent else "", "name": name or stage,
            "start_ns": int(start * NS), "end_ns": int(end * NS), "status_code": status, "status_message": "",
            "attributes": {"glidein.stage": stage, **(attrs or {})},
            "resource": {"host.cpu.model.name": "EPYC", "os.description": "EL9"}, "events": [], "links": []}


def synthetic_glidein(trace="ab" * 16, cpus=2):
    """A glidein of known times: queued 300 s, setup 100.4 s, condor 3800 s, 3 jobs."""
    t = 1795300000.25
    node = t + 310
    condor = node + 100.4
    spans = [
        _span(trace, "glidein", "glidein", t, condor + 3810, parent="",
              attrs={"glidein.factory": "F", "glidein.entry": "E", "glidein.site": "S", "glidein.name": "g",
                     "glidein.cluster": 7, "glidein.proc": 1, "glidein.cpus": cpus, "glidein.outcome": "ok",
                     "glidein.setting.max_idle_s": 1200.0, "glidein_tracing.sampling_ratio": 0.5}),
        _span(trace, "factory.submit", "factory.submit", t, t + 5),
        _span(trace, "factory.queue", "factory.queue", t + 5, t + 305),
        _span(trace, "setup", "setup", node, condor),
        _span(trace, "v1", "validation", node + 1, node + 31, "setup", {"glidein.script.list": "main"}),
        _span(trace, "v2", "validation", node + 31, node + 40.5, "setup", {"glidein.script.list": "entry"}),
        _span(trace, "condor", "condor.start", condor, condor + 3800, name="condor",
              attrs={"condor.metric.CondorDuration": "3800", "glidein.shutdown.reason": "daemon_shutdown"}),
        _span(trace, "idle/0", "idle", condor, condor + 100, "condor", {"glidein.idle.kind": "before_first_job"}),
        _span(trace, "job/0", "job", condor + 100, condor + 1100, "condor",
              {"job.exit_code": 0, "job.exit_by": "exit", "job.qdate": int(condor)}),
        _span(trace, "idle/1", "idle", condor + 1100, condor + 1200, "condor", {"glidein.idle.kind": "between_jobs"}),
        _span(trace, "job/1", "job", condor + 1200, condor + 1700, "condor", {"job.exit_code": 2, "job.exit_by": "exit"},
              status=2),
        _span(trace, "job/2", "job", condor + 1700, condor + 2000, "condor", {"job.exit_signal": 9, "job.exit_by": "exit"},
              status=2),
        _span(trace, "idle/2", "idle", condor + 2000, condor + 3800, "condor", {"glidein.idle.kind": "tail"}),
        _span(trace, "teardown", "teardown", condor + 3800, condor + 3810, attrs={"glidein.exit_code": 0}),
    ]
    return spans, t, node, condor


def test_rows_of_a_glidein_of_known_times():
    spans, t, node, condor = synthetic_glidein()
    row, jobs = glidein_rows(readable_spans(spans), trace_kept=False)
    assert row["queue_wait_s"] == 300 and row["setup_s"] == pytest.approx(100.4)
    assert row["validation_main_s"] == 30 and row["validation_entry_s"] == pytest.approx(9.5, abs=1e-6)
    assert row["validation_client_s"] is None and row["validation_scripts"] == 2
    assert (row["idle_before_first_job_s"], row["idle_between_jobs_s"], row["idle_tail_s"]) == (100, 100, 1800)
    assert row["jobs"] == 3 and row["jobs_wall_s"] == 1800 and row["condor_s"] == 3800
    assert row["submitted_at"] == spans[1]["start_ns"] // 1000 and row["ended_at"] == spans[0]["end_ns"] // 1000
    assert row["trace_kept"] is False and row["sampling_ratio"] == 0.5 and row["max_idle_s"] == 1200
    assert row["cpu_model"] == "EPYC" and row["os_description"] == "EL9"
    assert row["failed"] is False and row["failure_stage"] is None   # failed jobs are not the glidein's
    # GlideinWMS: Lasted = int(end) - int(node start); validation = setup; 2 cores
    lasted = int(condor + 3810) - int(node)
    assert row["gwms_lasted_s"] == lasted and row["gwms_validation_s"] == int(condor) - int(node)
    assert (row["gwms_jobs_nr"], row["gwms_jobs_lasted_s"], row["gwms_jobs_goodput_s"],
            row["gwms_jobs_terminated_s"]) == (3, 1800, 500, 750)
    assert row["waste_idle_mill"] == 1000 * (3800 - 1800) / 3800
    assert row["waste_badput_mill"] == 1000 * (lasted - 750) / lasted
    assert [j["gwms_class"] for j in jobs] == ["goodZ", "goodNZ", "badSignal"]
    assert jobs[0]["wait_s"] == pytest.approx(condor + 100 - int(condor)) and jobs[0]["idle_before_s"] == 100 and jobs[1]["idle_before_s"] == 100
    assert [j["wall_s"] for j in jobs] == [1000, 500, 300]
    # the job timeline: the jobs' values in the order of their starts
    job_spans = [spans[8], spans[10], spans[11]]
    assert row["job_started_at"] == [s["start_ns"] // 1000 for s in job_spans] == [j["started_at"] for j in jobs]
    assert row["job_ended_at"] == [s["end_ns"] // 1000 for s in job_spans] == [j["ended_at"] for j in jobs]
    assert row["job_request_cpus"] == [None, None, None] and row["job_failed"] == [False, True, True]


def test_a_failed_glidein_names_its_failed_script_and_its_sleep_counts_in_lasted():
    trace = "cd" * 16
    t = 1795300000.0
    spans = [
        _span(trace, "glidein", "glidein", t, t + 1300, parent="", status=2,
              attrs={"glidein.outcome": "validation_failed", "glidein.failure.domain": "site"}),
        _span(trace, "setup", "setup", t + 10, t + 30, status=2),
        _span(trace, "v1", "validation", t + 11, t + 29, "setup", {"error.type": "WN_Resource"}, status=2,
              name="main/check.sh"),
        _span(trace, "teardown", "teardown", t + 30, t + 32),
        _span(trace, "post_failure_sleep", "post_failure_sleep", t + 32, t + 1300),
    ]
    spans[2]["status_message"] = "no space left"
    row, _ = glidein_rows(readable_spans(spans))
    assert (row["failure_stage"], row["failure_type"], row["failure_message"]) == \
        ("main/check.sh", "WN_Resource", "no space left")
    assert row["post_failure_sleep_s"] == 1268 and row["gwms_lasted_s"] == 1290
    assert row["gwms_condor_started"] is False and row["waste_validation_mill"] == 1000


@pytest.mark.parametrize("run", ["success", "fail", "sigterm"])
def test_real_glideins_quantities_equal_the_factorys_reading_of_their_stdout(run):
    """The recorded glideins' own records, in a journal dated by their own banners: our
    quantities equal what GlideinWMS's Factory reads in the stdout it got back."""
    stdout = fixture_path("glidein-run", run, "glidein_stdout.txt").read_text()
    records = parse_otr_records(fixture_path("glidein-run", run, "otr_outlist.list").read_text())
    end, after = map(int, re.search(r"=== Glidein ending .*\((\d+)\) with code \d+ after (\d+) ===", stdout).groups())
    start = end - after + 0.4          # the node's start: glidein_startup.sh's startup_time
    lines = root_lines(start) + record_lines(records)
    condor = [r for r in records if r["id"].endswith("condor_startup.sh")]
    setup_end = iso_epoch(condor[0]["tstart"]) if condor else iso_epoch(records[-1]["tend"])
    lines += [format_line(start, "start", "setup", {"@name": "setup", "@stage": "setup"}),
              format_line(setup_end, "end", "setup", {}),
              format_line(end - 0.5, "start", "teardown", {"@name": "teardown", "@stage": "teardown"}),
              format_line(end + 0.3, "end", "teardown", {}), format_line(end + 0.3, "end", "glidein", {})]
    events, report = parse_lines("".join(lines).encode())
    row, _ = glidein_rows(convert(events, report))
    expected = gwms.quantities(factory_view(stdout))
    assert {k: row[k] for k in expected} == expected


def test_simulated_glidein_quantities_equal_the_factorys_reading_of_its_stdout(tmp_path):
    """A glidein run by the simulator with the real hooks, 2 cores, jobs that succeed and
    fail: the Factory's reading of its stdout (banners, StarterLog summary) and our row agree.
    HTCondor's time is condor_startup.sh's own count in both; the node's start and end are
    read by our hooks and by glidein_startup.sh at slightly different moments, so they may
    fall a second apart (a busy machine), and each job's seconds (our spans vs the
    starter's clock) likewise."""
    result = simulate_glidein(tmp_path, Scenario(
        jobs=[Job(duration_s=2.2), Job(duration_s=1.4, exit_code=2), Job(duration_s=1.2)],
        params={"GLIDEIN_CPUS": "2"}, max_tail_s=1.0))
    spans = convert(*read_journal(result.journal_path))
    row, jobs = glidein_rows(spans)
    expected = gwms.quantities(factory_view(result.stdout()))
    assert expected["gwms_condor_lasted_s"] >= 5, "the condor phase must be long enough to count"
    for key in ("gwms_condor_started", "gwms_condor_lasted_s", "gwms_jobs_nr"):
        assert row[key] == expected[key], (key, row[key], expected[key])
    for key in ("gwms_lasted_s", "gwms_validation_s"):
        assert abs(row[key] - expected[key]) <= 1, (key, row[key], expected[key])
    for key in ("gwms_jobs_lasted_s", "gwms_jobs_goodput_s", "gwms_jobs_terminated_s"):
        assert abs(row[key] - expected[key]) <= len(jobs), (key, row[key], expected[key])
    # the formulas on the Factory's own inputs, and on ours, differ only by those seconds
    assert row["waste_idle_mill"] == pytest.approx(expected["waste_idle_mill"], abs=1000 * len(jobs) / 5)
    assert row["cpus"] == 2 and row["max_tail_s"] == 1.0 and row["max_idle_s"] == 1.0
    assert [j["gwms_class"] for j in jobs] == ["goodZ", "goodNZ", "goodZ"]


def test_every_column_is_documented_with_its_type_and_unit():
    check = subprocess.run([sys.executable, str(REPO / "dev" / "table_doc.py"), "--check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    doc = (REPO / "docs" / "glidein-table.md").read_text()
    assert f"schema version {schema.SCHEMA_VERSION}" in doc
    for dataset, columns in schema.DATASETS.items():
        assert f"## `{dataset}`" in doc
        for column in columns:
            assert f"| `{column.name}` | {column.sql_type} | {column.unit} |" in doc, column.name


def test_forged_values_make_nulls_not_a_failed_row(tmp_path):
    """Everything from the node is untrusted: text where numbers belong, absurd numbers."""
    from glidein_tracing.table import reader, writer
    spans, *_ = synthetic_glidein()
    spans[0]["attributes"].update({"glidein.cpus": "many", "glidein.setting.max_idle_s": "forever",
                                   "glidein.cluster": 10**40, "glidein.site": "x" * 5000})
    spans[8]["attributes"].update({"job.exit_code": "zero", "job.request_cpus": 10**30, "job.qdate": "now"})
    row, jobs = glidein_rows(readable_spans(spans))
    assert row["cpus"] is None and row["gwms_jobs_nr"] == 3
    writer.write_days(tmp_path, "glideins", {"2026-11-22": [row]}, "t")
    writer.write_days(tmp_path, "jobs", {"2026-11-22": jobs}, "t")
    glideins, _ = reader.read_rows(tmp_path, "glideins")
    (stored,) = glideins.to_pylist()
    assert stored["max_idle_s"] is None and stored["cluster"] is None and stored["setup_s"] == row["setup_s"]
    assert len(stored["site"]) == 5000
    stored_jobs = reader.read_rows(tmp_path, "jobs")[0].to_pylist()
    assert stored_jobs[0]["exit_code"] is None and stored_jobs[0]["request_cpus"] is None
    assert stored_jobs[0]["wait_s"] is None and stored_jobs[0]["gwms_class"] == "goodNZ"
    assert stored["job_request_cpus"] == [j["request_cpus"] for j in stored_jobs] == [None, None, None]
    assert stored["job_failed"] == [False, True, True]      # a forged exit code is no failure


def test_a_glidein_of_thousands_of_jobs_writes_its_timeline_in_one_order(tmp_path):
    """A hostile node reports 6,000 jobs, many of one start, some of one start and end, one
    ending beyond the calendar, forged cpus and exit codes: the row is written, its timeline
    in the same order however the spans arrive, and it is the jobs dataset's rows."""
    import random
    from glidein_tracing.analysis.dataset import open_dataset
    from glidein_tracing.table import reader, writer
    from tests.support.analysis_helpers import timeline_mismatches
    spans, t, node, condor = synthetic_glidein()
    for i in range(6000):
        start = condor + 100 + (i // 3)
        attrs = {"job.exit_code": [0, 1, "zero", 2.5][i % 4], "job.request_cpus": [1, 8, "many", 10**30][i % 4]}
        spans.append(_span(spans[0]["trace_id"], f"many/{i}", "job", start, start + 1 + i % 2, "condor", attrs))
    spans[-1]["end_ns"] = 10**30
    rng = random.Random(5)
    rows = []
    for _ in range(2):
        rng.shuffle(spans)
        rows.append(glidein_rows(readable_spans(spans)))
    (row, jobs), (again, _) = rows
    assert row == again and len(row["job_started_at"]) == row["jobs"] == 6003 and row["job_ended_at"][-1] is None
    assert row["job_started_at"] == sorted(row["job_started_at"])
    writer.write_days(tmp_path, "glideins", {"2026-11-22": [row]}, "t")
    writer.write_days(tmp_path, "jobs", {"2026-11-22": jobs}, "t")
    (stored,) = reader.read_rows(tmp_path, "glideins")[0].to_pylist()
    cpus = stored["job_request_cpus"]
    assert len(stored["job_failed"]) == 6003 and (cpus.count(1), cpus.count(8), cpus.count(None)) == (1500, 1500, 3003)
    assert timeline_mismatches(open_dataset(tmp_path).con) == []


def _forwarded_row(tmp_path, condor_fields, job_fields, stdout=None):
    """The glidein table's rows of one glidein forwarded by the real forwarder, its journal
    holding a condor phase and one job ending with ``condor_fields`` and ``job_fields``, its
    returned stdout ``stdout`` (None: none came back)."""
    from glidein_tracing.exporters.store import JsonLinesStoreExporter
    from glidein_tracing.factory.build import build_forwarder
    from glidein_tracing.factory.ledger import Ledger
    from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout
    from glidein_tracing.table import reader
    from tests.support.factory_builders import SCHEDD, T0, journal_text, returned_stderr, run_glidein, settings_for

    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    extra = [format_line(T0 + 5, "start", "condor", {"@stage": "condor.start", "@name": "condor"}),
             format_line(T0 + 6, "start", "job/s#1.0#9", {"@stage": "job", "@name": "job", "@parent": "condor"}),
             format_line(T0 + 14, "end", "job/s#1.0#9", {"job.exit_code:i": "0", "job.exit_by": "exit", **job_fields}),
             format_line(T0 + 15, "end", "condor", condor_fields)]
    run_glidein(CondorGLog(layout), layout, 100, 0, T0,
                returned_stderr(journal_text(layout, 100, 0, T0, extra=extra, root_fields={"glidein.cpus:i": "1"})))
    out = layout.output(100, 0, "out")
    if stdout is None:
        out.unlink()
    else:
        stat = out.stat()
        out.write_text(stdout)
        os.utime(out, (stat.st_atime, stat.st_mtime))
    ledger = Ledger(tmp_path / "ledger.sqlite")
    forwarder = build_forwarder(settings_for(layout, grace=5, schedd=SCHEDD, table=str(tmp_path / "table")),
                                exporter=JsonLinesStoreExporter(tmp_path / "store"), ledger=ledger)
    stats = forwarder.run_once()
    assert stats.table_rows == 1
    assert stats.problems.get("implausible_values", 0) == reader.read_rows(tmp_path / "table", "glideins")[0] \
        .column("implausible_values")[0].as_py()      # the pass names what the row refused
    (row,) = reader.read_rows(tmp_path / "table", "glideins")[0].to_pylist()
    (job,) = reader.read_rows(tmp_path / "table", "jobs")[0].to_pylist()
    return row, job


def test_forged_node_values_are_refused_and_counted_and_cannot_dominate_a_waste_figure(tmp_path):
    """Through the real forwarder: HTCondor's run reported as 1e23 s, a job's CPU as Infinity
    and its RSS as -1. The row's waste figures are those of the honest glidein (its condor
    span's length stands in), the job's figures are NULL, and the row counts the 3 refused."""
    honest, honest_job = _forwarded_row(tmp_path / "honest", {"condor.metric.CondorDuration": "10"},
                                        {"r.utime": "7.5", "job.rss_bytes:i": "1048576"})
    forged, forged_job = _forwarded_row(tmp_path / "forged", {"condor.metric.CondorDuration": "1e23"},
                                        {"r.utime": "inf", "job.rss_bytes:i": "-1"})
    assert honest["implausible_values"] == 0 and honest_job["cpu_user_s"] == 7.5
    assert honest_job["rss_bytes"] == 1048576
    assert forged["implausible_values"] == 3
    assert forged_job["cpu_user_s"] is None and forged_job["rss_bytes"] is None
    for column in ("gwms_condor_lasted_s", "gwms_lasted_s", "waste_validation_mill", "waste_idle_mill",
                   "waste_nosuccess_mill", "waste_badput_mill"):
        assert forged[column] == honest[column], column
    assert forged["gwms_condor_lasted_s"] == 10 and 0 <= forged["waste_idle_mill"] < 1000


BANNERS = ("=== Last script starting Fri Nov 27 10:00:03 UTC 2026 (1795318003) after validating for 3 ===\n"
           "=== Condor starting Fri Nov 27 10:00:05 UTC 2026 (1795318005) ===\n"
           "=== Condor ended Fri Nov 27 10:00:15 UTC 2026 (1795318015) after {condor} ===\n"
           "=== Glidein ending Fri Nov 27 10:00:22 UTC 2026 (1795318022) with code 0 after {glidein} ===\n")


def test_a_forged_stdout_count_is_refused_like_a_forged_journal_value(tmp_path):
    """The returned stdout is the node's too: HTCondor's run and the glidein's life claimed as
    900,000,000 s (28 years) are refused (the row's own life bounds them) and counted."""
    honest, _ = _forwarded_row(tmp_path / "honest", {}, {}, BANNERS.format(condor=10, glidein=22))
    forged, _ = _forwarded_row(tmp_path / "forged", {}, {}, BANNERS.format(condor=900000000, glidein=900000000))
    assert honest["implausible_values"] == 0 and honest["gwms_condor_lasted_s"] == 10
    assert forged["implausible_values"] == 2
    assert forged["gwms_lasted_s"] <= forged["glidein_s"] + 1 and forged["gwms_condor_lasted_s"] == 0
    assert forged["waste_badput_mill"] <= 1000 and forged["waste_validation_mill"] <= 1000


def test_overload_and_resource_name_come_from_the_root():
    spans, *_ = synthetic_glidein()
    row, _ = glidein_rows(readable_spans(spans), trace_kept=True)
    assert row["overload_enabled"] is None and row["resource_name"] is None     # not said: NULL
    spans[0]["attributes"].update({"glidein.overload_enabled": True, "glidein.resource_name": "UCSD_CE1"})
    row, _ = glidein_rows(readable_spans(spans), trace_kept=True)
    assert row["overload_enabled"] is True and row["resource_name"] == "UCSD_CE1"
    spans[0]["attributes"]["glidein.overload_enabled"] = "yes"          # forged: not a boolean
    assert glidein_rows(readable_spans(spans), trace_kept=True)[0]["overload_enabled"] is None
