"""Rollups: the per-(entry, site) aggregate (aggregates.py) of one data file of the glidein
table, so that the analysis's statistics read a few rows per file instead of its millions.

``<table>/rollups/<dataset>/date=D/<name>`` (Parquet) holds the aggregate rows of the data file
``<table>/<dataset>/date=D/<name>``; its footer names the rollup version (a digest of the
aggregate SQL and the long rows' format: any change to the definitions makes the older rollups
stale) and the data file's
row count. The writer (writer.py) writes the rollup of every merged file before that file
appears and removes it with the file; the analysis (analysis/dataset.py) takes a data file's
rollup only when it is there, of this version, of the data file's row count and readable with
the expected columns, and reads the file's rows otherwise. A rollup is derived: deleting one
(or all of ``rollups/``) changes no number, only how long the analysis takes.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from . import aggregates, layout

ROLLUPS_DIR = "rollups"
VERSION_KEY = b"glidein_tracing.rollup_version"
ROWS_KEY = b"glidein_tracing.rollup_of_rows"     # the data file's row count
VERSION = hashlib.sha256("\n".join([*(sql("data_rows") for sql in aggregates.SQL.values()),
                                    repr((aggregates.LONG_FORMAT, aggregates.LONG_COLUMNS))]).encode()).hexdigest()[:16]


def path_of(data_file) -> Path:
    """The rollup of ``<table>/<dataset>/date=D/<name>``: ``<table>/rollups/<dataset>/date=D/<name>``."""
    data_file = Path(data_file)
    day, dataset_dir = data_file.parent, data_file.parent.parent
    return dataset_dir.parent / ROLLUPS_DIR / dataset_dir.name / day.name / data_file.name


def _stamped(long_rows, rows: int):
    """Long rows with the footer metadata naming VERSION and the data file's row count."""
    return long_rows.replace_schema_metadata({VERSION_KEY: VERSION.encode(), ROWS_KEY: str(rows).encode()})


_DATABASE: list = []    # this process's in-memory DuckDB for rollups, made at first use


def _duckdb():
    """A cursor of this process's DuckDB for rollups (close it after use): a new database
    costs about 15 ms, as much as a compaction of small files. It is closed before the
    process forks (a DuckDB inherited by a child hangs or crashes it when the child lets go
    of it), and made again when needed."""
    if not _DATABASE:
        import duckdb
        _DATABASE.append(duckdb.connect())
    return _DATABASE[0].cursor()


def _close_before_fork():
    while _DATABASE:
        _DATABASE.pop().close()


os.register_at_fork(before=_close_before_fork)


def compute(table, dataset: str):
    """The rollup of ``table`` (Arrow, rows of ``dataset``): its aggregate's long rows."""
    con = _duckdb()
    try:
        con.register("data_rows", table)
        return _stamped(aggregates.long_rows(con, dataset, "data_rows"), table.num_rows)
    finally:
        con.close()


def of_merge(inputs, dataset: str, merged_file):
    """The rollup of ``merged_file``, the rows of data files ``inputs`` merged: the sum of the
    inputs' rollups when each has a usable one (long rows add up: a few rows per file, however
    many rows the files hold), else the aggregate of the merged file's rows, which DuckDB
    reads from the file."""
    import duckdb
    import pyarrow.parquet as pq
    rows = {path: pq.read_metadata(path).num_rows for path in inputs}
    total = pq.read_metadata(merged_file).num_rows
    rolled, _ = usable(inputs, rows)
    con = _duckdb()
    try:
        if len(rolled) == len(inputs) and sum(rows.values()) == total:
            keys = ", ".join(name for name, _ in aggregates.LONG_COLUMNS if name != "value")
            try:
                files = ", ".join(aggregates.sql_text(path) for path in rolled.values())
                summed = con.sql(f"SELECT {keys}, SUM(value) AS value FROM read_parquet([{files}]) GROUP BY ALL"
                                 ).to_arrow_table()
                return _stamped(summed.cast(aggregates.long_schema()), total)
            except duckdb.Error:     # a rollup damaged past its footer: the rows decide
                pass
        return _stamped(aggregates.long_rows(con, dataset, f"read_parquet({aggregates.sql_text(merged_file)})"), total)
    finally:
        con.close()


def write(rollup, data_file) -> Path:
    """``rollup`` (``compute``, ``of_merge``), that of the rows ``data_file`` holds (or will once
    renamed into place), written atomically next to the others of its day."""
    final = path_of(data_file)
    os.replace(layout.write_hidden(rollup, final), final)
    return final


def remove(data_file) -> None:
    path_of(data_file).unlink(missing_ok=True)


def remove_orphans(day_dir) -> None:
    """The rollups of a data day whose data file is gone, and half-written ones, removed
    (after a writer was killed mid-compaction)."""
    rollups = path_of(Path(day_dir) / "any").parent
    for path in layout.part_files(rollups):
        if not (Path(day_dir) / path.name).exists():
            path.unlink(missing_ok=True)
    for stale in rollups.glob(".*.tmp"):
        stale.unlink(missing_ok=True)


def usable(data_files, rows: dict) -> tuple[dict, list]:
    """(data file -> its rollup, for those of ``data_files`` whose rollup can stand for them:
    there, its footer readable, of this VERSION, of the data file's row count (``rows``: file ->
    its footer's row count) and of the long rows' columns; the data files whose rollup is of
    another version: stale, as a release that changes a definition leaves them, for
    ``glidein-tracing table --rollups`` to rewrite). Any other file is read raw."""
    import pyarrow.parquet as pq
    expected, out, stale = aggregates.long_schema(), {}, []
    for data_file in data_files:
        path = path_of(data_file)
        try:
            metadata = pq.read_metadata(path)
            columns = metadata.schema.to_arrow_schema()
        except (OSError, ValueError):       # absent, or no Parquet file
            continue
        meta = metadata.metadata or {}
        if meta.get(VERSION_KEY) != VERSION.encode():
            stale.append(data_file)
        elif meta.get(ROWS_KEY) == str(rows[data_file]).encode() and columns.equals(expected, check_metadata=False):
            out[data_file] = path
    return out, stale
