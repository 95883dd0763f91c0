"""The embedded default store: OTLP JSON Lines files, indexed in SQLite.

Each line of ``traces-NNNNNN.jsonl`` is one OTLP ExportTraceServiceRequest in JSON, the format
the OTel Collector's file exporter writes and its ``otlpjsonfile`` receiver reads back, so a
store can be replayed into any collector. The files are the data; ``index.sqlite`` beside them
is only an index, rebuilt from the files whenever it is missing, stale or damaged:

- ``traces``: per trace id, the span ids stored (packed 8-byte ids: dedupe), its span count
  and its root's name, start and outcome (``show --list``);
- ``lines``: per trace id, the file, offset and length of every line holding its spans
  (``show`` reads those lines only);
- ``files``: how far each file is indexed, so lines appended by a writer that died before
  indexing them are indexed by the next one to open the store;
- ``owners``: per HTCondor job Owner (``job.owner``), the traces holding spans of their jobs,
  with when those spans began and ended (``serve``'s "my jobs": an index range per user).

Writers and readers take the directory's lock (``.lock``) to bring the index up to date, so
every lookup costs the same in a store of a million glideins as in an empty one. A line cut
short (a writer killed mid-write) is counted and left as it is; the next line starts on a
fresh line.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import sqlite3
import time
import datetime
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

from ..core import conventions as c, ids
from ..core.errors import UserError
from ..core.nospace import NoSpaceError, is_no_space
from ..core.progress import bar
from .otlp_json import encode_request, flatten_request, flatten_span, request_from_span_dicts
from .result import DeliveringExporter, Delivery

FILE_PREFIX = "traces-"
FILE_SUFFIX = ".jsonl"
INDEX_FILE = "index.sqlite"
ROTATE_BYTES = 64 * 1024 * 1024
SCHEMA_VERSION = 3
DAY_FILES = 10000     # a file's number is YYYYMMDD * DAY_FILES + its rank that day: a file holds one day
_SCHEMA = """
CREATE TABLE IF NOT EXISTS traces (trace_id BLOB PRIMARY KEY, span_ids BLOB NOT NULL,
    spans INTEGER NOT NULL, root_name TEXT, start_ns INTEGER, outcome TEXT) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS traces_start ON traces(start_ns);
CREATE TABLE IF NOT EXISTS lines (trace_id BLOB NOT NULL, file INTEGER NOT NULL,
    offset INTEGER NOT NULL, length INTEGER NOT NULL, PRIMARY KEY (trace_id, file, offset)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS lines_file ON lines(file);
CREATE TABLE IF NOT EXISTS files (file INTEGER PRIMARY KEY, indexed_bytes INTEGER NOT NULL,
    bad_lines INTEGER NOT NULL, cut_bytes INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS owners (owner TEXT NOT NULL, trace_id BLOB NOT NULL, first_ns INTEGER NOT NULL,
    last_ns INTEGER NOT NULL, PRIMARY KEY (owner, trace_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS owners_last ON owners(owner, last_ns);
"""


def default_store_dir() -> Path:
    """Where the store lives when no --store is given: the user's data dir."""
    env = os.environ.get("GLIDEIN_TRACING_STORE")
    if env:
        return Path(env)
    import platformdirs
    return Path(platformdirs.user_data_dir("glidein_tracing")) / "store"


def store_files(directory) -> list[Path]:
    """The store's data files, oldest first."""
    return sorted(p for p in Path(directory).glob(f"{FILE_PREFIX}*{FILE_SUFFIX}") if p.is_file())


def _file_number(path: Path) -> int:
    return int(path.name[len(FILE_PREFIX):-len(FILE_SUFFIX)])


def _today() -> int:
    """The UTC day now, as YYYYMMDD."""
    return int(time.strftime("%Y%m%d", time.gmtime()))


def _day_ordinal(day: int) -> int:
    """Days since year 1 of a YYYYMMDD day (0: not a day, e.g. a file of another layout)."""
    try:
        return datetime.date(day // 10000, day // 100 % 100, day % 100).toordinal()
    except ValueError:
        return 0


class StoreReadReport:
    """What a full read of the files met: lines, lines that are not JSON, spans."""

    def __init__(self):
        self.lines = 0
        self.bad_lines = 0
        self.spans = 0


def iter_store(directory, report: StoreReadReport | None = None):
    """Yield every span in the store's files as a plain dict (otlp_json.flatten_request):
    the whole store, in file order (copies included)."""
    report = report or StoreReadReport()
    for path in store_files(directory):
        with open(path, "rb") as handle:
            for raw in handle:
                report.lines += 1
                try:
                    request = json.loads(raw)
                except ValueError:
                    report.bad_lines += 1
                    continue
                for span in flatten_request(request):
                    report.spans += 1
                    yield span


class LinePiece(NamedTuple):
    """Whole lines of one store file, bytes ``start`` to ``end``: a share of a bulk read."""
    path: Path
    start: int
    end: int

    def lines(self) -> list[bytes]:
        with open(self.path, "rb") as handle:
            handle.seek(self.start)
            return handle.read(self.end - self.start).splitlines()


def line_pieces(directory, size: int) -> list[LinePiece]:
    """The store's files, oldest first, cut into pieces of about ``size`` bytes, each ending at
    a line's end: for a reader that shares the whole store among processes (the table's
    backfill)."""
    out = []
    for path in store_files(directory):
        total = path.stat().st_size
        with open(path, "rb") as handle:
            start = 0
            while start < total:
                handle.seek(min(total, start + size))
                handle.readline()
                end = min(total, handle.tell())
                out.append(LinePiece(path, start, end))
                start = end
    return out


def read_store(directory) -> dict:
    """All traces in a store: {trace_id: [span dicts]} (first copy of each span id kept)."""
    traces = defaultdict(dict)
    for span in iter_store(directory):
        traces[span["trace_id"]].setdefault(span["span_id"], span)
    return {trace: list(spans.values()) for trace, spans in traces.items()}


class StoreError(UserError):
    """A store that cannot be used (not a directory, not writable)."""


class Store:
    """One store directory: append requests, look traces up by id through the index.
    ``read_only``: for readers (`show`, `analyze --store`, the table's backfill), which never
    create or change a file: the directory must be a store already, and an index that is
    missing or behind the files is brought up to date in memory for this reader only.
    ``progress``: a bar (core/progress.py) while files are indexed."""

    def __init__(self, directory=None, rotate_bytes: int = ROTATE_BYTES, read_only: bool = False,
                 progress: bool = False):
        self.directory = Path(directory) if directory else default_store_dir()
        self.read_only = read_only
        self.progress = progress    # a bar of the bytes being indexed (a rebuild of a big store takes minutes)
        self.rotate_bytes = rotate_bytes
        self.rebuilds = 0          # times the index was rebuilt from the files
        self.indexed_in_memory = 0  # read-only: times the index on disk was behind the files
        if read_only:
            _check_is_store(self.directory)
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot use {self.directory} as a store: {exc}") from exc

    # -- the lock and the index ----------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self):
        """The directory's lock, with the index open and up to date with the files; for a
        reader, or a user who may read the store but not write it, _reading."""
        if self.read_only:
            with self._reading() as db:
                yield db
            return
        try:
            lock = open(self.directory / ".lock", "a")
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            with self._reading() as db:
                yield db
            return
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            db = self._open_index()
            try:
                try:
                    self._catch_up(db)
                except sqlite3.DatabaseError:
                    db.close()
                    db = self._rebuild_index()
                yield db
            finally:
                db.close()

    def _index_path(self) -> Path:
        return self.directory / INDEX_FILE

    @contextlib.contextmanager
    def _reading(self):
        """The index as its writers left it, read without writing a byte: under the lock
        taken shared (no writer is mid-batch), the file opened read-only. When it is missing,
        damaged, of another version or behind the files (a writer died before indexing), a
        copy in memory is brought up to date instead, for this reader only."""
        lock_file = self.directory / ".lock"
        with open(lock_file if lock_file.exists() else os.devnull, "rb") as lock:
            fcntl.flock(lock, fcntl.LOCK_SH)
            db = _open_read_only(self._index_path())
            try:
                if db is None or not self._matches_files(db):
                    db = self._index_in_memory(db)
                yield db
            finally:
                if db is not None:
                    db.close()

    def _matches_files(self, db: sqlite3.Connection) -> bool:
        """Whether the index covers exactly the files' whole lines as they are now."""
        known = {row[0]: (row[1], row[2]) for row in db.execute("SELECT file, indexed_bytes, cut_bytes FROM files")}
        files = {_file_number(p): p.stat().st_size for p in store_files(self.directory)}
        return known.keys() == files.keys() and all(
            indexed + cut == files[number] for number, (indexed, cut) in known.items())

    def _index_in_memory(self, on_disk: sqlite3.Connection | None) -> sqlite3.Connection:
        """A copy of the index in memory (an empty one when there is none to copy), caught up
        with the files, or rebuilt from them when it describes other files."""
        self.indexed_in_memory += 1
        db = sqlite3.connect(":memory:", isolation_level=None)
        if on_disk is not None:
            on_disk.backup(db)
            on_disk.close()
        else:
            db.executescript(_SCHEMA)
        try:
            self._catch_up(db)
        except sqlite3.DatabaseError:
            db.close()
            self.rebuilds += 1
            db = sqlite3.connect(":memory:", isolation_level=None)
            db.executescript(_SCHEMA)
            self._catch_up(db)
        return db

    def _open_index(self) -> sqlite3.Connection:
        """The index, created when missing; a damaged one is set aside and rebuilt."""
        try:
            db = self._connect()
            if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                raise sqlite3.DatabaseError("index of another version")
            return db
        except sqlite3.DatabaseError:
            with contextlib.suppress(NameError):
                db.close()
            return self._rebuild_index()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self._index_path(), timeout=60, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        if db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
            db.executescript(_SCHEMA)
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        return db

    def _rebuild_index(self) -> sqlite3.Connection:
        """A new index from the files (the old one, if any, is removed)."""
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(self._index_path()) + suffix)
        self.rebuilds += 1
        db = self._connect()
        self._catch_up(db)
        return db

    def _catch_up(self, db: sqlite3.Connection):
        """Index what the files hold beyond what the index knows. A file shorter than indexed,
        or gone, means the index describes other files: rebuild it."""
        known = {row[0]: row[1] for row in db.execute("SELECT file, indexed_bytes FROM files")}
        files = {_file_number(p): p for p in store_files(self.directory)}
        if any(number not in files or files[number].stat().st_size < size for number, size in known.items()):
            raise sqlite3.DatabaseError("the index does not match the files")
        todo = [(number, path, known.get(number, 0), path.stat().st_size) for number, path in sorted(files.items())]
        todo = [(number, path, start, size) for number, path, start, size in todo if size > start or number not in known]
        with bar(sum(size - start for _, _, start, size in todo), desc=f"indexing {self.directory}", unit="B",
                 unit_scale=True, enabled=self.progress and bool(todo)) as shown:
            for number, path, start, size in todo:
                self._index_file(db, number, path, start)
                shown.update(size - start)

    def _index_file(self, db: sqlite3.Connection, number: int, path: Path, start: int):
        """Index the whole lines of one file from byte ``start`` on."""
        bad, cut, offset = 0, 0, start
        with _transaction(db):
            with open(path, "rb") as handle:
                handle.seek(start)
                for raw in handle:
                    if not raw.endswith(b"\n"):      # cut short: left for a writer to close
                        cut = len(raw)
                        break
                    try:
                        request = json.loads(raw)
                        spans = list(flatten_request(request))
                    except (ValueError, TypeError, AttributeError):
                        bad += 1
                        spans = ()
                    self._add(db, number, offset, len(raw),
                              [(s["trace_id"], s["span_id"], s) for s in spans])
                    offset += len(raw)
            db.execute("INSERT INTO files (file, indexed_bytes, bad_lines, cut_bytes) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT (file) DO UPDATE SET indexed_bytes = excluded.indexed_bytes, "
                       "bad_lines = bad_lines + excluded.bad_lines, cut_bytes = excluded.cut_bytes",
                       (number, offset, bad, cut))

    @staticmethod
    def _add(db: sqlite3.Connection, number: int, offset: int, length: int, keyed_spans):
        """Index one line: ``keyed_spans`` = (trace id hex, span id hex, span dict or None)."""
        by_trace: dict = defaultdict(list)
        for trace_id, span_id, span in keyed_spans:
            by_trace[trace_id].append((span_id, span))
        for trace_hex, spans in by_trace.items():
            try:
                trace = bytes.fromhex(trace_hex)
                packed = b"".join(bytes.fromhex(span_id) for span_id, _ in spans)
            except ValueError:
                continue                        # not an OTLP id: nothing to find it by
            root = next((s for _, s in spans if s and s["attributes"].get(c.STAGE) == c.STAGE_GLIDEIN), None)
            # SQLite's || makes TEXT of BLOBs: cast back, or a trace's third line could not be
            # read as bytes (nor told apart from a span already held)
            db.execute("INSERT INTO traces (trace_id, span_ids, spans) VALUES (?, ?, ?) "
                       "ON CONFLICT (trace_id) DO UPDATE SET span_ids = CAST(span_ids || excluded.span_ids AS BLOB), "
                       "spans = spans + excluded.spans", (trace, packed, len(spans)))
            if root is not None:
                db.execute("UPDATE traces SET root_name = ?, start_ns = ?, outcome = ? WHERE trace_id = ?",
                           (root["name"], root["start_ns"], str(root["attributes"].get(c.GLIDEIN_OUTCOME, "")),
                            trace))
            for owner, first, last in _owned(s for _, s in spans):
                db.execute("INSERT INTO owners VALUES (?, ?, ?, ?) ON CONFLICT (owner, trace_id) DO UPDATE SET "
                           "first_ns = min(first_ns, excluded.first_ns), last_ns = max(last_ns, excluded.last_ns)",
                           (owner, trace, first, last))
            db.execute("INSERT OR IGNORE INTO lines VALUES (?, ?, ?, ?)", (trace, number, offset, length))

    # -- writing ---------------------------------------------------------------------------
    def append(self, spans) -> tuple[int, int]:
        """Store the SDK spans the store does not hold yet (by trace id and span id), as one
        line: (written, duplicates)."""
        spans = list(spans)
        with self._locked() as db:
            held: dict = {}
            fresh = []
            for span in spans:
                trace, span_id = span.context.trace_id.to_bytes(16, "big"), span.context.span_id.to_bytes(8, "big")
                if trace not in held:
                    # (as bytes: an index written before the cast above holds some as TEXT)
                    row = db.execute("SELECT CAST(span_ids AS BLOB) FROM traces WHERE trace_id = ?",
                                     (trace,)).fetchone()
                    packed = row[0] if row else b""
                    held[trace] = {packed[i:i + 8] for i in range(0, len(packed), 8)}
                if span_id in held[trace]:
                    continue
                held[trace].add(span_id)
                fresh.append(span)
            if fresh:
                line = json.dumps(encode_request(fresh), separators=(",", ":")).encode() + b"\n"
                keys = [(ids.trace_hex(s.context.trace_id), ids.span_hex(s.context.span_id),
                         _index_summary(s)) for s in fresh]
                self._write_lines(db, [(line, keys)])
            return len(fresh), len(spans) - len(fresh)

    def append_span_dicts(self, batches):
        """Store batches of plain span dicts (``flatten_request``'s shape), one line each,
        without dedupe: for tools that make spans themselves (the synthetic trace generator).
        One lock, one fsync and one index transaction for the lot."""
        lines = []
        for spans in batches:
            line = json.dumps(request_from_span_dicts(spans), separators=(",", ":")).encode() + b"\n"
            lines.append((line, [(s["trace_id"], s["span_id"], s) for s in spans]))
        if lines:
            with self._locked() as db:
                self._write_lines(db, lines)

    def _write_lines(self, db: sqlite3.Connection, lines):
        """Append (line, keys) pairs, rotating files, then index them in one transaction."""
        written = []                       # (file number, offset, line, keys)
        ends: dict = {}                    # file number -> (indexed bytes, a cut line closed)
        handle = None
        try:
            for line, keys in lines:
                if handle is None or handle.tell() >= self.rotate_bytes:
                    if handle is not None:
                        handle.flush()
                        os.fsync(handle.fileno())
                        handle.close()
                    path = self._current_file()
                    number = _file_number(path)
                    handle = open(path, "ab")
                    closed_cut = False
                    if handle.tell() and self._ends_cut(path, handle.tell()):
                        handle.write(b"\n")       # the cut line stays a (bad) line of its own
                        closed_cut = True
                offset = handle.tell()
                handle.write(line)
                written.append((number, offset, line, keys))
                ends[number] = (offset + len(line), closed_cut or ends.get(number, (0, False))[1])
            handle.flush()
            os.fsync(handle.fileno())
        finally:
            if handle is not None:
                handle.close()
        # lines written but not indexed (the index could not be written) are indexed by the
        # next writer or reader that finds the file longer than indexed
        with _transaction(db):
            for number, offset, line, keys in written:
                self._add(db, number, offset, len(line), keys)
            for number, (end, closed_cut) in ends.items():
                db.execute("INSERT INTO files (file, indexed_bytes, bad_lines, cut_bytes) VALUES (?, ?, ?, 0) "
                           "ON CONFLICT (file) DO UPDATE SET indexed_bytes = excluded.indexed_bytes, cut_bytes = 0, "
                           "bad_lines = bad_lines + excluded.bad_lines", (number, end, int(closed_cut)))

    @staticmethod
    def _ends_cut(path: Path, size: int) -> bool:
        with open(path, "rb") as handle:
            handle.seek(size - 1)
            return handle.read(1) != b"\n"

    def _current_file(self) -> Path:
        """Today's last file while it has room, else a new one: a file holds one UTC day's
        lines (a batch written across midnight stays whole), so days are dropped whole."""
        files = store_files(self.directory)
        today = _today()
        if not files:
            return _file_path(self.directory, today * DAY_FILES)
        last = _file_number(files[-1])
        if last // DAY_FILES == today and files[-1].stat().st_size < self.rotate_bytes:
            return files[-1]
        return _file_path(self.directory, max(last + 1, today * DAY_FILES))

    # -- retention -------------------------------------------------------------------------
    def prune(self, max_days: float | None = None, max_bytes: int | None = None, today: int | None = None) -> list:
        """Drop the oldest days whole, with their lines in the index: those more than
        ``max_days`` before ``today`` (YYYYMMDD, UTC), then more while the files take over
        ``max_bytes`` (the newest day is always kept). The days dropped, oldest first.

        A trace whose lines all go leaves the index; one with lines on a later day (its
        stages stored before and after midnight) keeps its entry, whose counts then include
        the spans dropped."""
        today = _today() if today is None else today
        with self._locked() as db:
            by_day: dict = defaultdict(list)
            sizes = {}
            for path in store_files(self.directory):
                by_day[_file_number(path) // DAY_FILES].append(path)
                sizes[path] = path.stat().st_size
            days = sorted(by_day)
            total = sum(sizes.values())
            drop = []
            for day in days[:-1]:
                too_old = max_days is not None and _day_ordinal(today) - _day_ordinal(day) >= max_days
                too_big = max_bytes is not None and total > max_bytes
                if not (too_old or too_big):
                    break
                drop.append(day)
                total -= sum(sizes[p] for p in by_day[day])
            paths = [p for day in drop for p in by_day[day]]
            if paths:
                numbers = [_file_number(p) for p in paths]
                marks = ",".join("?" * len(numbers))
                with _transaction(db):
                    traces = [row[0] for row in db.execute(
                        f"SELECT DISTINCT trace_id FROM lines WHERE file IN ({marks})", numbers)]
                    db.execute(f"DELETE FROM lines WHERE file IN ({marks})", numbers)
                    for table in ("traces", "owners"):
                        db.executemany(f"DELETE FROM {table} WHERE trace_id = ? AND NOT EXISTS "
                                       "(SELECT 1 FROM lines WHERE trace_id = ?)", [(t, t) for t in traces])
                    db.execute(f"DELETE FROM files WHERE file IN ({marks})", numbers)
                for path in paths:     # a file left by a crash here is indexed again, and dropped next time
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
        return drop

    # -- reading ---------------------------------------------------------------------------
    def trace(self, trace_id: str) -> list[dict]:
        """The spans of one trace (plain dicts), read from its own lines only."""
        return self.traces([trace_id])[trace_id]

    def traces(self, trace_ids) -> dict:
        """{trace id: its spans} of several traces, their lines found in one look at the index
        (a page of a user's submissions: serve's /api/v1/jobs)."""
        with self._locked() as db:
            where = {trace_id: db.execute("SELECT file, offset, length FROM lines WHERE trace_id = ? "
                                          "ORDER BY file, offset", (bytes.fromhex(trace_id),)).fetchall()
                     for trace_id in trace_ids}
        out = {}
        handles: dict = {}
        try:
            for trace_id, lines in where.items():
                spans: dict = {}
                for number, offset, length in lines:
                    if number not in handles:
                        handles[number] = open(_file_path(self.directory, number), "rb")
                    handle = handles[number]
                    handle.seek(offset)
                    try:
                        request = json.loads(handle.read(length))
                    except ValueError:
                        continue
                    for span in flatten_request(request):
                        if span["trace_id"] == trace_id:
                            spans.setdefault(span["span_id"], span)
                out[trace_id] = list(spans.values())
        finally:
            for handle in handles.values():
                handle.close()
        return out

    def spans_of(self, trace_ids, names=None) -> dict:
        """trace id -> the spans of each of many traces (of ``names`` only, when given), in one
        pass over the index: each line holding any of them is read once, and only their spans
        are decoded, not the whole line (a Frontend request's line holds 512 spans of many
        users' traces). Their ``resource`` is left empty (``trace`` gives it). A line whose spans
        do not begin with their trace id, as this store writes them, is decoded whole."""
        wanted = sorted({t.lower() for t in trace_ids})
        lines: dict = defaultdict(set)
        with self._locked() as db:
            for start in range(0, len(wanted), 500):
                keys = [bytes.fromhex(t) for t in wanted[start:start + 500]]
                rows = db.execute(f"SELECT trace_id, file, offset, length FROM lines WHERE trace_id IN "
                                  f"({','.join('?' * len(keys))})", keys)
                for trace, number, offset, length in rows:
                    lines[(number, offset, length)].add(trace.hex())
        found: dict = {t: {} for t in wanted}
        decoder = json.JSONDecoder()
        handles: dict = {}
        try:
            for (number, offset, length), traces in sorted(lines.items()):
                if number not in handles:
                    handles[number] = open(_file_path(self.directory, number), "rb")
                handles[number].seek(offset)
                text = handles[number].read(length).decode("utf-8", "replace")
                for trace in traces:
                    for span in _spans_in_line(text, trace, decoder):
                        if names is None or span["name"] in names:
                            found[trace].setdefault(span["span_id"], span)
        finally:
            for handle in handles.values():
                handle.close()
        return {trace: list(spans.values()) for trace, spans in found.items()}

    def find(self, prefix: str, limit: int = 2) -> list[str]:
        """Trace ids (hex) starting with ``prefix``, at most ``limit``: an index range, not a scan."""
        prefix = prefix.lower()
        if not prefix or len(prefix) > 32 or any(c not in "0123456789abcdef" for c in prefix):
            return []
        low = bytes.fromhex(prefix.ljust(32, "0"))
        high = bytes.fromhex(prefix.ljust(32, "f"))
        with self._locked() as db:
            rows = db.execute("SELECT trace_id FROM traces WHERE trace_id BETWEEN ? AND ? LIMIT ?",
                              (low, high, limit)).fetchall()
        return [row[0].hex() for row in rows]

    def listing(self, since_ns: int | None = None, limit: int = 100) -> list:
        """(trace id, spans, root name, start ns, outcome) of at most ``limit`` traces by their
        root's start: the first from ``since_ns`` on, else the latest (oldest first; traces whose
        root has not arrived yet, with no start, before them when the page has room): an index
        range, whatever the store holds."""
        with self._locked() as db:
            if since_ns is None:
                rows = db.execute("SELECT trace_id, spans, root_name, start_ns, outcome FROM traces "
                                  "ORDER BY start_ns DESC LIMIT ?", (limit,)).fetchall()
                rows.reverse()
            else:
                rows = db.execute("SELECT trace_id, spans, root_name, start_ns, outcome FROM traces "
                                  "WHERE start_ns >= ? ORDER BY start_ns LIMIT ?", (since_ns, limit)).fetchall()
        return [(trace.hex(), spans, name, start, outcome) for trace, spans, name, start, outcome in rows]

    def owned(self, owner: str, before_ns: int | None = None, limit: int = 20) -> list:
        """(trace id, first ns, last ns) of the traces holding ``owner``'s jobs, the latest
        activity first, those active before ``before_ns`` when given (the next page): an
        index range, whatever the store holds."""
        with self._locked() as db:
            rows = db.execute("SELECT trace_id, first_ns, last_ns FROM owners WHERE owner = ? AND last_ns < ? "
                              "ORDER BY last_ns DESC LIMIT ?",
                              (owner, (1 << 63) - 1 if before_ns is None else before_ns, limit)).fetchall()
        return [(trace.hex(), first, last) for trace, first, last in rows]

    def summaries(self):
        """(trace id, spans, root name, start ns, outcome) of every trace, in trace id order."""
        with self._locked() as db:
            rows = db.execute("SELECT trace_id, spans, root_name, start_ns, outcome FROM traces "
                              "ORDER BY trace_id").fetchall()
        for trace, spans, name, start, outcome in rows:
            yield trace.hex(), spans, name, start, outcome

    def health(self) -> dict:
        """What the index knows of the files: lines that are not JSON, lines cut short."""
        with self._locked() as db:
            bad, cut = db.execute("SELECT coalesce(sum(bad_lines), 0), coalesce(sum(cut_bytes > 0), 0) "
                                  "FROM files").fetchone()
            traces = db.execute("SELECT count(*) FROM traces").fetchone()[0]
        return {"files": len(store_files(self.directory)), "traces": traces, "bad_lines": bad,
                "cut_lines": cut, "rebuilds": self.rebuilds}

    def reindex(self) -> dict:
        """Rebuild the index from the files (``show --reindex``)."""
        with open(self.directory / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._rebuild_index().close()
        return self.health()


def _file_path(directory: Path, number: int) -> Path:
    return Path(directory) / f"{FILE_PREFIX}{number:06d}{FILE_SUFFIX}"


def _index_summary(span) -> dict | None:
    """What the index keeps of an SDK span: a glidein's root (``show --list``) or a span of
    a user's job (its owner, ``serve``), else None."""
    attrs = span.attributes or {}
    owner = attrs.get(c.JOB_OWNER)
    if attrs.get(c.STAGE) != c.STAGE_GLIDEIN and not owner:
        return None
    kept = {c.STAGE: attrs.get(c.STAGE), c.GLIDEIN_OUTCOME: attrs.get(c.GLIDEIN_OUTCOME, ""), c.JOB_OWNER: owner}
    return {"name": span.name, "start_ns": span.start_time, "end_ns": span.end_time, "attributes": kept}


def _owned(spans) -> list:
    """(owner, first start ns, last end ns) of the spans (dicts or None) carrying a job's
    Owner; an owner that is not a short string is not indexed."""
    times: dict = {}
    for span in spans:
        owner = span["attributes"].get(c.JOB_OWNER) if span else None
        if not isinstance(owner, str) or not owner or len(owner) > 256:
            continue
        start, end = span.get("start_ns") or 0, span.get("end_ns") or span.get("start_ns") or 0
        first, last = times.get(owner, (start, end))
        times[owner] = (min(first, start), max(last, end))
    return [(owner, first, last) for owner, (first, last) in times.items()]


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection):
    """BEGIN IMMEDIATE ... COMMIT; on an error ROLLBACK, unless SQLite already rolled back by
    itself (a full disk): a second ROLLBACK would hide the real error."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def _check_is_store(directory: Path) -> None:
    """StoreError unless ``directory`` is a store a reader can read (a typo is not an empty
    store, and a reader makes none)."""
    if not directory.exists():
        raise StoreError(f"no store at {directory}: no such directory")
    if not directory.is_dir():
        raise StoreError(f"no store at {directory}: not a directory")
    if not (directory / INDEX_FILE).exists() and not store_files(directory):
        raise StoreError(f"{directory} is not a store: it holds no {FILE_PREFIX}*{FILE_SUFFIX} files and no "
                         f"{INDEX_FILE}")


def _open_read_only(index_path: Path) -> sqlite3.Connection | None:
    """The index file opened read-only (None when it is missing, damaged or of another
    version), with the store's lock held shared by the caller. Read as immutable, which
    creates no -wal or -shm file: no writer is at work, and the last one to close folded its
    WAL into the file; a WAL a killed writer left is read through SQLite's read-only mode."""
    if not index_path.exists():
        return None
    uri = index_path.resolve().as_uri()
    wal = Path(str(index_path) + "-wal")
    mode = "mode=ro" if wal.exists() and wal.stat().st_size else "immutable=1"
    try:
        db = sqlite3.connect(f"{uri}?{mode}", uri=True, timeout=60, isolation_level=None)
    except sqlite3.DatabaseError:
        return None
    try:
        if db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            return db
    except sqlite3.DatabaseError:
        pass
    db.close()
    return None


class JsonLinesStoreExporter(DeliveringExporter):
    """An SDK span exporter into a store: spans it already holds are not written again."""

    def __init__(self, directory=None, rotate_bytes: int = ROTATE_BYTES, max_days: float | None = None,
                 max_bytes: int | None = None):
        self.store = Store(directory, rotate_bytes)
        self.max_days, self.max_bytes = max_days, max_bytes   # the store's retention (Store.prune)
        self.directory = self.store.directory
        self._shutdown = False
        self.written = 0
        self.duplicates = 0

    def deliver(self, spans) -> Delivery:
        if self._shutdown:
            return Delivery.refused(spans, "the store exporter is shut down")
        try:
            written, duplicates = self.store.append(list(spans))
            if self.max_days is not None or self.max_bytes is not None:
                self.store.prune(self.max_days, self.max_bytes)
        except (OSError, sqlite3.Error) as exc:
            if is_no_space(exc):   # not a failed export to retry at once: the caller must stop
                raise NoSpaceError(self.directory) from exc
            return Delivery.refused(spans, f"cannot write the store {self.directory}: {exc}")
        self.written += written
        self.duplicates += duplicates
        return Delivery.whole(spans)

    def shutdown(self) -> None:
        self._shutdown = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _spans_in_line(text: str, trace_id: str, decoder) -> list:
    """The spans of ``trace_id`` in one store line (OTLP JSON), each decoded alone: this store
    writes every span as ``{"traceId":"<hex>",...`` (encode_request, request_from_span_dicts);
    a link, which begins alike, has no name and is passed over. A line written otherwise is
    decoded whole."""
    needle = '{"traceId":"' + trace_id + '"'
    out, at = [], text.find(needle)
    if at < 0:
        try:
            return [s for s in flatten_request(json.loads(text)) if s["trace_id"] == trace_id]
        except ValueError:
            return []
    while at >= 0:
        try:
            span, end = decoder.raw_decode(text, at)
        except ValueError:
            return out
        if isinstance(span, dict) and "name" in span:
            out.append(flatten_span(span, {}))
            at = text.find(needle, end)
        else:
            at = text.find(needle, at + len(needle))
    return out
