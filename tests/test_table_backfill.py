"""`glidein-tracing table`: the glidein table built from traces that exist (the embedded store,
Jaeger's query API a day at a time), and the table agreeing with the traces: every duration
in it equals the matching span's, for every glidein of the demo and of a synthetic store."""

import datetime
import json
import subprocess
import sys
import time
import urllib.request
import uuid

import pytest

from glidein_tracing.testing import synth
from glidein_tracing.analysis.dataset import open_dataset
from glidein_tracing.exporters.otlp_json import request_from_span_dicts
from glidein_tracing.exporters.store import read_store
from glidein_tracing.table import reader

from tests.support.analysis_helpers import timeline_mismatches
from tests.support.table_helpers import own_spans, seconds, total
from tests.support.waiting import HANG_S

IDLE = {"before_first_job": "idle_before_first_job_s", "between_jobs": "idle_between_jobs_s",
        "tail": "idle_tail_s", "no_job": "idle_no_job_s"}
LISTS = {"main": "validation_main_s", "entry": "validation_entry_s", "client": "validation_client_s",
         "client_group": "validation_client_group_s"}


def table_cli(*args):
    return subprocess.run([sys.executable, "-m", "glidein_tracing", "table", *map(str, args)],
                          capture_output=True, text=True, timeout=600)


def rows_by_trace(table, dataset="glideins"):
    rows, scan = reader.read_rows(table, dataset)
    assert not scan.problems, scan.problems
    return rows.to_pylist()


def assert_agrees_with_spans(row, job_rows, spans, waits=None):
    """Each duration of a glidein's row and of its jobs' rows equals its span's."""
    stages = own_spans(spans)
    one = lambda stage: seconds(stages[stage][0]) if stage in stages else None  # noqa: E731
    assert row["glidein_s"] == one("glidein")
    assert row["setup_s"] == one("setup")
    assert row["condor_s"] == one("condor.start")
    assert row["teardown_s"] == total(stages.get("teardown"))
    assert row["post_failure_sleep_s"] == total(stages.get("post_failure_sleep"))
    assert row["queue_wait_s"] == total(stages.get("factory.queue"))
    assert row["held_s"] == total(stages.get("factory.held"))
    for name, column in LISTS.items():
        assert row[column] == total([s for s in stages.get("validation", [])
                                     if s["attributes"].get("glidein.script.list") == name]), column
    for kind, column in IDLE.items():
        assert row[column] == total([s for s in stages.get("idle", [])
                                     if s["attributes"].get("glidein.idle.kind") == kind]), column
    jobs = {s["span_id"]: s for s in stages.get("job", [])}
    assert row["jobs"] == len(jobs) == len(job_rows)
    assert row["jobs_wall_s"] == total(list(jobs.values()))
    for job in job_rows:
        assert job["wall_s"] == seconds(jobs[job["span_id"]])
        if waits is not None and job["job_global_id"] in waits:   # jobs with a user's trace
            assert job["wait_s"] == waits[job["job_global_id"]], job["job_global_id"]
    # the job timeline: the job spans' times in the order of their starts, then ends; the
    # jobs' rows in that order
    ordered = sorted(jobs.values(), key=lambda s: (s["start_ns"], s["end_ns"], s["span_id"]))
    assert [micros(t) for t in row["job_started_at"]] == [s["start_ns"] // 1000 for s in ordered]
    assert [micros(t) for t in row["job_ended_at"]] == [s["end_ns"] // 1000 for s in ordered]
    by_span = {job["span_id"]: job for job in job_rows}
    assert row["job_request_cpus"] == [by_span[s["span_id"]]["request_cpus"] for s in ordered]
    assert len(row["job_failed"]) == len(ordered)


def micros(instant) -> int:
    """A timestamp as the table read it (a naive UTC datetime), in microseconds since the epoch."""
    return round(instant.replace(tzinfo=datetime.timezone.utc).timestamp() * 1e6)


def test_backfill_from_a_synthetic_store_agrees_with_its_spans_and_can_run_again(tmp_path):
    store, table = tmp_path / "store", tmp_path / "table"
    cfg = synth.SynthConfig(glideins=150, seed=5, fragment_rate=0.2, period_s=3 * 86400)
    synth.write_store(cfg, store, fragment_delay_lines=20, batch_lines=10)
    done = table_cli("--store", store, "--table", table)
    assert done.returncode == 0, done.stderr
    assert "150 glideins written" in done.stderr
    traces = {t: s for t, s in read_store(store).items() if "glidein" in own_spans(s)}
    rows = rows_by_trace(table)
    assert sorted(r["trace_id"] for r in rows) == sorted(traces)
    jobs = {}
    for job in rows_by_trace(table, "jobs"):
        jobs.setdefault(job["trace_id"], []).append(job)
    for row in rows:
        assert_agrees_with_spans(row, jobs.get(row["trace_id"], []), traces[row["trace_id"]])
    assert len({r["date"] for r in rows}) >= 3          # a partition per day the glideins ended
    data = open_dataset(table)
    assert timeline_mismatches(data.con) == []           # failed as the analysis counts the jobs
    failed = data.con.execute("SELECT count(*) FILTER (WHERE f) FROM (SELECT unnest(job_failed) AS f FROM glideins)")
    assert 0 < failed.fetchone()[0] < len([j for js in jobs.values() for j in js])
    again = table_cli("--store", store, "--table", table)
    assert again.returncode == 0 and "0 glideins written, 150 already in the table" in again.stderr


def test_a_store_read_in_pieces_by_two_processes_gives_the_table_read_in_one(tmp_path, monkeypatch):
    """Traces split across pieces (fragments written lines later) are joined."""
    from glidein_tracing.table import backfill
    store = tmp_path / "store"
    synth.write_store(synth.SynthConfig(glideins=120, seed=6, fragment_rate=0.3, period_s=2 * 86400), store,
                      fragment_delay_lines=4, batch_lines=5)
    whole = backfill.from_store(store, tmp_path / "one", workers=1)
    monkeypatch.setattr(backfill, "PIECE_BYTES", 4096)
    pieces = backfill.from_store(store, tmp_path / "two", workers=2)
    assert pieces.glideins == whole.glideins == 120 and pieces.spans == whole.spans and not pieces.problems
    key = lambda row: (row["trace_id"], row.get("span_id") or "")  # noqa: E731
    for dataset in ("glideins", "jobs"):
        assert (sorted(rows_by_trace(tmp_path / "two", dataset), key=key)
                == sorted(rows_by_trace(tmp_path / "one", dataset), key=key))


def test_a_glidein_whose_end_is_beyond_the_calendar_is_kept_and_the_rest_backfilled(tmp_path):
    """A forged end time (year 10^13) in a store line: its row goes to the unknown day with no
    end time instead of stopping the backfill."""
    from glidein_tracing.exporters.store import Store, store_files
    from glidein_tracing.table import backfill
    store = tmp_path / "store"
    synth.write_store(synth.SynthConfig(glideins=5, seed=4), store, batch_lines=1)
    path = store_files(store)[0]
    lines = path.read_bytes().splitlines()
    request = json.loads(lines[0])
    root = next(s for s in request["resourceSpans"][0]["scopeSpans"][0]["spans"] if not s.get("parentSpanId"))
    root["endTimeUnixNano"] = str(10 ** 30)
    path.write_bytes(b"\n".join([json.dumps(request).encode()] + lines[1:]) + b"\n")
    Store(store).reindex()
    report = backfill.from_store(store, tmp_path / "table", workers=1)
    assert report.glideins == 5 and not report.problems
    rows = {r["trace_id"]: r for r in rows_by_trace(tmp_path / "table")}
    forged = rows[root["traceId"]]
    assert forged["ended_at"] is None and str(forged["date"]) == "1970-01-01"
    assert all(r["ended_at"] is not None for t, r in rows.items() if t != root["traceId"])



@pytest.mark.parametrize("piece_bytes", [None, 4096])
def test_a_glidein_the_store_holds_twice_is_written_once(tmp_path, monkeypatch, piece_bytes):
    """A store file holding some of its lines twice (copied into itself, then reindexed):
    read in one piece by one process or in small pieces by two, each glidein is one row."""
    from glidein_tracing.exporters.store import Store, store_files
    from glidein_tracing.table import backfill
    store = tmp_path / "store"
    synth.write_store(synth.SynthConfig(glideins=30, seed=8, period_s=2 * 86400), store, batch_lines=5)
    whole = backfill.from_store(store, tmp_path / "once", workers=1)
    path = store_files(store)[0]
    lines = path.read_bytes().splitlines()
    with open(path, "ab") as handle:
        handle.write(b"\n".join(lines[:10] + lines[-5:]) + b"\n")
    Store(store).reindex()
    if piece_bytes:
        monkeypatch.setattr(backfill, "PIECE_BYTES", piece_bytes)
    report = backfill.from_store(store, tmp_path / "twice", workers=2 if piece_bytes else 1)
    assert report.glideins == whole.glideins == 30 and not report.problems
    key = lambda row: (row["trace_id"], row.get("span_id") or "")  # noqa: E731
    for dataset in ("glideins", "jobs"):
        assert (sorted(rows_by_trace(tmp_path / "twice", dataset), key=key)
                == sorted(rows_by_trace(tmp_path / "once", dataset), key=key))

@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    proc = subprocess.run([sys.executable, "-m", "glidein_tracing", "demo", "--glideins", "5", "--store",
                           str(root / "store"), "--keep", str(root / "run")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root


def test_the_demos_table_agrees_with_its_traces(demo):
    traces = read_store(demo / "store")
    glideins = {t: s for t, s in traces.items() if "glidein" in own_spans(s)}
    waits = {s["attributes"]["job.global_id"]: seconds(s) for spans in traces.values() for s in spans
             if s["attributes"].get("glidein.stage") == "job.wait"}
    table = demo / "run" / "factory" / "glidein-table"
    rows = rows_by_trace(table)
    assert sorted(r["trace_id"] for r in rows) == sorted(glideins) and len(rows) == 5
    jobs = {}
    for job in rows_by_trace(table, "jobs"):
        jobs.setdefault(job["trace_id"], []).append(job)
    assert sum(map(len, jobs.values())) >= 3
    for row in rows:
        assert_agrees_with_spans(row, jobs.get(row["trace_id"], []), glideins[row["trace_id"]], waits)
    assert {r["outcome"] for r in rows} >= {"ok", "validation_failed"}
    compared = [j for js in jobs.values() for j in js if j["job_global_id"] in waits]
    assert compared and all(j["wait_s"] is not None for j in compared)


def test_backfill_of_the_demo_store_gives_the_forwarders_rows(demo, tmp_path):
    done = table_cli("--store", demo / "store", "--table", tmp_path / "table")
    assert done.returncode == 0, done.stderr
    for dataset in ("glideins", "jobs"):
        written = sorted(rows_by_trace(demo / "run" / "factory" / "glidein-table", dataset),
                         key=lambda r: (r["trace_id"], r.get("span_id")))
        rebuilt = sorted(rows_by_trace(tmp_path / "table", dataset), key=lambda r: (r["trace_id"], r.get("span_id")))
        assert rebuilt == written


def post_otlp_json(endpoint: str, request: dict) -> None:
    body = json.dumps(request).encode()
    req = urllib.request.Request(endpoint.rstrip("/") + "/v1/traces", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as response:
        assert response.status == 200


@pytest.mark.jaeger
def test_backfill_from_jaeger_a_day_at_a_time(jaeger, jaeger_query, tmp_path):
    service = f"glidein-table-{uuid.uuid4().hex[:8]}"
    # a factory of its own: its trace ids are nobody else's in the session's shared Jaeger
    cfg = synth.SynthConfig(glideins=30, seed=23, start=time.time() - 3 * 86400, period_s=2 * 86400.0,
                            factory=service)
    glideins = list(synth.generate(cfg))
    by_trace = {}
    for glidein in glideins:
        spans = synth.glidein_spans(glidein)
        resource = dict(spans[0]["resource"], **{"service.name": service})
        for span in spans:
            span["resource"] = resource
            for key in ("start_ns", "end_ns"):     # Jaeger keeps microseconds
                span[key] -= span[key] % 1000
        by_trace[spans[0]["trace_id"]] = spans
        post_otlp_json(jaeger.otlp_endpoint, request_from_span_dicts(spans))
    deadline = time.monotonic() + HANG_S     # a bound for a hang, not a pace
    while service not in jaeger_query.services() and time.monotonic() < deadline:
        time.sleep(0.5)
    since = time.strftime("%Y-%m-%d", time.gmtime(cfg.start))
    rows = []
    while time.monotonic() < deadline:
        done = table_cli("--jaeger", jaeger.query_url, "--service", service, "--since", since,
                         "--table", tmp_path / "table")
        assert done.returncode == 0, done.stderr
        rows = rows_by_trace(tmp_path / "table")
        if len(rows) == len(glideins):
            break
        time.sleep(1)
    assert sorted(r["trace_id"] for r in rows) == sorted(by_trace)
    jobs = {}
    for job in rows_by_trace(tmp_path / "table", "jobs"):
        jobs.setdefault(job["trace_id"], []).append(job)
    for row in rows:
        assert_agrees_with_spans(row, jobs.get(row["trace_id"], []), by_trace[row["trace_id"]])
    bad = table_cli("--jaeger", jaeger.query_url, "--since", "yesterday", "--table", tmp_path / "t2")
    assert bad.returncode == 2 and "not a day" in bad.stderr


def _fields(span):
    return (span.name, span.context.trace_id, span.context.span_id, span.parent.span_id if span.parent else None,
            span.start_time, span.end_time, span.status.status_code, span.status.description,
            dict(span.attributes), dict(span.resource.attributes))


def _odd_lines(raw: bytes) -> list:
    """One line of the store with a value of another shape each: the typed path must give what
    the reference path gives (or fail as it does)."""
    import json as json_module
    out = []
    for value in ({"intValue": 12}, {"intValue": 12.5}, {"intValue": "1e3"}, {"intValue": "1.0"},
                  {"intValue": " 12"}, {"intValue": str(1 << 70)}, {"doubleValue": "1.5"}, {"doubleValue": 3},
                  {"boolValue": "false"}, {"boolValue": 0}, {"stringValue": 5}, {}):
        request = json_module.loads(raw)
        span = request["resourceSpans"][0]["scopeSpans"][0]["spans"][-1]
        span["attributes"].append({"key": "odd", "value": value})
        out.append(json_module.dumps(request).encode())
    request = json_module.loads(raw)                    # upper-case ids, times as numbers
    for span in request["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["traceId"], span["spanId"] = span["traceId"].upper(), span["spanId"].upper()
        span["parentSpanId"] = span.get("parentSpanId", "").upper()
        span["startTimeUnixNano"] = int(span["startTimeUnixNano"])
    out.append(json_module.dumps(request).encode())
    return out


def _decoded_or_error(decode, raw):
    try:
        return [_fields(s) for s in decode(raw)]
    except ValueError:
        return "not OTLP JSON"


def test_the_fast_store_reader_gives_the_reference_readers_spans(tmp_path):
    import json as json_module

    from glidein_tracing.exporters.otlp_json import flatten_request
    from glidein_tracing.exporters.store import store_files
    from glidein_tracing.table.readable import decode_line, readable_spans

    synth.write_store(synth.SynthConfig(glideins=40, seed=9, fragment_rate=0.3), tmp_path / "store",
                      fragment_delay_lines=3, batch_lines=5)
    lines = [raw for path in store_files(tmp_path / "store") for raw in path.read_bytes().splitlines()]
    odd = json_module.loads(lines[0])
    odd["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"].append(
        {"key": "list", "value": {"arrayValue": {"values": [{"intValue": "3"}]}}})
    odd["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["startTimeUnixNano"] = "1767225600000000001"
    for raw in lines + [json_module.dumps(odd).encode()] + _odd_lines(lines[0]):
        reference = _decoded_or_error(lambda r: readable_spans(list(flatten_request(json_module.loads(r)))), raw)
        assert _decoded_or_error(decode_line, raw) == reference
    with pytest.raises(ValueError):
        decode_line(b"{not json")


def test_a_bad_store_line_is_named_and_the_rest_backfilled(tmp_path):
    from glidein_tracing.exporters.store import store_files
    store = tmp_path / "store"
    synth.write_store(synth.SynthConfig(glideins=12, seed=4), store, batch_lines=3)
    path = store_files(store)[-1]
    with open(path, "ab") as handle:
        handle.write(b'{"resourceSpans": [{"scopeSpans": [{"spans": "not a list"}]}]}\n')
    done = table_cli("--store", store, "--table", tmp_path / "table")
    assert done.returncode == 1 and f"{path}: a line that is not OTLP JSON, skipped" in done.stderr
    assert len(rows_by_trace(tmp_path / "table")) == 12
