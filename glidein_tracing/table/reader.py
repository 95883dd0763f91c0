"""The one reader of the glidein table: which files of a dataset can be read, and their rows.
A damaged file is named and left out (the rest is read); a file of a newer schema version is
refused with a message saying so; an older one is read, the columns it lacks NULL. The
analysis hands ``usable_files`` to DuckDB; tests and the backfill read rows here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..core.inputs import NotAFileError, check_input
from . import layout
from .schema import PARTITION_COLUMN, SCHEMA_VERSION
from .writer import VERSION_KEY, arrow_schema


class TableError(Exception):
    """The table cannot be read as a whole (a file of a newer schema version)."""


@dataclass
class Scan:
    files: list = field(default_factory=list)       # usable files
    versions: dict = field(default_factory=dict)    # file -> schema version
    skipped: list = field(default_factory=list)     # (file, why it was left out)
    schemas: dict = field(default_factory=dict)     # file -> its footer's Parquet schema
    rows: dict = field(default_factory=dict)        # file -> its footer's row count

    @property
    def one_schema(self) -> bool:
        """Whether every usable file has the same columns of the same types (a reader then
        needs no file's footer but the first to know them all)."""
        first = next(iter(self.schemas.values()), None)
        return all(schema.equals(first) for schema in self.schemas.values())

    @property
    def problems(self) -> list:
        """One line per file left out: "<file>: why"."""
        return [f"{path}: {why}" for path, why in self.skipped]


def usable_files(table_dir, dataset: str) -> Scan:
    """The dataset's files whose footer reads, with their schema version. A file whose footer
    is damaged (cut short, overwritten) or that is no table file is named in ``problems`` and
    left out; a file of a newer schema version than this reader raises TableError."""
    return check_files(path for day_dir in layout.day_dirs(Path(table_dir), dataset)
                       for path in layout.part_files(day_dir))


def check_files(paths) -> Scan:
    """``usable_files``' checks on files named by the caller (the analysis' globs of days)."""
    import pyarrow.parquet as pq
    scan = Scan()
    for path in map(Path, paths):
        try:
            check_input(path)            # a FIFO matched by a glob would block the read
            metadata = pq.read_metadata(path)
        except NotAFileError as exc:
            scan.skipped.append((path, f"{exc.what}, not a file, skipped"))
            continue
        except (OSError, ValueError) as exc:
            scan.skipped.append((path, f"damaged Parquet file, skipped ({exc})"))
            continue
        version = _version(metadata)
        if version is None:
            scan.skipped.append((path, "not a glidein table file (no schema version), skipped"))
            continue
        if version > SCHEMA_VERSION:
            raise TableError(f"{path}: glidein table schema version {version}, newer than this "
                             f"glidein_tracing reads ({SCHEMA_VERSION}): upgrade glidein_tracing")
        scan.files.append(path)
        scan.versions[path] = version
        scan.schemas[path] = metadata.schema
        scan.rows[path] = metadata.num_rows
    return scan


def _version(metadata) -> int | None:
    raw = (metadata.metadata or {}).get(VERSION_KEY)
    try:
        return int(raw)
    except (TypeError, ValueError):
        return None


def read_rows(table_dir, dataset: str, columns=None):
    """(Arrow table of every usable file's rows in this schema, with ``date``, Scan). A file
    that fails while its data is read is named and left out like a damaged footer."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    scan = usable_files(table_dir, dataset)
    schema = arrow_schema(dataset)
    wanted = list(columns) if columns else schema.names
    parts = []
    for path in list(scan.files):
        try:
            part = pq.read_table(path, partitioning=None)  # pyarrow 21 (3.9) adds date= of the path
        except (OSError, ValueError) as exc:
            scan.skipped.append((path, f"damaged Parquet file, skipped ({exc})"))
            scan.files.remove(path)
            continue
        arrays = [part.column(name).cast(schema.field(name).type) if name in part.column_names
                  else pa.nulls(part.num_rows, schema.field(name).type) for name in wanted]
        day = layout.day_of_file(path)
        arrays.append(pa.array([day] * part.num_rows, pa.string()))
        parts.append(pa.Table.from_arrays(arrays, names=wanted + [PARTITION_COLUMN]))
    if not parts:
        empty = [pa.array([], schema.field(n).type) for n in wanted] + [pa.array([], pa.string())]
        return pa.Table.from_arrays(empty, names=wanted + [PARTITION_COLUMN]), scan
    return pa.concat_tables(parts), scan


def trace_ids(table_dir, days=None) -> set:
    """Trace ids of the glideins the table holds (of ``days`` only, when given)."""
    import pyarrow.parquet as pq
    out = set()
    for path in usable_files(table_dir, "glideins").files:
        if days is None or layout.day_of_file(path) in days:
            try:
                out.update(pq.read_table(path, columns=["trace_id"]).column(0).to_pylist())
            except (OSError, ValueError):
                continue
    return out
