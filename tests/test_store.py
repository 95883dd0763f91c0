"""The embedded store: OTLP JSON Lines files indexed in SQLite; each span once, lookups
through the index, the index rebuilt from the files whenever it cannot be trusted."""

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from glidein_tracing.cli.main import main
from glidein_tracing.core.converter import convert
from glidein_tracing.exporters.otlp_json import encode_request
from glidein_tracing.exporters.store import (JsonLinesStoreExporter, Store, StoreReadReport, iter_store, line_pieces, store_files,
                                             read_store, store_files)
from glidein_tracing.core.journal import format_line, parse_lines

from tests.support.journal_builders import root_lines


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


def test_a_trace_written_in_many_lines_keeps_each_span_once(tmp_path):
    """A trace whose spans come one export at a time (a user's trace: the submission, the
    Frontend's job.waiting spans, the forwarder's views of the job), each span once, the
    third line and after included; an index an earlier version left with TEXT ids is read."""
    import sqlite3

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    made = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(made))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("jobsub_submit"):
        for name in ("job.waiting", "job.waiting", "job.wait", "job on glidein"):
            tracer.start_span(name).end()
    batch = list(made.get_finished_spans())
    assert len({span.context.trace_id for span in batch}) == 1
    exporter = JsonLinesStoreExporter(tmp_path)
    for span in batch:
        exporter.export([span])
    exporter.export(batch)                                     # all again: nothing new
    assert exporter.duplicates == len(batch)
    ids = [s["span_id"] for s in iter_store(tmp_path)]
    assert len(ids) == len(set(ids)) == len(batch) == 5
    with sqlite3.connect(tmp_path / "index.sqlite") as db:                         # as SQLite's || left them before
        db.execute("UPDATE traces SET span_ids = span_ids || x''")
        assert db.execute("SELECT typeof(span_ids) FROM traces").fetchone() == ("text",)
    again = JsonLinesStoreExporter(tmp_path)
    again.export(batch)
    assert again.duplicates == len(batch) and len(list(iter_store(tmp_path))) == len(batch)


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


def test_the_store_cut_into_pieces_gives_each_line_once_and_whole(tmp_path):
    exporter = JsonLinesStoreExporter(tmp_path, rotate_bytes=4000)
    for number in range(12):
        exporter.export(glidein(f"piece{number}", 1000.0 + number))
    files = store_files(tmp_path)
    assert len(files) >= 2
    pieces = line_pieces(tmp_path, 1500)
    assert len(pieces) > len(files)
    for piece in pieces:
        assert piece.end - piece.start >= 1500 or piece.end == piece.path.stat().st_size
    lines = [line for piece in pieces for line in piece.lines()]
    assert lines == [line for path in files for line in path.read_bytes().splitlines()]


def glidein(name, start=1000.0):
    """One glidein's spans (its own trace id, from its name)."""
    lines = root_lines(start, **{"glidein.name": name}) + [format_line(start + 3, "end", "glidein", {})]
    return convert(parse_lines("".join(lines).encode())[0])


def trace_hex(spans_):
    return format(spans_[0].context.trace_id, "032x")


def test_show_reads_a_trace_through_the_index_only_from_its_own_lines(tmp_path):
    exporter = JsonLinesStoreExporter(tmp_path, rotate_bytes=100)     # one file per glidein
    first, second = glidein("a"), glidein("b")
    exporter.export(first)
    exporter.export(second)
    files = sorted(tmp_path.glob("traces-*.jsonl"))
    assert len(files) == 2
    # the first glidein's file turns to garbage of the same size: the second one's trace is
    # still shown whole, as its lookup never reads the other file
    files[0].write_bytes(b"x" * files[0].stat().st_size)
    store = Store(tmp_path)
    assert {s["span_id"] for s in store.trace(trace_hex(second))} == \
        {format(s.context.span_id, "016x") for s in second}
    assert store.find(trace_hex(second)[:6]) == [trace_hex(second)]


def test_list_shows_each_trace_with_its_root(tmp_path, capsys):
    exporter = JsonLinesStoreExporter(tmp_path)
    for name in ("a", "b", "c"):
        exporter.export(glidein(name))
    assert main(["show", "--store", str(tmp_path), "--list"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3 and all(" glidein " in line for line in lines)
    assert sorted(line.split()[0] for line in lines) == sorted(trace_hex(glidein(n)) for n in "abc")


@pytest.mark.parametrize("damage", ["missing", "garbage", "stale", "other_files"])
def test_a_missing_stale_or_damaged_index_is_rebuilt_from_the_files(tmp_path, damage):
    exporter = JsonLinesStoreExporter(tmp_path)
    exporter.export(glidein("a"))
    index = tmp_path / "index.sqlite"
    if damage == "missing":
        for path in tmp_path.glob("index.sqlite*"):
            path.unlink()
    elif damage == "garbage":
        for path in tmp_path.glob("index.sqlite*"):
            path.unlink()
        index.write_bytes(b"\x00garbage, not a database" * 100)
    elif damage == "stale":            # lines appended by a writer that died before indexing
        line = json.dumps(encode_request(glidein("b")), separators=(",", ":")) + "\n"
        with open(next(tmp_path.glob("traces-*.jsonl")), "a") as handle:
            handle.write(line)
    else:                              # the files were replaced by other ones
        for path in tmp_path.glob("traces-*.jsonl"):
            path.write_text("")
        Store(tmp_path)                # nothing yet: opening does not rebuild
        JsonLinesStoreExporter(tmp_path).export(glidein("b"))
    store = Store(tmp_path)
    expected = {"a", "b"} if damage == "stale" else {"b"} if damage == "other_files" else {"a"}
    assert {t for t, *_ in store.summaries()} == {trace_hex(glidein(n)) for n in expected}
    for name in expected:
        assert len(store.trace(trace_hex(glidein(name)))) == len(glidein(name))
    # and the store goes on deduplicating
    again = JsonLinesStoreExporter(tmp_path)
    again.export(glidein("a"))
    assert again.written == (0 if "a" in expected else len(glidein("a")))


def test_a_line_cut_by_a_killed_writer_is_counted_and_the_next_line_starts_fresh(tmp_path, capsys):
    JsonLinesStoreExporter(tmp_path).export(glidein("a"))
    path = next(tmp_path.glob("traces-*.jsonl"))
    whole = json.dumps(encode_request(glidein("b")), separators=(",", ":"))
    with open(path, "a") as handle:
        handle.write(whole[: len(whole) // 2])          # killed mid-line
    assert Store(tmp_path).health()["cut_lines"] == 1
    JsonLinesStoreExporter(tmp_path).export(glidein("c"))
    traces = read_store(tmp_path)
    assert set(traces) == {trace_hex(glidein("a")), trace_hex(glidein("c"))}   # nothing whole lost
    assert len(traces[trace_hex(glidein("c"))]) == len(glidein("c"))
    assert main(["show", "--store", str(tmp_path), "--reindex"]) == 0
    out = capsys.readouterr().out
    assert "2 traces" in out and "1 unreadable lines" in out and "0 lines cut short" in out


WRITER = """
import sys
from glidein_tracing.core.converter import convert
from glidein_tracing.exporters.store import JsonLinesStoreExporter
from glidein_tracing.core.journal import format_line, parse_lines
sys.path.insert(0, {tests!r})
from tests.support.journal_builders import root_lines
exporter = JsonLinesStoreExporter({store!r})
for i in range({count}):
    lines = root_lines(1000.0 + i, **{{"glidein.name": "{prefix}%d" % i}}) + [format_line(1003 + i, "end", "glidein", {{}})]
    assert exporter.export(convert(parse_lines("".join(lines).encode())[0])).name == "SUCCESS"
"""


def test_readers_and_several_writers_at_once_see_whole_traces_each_span_once(tmp_path):
    tests = str(Path(__file__).resolve().parents[1])
    writers = [subprocess.Popen([sys.executable, "-c", WRITER.format(tests=tests, store=str(tmp_path), count=30,
                                                                      prefix=prefix)])
               for prefix in ("w", "w", "v")]             # two writers export the same glideins
    store = Store(tmp_path)
    seen = 0
    while any(w.poll() is None for w in writers):
        for trace_id, spans_count, *_ in store.summaries():
            assert len(store.trace(trace_id)) == spans_count   # never a part of a trace
            seen += 1
    assert all(w.wait() == 0 for w in writers)
    assert seen > 0
    counts = Counter((s["trace_id"], s["span_id"]) for s in iter_store(tmp_path))
    assert len({t for t, _ in counts}) == 60 and set(counts.values()) == {1}


def test_the_synthetic_generator_writes_through_the_stores_own_writer(tmp_path):
    """One writer of the store: synth's lines are indexed as they are written."""
    from glidein_tracing.testing import synth
    synth.write_store(synth.SynthConfig(glideins=300, seed=2), tmp_path, rotate_bytes=200_000, batch_lines=50)
    store = Store(tmp_path)
    health = store.health()
    assert health["traces"] == 300 and health["files"] > 1 and health["rebuilds"] == 0
    trace_id, spans, name, _, outcome = next(iter(store.summaries()))
    assert len(store.trace(trace_id)) == spans and name.split()[0] == "glidein" and outcome
    assert len(read_store(tmp_path)) == 300


def glidein_on(name, start):
    lines = root_lines(start, **{"glidein.name": name}) + [format_line(start + 3, "end", "glidein", {})]
    events, _ = parse_lines("".join(lines).encode())
    return convert(events)


def test_the_store_drops_its_oldest_days_whole_with_their_index(tmp_path, monkeypatch):
    from glidein_tracing.exporters import store as store_mod
    days = [20261101, 20261102, 20261103, 20261104, 20261105]
    traces = {}
    for n, day in enumerate(days):
        monkeypatch.setattr(store_mod, "_today", lambda day=day: day)
        batch = glidein_on(f"g{n}", 1000.0 + n * 86400)
        JsonLinesStoreExporter(tmp_path).export(batch)
        traces[day] = format(batch[0].context.trace_id, "032x")
    store = Store(tmp_path)
    assert store.prune(max_days=3, today=20261105) == [20261101, 20261102]   # keeps 3 days: 03, 04, 05
    assert len(store_files(tmp_path)) == 3
    assert store.find(traces[20261101]) == [] and store.trace(traces[20261102]) == []
    assert store.find(traces[20261103]) == [traces[20261103]]
    assert {t for t, *_ in store.summaries()} == {traces[d] for d in days[2:]}
    assert store.health()["rebuilds"] == 0        # the index was pruned, not rebuilt
    # past a size bound the oldest days go too, never the newest
    assert store.prune(max_bytes=1, today=20261105) == [20261103, 20261104]
    assert [t for t, *_ in Store(tmp_path, read_only=True).summaries()] == [traces[20261105]]


def test_show_list_pages_by_start_time(tmp_path, capsys):
    exporter = JsonLinesStoreExporter(tmp_path)
    for n in range(5):
        exporter.export(glidein_on(f"g{n}", 1_790_000_000.0 + n * 3600))
    assert main(["show", "--list", "--store", str(tmp_path), "--limit", "2"]) == 0
    latest = capsys.readouterr().out.splitlines()
    assert len(latest) == 2 and "17:13:20" in latest[0] and "18:13:20" in latest[1]   # the newest two
    assert main(["show", "--list", "--store", str(tmp_path), "--since", "2026-09-21T15:13", "--limit", "2"]) == 0
    page = capsys.readouterr().out.splitlines()
    assert len(page) == 2 and "15:13:20" in page[0] and "16:13:20" in page[1]
    assert main(["show", "--list", "--store", str(tmp_path), "--since", "last week"]) != 0
    assert "--since wants a UTC time" in capsys.readouterr().err


def test_the_forwarders_store_exporter_drops_days_past_its_retention_as_it_writes(tmp_path, monkeypatch):
    from glidein_tracing.exporters import store as store_mod
    for n, day in enumerate([20261101, 20261102, 20261103]):
        monkeypatch.setattr(store_mod, "_today", lambda day=day: day)
        JsonLinesStoreExporter(tmp_path, max_days=2).export(glidein_on(f"g{n}", 1000.0 + n * 86400))
    assert sorted({p.name[len("traces-"):][:8] for p in store_files(tmp_path)}) == ["20261102", "20261103"]
    assert len(list(Store(tmp_path).summaries())) == 2


def _job_of(owner: str, trace: int, start_s: float):
    """An SDK span of a user's job, as the forwarder stores it (its Owner as job.owner)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.trace.status import Status, StatusCode

    from glidein_tracing.core import conventions as c
    from glidein_tracing.core.converter.readable_span import readable_span
    return readable_span(name=c.SPAN_JOB_ON_GLIDEIN, resource=Resource({}), trace_id=trace, span_id=trace + 1,
                         parent=None, status=Status(StatusCode.UNSET), start_ns=int(start_s * 1e9),
                         end_ns=int((start_s + 60) * 1e9), attributes={c.STAGE: c.STAGE_JOB, c.JOB_OWNER: owner})


def test_a_users_traces_are_found_by_their_owner_latest_first_paged_and_pruned(tmp_path, monkeypatch):
    from glidein_tracing.exporters import store as store_mod
    for n, day in enumerate((20261101, 20261102, 20261103)):
        monkeypatch.setattr(store_mod, "_today", lambda day=day: day)
        JsonLinesStoreExporter(tmp_path).export([_job_of("alice", 100 + 10 * n, 1000.0 + n * 86400),
                                                 _job_of("bob", 500 + 10 * n, 1000.0 + n * 86400)])
    alice = [format(100 + 10 * n, "032x") for n in range(3)]
    store = Store(tmp_path)
    assert [t for t, *_ in store.owned("alice")] == alice[::-1]           # the latest activity first
    page = store.owned("alice", limit=2)
    assert [t for t, *_ in store.owned("alice", before_ns=page[-1][2])] == [alice[0]]
    assert store.owned("carol") == []
    (tmp_path / "index.sqlite").unlink()                                  # rebuilt from the files: the same
    assert [t for t, *_ in Store(tmp_path, read_only=True).owned("alice")] == alice[::-1]
    store.prune(max_days=1, today=20261103)
    assert [t for t, *_ in Store(tmp_path).owned("alice")] == [alice[2]]


def test_the_spans_of_many_traces_in_one_pass_each_decoded_alone(tmp_path):
    """spans_of: the spans of several traces sharing lines (as a Frontend request's line holds
    many users' spans), each as trace() gives it (resource aside); a span of another trace that
    links to one of them is not taken for one of its spans; a line written with another key
    order (not by this store) is read whole."""
    def span(trace, span_id, name, links=()):
        return {"trace_id": trace, "span_id": span_id, "name": name, "start_ns": 1, "end_ns": 2,
                "attributes": {"job.waiting.reason": "site_queue", "n": 1}, "resource": {"service.name": "fe"},
                "links": [{"trace_id": t, "span_id": s, "attributes": {}} for t, s in links]}
    a, b, other = "a" * 32, "b" * 32, "c" * 32
    store = Store(tmp_path)
    store.append_span_dicts([[span(a, "1" * 16, "job.waiting"), span(b, "2" * 16, "job.waiting"),
                             span(other, "3" * 16, "frontend.request", links=[(a, "1" * 16), (b, "2" * 16)]),
                              span(a, "4" * 16, "job.wait")]])
    found = Store(tmp_path, read_only=True).spans_of([a, b, "d" * 32])
    for trace in (a, b):
        whole = sorted(Store(tmp_path, read_only=True).trace(trace), key=lambda s: s["span_id"])
        assert sorted(found[trace], key=lambda s: s["span_id"]) == [{**s, "resource": {}} for s in whole]
    assert found["d" * 32] == [] and [s["span_id"] for s in found[b]] == ["2" * 16]
    assert [s["name"] for s in Store(tmp_path, read_only=True).spans_of([a], names={"job.waiting"})[a]] == ["job.waiting"]
    from glidein_tracing.exporters.store import _spans_in_line
    reordered = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"spanId": "5" * 16, "traceId": a, "name": "job.waiting", "startTimeUnixNano": "1"}]}]}]})
    assert [s["span_id"] for s in _spans_in_line(reordered, a, json.JSONDecoder())] == ["5" * 16]
