"""Rollups: aggregates of one data file of the glidein table, kept beside it, so that the
analysis reads a few rows per file instead of its millions. Two kinds (``KINDS``):

- ``STATS``: the per-(entry, site) aggregate of the statistics (aggregates.py), of both datasets;
- ``FAILED``: the failed glideins' groups (failed_groups.py) the failure sections read.

``<table>/rollups/<dataset><suffix>/date=D/<name>`` (Parquet) holds a kind's rows of the data
file ``<table>/<dataset>/date=D/<name>``; its footer names the kind's version (a digest of its
SQL and format: any change to the definitions makes the older rollups stale) and the data
file's row count. The writer (writer.py) writes the rollups of every merged file before that
file appears and removes them with the file; the analysis (analysis/dataset.py) takes a data
file's rollup only when it is there, of this version, of the data file's row count and
readable with the expected columns, and reads the file's rows otherwise. A rollup is derived:
deleting one (or all of ``rollups/``) changes no number, only how long the analysis takes.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from . import aggregates, failed_groups, layout
from .schema import DATASETS, GLIDEINS_DATASET, arrow_type

ROLLUPS_DIR = "rollups"
VERSION_KEY = b"glidein_tracing.rollup_version"
ROWS_KEY = b"glidein_tracing.rollup_of_rows"     # the data file's row count


def _digest(*texts: str) -> str:
    return hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]


def _stats_summed(con, files_sql: str):
    keys = ", ".join(name for name, _ in aggregates.LONG_COLUMNS if name != "value")
    return con.sql(f"SELECT {keys}, SUM(value) AS value FROM {files_sql} GROUP BY ALL").to_arrow_table()


@dataclass(frozen=True, eq=False)
class Kind:
    """A kind of rollup: where it lives, its version, its columns, how it is made of a data
    file's rows (``of_rows(con, dataset, relation)``) and of the rollups of merged files
    (``summed(con, relation)``)."""
    suffix: str               # of the dataset's directory under rollups/
    datasets: tuple
    version: str
    columns: tuple            # (name, DuckDB type)
    of_rows: object
    summed: object

    def schema(self):
        """The columns as an Arrow schema: every rollup of this kind is cast to it."""
        import pyarrow as pa
        return pa.schema([(name, arrow_type(sql_type)) for name, sql_type in self.columns])


STATS = Kind("", tuple(DATASETS),
             _digest(*(sql("data_rows") for sql in aggregates.SQL.values()),
                     repr((aggregates.LONG_FORMAT, aggregates.LONG_COLUMNS))),
             aggregates.LONG_COLUMNS, lambda con, dataset, relation: aggregates.long_rows(con, dataset, relation),
             _stats_summed)
FAILED = Kind(".failed", (GLIDEINS_DATASET,),
              _digest(failed_groups.groups_sql("data_rows", True), failed_groups.groups_sql("data_rows", False),
                      failed_groups.summed_sql("rollup_rows"), repr(failed_groups.COLUMNS)),
              failed_groups.COLUMNS, lambda con, dataset, relation: failed_groups.of_rows(con, relation),
              failed_groups.of_groups)
KINDS = (STATS, FAILED)


def kinds_of(dataset: str) -> tuple:
    """The kinds of rollup a data file of ``dataset`` has."""
    return tuple(kind for kind in KINDS if dataset in kind.datasets)


def view_names(dataset: str, kind: Kind = STATS) -> tuple[str, str]:
    """The analysis's views of a dataset's ``kind`` rollups (analysis/dataset.py): (its files
    without a usable one, read raw; the rows of the others' rollups)."""
    base = dataset + kind.suffix.replace(".", "_")
    return f"{base}_unrolled", f"{base}_rollups"


def path_of(data_file, kind: Kind = STATS) -> Path:
    """The ``kind`` rollup of ``<table>/<dataset>/date=D/<name>``:
    ``<table>/rollups/<dataset><kind.suffix>/date=D/<name>``."""
    data_file = Path(data_file)
    day, dataset_dir = data_file.parent, data_file.parent.parent
    return dataset_dir.parent / ROLLUPS_DIR / (dataset_dir.name + kind.suffix) / day.name / data_file.name


def _stamped(rollup, rows: int, kind: Kind):
    """A rollup's rows with the footer metadata naming its kind's version and the data file's row count."""
    return rollup.replace_schema_metadata({VERSION_KEY: kind.version.encode(), ROWS_KEY: str(rows).encode()})


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


def compute(table, dataset: str, kinds=None) -> dict:
    """The rollups of ``table`` (Arrow, rows of ``dataset``): kind -> its rows (``kinds``: those
    only; all of the dataset's by default)."""
    con = _duckdb()
    try:
        con.register("data_rows", table)
        return {kind: _stamped(kind.of_rows(con, dataset, "data_rows").cast(kind.schema()), table.num_rows, kind)
                for kind in (kinds or kinds_of(dataset))}
    finally:
        con.close()


def of_merge(inputs, dataset: str, merged_file) -> dict:
    """The rollups of ``merged_file``, the rows of data files ``inputs`` merged, kind -> its rows:
    the sum of the inputs' rollups when each has a usable one (they add up: a few rows per
    file, however many rows the files hold), else that of the merged file's rows, which DuckDB
    reads from the file."""
    import duckdb
    import pyarrow.parquet as pq
    rows = {path: pq.read_metadata(path).num_rows for path in inputs}
    total = pq.read_metadata(merged_file).num_rows
    con = _duckdb()
    out = {}
    try:
        for kind in kinds_of(dataset):
            rolled, _ = usable(inputs, rows, kind)
            if len(rolled) == len(inputs) and sum(rows.values()) == total:
                try:
                    files = ", ".join(aggregates.sql_text(path) for path in rolled.values())
                    out[kind] = _stamped(kind.summed(con, f"read_parquet([{files}])").cast(kind.schema()), total, kind)
                    continue
                except duckdb.Error:     # a rollup damaged past its footer: the rows decide
                    pass
            relation = f"read_parquet({aggregates.sql_text(merged_file)})"
            out[kind] = _stamped(kind.of_rows(con, dataset, relation).cast(kind.schema()), total, kind)
        return out
    finally:
        con.close()


def write(rollups: dict, data_file) -> None:
    """``rollups`` (kind -> rows: ``compute``, ``of_merge``), those of the rows ``data_file`` holds
    (or will once renamed into place), each written atomically next to the others of its day."""
    for kind, rows in rollups.items():
        final = path_of(data_file, kind)
        os.replace(layout.write_hidden(rows, final), final)


def remove(data_file) -> None:
    """Every kind of rollup of ``data_file``."""
    for kind in KINDS:
        path_of(data_file, kind).unlink(missing_ok=True)


def remove_orphans(day_dir) -> None:
    """The rollups of a data day whose data file is gone, and half-written ones, removed
    (after a writer was killed mid-compaction)."""
    for kind in KINDS:
        rollups = path_of(Path(day_dir) / "any", kind).parent
        for path in layout.part_files(rollups):
            if not (Path(day_dir) / path.name).exists():
                path.unlink(missing_ok=True)
        for stale in rollups.glob(".*.tmp"):
            stale.unlink(missing_ok=True)


def usable(data_files, rows: dict, kind: Kind = STATS) -> tuple[dict, list]:
    """(data file -> its ``kind`` rollup, for those of ``data_files`` whose rollup can stand for
    them: there, its footer readable, of the kind's version, of the data file's row count
    (``rows``: file -> its footer's row count) and of the kind's columns; the data files whose
    rollup is of another version: stale, as a release that changes a definition leaves them, for
    ``glidein-tracing table --rollups`` to rewrite). Any other file is read raw."""
    import pyarrow.parquet as pq
    expected, out, stale = kind.schema(), {}, []
    for data_file in data_files:
        path = path_of(data_file, kind)
        try:
            metadata = pq.read_metadata(path)
            columns = metadata.schema.to_arrow_schema()
        except (OSError, ValueError):       # absent, or no Parquet file
            continue
        meta = metadata.metadata or {}
        if meta.get(VERSION_KEY) != kind.version.encode():
            stale.append(data_file)
        elif meta.get(ROWS_KEY) == str(rows[data_file]).encode() and columns.equals(expected, check_metadata=False):
            out[data_file] = path
    return out, stale
