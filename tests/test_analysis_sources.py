"""Reading spans: store, OTLP JSON files, Jaeger's API; odd and broken traces never crash."""

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from glidein_tracing.exporters.otlp_json import request_from_span_dicts
from glidein_tracing.analysis import stats, synth
from glidein_tracing.analysis.sources import ReadReport, collect_table, group_traces, iter_jaeger_batches, load_table
from glidein_tracing.factory.jaeger_query import flatten_trace as flatten_jaeger_trace
from glidein_tracing.analysis.timeline import PROBLEMS, timeline_from_spans

from tests.support.analysis_helpers import BASE, simple_glidein, span, trace_id, write_jsonl, write_synth_store


def problems_of(table):
    return stats.compute_stats(table)["problems"]


def test_empty_store_and_empty_files(tmp_path):
    table = load_table(store=tmp_path)
    assert len(table) == 0
    result = stats.compute_stats(table)
    assert result["glideins"] == 0 and result["inferred_settings"]["max_idle"] is None
    (tmp_path / "traces-000000.jsonl").write_text("")
    (tmp_path / "traces-000001.jsonl").write_text("\n\n")
    assert len(load_table(store=tmp_path, workers=2)) == 0


def test_missing_store_is_an_error_not_a_crash(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_table(store=tmp_path / "nope")


def test_garbage_lines_are_counted(tmp_path):
    write_jsonl(tmp_path / "traces-000000.jsonl", [simple_glidein(trace_id(1))])
    with open(tmp_path / "traces-000000.jsonl", "a") as handle:
        handle.write("{not json\n[1, 2]\n")
        handle.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
            {"traceId": "ab" * 16, "spanId": "cd" * 8, "startTimeUnixNano": "soon"}]}]}]}) + "\n")
    report = ReadReport()
    table = load_table(store=tmp_path, report=report)
    assert len(table) == 1
    assert report.bad_lines == 3


def test_partial_and_inconsistent_traces_are_counted_and_analysed(tmp_path):
    t = [trace_id(n) for n in range(1, 10)]
    batches = [
        simple_glidein(t[0]),                                             # fine
        simple_glidein(t[1], root=False),                                 # no root
        simple_glidein(t[2], node_offset=-3600.0),                        # node clock an hour behind
        simple_glidein(t[3], jobs=((100, 1000, 0), (1200, 5000, 1))),     # a job outside condor
        [span(t[4], "glidein", "glidein", 0, 10, parent=None),
         span(t[4], "factory.queue", "factory.queue", 0, 500)],           # still queued: no node spans
        [span(t[5], "setup", "setup", 100, 50, parent=None)],             # negative duration, no root
        simple_glidein(t[6])[:-1] + [span(t[6], "teardown", "teardown", 1400, None)],  # missing end
        [span(t[7], "frontend.cycle", "frontend.cycle", 0, 10, parent=None)],  # not a glidein trace
        [span(t[8], "job/0", "job", 10, 20, parent="condor")],            # a lone job: no condor
    ]
    write_jsonl(tmp_path / "traces-000000.jsonl", batches)
    report = ReadReport()
    table = load_table(store=tmp_path, report=report)
    assert len(table) == 8 and report.not_glidein_traces == 1
    found = problems_of(table)
    for name in ("no_root", "clock_skew", "job_outside_condor", "no_node_spans", "negative_duration",
                 "missing_end", "jobs_without_condor"):
        assert found[name] >= 1, name
    rows = {tid: i for i, tid in enumerate(table.trace_ids)}
    # the skewed node: queue wait still comes from the Factory's own clock
    assert table.g["queue_s"][rows[t[2]]] == pytest.approx(290.0)
    assert table.timeline(rows[t[2]]).skew_s == pytest.approx(-3595.0, abs=1)
    # the job running past the condor phase is clipped into it: no negative idle anywhere
    d = stats.Derived(table)
    assert (d.iv.gap >= 0).all() and (d.iv.tail >= 0).all()
    doc = stats.compute_stats(table)
    assert doc["glideins"] == 8 and doc["problem_glideins"] >= 7


def test_every_problem_bit_has_a_name():
    assert len(set(PROBLEMS.values())) == len(PROBLEMS)
    assert timeline_from_spans("x", []).problems  # an empty trace: problems, no exception


def test_trace_split_far_apart_is_merged_with_bounded_memory(tmp_path):
    whole = simple_glidein(trace_id(1), jobs=((100, 500, 0), (600, 900, 2)))
    factory = [s for s in whole if s["attributes"]["glidein.stage"].startswith("factory.")]
    node = [s for s in whole if not s["attributes"]["glidein.stage"].startswith("factory.")]
    others = [simple_glidein(trace_id(100 + n)) for n in range(60)]
    write_jsonl(tmp_path / "traces-000000.jsonl", [node] + others + [factory])
    report = ReadReport()
    batches = __import__("glidein_tracing.analysis.sources", fromlist=["x"]).iter_store_batches(tmp_path, report)
    table = collect_table(group_traces(batches, report, max_pending=5, idle_batches=3), report)
    assert len(table) == 61 and report.fragments == 1
    row = table.trace_ids.index(trace_id(1))
    merged = table.timeline(row)
    reference = timeline_from_spans(trace_id(1), whole)
    assert merged.queue_s == pytest.approx(reference.queue_s) and len(merged.jobs) == 2
    assert merged.problems & 1 == 0        # the root was in one part: no "no_root" complaint


def test_trace_split_across_files_is_merged_by_the_parallel_loader(tmp_path):
    cfg = synth.SynthConfig(glideins=300, seed=6, fragment_rate=0.2)
    synth.write_store(cfg, tmp_path, rotate_bytes=200_000, fragment_delay_lines=100)
    assert len(list(tmp_path.glob("traces-*.jsonl"))) > 3
    serial, parallel = ReadReport(), ReadReport()
    a = load_table(store=tmp_path, report=serial, workers=1)
    b = load_table(store=tmp_path, report=parallel, workers=2)
    assert len(a) == len(b) == 300
    assert parallel.fragments > 0     # files read apart: split traces found and merged
    sa, sb = stats.compute_stats(a), stats.compute_stats(b)
    assert sa["waste_core_hours"]["overall"] == sb["waste_core_hours"]["overall"]
    assert sa["metrics"]["overall"]["queue_wait_s"] == sb["metrics"]["overall"]["queue_wait_s"]


def test_otlp_json_files_lines_single_document_and_list(tmp_path):
    glideins = [simple_glidein(trace_id(n)) for n in range(1, 4)]
    write_jsonl(tmp_path / "lines.jsonl", glideins[:1])
    (tmp_path / "one.json").write_text(json.dumps(request_from_span_dicts(glideins[1]), indent=2))
    (tmp_path / "many.json").write_text(json.dumps([request_from_span_dicts(glideins[2])], indent=2))
    table = load_table(otlp_files=[str(tmp_path / "*.json*")], workers=1)
    assert sorted(table.trace_ids) == [trace_id(n) for n in range(1, 4)]
    with pytest.raises(FileNotFoundError):
        load_table(otlp_files=[str(tmp_path / "missing.json")])


# -- Jaeger ---------------------------------------------------------------------------------------

def to_jaeger_v1(spans):
    """Flat span dicts -> one Jaeger v1 trace, as /api/traces answers."""
    def tags(attrs):
        out = []
        for k, v in attrs.items():
            kind = "bool" if isinstance(v, bool) else "int64" if isinstance(v, int) else \
                "float64" if isinstance(v, float) else "string"
            out.append({"key": k, "type": kind, "value": v})
        return out
    processes = {"p1": {"serviceName": "glidein", "tags": tags(spans[0]["resource"])}}
    out = []
    for s in spans:
        extra = [{"key": "span.kind", "type": "string", "value": "internal"}]
        if s["status_code"] == 2:
            extra.append({"key": "otel.status_code", "type": "string", "value": "ERROR"})
            extra.append({"key": "error", "type": "bool", "value": True})
        refs = [{"refType": "CHILD_OF", "traceID": s["trace_id"], "spanID": s["parent_span_id"]}] \
            if s["parent_span_id"] else []
        out.append({"traceID": s["trace_id"], "spanID": s["span_id"], "operationName": s["name"],
                    "references": refs, "startTime": s["start_ns"] // 1000,
                    "duration": (s["end_ns"] - s["start_ns"]) // 1000, "tags": tags(s["attributes"]) + extra,
                    "logs": [], "processID": "p1", "warnings": None})
    return {"traceID": spans[0]["trace_id"], "spans": out, "processes": processes, "warnings": None}


def test_jaeger_v1_trace_converts_to_the_same_timeline():
    for glidein in synth.generate(synth.SynthConfig(glideins=40, seed=12, validation_failure_rate=0.2)):
        spans = synth.glidein_spans(glidein)
        got = timeline_from_spans(glidein.timeline.trace_id, flatten_jaeger_trace(to_jaeger_v1(spans)))
        want = glidein.timeline
        assert (got.entry, got.site, got.outcome, got.shutdown_reason, got.cores) == (
            want.entry, want.site, want.outcome, want.shutdown_reason, want.cores)
        assert [j[2:4] for j in got.jobs] == [j[2:4] for j in want.jobs]
        assert [v[2:] for v in got.validations] == [v[2:] for v in want.validations]
        assert got.queue_s == pytest.approx(want.queue_s, abs=1e-3)


class FakeJaeger:
    """Answers /api/traces like Jaeger: traces with a span in [start, end], at most limit."""

    def __init__(self, traces):
        self.traces = traces
        self.calls = 0

    def __call__(self, url):
        self.calls += 1
        query = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
        start, end, limit = int(query["start"][0]), int(query["end"][0]), int(query["limit"][0])
        hits = [t for t in self.traces if any(start <= s["startTime"] <= end for s in t["spans"])]
        return {"data": hits[:limit]}


def jaeger_traces(n, seed=13):
    return [to_jaeger_v1(synth.glidein_spans(g)) for g in synth.generate(synth.SynthConfig(glideins=n, seed=seed))]


def test_jaeger_paging_splits_full_windows_and_gives_each_trace_once():
    traces = jaeger_traces(120)
    fake = FakeJaeger(traces)
    report = ReadReport()
    batches = list(iter_jaeger_batches("http://jaeger.invalid", "glidein", BASE - 86400, BASE + 30 * 86400,
                                       report, limit=25, fetch=fake))
    assert sorted(b[0]["trace_id"] for b in batches) == sorted(t["traceID"] for t in traces)
    assert fake.calls > 5   # it had to split
    table = collect_table(group_traces(iter(batches)))
    assert len(table) == 120


class _Handler(BaseHTTPRequestHandler):
    fake = None

    def do_GET(self):  # noqa: N802
        body = json.dumps(self.fake(self.path)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_analyze_reads_a_jaeger_query_api_over_http(tmp_path):
    from glidein_tracing.cli.main import main
    traces = jaeger_traces(30, seed=14)
    handler = type("H", (_Handler,), {"fake": FakeJaeger(traces)})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        out = tmp_path / "out.json"
        code = main(["analyze", "--jaeger", f"http://127.0.0.1:{server.server_port}", "--service", "glidein",
                     "--since", str(BASE - 86400), "--until", str(BASE + 30 * 86400), "--json", str(out),
                     "--quiet"])
    finally:
        server.shutdown()
        server.server_close()
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["stats"]["glideins"] == 30 and doc["source"]["kind"] == "jaeger"


def test_unreachable_jaeger_is_a_clear_user_error(capsys):
    from glidein_tracing.cli.main import main
    code = main(["analyze", "--jaeger", "http://127.0.0.1:9", "--since", "1h", "--quiet"])
    assert code == 2
    assert "Jaeger" in capsys.readouterr().err
