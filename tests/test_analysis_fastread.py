"""The fast store reader (analysis/fastread.py) gives exactly what the reference path gives."""

import json

import numpy as np
import pytest

from glidein_tracing.exporters.otlp_json import request_from_span_dicts
from glidein_tracing.analysis import fastread, synth
from glidein_tracing.analysis.sources import ReadReport, load_table
from glidein_tracing.analysis.timeline import IDENTITY_KEYS, R_KIND, R_RESOURCE, TIMELINE_KEYS

from tests.support.analysis_helpers import simple_glidein, trace_id, write_jsonl

pytestmark = pytest.mark.skipif(fastread.msgspec is None, reason="msgspec not installed")


def assert_same_tables(a, b):
    assert a.trace_ids == b.trace_ids
    assert a.names == b.names
    for part in ("g", "jobs", "vals"):
        x, y = getattr(a, part), getattr(b, part)
        assert x.keys() == y.keys()
        for name in x:
            assert x[name].dtype == y[name].dtype, (part, name)
            assert np.array_equal(x[name], y[name], equal_nan=x[name].dtype.kind == "f"), (part, name)


def both(workers=1, **source):
    out = []
    for fast in (False, True):
        report = ReadReport()
        table = load_table(report=report, workers=workers, fast=fast, **source)
        out.append((table, report.as_dict()))
    (ref, ref_report), (got, got_report) = out
    assert_same_tables(ref, got)
    assert ref_report == got_report
    return got, got_report


@pytest.mark.parametrize("workers", [1, 2])
def test_same_table_as_the_reference_on_a_synthetic_store(tmp_path, workers):
    cfg = synth.SynthConfig(glideins=1500, seed=21, fragment_rate=0.1, skew_rate=0.05, kill_rate=0.1,
                            validation_failure_rate=0.1, job_failure_rate=0.1)
    synth.write_store(cfg, tmp_path, rotate_bytes=1_500_000, fragment_delay_lines=50)
    assert len(list(tmp_path.glob("traces-*.jsonl"))) > 3
    table, report = both(workers, store=tmp_path)
    assert len(table) == 1500 and report["bad_lines"] == 0


def test_ordinary_lines_take_the_fast_path_and_give_the_reference_records(tmp_path):
    synth.write_store(synth.SynthConfig(glideins=200, seed=3, kill_rate=0.2), tmp_path)
    lines = [line for path in sorted(tmp_path.glob("traces-*.jsonl")) for line in path.read_bytes().splitlines()]
    assert len(lines) == 200
    for line in lines:
        records = fastread.decode_line(line)
        assert records is not None                     # not handed to the reference path
        assert records == [only_read_keys(rec) for rec in fastread.reference_records(json.loads(line))]


def only_read_keys(rec):
    """A reference record with the attributes the fast path keeps (those the timeline reads)."""
    stage, glidein, attrs = rec[R_KIND]
    kind = (stage, glidein, {k: v for k, v in attrs.items() if k in TIMELINE_KEYS})
    return rec[:R_KIND] + (kind, {k: v for k, v in rec[R_RESOURCE].items() if k in IDENTITY_KEYS})


def odd_requests():
    """Requests the typed decoder refuses, or that exercise rare value types: every one must
    give what the reference path gives (counted the same, read the same)."""
    base = request_from_span_dicts(simple_glidein(trace_id(1)))
    span = base["resourceSpans"][0]["scopeSpans"][0]["spans"][0]

    def variant(change):
        request = json.loads(json.dumps(base))
        change(request, [span for rs in request["resourceSpans"] for sc in rs["scopeSpans"] for span in sc["spans"]])
        return json.dumps(request)

    def set_attr(spans, index, key, value):
        spans[index]["attributes"].append({"key": key, "value": value})

    out = [
        variant(lambda r, s: s[0].update(name=None)),                                    # null name
        variant(lambda r, s: s[1].update(status=None)),                                  # null status
        variant(lambda r, s: s[1].update(status={"code": "2"})),                         # code as a string
        variant(lambda r, s: s[1].update(status={"code": 2.0})),                         # code as a float
        variant(lambda r, s: s[2].update(startTimeUnixNano=int(s[2]["startTimeUnixNano"]))),  # times as numbers
        variant(lambda r, s: s[2].update(endTimeUnixNano="")),                           # empty end
        variant(lambda r, s: s[2].update(endTimeUnixNano="1.5e18")),                     # not an integer
        variant(lambda r, s: s[3].update(traceId=s[3]["traceId"].upper(), spanId=None)),  # case, no id
        variant(lambda r, s: s[4].update(traceId="")),                                   # span without trace
        variant(lambda r, s: s[4].update(attributes=None)),
        variant(lambda r, s: s[4].update(attributes={})),
        variant(lambda r, s: set_attr(s, 0, "glidein.cpus", {"intValue": 8})),           # int as a number
        variant(lambda r, s: set_attr(s, 0, "glidein.cpus", {"doubleValue": 6})),
        variant(lambda r, s: set_attr(s, 0, "glidein.cpus", {"doubleValue": "NaN"})),
        variant(lambda r, s: set_attr(s, 0, "glidein.incomplete", {"boolValue": True})),
        variant(lambda r, s: set_attr(s, 0, "other.list", {"arrayValue": {"values": [{"intValue": "1"}]}})),
        variant(lambda r, s: set_attr(s, 0, "other.map", {"kvlistValue": {"values": [
            {"key": "a", "value": {"stringValue": "b"}}]}})),
        variant(lambda r, s: set_attr(s, 0, "other.bytes", {"bytesValue": "AAEC"})),
        variant(lambda r, s: set_attr(s, 0, "other.bad", {"intValue": "twelve"})),        # unread, unusable
        variant(lambda r, s: set_attr(s, 0, "other.bad", {"doubleValue": "much"})),
        variant(lambda r, s: set_attr(s, 0, "other.none", {})),                           # no value at all
        variant(lambda r, s: set_attr(s, 0, "other.null", None)),
        variant(lambda r, s: s[0]["attributes"].append({"value": {"stringValue": "no key"}})),
        variant(lambda r, s: set_attr(s, 0, "glidein.entry", {"stringValue": "ENTRY_LAST_WINS"})),
        variant(lambda r, s: s[0]["attributes"][0].update(value={"stringValue": None})),  # stage null
        variant(lambda r, s: r["resourceSpans"][0]["scopeSpans"][0]["spans"].append(dict(s[5]))),  # a span twice
        variant(lambda r, s: r["resourceSpans"][0].update(resource=None)),
        variant(lambda r, s: r["resourceSpans"][0].update(resource=[])),
        variant(lambda r, s: r["resourceSpans"].append({"scopeSpans": [{"spans": [
            dict(span, traceId=trace_id(7), spanId="ab" * 8, attributes=[
                {"key": "glidein.stage", "value": {"stringValue": "frontend.cycle"}}])]}]})),
        variant(lambda r, s: r.update(resourceSpans={})),
        json.dumps(base).replace('"kind": 1', '"kind": NaN', 1),                         # NaN: json only
        json.dumps(base) + " trailing",
        "[1, 2]",
        "{not json",
        "   ",
    ]
    return out


def test_odd_lines_give_what_the_reference_path_gives(tmp_path):
    path = tmp_path / "traces-000000.jsonl"
    write_jsonl(path, [simple_glidein(trace_id(n)) for n in range(2, 5)])
    with open(path, "a", encoding="utf-8") as handle:
        for line in odd_requests():
            handle.write(line + "\n")
    taken = [fastread.decode_line(line.encode()) is not None for line in odd_requests()]
    assert 10 <= sum(taken) < len(taken) - 10     # both paths are exercised
    table, report = both(store=tmp_path)
    assert report["bad_lines"] >= 6 and report["spans_without_trace_id"] >= 1
    assert report["not_glidein_traces"] == 1
    # and each odd line alone (no grouping with the others)
    for number, line in enumerate(odd_requests()):
        directory = tmp_path / f"one-{number}"
        directory.mkdir()
        (directory / "traces-000000.jsonl").write_text(line + "\n")
        both(store=directory)


def test_otlp_json_lines_files_through_the_fast_path(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [simple_glidein(trace_id(n)) for n in range(1, 4)])
    (tmp_path / "one.json").write_text(json.dumps(request_from_span_dicts(simple_glidein(trace_id(9))), indent=2))
    table, _ = both(otlp_files=[str(tmp_path / "*.json*")])
    assert sorted(table.trace_ids) == sorted([trace_id(n) for n in (1, 2, 3, 9)])


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("GLIDEIN_TRACING_FAST_READ", "0")
    assert not fastread.available()
    monkeypatch.setenv("GLIDEIN_TRACING_FAST_READ", "1")
    assert fastread.available()
