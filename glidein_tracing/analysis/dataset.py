"""The glidein table as DuckDB sees it: views ``glideins`` and ``jobs`` over Parquet files.

``open_dataset(where)`` takes the table's directory (the one holding ``glideins/`` and
``jobs/``, each hive-partitioned ``date=YYYY-MM-DD/``), a dataset directory, or a glob of
glidein files; several Factories' tables are several paths. Every file's footer is read
first: a damaged file is named in ``skipped`` and left out, the rest is analysed. Files of a
newer schema version than this reader knows, or without the table's columns, are refused
with a clear message (``DatasetError``); older files lacking columns added since are read
with those columns NULL (``union_by_name``). A day with no rows, or no files, is simply empty.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from pathlib import Path

from ..table.schema import GLIDEINS, GLIDEINS_DATASET, JOBS, JOBS_DATASET, SCHEMA_VERSION

# what the analysis reads; a file lacking one of these is no glidein table this reader understands
REQUIRED = ("schema_version", "trace_id", "entry", "site", "outcome", "node_start_at", "setup_s")
MEMORY_LIMIT = "1GB"       # DuckDB's own buffers; beyond it, it spills to its temp directory


class DatasetError(Exception):
    """The dataset cannot be analysed (nothing readable, or a schema this reader refuses)."""


@dataclass
class Dataset:
    con: object                                 # duckdb connection with views glideins, jobs
    glidein_files: list
    job_files: list
    skipped: list = field(default_factory=list)  # (file, reason)
    versions: list = field(default_factory=list)

    @property
    def has_jobs(self) -> bool:
        return bool(self.job_files)

    def days(self) -> list:
        """The date partitions present (for per-day passes), or [None] when unpartitioned."""
        rows = self.con.execute("SELECT DISTINCT date FROM glideins ORDER BY 1").fetchall() \
            if "date" in self.columns("glideins") else []
        return [r[0] for r in rows] or [None]

    def columns(self, view: str) -> set:
        return {r[0] for r in self.con.execute(f"DESCRIBE {view}").fetchall()}


def _expand(where, dataset: str) -> list[str]:
    """The Parquet files of one dataset at ``where``: the table directory's ``glideins/`` or
    ``jobs/``, a dataset directory itself, or (glideins only) a glob."""
    path = Path(where)
    if path.is_dir():
        if (path / dataset).is_dir():
            base = path / dataset
        elif path.name == GLIDEINS_DATASET and dataset == JOBS_DATASET:
            base = path.parent / JOBS_DATASET          # the glideins dataset given: its sibling
        elif dataset == GLIDEINS_DATASET:
            base = path
        else:
            return []
        return sorted(glob.glob(str(base / "**" / "*.parquet"), recursive=True))
    return sorted(glob.glob(str(where), recursive=True)) if dataset == GLIDEINS_DATASET else []


def _check(files: list[str], skipped: list, full: bool = False) -> list[str]:
    """The files whose footer reads (and, ``full``, whose every value decodes)."""
    import duckdb
    import pyarrow.parquet as pq
    good = []
    for name in files:
        try:
            columns = set(pq.read_schema(name).names)
        except Exception as exc:   # noqa: BLE001 - any unreadable footer: skip and say which
            skipped.append((name, f"damaged Parquet file: {str(exc).splitlines()[0][:200]}"))
            continue
        if "schema_version" not in columns:
            raise DatasetError(f"{name} is not a glidein table file (no schema_version column)")
        if full:
            try:
                duckdb.execute("SELECT max(COLUMNS(*)) FROM read_parquet(?)", [name]).fetchall()
            except duckdb.Error as exc:
                skipped.append((name, f"damaged Parquet file: {str(exc).splitlines()[0][:200]}"))
                continue
        good.append(name)
    return good


def _view(con, view: str, files: list[str], columns, where: str) -> None:
    if files:
        listing = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
        con.execute(f"CREATE VIEW {view} AS SELECT * FROM read_parquet([{listing}], hive_partitioning=true, "
                    f"union_by_name=true) {where}")
    else:   # no files: an empty view with the table's columns
        cols = ", ".join(f"CAST(NULL AS {c.sql_type}) AS {c.name}" for c in columns)
        con.execute(f"CREATE VIEW {view} AS SELECT {cols}, CAST(NULL AS DATE) AS date WHERE false")


def open_dataset(*paths, jobs=(), entries=None, sites=None, memory_limit: str = MEMORY_LIMIT,
                 verify: bool = False) -> Dataset:
    """Views over the readable files of ``paths`` (see the module doc); ``jobs``: globs of job
    files (for ``paths`` that are globs of glidein files); ``entries``/``sites`` keep only those
    (both views). ``verify``: decode every value of every file first (slow; for a dataset
    whose footers read but whose data does not, to find and skip the damaged files)."""
    import duckdb
    skipped: list = []
    glidein_files = _check([f for p in paths for f in _expand(p, GLIDEINS_DATASET)], skipped, verify)
    job_files = _check([f for p in paths for f in _expand(p, JOBS_DATASET)]
                       + [f for pattern in jobs for f in sorted(glob.glob(str(pattern), recursive=True))], skipped,
                       verify)
    if not glidein_files and not any(Path(p).is_dir() for p in paths):
        raise DatasetError(f"no glidein table files at {', '.join(map(str, paths))}")
    con = duckdb.connect()
    try:
        con.execute("SET memory_limit=?", [memory_limit])
    except duckdb.Error as exc:
        raise DatasetError(f"not a memory limit: {memory_limit!r} (e.g. 1GB, 512MB)") from exc
    con.execute("SET preserve_insertion_order=false")
    con.execute("SET enable_progress_bar=false")
    conditions = []
    for column, values in (("entry", entries), ("site", sites)):
        if values:
            conditions.append(f"{column} IN (" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + ")")
    where = ("WHERE " + " AND ".join(conditions)) if conditions else ""
    _view(con, "glideins", glidein_files, GLIDEINS, where)
    _view(con, "jobs", job_files, JOBS, where)
    data = Dataset(con, glidein_files, job_files, skipped)
    missing = [c for c in REQUIRED if c not in data.columns("glideins")]
    if missing:
        raise DatasetError(f"the glidein files lack {', '.join(missing)}: not a glidein table this version reads")
    data.versions = [r[0] for r in con.execute("SELECT DISTINCT schema_version FROM glideins ORDER BY 1").fetchall()]
    newer = [v for v in data.versions if v is not None and v > SCHEMA_VERSION]
    if newer:
        raise DatasetError(f"the glidein table has schema version {max(newer)}; this glidein_tracing reads up to "
                           f"{SCHEMA_VERSION}: upgrade glidein_tracing to analyse it")
    return data

