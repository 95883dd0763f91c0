import json

from glidein_tracing.converter import convert
from glidein_tracing.exporters.store import JsonLinesStoreExporter, iter_store, read_store, StoreReadReport
from glidein_tracing.journal import format_line, parse_lines

from journal_builders import root_lines


def spans(end=1003):
    lines = root_lines(1000.0) + [format_line(end, "end", "glidein", {})]
    events, _ = parse_lines("".join(lines).encode())
    return convert(events)


def test_store_holds_otlp_json_lines_with_hex_ids(tmp_path):
    exporter = JsonLinesStoreExporter(tmp_path)
    batch = spans()
    exporter.export(batch)
    (path,) = tmp_path.glob("traces-*.jsonl")
    request = json.loads(path.read_text().splitlines()[0])
    span = request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert span["traceId"] == format(batch[0].context.trace_id, "032x")
    assert len(span["spanId"]) == 16 and int(span["kind"]) == 1


def test_exporting_the_same_glidein_twice_stores_each_span_once(tmp_path):
    JsonLinesStoreExporter(tmp_path).export(spans()[:1])      # live, early
    second = JsonLinesStoreExporter(tmp_path)                  # recovered later, all spans
    second.export(spans())
    traces = read_store(tmp_path)
    (trace,) = traces.values()
    ids = [s["span_id"] for s in iter_store(tmp_path)]
    assert len(ids) == len(set(ids)) == len(trace) == len(spans())
    assert second.duplicates == 1


def test_garbage_lines_in_the_store_are_counted_not_fatal(tmp_path):
    JsonLinesStoreExporter(tmp_path).export(spans())
    with open(next(tmp_path.glob("traces-*.jsonl")), "a") as handle:
        handle.write("{not json\n")
    report = StoreReadReport()
    assert len(list(iter_store(tmp_path, report))) == len(spans())
    assert report.bad_lines == 1


def test_store_rotates_files(tmp_path):
    exporter = JsonLinesStoreExporter(tmp_path, rotate_bytes=100)
    exporter.export(spans(1003))
    exporter.export(spans(1004)[1:])
    assert len(list(tmp_path.glob("traces-*.jsonl"))) == 1  # duplicates: nothing new to write
    lines = root_lines(2000.0, **{"glidein.name": "other"}) + [format_line(2003, "end", "glidein", {})]
    events, _ = parse_lines("".join(lines).encode())
    exporter.export(convert(events))
    assert len(list(tmp_path.glob("traces-*.jsonl"))) == 2
    assert len(read_store(tmp_path)) == 2
