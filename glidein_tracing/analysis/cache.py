"""A compact cache beside the store: each store file's TimelineTable, so that analysing the
store again reads only the files that changed.

``<store>/.analysis-cache/<file name>.npz`` holds the table the per-file reader
(``sources._file_table``) built from ``<store>/<file name>``, with what reading counted
(``ReadReport``), keyed by the file's name, size and modification time (taken *before* the
file was read, so a file that grew while it was read is read again next time), the
``max_pending`` it was grouped with and the cache format. A store file that changed (the
exporter appends to the newest file) no longer matches and is read again; entries of files
that are gone are removed. Nothing else in the store is touched.

Arrays are stored with numpy (no pickles: loading never runs code); names, trace ids and
counts as JSON inside the same file. Writes go to a temporary file renamed into place, so a
concurrent or interrupted run leaves either the old entry or the new one. A store that is not
writable just goes uncached.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

from .timeline import TimelineTable

CACHE_DIR = ".analysis-cache"
FORMAT = 2   # 2: failure columns (domain, error type, message; job domains)


def cache_dir(store) -> Path:
    return Path(store) / CACHE_DIR


def file_key(path, max_pending: int) -> dict:
    stat = Path(path).stat()
    return {"format": FORMAT, "name": Path(path).name, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
            "max_pending": max_pending}


def _entry(store, path) -> Path:
    return cache_dir(store) / (Path(path).name + ".npz")


def load(store, path, key: dict):
    """``(table, report counts)`` cached for this file with this key, or None."""
    entry = _entry(store, path)
    try:
        with np.load(entry, allow_pickle=False) as data:
            meta = json.loads(data["meta"].tobytes().decode("utf-8"))
            if meta.get("key") != key:
                return None
            part = {prefix: {name[len(prefix) + 1:]: data[name] for name in data.files
                             if name.startswith(prefix + ":")} for prefix in ("g", "jobs", "vals")}
        table = TimelineTable(part["g"], part["jobs"], part["vals"], meta["names"], meta["trace_ids"])
        if len(table.trace_ids) != len(table):
            return None
        return table, dict(meta["report"])
    except Exception:  # noqa: BLE001 - a missing, damaged or foreign entry is a miss
        return None


def save(store, path, key: dict, table: TimelineTable, report: dict) -> bool:
    """Write the entry; False when the cache directory cannot be written."""
    directory = cache_dir(store)
    meta = {"key": key, "names": table.names, "trace_ids": list(table.trace_ids or ()), "report": report}
    arrays = {f"{prefix}:{name}": column for prefix, part in (("g", table.g), ("jobs", table.jobs),
                                                                ("vals", table.vals))
              for name, column in part.items()}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    try:
        directory.mkdir(exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".npz")
        try:
            with os.fdopen(handle, "wb") as out:
                np.savez(out, **arrays)
            os.replace(temporary, _entry(store, path))
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError:
        return False
    return True


def prune(store, keep_names) -> int:
    """Remove entries (and stale temporary files) of store files that are gone."""
    directory = cache_dir(store)
    if not directory.is_dir():
        return 0
    keep = {name + ".npz" for name in keep_names}
    removed = 0
    for entry in directory.iterdir():
        if entry.name not in keep and (entry.suffix == ".npz"):
            try:
                entry.unlink()
                removed += 1
            except OSError:
                pass
    return removed
