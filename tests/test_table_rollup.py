"""Statistics rollups (table/rollup.py): the statistics and GlideinWMS's analyze_entries table
read from the rollups of a table's files equal those read from its rows, field by field (some files with a rollup and some without,
with entry and site filters); a forged or damaged rollup is ignored, never trusted and never
a failed analysis; a compaction killed at any point leaves every merged file with its rollup
and no rollup without its file; the backfill's merged files get theirs too."""

import math
import os
import shutil
import subprocess
import sys

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from glidein_tracing.testing import synth, synth_table
from glidein_tracing.analysis.dataset import open_dataset
from glidein_tracing.analysis import entries as analyze_entries
from glidein_tracing.analysis.stats import aggregate_scans, compute_stats
from glidein_tracing.table import layout, rollup, writer


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A synthetic table of several files per day, each with its rollup (as synth_table and the
    writer leave them)."""
    directory = tmp_path_factory.mktemp("rollup") / "table"
    cfg = synth.SynthConfig(glideins=2400, seed=5, period_s=2 * 86400, validation_failure_rate=0.1, kill_rate=0.05)
    synth_table.write_table(cfg, directory, chunk_rows=600)
    return directory


@pytest.fixture
def table(made, tmp_path):
    shutil.copytree(made, tmp_path / "table")
    return tmp_path / "table"


def data_files(table, dataset="glideins"):
    return [p for day in layout.day_dirs(table, dataset) for p in layout.part_files(day)]


def without_rollups(table, tmp_path):
    """A copy of the table with no rollup: every file read raw."""
    raw = tmp_path / "raw"
    shutil.copytree(table, raw)
    shutil.rmtree(raw / rollup.ROLLUPS_DIR, ignore_errors=True)
    return raw


def stats_of(table, **filters):
    return statistics(open_dataset(table, **filters).con)


def statistics(con) -> dict:
    """The statistics section and the analyze_entries table, as the analysis makes them."""
    scans = aggregate_scans(con)
    return {**compute_stats(con, scans), "analyze_entries": analyze_entries.waste_table(con, scans[0])}


def assert_same(got, want, where="stats"):
    """Field by field (groups in any order); float sums may differ in their last bits (the order
    they were added in)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got, key=str) == sorted(want, key=str), (where, list(got), list(want))
        for key in want:
            assert_same(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (a, b) in enumerate(zip(got, want)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(want, float) and not math.isnan(want):
        assert got == pytest.approx(want, rel=1e-9, abs=2e-3), where     # rounded to 3 digits
    else:
        assert got == want, where


def rolled_and_raw_rows(table, dataset="glideins") -> tuple[int, int]:
    """(long rows read from rollups, data rows left to aggregate raw) as open_dataset split them."""
    con = open_dataset(table).con
    return (con.execute(f"SELECT count(*) FROM {dataset}_rollups").fetchone()[0],
            con.execute(f"SELECT count(*) FROM {dataset}_unrolled").fetchone()[0])


def test_statistics_from_rollups_equal_those_from_rows_with_filters(table, tmp_path):
    raw = without_rollups(table, tmp_path)
    for dataset in ("glideins", "jobs"):      # every other file without its rollup: read raw
        for data_file in data_files(table, dataset)[::2]:
            rollup.remove(data_file)
    rolled, unrolled = rolled_and_raw_rows(table)
    total = open_dataset(table).con.execute("SELECT count(*) FROM glideins").fetchone()[0]
    assert rolled > 0 and 0 < unrolled < total, "both paths in play"
    assert rolled_and_raw_rows(raw) == (0, total)
    pairs = open_dataset(raw).con.execute("SELECT DISTINCT entry, site FROM glideins ORDER BY 1").fetchall()
    entries, sites = [pairs[0][0], pairs[-1][0]], [pairs[1][1]]
    for filters in ({}, {"entries": entries}, {"sites": sites}, {"entries": entries, "sites": sites}):
        got, want = stats_of(table, **filters), stats_of(raw, **filters)
        assert want["glideins"] > 0 and want["jobs"] > 0 and want["analyze_entries"]
        assert_same(got, want)
        con = open_dataset(raw, **filters).con       # and the plain SQL over the rows, as Spark runs it
        rows = con.execute(analyze_entries.WASTE_TABLE_SQL.replace("`", '"')).fetchall()
        assert_same(got["analyze_entries"], [{c: (round(v, 2) if isinstance(v, float) else v)
                                              for c, v in zip(analyze_entries.COLUMNS, row)} for row in rows])
    assert stats_of(table, entries=entries)["glideins"] < stats_of(table)["glideins"]


def test_the_failing_scripts_from_rollups_are_those_the_rows_name(table):
    rows = open_dataset(table).con.execute(
        "SELECT COALESCE(failure_stage, '(unknown)'), COALESCE(failure_type, ''), COUNT(*) AS n FROM glideins "
        "WHERE outcome = 'validation_failed' GROUP BY 1, 2 ORDER BY n DESC, 1, 2 LIMIT 15").fetchall()
    assert len(rows) > 1
    assert stats_of(table)["failed_scripts"] == [{"script": s, "error_type": t, "failures": n} for s, t, n in rows]


def failures_of(table, **filters) -> dict:
    """The failures and services sections, as the analysis makes them."""
    from glidein_tracing.analysis.failures import failures_section
    from glidein_tracing.analysis.services import services_section
    data = open_dataset(table, **filters)
    return {**failures_section(data), **services_section(data)}


def test_the_failure_sections_from_rollups_equal_those_from_rows(table, tmp_path):
    """The failed glideins' groups read from the files' rollups give the failures and services
    sections of the rows, examples included, with entry, site and Frontend filters (which the
    rollups cannot apply: read raw). A table an older release wrote (statistics rollups only)
    is read raw for the groups, said once with the command that writes them."""
    raw = without_rollups(table, tmp_path)
    older = data_files(table)[::2]
    for data_file in older:
        rollup.path_of(data_file, rollup.FAILED).unlink()
    data = open_dataset(table)
    assert data.rollups["lacking"] == len(older)
    unrolled, rolled = rollup.view_names("glideins", rollup.FAILED)
    total = data.con.execute("SELECT count(*) FROM glideins").fetchone()[0]
    assert data.con.execute(f"SELECT count(*) FROM {rolled}").fetchone()[0] > 0
    assert 0 < data.con.execute(f"SELECT count(*) FROM {unrolled}").fetchone()[0] < total, "both paths in play"
    pairs = open_dataset(raw).con.execute("SELECT DISTINCT entry, site, client FROM glideins ORDER BY 1").fetchall()
    for filters in ({}, {"entries": [pairs[0][0], pairs[-1][0]]}, {"sites": [pairs[1][1]]}, {"clients": [pairs[0][2]]}):
        got, want = failures_of(table, **filters), failures_of(raw, **filters)
        assert want["failed_glideins"] > 0 and want["top_messages"]
        assert_same(got, want, str(filters))
    # the examples are a message's first trace ids, as the rows give them
    from glidein_tracing.table.failed_groups import normalised_sql
    top = failures_of(table)["top_messages"][0]
    assert top["examples"] == [r[0] for r in open_dataset(raw).con.execute(
        f"SELECT trace_id FROM glideins WHERE failure_domain IS NOT NULL AND {normalised_sql('failure_message')} = ? "
        "ORDER BY 1 LIMIT 3", [top["message"]]).fetchall()]
    analyze = subprocess.run([sys.executable, "-m", "glidein_tracing", "analyze", str(table), "--quiet"],
                             capture_output=True, text=True, timeout=300)
    assert analyze.returncode == 0, analyze.stderr
    assert f"{len(older)} files lack the rollups of the failed glideins' groups" in analyze.stderr
    assert "glidein-tracing table --table DIR --rollups" in analyze.stderr


def _forge(path, how: str, counted: str = "value", keyed: str = "label"):
    """A rollup that must not be taken: its numbers (``counted``) doubled, so that taking it
    would show; ``columns``: without its column ``keyed``."""
    if how == "garbage":
        path.write_bytes(b"PAR1 not a rollup at all")
        return
    rows = pq.read_table(path, partitioning=None)
    meta = dict(rows.schema.metadata)
    doubled = rows.set_column(rows.schema.get_field_index(counted), counted, pc.multiply(rows[counted], 2))
    if how == "row_count":
        meta[rollup.ROWS_KEY] = str(int(meta[rollup.ROWS_KEY]) + 1).encode()
    elif how == "version":
        meta[rollup.VERSION_KEY] = b"0" * 16
    elif how == "columns":
        doubled = doubled.drop_columns([keyed])
    pq.write_table(doubled.replace_schema_metadata(meta), path)


@pytest.mark.parametrize("how", ["row_count", "version", "garbage", "columns"])
def test_a_forged_rollup_is_ignored_and_its_file_read_raw(table, tmp_path, how):
    raw = without_rollups(table, tmp_path)
    forged = data_files(table)[1]
    _forge(rollup.path_of(forged), how)
    _forge(rollup.path_of(data_files(table, "jobs")[1]), how)
    failed = data_files(table)[2]
    assert pq.read_metadata(rollup.path_of(failed, rollup.FAILED)).num_rows > 0, "groups that taking would double"
    _forge(rollup.path_of(failed, rollup.FAILED), how, counted="n", keyed="m")
    _, unrolled = rolled_and_raw_rows(table)
    assert unrolled == pq.read_metadata(forged).num_rows, "the forged one's file, and only it, read raw"
    assert open_dataset(table).rollups["stale"] == (2 if how == "version" else 0)
    assert_same(stats_of(table), stats_of(raw))
    unrolled_view, _ = rollup.view_names("glideins", rollup.FAILED)
    assert open_dataset(table).con.execute(f"SELECT count(*) FROM {unrolled_view}").fetchone()[0] == \
        pq.read_metadata(failed).num_rows
    assert_same(failures_of(table), failures_of(raw))


def test_rollups_an_older_release_wrote_are_named_and_rewritten_by_the_table_verb(table):
    """After an upgrade that changes a definition every rollup is stale: the analysis reads the
    rows (same numbers), says so once and names the command; `table --rollups` rewrites them."""
    files = len(data_files(table)) + len(data_files(table, "jobs"))
    want = stats_of(table)
    for data_file in data_files(table) + data_files(table, "jobs"):
        path = rollup.path_of(data_file)
        rows = pq.read_table(path, partitioning=None)
        pq.write_table(rows.replace_schema_metadata({**rows.schema.metadata, rollup.VERSION_KEY: b"0" * 16}), path)
    data = open_dataset(table)
    assert data.rollups == {"files": files, "used": 0, "stale": files, "lacking": 0}
    assert_same(statistics(data.con), want)
    analyze = [sys.executable, "-m", "glidein_tracing", "analyze", str(table), "--quiet"]
    before = subprocess.run(analyze, capture_output=True, text=True, timeout=300)
    assert before.returncode == 0, before.stderr
    assert f"{files} files have rollups an older release wrote" in before.stderr
    assert "glidein-tracing table --table DIR --rollups" in before.stderr
    rewrite = subprocess.run([sys.executable, "-m", "glidein_tracing", "table", "--table", str(table), "--rollups"],
                             capture_output=True, text=True, timeout=300)
    assert rewrite.returncode == 0 and f"rollups written for {files} files" in rewrite.stderr
    assert open_dataset(table).rollups == {"files": files, "used": files, "stale": 0, "lacking": 0}
    after = subprocess.run(analyze, capture_output=True, text=True, timeout=300)
    assert after.returncode == 0 and "older release" not in after.stderr
    assert_same(stats_of(table), want)


def test_rollups_deleted_while_an_analysis_runs_leave_its_numbers_right(table, tmp_path):
    raw = without_rollups(table, tmp_path)
    data = open_dataset(table)
    shutil.rmtree(table / rollup.ROLLUPS_DIR)       # after open_dataset chose them
    assert_same(statistics(data.con), stats_of(raw))


def _compact_killed(day_dir, point: str):
    """``writer.compact`` of the day in a process SIGKILLed at ``point``: after the merged
    file's rollup, before (``before_log``) or after (``after_log``) its compaction log line."""
    code = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from glidein_tracing.table import writer\n"
        "logged = writer._append_log\n"
        "def killed(day_dir, names):\n"
        f"    if {point!r} == 'after_log':\n"
        "        logged(day_dir, names)\n"
        "    os.kill(os.getpid(), 9)\n"
        "writer._append_log = killed\n"
        "writer.compact(Path(sys.argv[1]), sys.argv[2], max_files=1)\n")
    return subprocess.run([sys.executable, "-c", code, str(day_dir), day_dir.parent.name],
                          capture_output=True, text=True, timeout=120)


def assert_consistent(table):
    """Every rollup has its data file; no half-written file is left."""
    for dataset in ("glideins", "jobs"):
        for day in layout.day_dirs(table / rollup.ROLLUPS_DIR, dataset):
            for path in layout.part_files(day):
                assert (table / dataset / day.name / path.name).exists(), f"{path}: rollup without its file"
    assert not list(table.rglob(".*.tmp")), "a half-written file was left behind"


@pytest.mark.parametrize("point", ["before_log", "after_log"])
def test_a_compaction_killed_after_the_rollup_leaves_a_consistent_table(table, tmp_path, point):
    raw = without_rollups(table, tmp_path)
    day_dir = layout.day_dirs(table, "glideins")[0]
    inputs = layout.part_files(day_dir)
    assert len(inputs) > 1 and all(rollup.path_of(p).exists() for p in inputs)
    killed = _compact_killed(day_dir, point)
    assert killed.returncode == -9, killed.stderr
    with layout.locked(table):
        writer.finish_compactions(table)
    assert_consistent(table)
    files = layout.part_files(day_dir)
    if point == "after_log":    # finished: one merged file with its rollup, the inputs' gone
        assert len(files) == 1 and files[0].name.startswith("part-c") and rollup.path_of(files[0]).exists()
        assert not any(rollup.path_of(p).exists() for p in inputs)
        assert rolled_and_raw_rows(table)[1] == 0, "the merged file is read from its rollup"
    else:                       # undone: the inputs as they were, with their rollups
        assert files == inputs and all(rollup.path_of(p).exists() for p in inputs)
    assert_same(stats_of(table), stats_of(raw))


def rows_by_key(rows, kind) -> dict:
    """A rollup's rows by their key columns (examples sorted: a group's first trace ids)."""
    names = [n for n in kind.schema().names if n not in ("value", "n", "core_h", "examples")]
    return {tuple(r[n] for n in names): {k: v for k, v in r.items() if k not in names} for r in rows.to_pylist()}


@pytest.mark.parametrize("dataset", ["glideins", "jobs"])
@pytest.mark.parametrize("inputs_rolled", [True, False])
def test_a_merges_rollup_is_that_of_its_rows(table, inputs_rolled, dataset, monkeypatch):
    """A merge sums its inputs' rollups of each kind when each has one (a few rows per file,
    however many rows it holds; the rows are not aggregated then), else aggregates its rows:
    either way each rollup is that of the merged rows."""
    from glidein_tracing.table import aggregates, failed_groups
    day_dir = layout.day_dirs(table, dataset)[0]
    inputs = layout.part_files(day_dir)
    assert len(inputs) > 1
    if not inputs_rolled:
        rollup.remove(inputs[0])
    for kind in rollup.kinds_of(dataset):
        rolled, _ = rollup.usable(inputs, {p: pq.read_metadata(p).num_rows for p in inputs}, kind)
        assert len(rolled) == len(inputs) - (not inputs_rolled)
    if inputs_rolled:
        for module, name in ((aggregates, "long_rows"), (failed_groups, "of_rows")):
            monkeypatch.setattr(module, name, lambda *a: pytest.fail("the rows were aggregated"))
    assert writer.compact(day_dir, dataset, max_files=1)
    monkeypatch.undo()
    [merged] = layout.part_files(day_dir)
    wanted = rollup.compute(pq.read_table(merged, schema=writer.arrow_schema(dataset)), dataset)
    assert set(wanted) == set(rollup.kinds_of(dataset)) and len(wanted) == (2 if dataset == "glideins" else 1)
    for kind, want in wanted.items():
        stored = pq.read_table(rollup.path_of(merged, kind), partitioning=None)
        assert stored.schema.metadata == want.schema.metadata and stored.schema.equals(want.schema)
        assert want.num_rows > 0
        assert_same(rows_by_key(stored, kind), rows_by_key(want, kind))


def test_a_compaction_writes_its_files_rollup_and_removes_its_inputs(table, tmp_path):
    raw = without_rollups(table, tmp_path)
    for dataset in ("glideins", "jobs"):
        for day_dir in layout.day_dirs(table, dataset):
            inputs = layout.part_files(day_dir)
            assert writer.compact(day_dir, dataset, max_files=1) == (len(inputs) > 1)
            merged = layout.part_files(day_dir)
            assert len(merged) == 1 and rollup.path_of(merged[0]).exists()
            meta = pq.read_metadata(rollup.path_of(merged[0])).metadata
            assert meta[rollup.ROWS_KEY] == str(pq.read_metadata(merged[0]).num_rows).encode()
            if len(inputs) > 1:
                assert not any(rollup.path_of(p).exists() for p in inputs)
    assert_consistent(table)
    assert rolled_and_raw_rows(table)[1] == rolled_and_raw_rows(table, "jobs")[1] == 0
    assert_same(stats_of(table), stats_of(raw))


def test_the_backfills_merged_files_have_their_rollups(tmp_path, monkeypatch):
    from glidein_tracing.table import backfill
    store, table = tmp_path / "store", tmp_path / "table"
    synth.write_store(synth.SynthConfig(glideins=120, seed=8, period_s=86400 / 2), store)
    monkeypatch.setattr(backfill, "CHUNK_GLIDEINS", 10)       # a batch every 10 glideins: compactions
    monkeypatch.setattr(backfill, "PIECE_BYTES", 4096)        # of pieces of a few glideins each
    assert backfill.from_store(store, table, workers=1).glideins == 120
    logs = [day / layout.COMPACTED_LOG for dataset in ("glideins", "jobs") for day in layout.day_dirs(table, dataset)]
    merged = [log.parent / line.split()[0] for log in logs if log.exists() for line in log.read_text().splitlines()]
    merged = [p for p in merged if p.exists()]      # the compactions' outputs still there
    assert merged and all(rollup.path_of(p).exists() for p in merged)
    assert_consistent(table)
    assert rolled_and_raw_rows(table)[0] > 0
    assert_same(stats_of(table), stats_of(without_rollups(table, tmp_path)))


def test_a_rollup_whose_file_is_gone_is_not_counted(table, tmp_path):
    gone = data_files(table)[0]
    os.unlink(gone)
    assert rollup.path_of(gone).exists()        # left behind: never consulted
    assert_same(stats_of(table), stats_of(without_rollups(table, tmp_path)))


def test_the_table_verb_writes_the_rollups_a_table_lacks(table, tmp_path):
    """A table written before rollups existed (or whose rollups/ was deleted): `glidein-tracing
    table --rollups` gives every file its rollup, the numbers unchanged; run again it writes
    none; a damaged file is named and left without one, the others get theirs."""
    raw = without_rollups(table, tmp_path)
    want = stats_of(raw)
    command = [sys.executable, "-m", "glidein_tracing", "table", "--table", str(raw), "--rollups"]
    first = subprocess.run(command, capture_output=True, text=True, timeout=300)
    files = len(data_files(raw)) + len(data_files(raw, "jobs"))
    assert first.returncode == 0, first.stderr
    assert f"rollups written for {files} files, 0 files had theirs" in first.stderr
    assert rolled_and_raw_rows(raw)[1] == rolled_and_raw_rows(raw, "jobs")[1] == 0
    assert_same(stats_of(raw), want)
    again = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and f"rollups written for 0 files, {files} files had theirs" in again.stderr
    shutil.rmtree(raw / rollup.ROLLUPS_DIR)
    damaged = data_files(raw)[0]
    content = damaged.read_bytes()
    damaged.write_bytes(content[:4] + b"\0" * (len(content) - 200) + content[-196:])   # footer intact, data not
    third = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert third.returncode == 1 and str(damaged) in third.stderr
    assert f"rollups written for {files - 1} files" in third.stderr
    assert not rollup.path_of(damaged).exists()
