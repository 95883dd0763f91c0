"""Where the glidein table's files are: ``<table>/<dataset>/date=YYYY-MM-DD/part-<token>.parquet``
(hive partitions by the UTC day a glidein ended), written under one lock per table so that
writers on one host never interleave."""

from __future__ import annotations

import datetime as dt
import fcntl
import os
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from .schema import PARTITION_COLUMN

PART_PREFIX, PART_SUFFIX = "part-", ".parquet"
COMPACTED_LOG = "_compacted.log"   # per day dir: "<output> <input> <input>..." per compaction
LOCK_NAME = ".lock"
COMPACTING_MARK = "_compacting"    # in the table dir: the day a compaction is under way in
QUARANTINE = "quarantine"          # in the table dir: damaged files compaction moved aside


def day_of(ended_at_us: int | None) -> str:
    """The partition of a row: the UTC day of its glidein's end (1970-01-01 when unknown, or
    outside the calendar: a forged time in traces read back must not stop a backfill)."""
    try:
        return _day_name(int((ended_at_us or 0) // 86_400_000_000))
    except (OverflowError, ValueError, TypeError):     # inf, NaN
        return "1970-01-01"


@lru_cache(maxsize=64)
def _day_name(day: int) -> str:
    """A day number's name, made once per day rather than once per row."""
    try:
        return (dt.date(1970, 1, 1) + dt.timedelta(days=day)).isoformat()
    except (OverflowError, ValueError):
        return "1970-01-01"


def day_dir(table: Path, dataset: str, day: str) -> Path:
    return Path(table) / dataset / f"{PARTITION_COLUMN}={day}"


def part_path(table: Path, dataset: str, day: str, token: str) -> Path:
    return day_dir(table, dataset, day) / f"{PART_PREFIX}{token}{PART_SUFFIX}"


def tmp_path(final: Path) -> Path:
    """Where a file is written before its rename: hidden and not ``*.parquet``, so no reader's
    glob ever sees a half-written file."""
    return final.with_name(f".{final.name}.tmp")


def write_hidden(table, final: Path, schema=None) -> Path:
    """``table`` (Arrow; or, with its ``schema``, Arrow tables one after the other, each written
    as it comes) as Parquet under ``final``'s hidden name, synced: renamed to ``final`` it
    appears whole. Returns the hidden name."""
    import pyarrow.parquet as pq
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path(final)
    if schema is None:
        pq.write_table(table, tmp)
    else:
        with pq.ParquetWriter(tmp, schema) as out:
            for part in table:
                out.write_table(part)
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    return tmp


def quarantine_dir(table: Path) -> Path:
    return Path(table) / QUARANTINE


def quarantined_files(table: Path) -> list[Path]:
    """The damaged files compaction moved aside (``writer.quarantine``)."""
    return sorted(p for p in quarantine_dir(table).rglob("*") if p.is_file())


def part_files(directory: Path) -> list[Path]:
    return sorted(p for p in Path(directory).glob(f"{PART_PREFIX}*{PART_SUFFIX}") if p.is_file())


def day_dirs(table: Path, dataset: str) -> list[Path]:
    return sorted(p for p in (Path(table) / dataset).glob(f"{PARTITION_COLUMN}=*") if p.is_dir())


def day_of_file(path: Path) -> str:
    """The day partition (``YYYY-MM-DD``) a data file of the table is in: the one reader of
    the ``date=`` folder names ``day_dir`` writes."""
    return Path(path).parent.name.partition("=")[2]


@contextmanager
def locked(table: Path):
    """The table's write lock (flock: released when the holder dies, so a killed writer never
    leaves it held)."""
    Path(table).mkdir(parents=True, exist_ok=True)
    with open(Path(table) / LOCK_NAME, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
