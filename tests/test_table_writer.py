"""The glidein table as the forwarder writes it: a row for every glidein it finishes, sampled
out or not, exactly once across crashes, reruns and two forwarders at once; bounded files per
day; damaged files named and skipped; schema versions checked; DuckDB reads it as it is."""

import math
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from glidein_tracing.exporters.store import JsonLinesStoreExporter
from glidein_tracing.factory.build import build_forwarder
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout
from glidein_tracing.table import layout as table_layout
from glidein_tracing.table import reader, writer

from tests.support.factory_builders import (
    FACTORY, SCHEDD, T0, identity, journal_text, returned_stderr, run_glidein, settings_for)


@pytest.fixture
def factory(tmp_path):
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    return layout, CondorGLog(layout)


def glideins(layout, log, cluster, count, start=T0, fail_every=0):
    """``count`` glideins of one cluster; every ``fail_every``-th never ran (held, removed)."""
    for proc in range(count):
        if fail_every and proc % fail_every == 0:
            log.submit(cluster, proc, when=start + proc - 120)
            log.held(cluster, proc, "Error connecting to schedd", code=0, when=start + proc - 100)
            log.aborted(cluster, proc, when=start + proc - 10)
        else:
            run_glidein(log, layout, cluster, proc, start + proc,
                        returned_stderr(journal_text(layout, cluster, proc, start + proc)))


def forward_cli(layout, tmp_path, *extra, env_extra=None, wait=True):
    args = [sys.executable, "-m", "glidein_tracing", "forward", str(layout.logs), "--factory", FACTORY,
            "--schedd", SCHEDD, "--store", str(tmp_path / "store"), "--state", str(tmp_path / "ledger.sqlite"),
            "--table", str(tmp_path / "table"), "--grace", "5", "--no-progress", *extra]
    env = dict(os.environ, **(env_extra or {}))
    if not wait:
        return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)


def table_trace_ids(table_dir, dataset="glideins"):
    rows, scan = reader.read_rows(table_dir, dataset, ["trace_id"])
    assert not scan.problems, scan.problems
    return rows.column("trace_id").to_pylist()


def test_every_finished_glidein_gets_one_row_also_when_sampled_out(factory, tmp_path):
    layout, log = factory
    glideins(layout, log, 100, 6, fail_every=3)
    done = forward_cli(layout, tmp_path, "--sampling-ratio", "0")
    assert done.returncode == 0, done.stderr
    assert "6 glideins written to the table" in done.stderr
    rows, _ = reader.read_rows(tmp_path / "table", "glideins")
    expected = {identity(layout, 100, p).trace_id for p in range(6)}
    assert sorted(rows.column("trace_id").to_pylist()) == sorted(expected)
    by_trace = {r["trace_id"]: r for r in rows.to_pylist()}
    # ratio 0: the glideins that ran fine are kept out of the store, their rows are not
    ran = by_trace[identity(layout, 100, 1).trace_id]
    # setup (20 s) starts 1 us after the execute event it meets (docs/span-conventions.md)
    assert ran["trace_kept"] is False and ran["outcome"] == "ok" and ran["setup_s"] == 19.999999
    never = by_trace[identity(layout, 100, 0).trace_id]
    assert never["trace_kept"] is True and never["outcome"] == "never_ran" and never["held_s"] == 90
    assert never["setup_s"] is None and never["gwms_condor_started"] is False
    assert ran["date"] == ran["ended_at"].strftime("%Y-%m-%d")     # partitioned by the day it ended
    # a second pass writes nothing more
    assert forward_cli(layout, tmp_path).returncode == 0
    assert sorted(table_trace_ids(tmp_path / "table")) == sorted(expected)


@pytest.mark.parametrize("point", ["after_export", "table_before_write", "table_after_write"])
def test_a_forwarder_killed_around_the_write_neither_loses_nor_repeats_a_row(factory, tmp_path, point):
    layout, log = factory
    glideins(layout, log, 200, 4)
    crashed = forward_cli(layout, tmp_path, env_extra={"GLIDEIN_TRACING_CRASH_AT": point})
    assert crashed.returncode == -9, crashed.stderr
    glideins(layout, log, 201, 3, start=T0 + 100)     # more glideins end meanwhile
    for _ in range(2):
        assert forward_cli(layout, tmp_path).returncode == 0
    written = table_trace_ids(tmp_path / "table")
    expected = {identity(layout, c, p).trace_id for c, n in ((200, 4), (201, 3)) for p in range(n)}
    assert sorted(written) == sorted(expected), "a row lost or written twice"
    assert len(table_trace_ids(tmp_path / "table", "jobs")) == 0   # these glideins ran no job
    assert not list((tmp_path / "table").rglob(".*.tmp")), "a half-written file was left behind"


def test_two_forwarders_at_once_write_each_glidein_once(factory, tmp_path):
    layout, log = factory
    glideins(layout, log, 300, 30)
    procs = [forward_cli(layout, tmp_path, wait=False) for _ in range(2)]
    for proc in procs:
        proc.wait(timeout=120)
    written = table_trace_ids(tmp_path / "table")
    assert sorted(written) == sorted(identity(layout, 300, p).trace_id for p in range(30))


def test_files_per_day_stay_bounded_by_compaction(factory, tmp_path):
    layout, log = factory
    ledger = Ledger(tmp_path / "ledger.sqlite")
    store = tmp_path / "store"
    forwarder = build_forwarder(settings_for(layout, grace=5, table=str(tmp_path / "table")),
                                exporter=JsonLinesStoreExporter(store), ledger=ledger)
    passes = 3 * writer.MAX_FILES_PER_DAY
    for cluster in range(400, 400 + passes):   # one file per pass
        glideins(layout, log, cluster, 2, start=T0 + (cluster - 400) * 10)
        assert forwarder.run_once().table_rows == 2
        for day_dir in table_layout.day_dirs(tmp_path / "table", "glideins"):
            assert len(table_layout.part_files(day_dir)) <= 2 * writer.MAX_FILES_PER_DAY
    assert sorted(table_trace_ids(tmp_path / "table")) == sorted(
        identity(layout, c, p).trace_id for c in range(400, 400 + passes) for p in range(2))


def _rows(n, day_offset=0):
    base = int((T0 + day_offset * 86400) * 1e6)
    return [{"schema_version": 1, "trace_id": f"{i:032x}", "ended_at": base + i, "glidein_s": float(i)}
            for i in range(n)]


def test_a_compaction_cut_short_is_finished_without_a_row_twice(tmp_path):
    table = tmp_path / "table"
    day = table_layout.day_of(_rows(1)[0]["ended_at"])
    for token in ("a", "b"):
        writer.write_days(table, "glideins", {day: _rows(3) if token == "a" else _rows(6)[3:]}, token)
    day_dir = table_layout.day_dir(table, "glideins", day)
    inputs = table_layout.part_files(day_dir)
    # killed after the log line and the merged file, before the inputs went
    merged = pa.concat_tables([pq.read_table(p, partitioning=None) for p in inputs])
    final = day_dir / "part-c1-merged.parquet"
    pq.write_table(merged, table_layout.tmp_path(final))
    (day_dir / table_layout.COMPACTED_LOG).write_text(" ".join([final.name] + [p.name for p in inputs]) + "\n")
    (table / table_layout.COMPACTING_MARK).write_text(str(day_dir.relative_to(table)))
    with table_layout.locked(table):
        writer.finish_compactions(table)
    assert table_layout.part_files(day_dir) == [final]
    assert not (table / table_layout.COMPACTING_MARK).exists()
    assert sorted(table_trace_ids(table)) == [f"{i:032x}" for i in range(6)]
    # a writer that had named a merged file still finds its rows written
    assert writer.is_written(table_layout.part_path(table, "glideins", day, "a"))


def test_a_damaged_file_is_named_and_skipped_and_the_rest_read(tmp_path):
    table = tmp_path / "table"
    day1, day2 = (table_layout.day_of(_rows(1, d)[0]["ended_at"]) for d in (0, 1))
    writer.write_days(table, "glideins", {day1: _rows(3)}, "good")
    writer.write_days(table, "glideins", {day2: _rows(4, 1)}, "bad")
    damaged = table_layout.part_path(table, "glideins", day2, "bad")
    damaged.write_bytes(damaged.read_bytes()[:-30])
    rows, scan = reader.read_rows(table, "glideins")
    assert rows.num_rows == 3
    assert len(scan.problems) == 1 and str(damaged) in scan.problems[0] and "damaged" in scan.problems[0]
    check = subprocess.run([sys.executable, "-m", "glidein_tracing", "table", "--check", "--table", str(table)],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 1 and str(damaged) in check.stderr
    assert "glideins: 3 rows in 1 files, 1 days" in check.stdout
    # a day with no rows (an empty dataset) is fine
    assert "jobs: 0 rows in 0 files" in check.stdout


def test_a_newer_schema_is_refused_clearly_and_an_older_one_read(tmp_path):
    table = tmp_path / "table"
    day = table_layout.day_of(_rows(1)[0]["ended_at"])
    old = pa.table({"schema_version": pa.array([0], pa.int32()), "trace_id": ["0" * 31 + "1"],
                    "glidein_s": [5.0]}).replace_schema_metadata({writer.VERSION_KEY: b"0"})
    path = table_layout.part_path(table, "glideins", day, "old")
    path.parent.mkdir(parents=True)
    pq.write_table(old, path)
    rows, scan = reader.read_rows(table, "glideins")
    assert rows.num_rows == 1 and scan.versions[path] == 0
    assert rows.column("glidein_s").to_pylist() == [5.0] and rows.column("setup_s").to_pylist() == [None]
    newer = old.replace_schema_metadata({writer.VERSION_KEY: b"99"})
    pq.write_table(newer, table_layout.part_path(table, "glideins", day, "new"))
    with pytest.raises(reader.TableError, match="schema version 99, newer than this glidein_tracing reads"):
        reader.read_rows(table, "glideins")
    check = subprocess.run([sys.executable, "-m", "glidein_tracing", "table", "--check", "--table", str(table)],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 2 and "schema version 99" in check.stderr


def test_duckdb_reads_the_table_with_its_day_partitions(factory, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    layout, log = factory
    glideins(layout, log, 500, 3)
    glideins(layout, log, 501, 2, start=T0 + 86400)
    assert forward_cli(layout, tmp_path).returncode == 0
    pattern = str(tmp_path / "table" / "glideins" / "*" / "*.parquet")
    days = duckdb.sql(f"SELECT date, count(*) FROM read_parquet('{pattern}', hive_partitioning = true) "
                      "GROUP BY date ORDER BY date").fetchall()
    assert [n for _, n in days] == [3, 2]
    assert str(days[0][0]) == table_layout.day_of(int((T0 + 30) * 1e6))
    # as docs/glidein-table.md says to read it: the usable files, by name, with their days
    files = [str(p) for p in reader.usable_files(tmp_path / "table", "glideins").files]
    joined = duckdb.sql(f"SELECT count(*), count(DISTINCT date), sum(setup_s) FROM read_parquet({files}, "
                        "hive_partitioning = true, union_by_name = true)").fetchall()[0]
    # each setup 20 s less the 1 us that sets it after the execute event it meets
    assert joined[:2] == (5, 2) and round(joined[2], 6) == 99.999995


def test_merged_files_are_merged_in_turn(tmp_path):
    table = tmp_path / "table"
    day = table_layout.day_of(_rows(1)[0]["ended_at"])
    day_dir = table_layout.day_dir(table, "glideins", day)
    n = writer.MAX_FILES_PER_DAY + 1
    for k in range(n):      # merged files (part-c1-...), as earlier compactions left them
        rows = [dict(r, trace_id=f"{k:08x}{i:024x}") for i, r in enumerate(_rows(2))]
        writer.write_days(table, "glideins", {day: rows}, f"c1-{k:032x}")
    assert writer.compact(day_dir, "glideins")
    assert len(table_layout.part_files(day_dir)) == 1
    assert len(set(table_trace_ids(table))) == len(table_trace_ids(table)) == 2 * n
    assert not writer.compact(day_dir, "glideins")


def test_compaction_rewrites_each_row_once_per_level_and_keeps_few_files_per_level(tmp_path, monkeypatch):
    """A busy day of many passes: files are merged level by level (more than max_files of one
    level make one of the next), so a row is rewritten once per level, not every time the
    day's merged files are merged again, and each level keeps at most max_files files."""
    table = tmp_path / "table"
    day = table_layout.day_of(_rows(1)[0]["ended_at"])
    day_dir = table_layout.day_dir(table, "glideins", day)
    merged_rows, merge = [], writer._merge

    def counted(day_dir, dataset, inputs, level, quarantined=None):
        merged_rows.append(sum(pq.read_metadata(p).num_rows for p in inputs))
        return merge(day_dir, dataset, inputs, level, quarantined)
    monkeypatch.setattr(writer, "_merge", counted)
    passes, per_pass, max_files = 100, 3, 2
    for k in range(passes):
        rows = [dict(r, trace_id=f"{k:08x}{i:024x}") for i, r in enumerate(_rows(per_pass))]
        writer.write_days(table, "glideins", {day: rows}, writer.new_token())
        writer.compact(day_dir, "glideins", max_files=max_files)
        levels = [writer.level_of(p) for p in table_layout.part_files(day_dir)]
        assert all(levels.count(level) <= max_files for level in levels)
    levels = sorted(set(writer.level_of(p) for p in table_layout.part_files(day_dir)))
    assert levels[-1] == 4 == int(math.log(passes, max_files + 1))   # a level L file: 3**L passes
    assert sum(merged_rows) <= levels[-1] * passes * per_pass     # each row at most once per level
    ids = table_trace_ids(table)
    assert len(ids) == len(set(ids)) == passes * per_pass
    assert writer.level_of(Path("part-p" + "0" * 32 + ".parquet")) == 0
    assert writer.level_of(Path("part-c3-" + "a" * 32 + ".parquet")) == 3


def test_the_table_setting(tmp_path):
    from glidein_tracing.factory.ledger import Ledger
    from glidein_tracing.factory.sink import NoTable, table_sink
    ledger = Ledger(tmp_path / "state" / "forwarder.sqlite")
    assert isinstance(table_sink("none", tmp_path / "state" / "forwarder.sqlite", ledger), NoTable)
    assert table_sink(None, tmp_path / "state" / "forwarder.sqlite", ledger).directory == \
        tmp_path / "state" / "glidein-table"
    assert table_sink(str(tmp_path / "t"), tmp_path / "state" / "forwarder.sqlite", ledger).directory == tmp_path / "t"


def test_the_ledger_does_not_grow_by_what_it_waited_for(factory, tmp_path):
    """The owed rows' JSON (a few kB a glidein) and the span ids being sent are deleted once
    settled and their pages reused: what the ledger keeps per glidein is a small row in
    glideins and one in table_rows, packed, whatever it once waited for."""
    layout, log = factory
    ledger = Ledger(tmp_path / "ledger.sqlite")
    store = tmp_path / "store"
    forwarder = build_forwarder(settings_for(layout, grace=5, table=str(tmp_path / "table")),
                                exporter=JsonLinesStoreExporter(store), ledger=ledger)
    passes, per_pass = 12, 10
    for cluster in range(500, 500 + passes):
        glideins(layout, log, cluster, per_pass, start=T0 + (cluster - 500) * 30)
        assert forwarder.run_once().table_rows == per_pass
    db = ledger.db
    assert db.execute("SELECT count(*) FROM table_pending").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM sending_spans").fetchone()[0] == 0
    assert db.execute("SELECT count(*), count(DISTINCT state) FROM table_rows").fetchone() == (passes * per_pass, 1)
    try:
        pages = {name: (count, unused / size) for name, count, unused, size in db.execute(
            "SELECT name, count(*), sum(unused), sum(pgsize) FROM dbstat GROUP BY name")}
    except sqlite3.OperationalError:
        pytest.skip("this SQLite has no dbstat to count pages with")
    page = db.execute("PRAGMA page_size").fetchone()[0]
    count, unused = pages["table_rows"]
    # a small row a glidein, packed (the JSON kept in table_rows and emptied left 20 pages of
    # this table, 73 % unused: 682 bytes a glidein here, a page a glidein of 10 jobs)
    assert count * page < 400 * passes * per_pass and unused < 0.4
    count, unused = pages["glideins"]   # the span ids kept there and emptied: 67 % unused
    assert count * page < 1000 * passes * per_pass and unused < 0.4


def test_a_pass_file_is_never_taken_for_a_merged_one(tmp_path):
    """compact() tells a pass's files from merged ones by name: whatever token a pass draws,
    more than MAX_FILES_PER_DAY of them are merged (a token starting with "c" once made about
    one pass file in 16 look merged: never merged, never rolled up)."""
    assert not any(writer.new_token().startswith("c") for _ in range(1000))
    table = tmp_path / "table"
    day = table_layout.day_of(_rows(1)[0]["ended_at"])
    for k in range(writer.MAX_FILES_PER_DAY + 1):
        rows = [dict(r, trace_id=f"{k:08x}{i:024x}") for i, r in enumerate(_rows(2))]
        writer.write_days(table, "glideins", {day: rows}, writer.new_token())
    assert writer.compact(table_layout.day_dir(table, "glideins", day), "glideins")
    [merged] = table_layout.part_files(table_layout.day_dir(table, "glideins", day))
    assert merged.name.startswith("part-c")


def test_a_damaged_file_met_by_compaction_is_quarantined_once_and_the_day_finished(factory, tmp_path):
    """Through the real forwarder: a day holds a pass's file cut short when compaction reaches
    it. The pass that merges the day moves it to quarantine/ (named in its stats and by
    `table --check`), merges the rest, leaves no temporary file and owes no row; later passes
    go on as before."""
    layout, log = factory
    ledger = Ledger(tmp_path / "ledger.sqlite")
    store, table = tmp_path / "store", tmp_path / "table"
    forwarder = build_forwarder(settings_for(layout, grace=5, table=str(table)),
                                exporter=JsonLinesStoreExporter(store), ledger=ledger)
    for cluster in range(500, 500 + writer.MAX_FILES_PER_DAY):    # a day of as many files as it keeps
        glideins(layout, log, cluster, 2, start=T0 + (cluster - 500) * 10)
        assert forwarder.run_once().table_rows == 2
    (day_dir,) = table_layout.day_dirs(table, "glideins")
    damaged = table_layout.part_files(day_dir)[3]
    lost = pq.read_table(damaged, columns=["trace_id"]).column(0).to_pylist()
    damaged.write_bytes(damaged.read_bytes()[:-40])                  # cut short: its footer is gone
    glideins(layout, log, 600, 2, start=T0 + 100)
    stats = forwarder.run_once()                                      # 9 files: the day is merged
    moved = table / "quarantine" / "glideins" / day_dir.name / damaged.name
    assert stats.table_rows == 2 and stats.table_quarantined == [moved] and moved.exists()
    assert f"1 damaged table files moved to {table / 'quarantine'}" in stats.summary()
    assert not damaged.exists() and len(table_layout.part_files(day_dir)) == 1   # the day finished
    assert not [p for p in table.rglob("*") if p.name.endswith(".tmp")]
    assert not (table / table_layout.COMPACTING_MARK).exists()
    assert ledger.pending_table_rows() == []                           # no row piles up in the ledger
    expected = {identity(layout, c, p).trace_id for c in [*range(500, 500 + writer.MAX_FILES_PER_DAY), 600]
                for p in range(2)}
    assert sorted(table_trace_ids(table)) == sorted(expected - set(lost))
    check = subprocess.run([sys.executable, "-m", "glidein_tracing", "table", "--check", "--table", str(table)],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 1 and f"{moved}: damaged, moved aside by compaction" in check.stderr
    for cluster in range(700, 700 + writer.MAX_FILES_PER_DAY + 1):     # the next merges of that day
        glideins(layout, log, cluster, 2, start=T0 + 200 + (cluster - 700) * 10)
        later = forwarder.run_once()
        assert later.table_rows == 2 and later.table_quarantined == []
    assert len(table_trace_ids(table)) == len(expected) - len(lost) + 2 * (writer.MAX_FILES_PER_DAY + 1)


def test_rows_an_earlier_forwarder_left_as_json_are_written_as_its_own(factory, tmp_path):
    """Forwarders before 2026-12-06 kept the rows they owed the table in the ledger as JSON
    text (now MessagePack); one killed before writing them left them so, and the next pass
    writes them exactly as a forwarder that was never killed writes its rows."""
    import msgspec
    layout, log = factory
    glideins(layout, log, 210, 3)
    crashed = forward_cli(layout, tmp_path, env_extra={"GLIDEIN_TRACING_CRASH_AT": "table_before_write"})
    assert crashed.returncode == -9, crashed.stderr
    db = sqlite3.connect(tmp_path / "ledger.sqlite")
    held = db.execute("SELECT trace_id, glidein, jobs FROM table_pending").fetchall()
    assert len(held) == 3 and all(isinstance(row, bytes) for _, row, _ in held)
    as_json = [(msgspec.json.encode(msgspec.msgpack.decode(row)).decode(),
                msgspec.json.encode(msgspec.msgpack.decode(jobs)).decode(), trace_id) for trace_id, row, jobs in held]
    with db:
        db.executemany("UPDATE table_pending SET glidein=?, jobs=? WHERE trace_id=?", as_json)
    db.close()
    assert forward_cli(layout, tmp_path).returncode == 0
    (tmp_path / "never_killed").mkdir()
    assert forward_cli(layout, tmp_path / "never_killed").returncode == 0
    written, _ = reader.read_rows(tmp_path / "table", "glideins")
    expected, _ = reader.read_rows(tmp_path / "never_killed" / "table", "glideins")
    assert written.num_rows == 3
    assert sorted(written.to_pylist(), key=lambda r: r["trace_id"]) == sorted(expected.to_pylist(),
                                                                             key=lambda r: r["trace_id"])
