"""The store's compact cache (analysis/cache.py): same table, only changed files read again."""

import json
import os

from glidein_tracing.exporters.otlp_json import request_from_span_dicts
from glidein_tracing.analysis import cache, stats, synth
from glidein_tracing.analysis.sources import ReadReport, load_table
from glidein_tracing.cli.main import main as cli_main

from tests.support.analysis_helpers import simple_glidein, trace_id, write_jsonl
from test_analysis_fastread import assert_same_tables


def make_store(directory, glideins=600, seed=4):
    cfg = synth.SynthConfig(glideins=glideins, seed=seed, fragment_rate=0.1, kill_rate=0.1)
    synth.write_store(cfg, directory, rotate_bytes=1_000_000, fragment_delay_lines=40)
    return sorted(directory.glob("traces-*.jsonl"))


def load(store, **kwargs):
    report, cache_stats = ReadReport(), {}
    table = load_table(store=store, report=report, cache_stats=cache_stats, **kwargs)
    return table, report.as_dict(), cache_stats


def test_second_load_reads_nothing_and_gives_the_same_table(tmp_path):
    files = make_store(tmp_path)
    assert len(files) > 3
    plain, plain_report, _ = load(tmp_path, workers=2)
    first, first_report, first_stats = load(tmp_path, workers=2, cache=True)
    assert first_stats == {"hits": 0, "misses": len(files), "written": len(files), "pruned": 0}
    assert len(list(cache.cache_dir(tmp_path).glob("*.npz"))) == len(files)
    second, second_report, second_stats = load(tmp_path, workers=1, cache=True)
    assert second_stats["hits"] == len(files) and second_stats["misses"] == 0
    for table, report in ((first, first_report), (second, second_report)):
        assert_same_tables(plain, table)
        assert report == plain_report
    assert stats.compute_stats(second) == stats.compute_stats(plain)


def test_a_store_file_that_grew_is_read_again(tmp_path):
    files = make_store(tmp_path)
    load(tmp_path, cache=True)
    newest = files[-1]
    before = newest.stat()
    with open(newest, "a", encoding="utf-8") as handle:    # what the exporter does
        handle.write(json.dumps(request_from_span_dicts(simple_glidein(trace_id(424242)))) + "\n")
    os.utime(newest, ns=(before.st_atime_ns, before.st_mtime_ns))   # even with the old mtime: the size
    table, report, cache_stats = load(tmp_path, cache=True, workers=2)
    assert cache_stats["misses"] == 1 and cache_stats["hits"] == len(files) - 1
    assert trace_id(424242) in table.trace_ids
    plain, plain_report, _ = load(tmp_path, workers=2)
    assert_same_tables(plain, table)
    assert report == plain_report


def test_a_touched_file_is_read_again_and_removed_files_are_pruned(tmp_path):
    files = make_store(tmp_path)
    load(tmp_path, cache=True)
    stat = files[0].stat()
    os.utime(files[0], ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    files[1].unlink()
    table, _, cache_stats = load(tmp_path, cache=True)
    assert cache_stats["misses"] == 1 and cache_stats["pruned"] == 1
    assert not (cache.cache_dir(tmp_path) / (files[1].name + ".npz")).exists()
    assert_same_tables(load(tmp_path, workers=2)[0], table)


def test_a_damaged_entry_is_a_miss_not_an_error(tmp_path):
    write_jsonl(tmp_path / "traces-000000.jsonl", [simple_glidein(trace_id(n)) for n in range(1, 4)])
    load(tmp_path, cache=True)
    entry = cache.cache_dir(tmp_path) / "traces-000000.jsonl.npz"
    entry.write_bytes(entry.read_bytes()[:100])
    table, _, cache_stats = load(tmp_path, cache=True)
    assert len(table) == 3 and cache_stats["misses"] == 1 and cache_stats["written"] == 1


def test_analyze_uses_the_cache_unless_told_not_to(tmp_path, capsys):
    store = tmp_path / "store"
    store.mkdir()
    make_store(store, glideins=200)
    outputs = []
    for extra in ([], [], ["--no-cache"]):
        out = tmp_path / f"report-{len(outputs)}.json"
        assert cli_main(["analyze", "--store", str(store), "--quiet", "--json", str(out)] + extra) == 0
        outputs.append(json.loads(out.read_text()))
    assert outputs[0]["source"]["cache"]["misses"] > 0
    assert outputs[1]["source"]["cache"]["hits"] == outputs[0]["source"]["cache"]["misses"]
    assert outputs[1]["source"]["cache"]["misses"] == 0
    assert "cache" not in outputs[2]["source"]
    for doc in outputs[1:]:
        assert doc["stats"] == outputs[0]["stats"] and doc["read"] == outputs[0]["read"]


def test_default_reads_files_in_parallel_fills_the_cache_and_gives_the_same_table(tmp_path):
    from glidein_tracing.analysis.sources import default_workers
    files = make_store(tmp_path)
    assert default_workers() == max(1, min(4, len(os.sched_getaffinity(0))))
    # files read apart (any number of workers, or the cache): the same table and counts
    per_file, per_file_report, _ = load(tmp_path, workers=2)
    table, report, cache_stats = load(tmp_path, cache=True)       # default workers: every core, at most 4
    assert cache_stats == {"hits": 0, "misses": len(files), "written": len(files), "pruned": 0}
    assert_same_tables(per_file, table)
    assert report == per_file_report
    again, again_report, again_stats = load(tmp_path, cache=True, workers=1)
    assert again_stats["hits"] == len(files)
    assert_same_tables(per_file, again)
    assert again_report == per_file_report
    # one stream in one process (workers=1, no cache): the same glideins (rows in another order)
    serial, _, _ = load(tmp_path, workers=1)
    assert sorted(serial.trace_ids) == sorted(table.trace_ids)
