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


def compute(table, dataset: str):
    """The rollup of ``table`` (Arrow, rows of ``dataset``): its aggregate's long rows, the
    footer metadata naming VERSION and the row count."""
    import duckdb
    con = duckdb.connect()
    try:
        con.register("data_rows", table)
        rows = aggregates.long_rows(con, dataset, "data_rows")
    finally:
        con.close()
    return rows.replace_schema_metadata({VERSION_KEY: VERSION.encode(), ROWS_KEY: str(table.num_rows).encode()})


def write(table, dataset: str, data_file) -> Path:
    """The rollup of ``table``, the rows ``data_file`` holds (or will once renamed into place),
    written atomically next to the others of its day."""
    final = path_of(data_file)
    os.replace(layout.write_hidden(compute(table, dataset), final), final)
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
