"""The one writer of the glidein table's Parquet files (pyarrow): rows -> one file per day and
dataset, written to a hidden name and renamed (a reader never sees half a file), and a day's
files merged level by level when one level has too many (compaction, crash-safe through the
day's ``_compacted.log``), each merged file with its rollups (rollup.py: the statistics'
aggregate of its rows, a glidein file's failed groups). A file a merge cannot read is moved aside once, into the table's
``quarantine/`` folder, and the merge finishes without it. Callers hold ``layout.locked``."""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path

from . import layout, rollup
from .schema import DATASETS, GLIDEINS_DATASET, JOBS_DATASET, SCHEMA_VERSION, arrow_type

log = logging.getLogger(__name__)

VERSION_KEY = b"glidein_tracing.schema_version"
#: a day's files of passes (and, in turn, of merges) beyond this are merged into one
MAX_FILES_PER_DAY = 8


_SCHEMAS: dict = {}


def arrow_schema(dataset: str):
    """The dataset's Arrow schema, the schema version in its metadata."""
    if dataset not in _SCHEMAS:
        import pyarrow as pa
        _SCHEMAS[dataset] = pa.schema([(c.name, arrow_type(c.sql_type)) for c in DATASETS[dataset]],
                                      metadata={VERSION_KEY: str(SCHEMA_VERSION).encode()})
    return _SCHEMAS[dataset]


def new_token() -> str:
    """A pass's file token: ``p`` and 32 hex digits, so that a pass file (``part-p...``) is
    never taken for a merged one (``part-c...``)."""
    return "p" + uuid.uuid4().hex


def to_table(dataset: str, rows: list):
    """Rows as an Arrow table: rows are dicts of schema columns (a missing one is NULL) or
    tuples of every column in the schema's order (the forwarder's sink), converted by Arrow
    in one call as a struct array, or already an Arrow table (the backfill's workers make
    theirs). A value of the wrong type (a forged attribute: text where a number belongs)
    becomes NULL, never a failed write (the column-by-column path)."""
    import pyarrow as pa
    if isinstance(rows, pa.Table):
        return rows
    schema = arrow_schema(dataset)
    if rows and isinstance(rows[0], dict):
        rows = [tuple(map(row.get, schema.names)) for row in rows]
    try:
        table = pa.Table.from_struct_array(pa.array(rows, type=_struct(dataset)))
        return table.replace_schema_metadata(schema.metadata)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        pass
    columns = list(zip(*rows)) or [()] * len(schema)
    arrays = []
    for field, values in zip(schema, columns):
        try:
            arrays.append(pa.array(values, type=field.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            arrays.append(pa.array([_coerce(v, field.type) for v in values], type=field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _struct(dataset: str):
    import pyarrow as pa
    return pa.struct(list(arrow_schema(dataset)))


def _coerce(value, arrow_type):
    import pyarrow as pa
    try:
        return pa.scalar(value, type=arrow_type).as_py()
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
        return None


def write_file(table, final: Path):
    """``table`` (Arrow) as ``final``, atomically: written and synced under a hidden name, then
    renamed."""
    os.replace(layout.write_hidden(table, final), final)


def write_days(table_dir: Path, dataset: str, rows_by_day: dict, token: str) -> list[Path]:
    """Each day's rows as one file named by ``token``; a file already written (also one a
    compaction merged since) is kept: its rows are there. Returns the days' files."""
    written = []
    for day, rows in rows_by_day.items():
        final = layout.part_path(table_dir, dataset, day, token)
        if rows and not is_written(final):
            write_file(to_table(dataset, rows), final)
        written.append(final)
    return written


def append(table_dir: Path, glideins_by_day: dict, jobs_by_day: dict, token: str, quarantined=None):
    """A batch of glidein rows and their jobs' rows, by day, as the files named ``token``
    (those already written are kept), then each day's files kept few (``compact``; the
    damaged files it moved aside are added to ``quarantined``)."""
    write_days(table_dir, GLIDEINS_DATASET, glideins_by_day, token)
    write_days(table_dir, JOBS_DATASET, jobs_by_day, token)
    for dataset in (GLIDEINS_DATASET, JOBS_DATASET):
        for day in glideins_by_day:
            compact(layout.day_dir(table_dir, dataset, day), dataset, quarantined=quarantined)


def is_written(final: Path) -> bool:
    """The file is there, or a compaction merged it (its day's log names it as an input)."""
    if final.exists():
        return True
    log = final.parent / layout.COMPACTED_LOG
    if not log.exists():
        return False
    name = final.name
    return any(name in line.split()[1:] for line in log.read_text().splitlines())


def level_of(data_file: Path) -> int:
    """A data file's compaction level: 0 for a pass's file (``part-p<token>``), L for a merge of
    level L - 1 files (``part-c<L>-<token>``)."""
    name = data_file.name[len(layout.PART_PREFIX):]
    level = name[1:].partition("-")[0]
    return int(level) if name.startswith("c") and level.isdigit() else 0


def compact(day_dir: Path, dataset: str, max_files: int = MAX_FILES_PER_DAY, quarantined=None) -> bool:
    """Keep a day's files few without rewriting the day at every pass, as a log-structured
    merge: when more than ``max_files`` files of one level are there (a pass's files are level
    0), they are merged into one file of the next level, which may in turn make that level
    merge. So each row is rewritten once per level, a level holds at most ``max_files`` files,
    and a day of P passes has about log9(P) levels (3 for 729 passes). The log line naming the
    output and its inputs is written before the output appears, so a crash at any point is
    finished by ``finish_compactions``. An input that cannot be read is moved to quarantine
    (``quarantine``) and added to ``quarantined``; the merge is done without it."""
    levels: dict = {}
    for path in layout.part_files(day_dir):
        levels.setdefault(level_of(path), []).append(path)
    merged, level = False, 0
    while level <= max(levels, default=-1):
        if len(levels.get(level, ())) > max_files:
            output = _merge(day_dir, dataset, levels.pop(level), level + 1, quarantined)
            if output is not None:
                levels.setdefault(level + 1, []).append(output)
            merged = True
        level += 1
    return merged


#: rows of small inputs a merge gathers before writing them (a row group of its output)
MERGE_ROWS = 131_072


class DamagedInput(Exception):
    """A merge's input that cannot be read (cut short, overwritten, not Parquet)."""

    def __init__(self, path: Path, why: str):
        super().__init__(f"{path}: {why}")
        self.path, self.why = path, why


def _merged_rows(inputs: list, schema):
    """The inputs' rows in order, one input read at a time, small ones gathered up to
    MERGE_ROWS rows: a merge holds one input, about a ninth of its output, never the whole
    day (older files read with the schema's columns, those they lack NULL). DamagedInput
    names an input that cannot be read."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    held, count = [], 0
    for path in inputs:
        try:
            held.append(pq.read_table(path, schema=schema))
        except (OSError, ValueError) as exc:     # ArrowInvalid is a ValueError
            raise DamagedInput(path, str(exc)) from exc
        count += held[-1].num_rows
        if count >= MERGE_ROWS:
            yield pa.concat_tables(held)
            held, count = [], 0
    if held:
        yield pa.concat_tables(held)


def _merge(day_dir: Path, dataset: str, inputs: list, level: int, quarantined=None) -> Path | None:
    """The inputs as one merged file of ``level`` with its rollups (rollup.py), written before
    the file appears, so a merged file is never without it; the inputs and their rollups then
    go. An input that cannot be read is quarantined and the merge written again without it
    (its hidden output removed). Returns the merged file (None when no input was readable)."""
    schema = arrow_schema(dataset)
    final = day_dir / f"{layout.PART_PREFIX}c{level}-{uuid.uuid4().hex}{layout.PART_SUFFIX}"
    inputs = list(inputs)
    while True:
        try:
            tmp = layout.write_hidden(_merged_rows(inputs, schema), final, schema)
            break
        except DamagedInput as damaged:
            layout.tmp_path(final).unlink(missing_ok=True)
            moved = quarantine(day_dir, damaged.path, damaged.why)
            if quarantined is not None:
                quarantined.append(moved)
            inputs.remove(damaged.path)
            if not inputs:
                return None
    marker = _marker(day_dir)
    marker.write_text(str(day_dir.relative_to(marker.parent)))
    rollup.write(rollup.of_merge(inputs, dataset, tmp), final)
    _append_log(day_dir, [final.name] + [p.name for p in inputs])
    os.replace(tmp, final)
    for path in inputs:
        rollup.remove(path)
        path.unlink(missing_ok=True)
    marker.unlink()
    return final


def quarantine(day_dir: Path, path: Path, why: str) -> Path:
    """Move a damaged data file out of the table, to ``<table>/quarantine/<dataset>/<day>/``
    (readers and merges never meet it again; an operator may inspect or delete it); its
    rollup goes. Returns where it went."""
    table = day_dir.parent.parent
    target = layout.quarantine_dir(table) / day_dir.parent.name / day_dir.name / path.name
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(path, target)
    rollup.remove(path)
    log.warning("glidein table: %s cannot be read (%s): moved to %s; its rows are not in the table",
                path, why, target)
    return target


def _marker(day_dir: Path) -> Path:
    """``<table>/_compacting``: names the day being compacted, so that finishing a compaction
    a killed writer left looks at that one day, not at every day of the table."""
    return day_dir.parent.parent / layout.COMPACTING_MARK


def _append_log(day_dir: Path, names: list[str]):
    with open(day_dir / layout.COMPACTED_LOG, "a") as handle:
        handle.write(" ".join(names) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def finish_compactions(table_dir: Path):
    """After a crash: the compaction a killed writer left is completed (its output renamed
    into place when its log line was written, its inputs and their rollups removed; else its
    hidden output and its rollup removed)."""
    marker = Path(table_dir) / layout.COMPACTING_MARK
    if not marker.exists():
        return
    day_dir = Path(table_dir) / marker.read_text().strip()
    log = day_dir / layout.COMPACTED_LOG
    for line in (log.read_text().splitlines() if log.exists() else ()):
        output, *inputs = line.split()
        final = day_dir / output
        if not final.exists() and layout.tmp_path(final).exists():
            os.replace(layout.tmp_path(final), final)
        if final.exists():
            for name in inputs:
                rollup.remove(day_dir / name)
                (day_dir / name).unlink(missing_ok=True)
    for stale in day_dir.glob(".*.tmp"):
        stale.unlink(missing_ok=True)
    rollup.remove_orphans(day_dir)
    marker.unlink()
