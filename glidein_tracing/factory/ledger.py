"""The forwarder's memory: what it has read and what it has sent (SQLite, restart-safe).

Every change is one transaction, so a forwarder killed at any moment restarts from a
consistent state: activity logs resume at their saved reader position, glideins already
sent are never sent again, and a batch that was being sent when the forwarder died is
marked ``sending`` with its span ids, to be reconciled against the backend on restart.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sqlite3
import time
from pathlib import Path

from ..core.errors import EXIT_LEDGER, UserError
from ..core.journal import Event

SCHEMA = """
CREATE TABLE IF NOT EXISTS logs (path TEXT PRIMARY KEY, state BLOB, events INTEGER, updated REAL, absent_since REAL);
CREATE TABLE IF NOT EXISTS glideins (
    gkey TEXT PRIMARY KEY, entry_dir TEXT, instance TEXT, entry TEXT,
    cluster INTEGER, proc INTEGER, status TEXT, ended_at REAL, updated REAL,
    trace_id TEXT, spans INTEGER DEFAULT 0, note TEXT, activity_state TEXT,
    attempts INTEGER DEFAULT 0, activity_log TEXT, absent_since REAL);
CREATE INDEX IF NOT EXISTS glideins_status ON glideins(status, ended_at);
CREATE TABLE IF NOT EXISTS factory_events (gkey TEXT, seq INTEGER, event TEXT, PRIMARY KEY (gkey, seq));
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER);
CREATE TABLE IF NOT EXISTS early_spans (gkey TEXT, span_id TEXT, state TEXT, PRIMARY KEY (gkey, span_id));
CREATE TABLE IF NOT EXISTS sending_spans (gkey TEXT PRIMARY KEY, span_ids TEXT);
CREATE TABLE IF NOT EXISTS table_rows (trace_id TEXT PRIMARY KEY, gkey TEXT, day TEXT, file TEXT, state TEXT);
CREATE INDEX IF NOT EXISTS table_rows_state ON table_rows(state, day);
CREATE TABLE IF NOT EXISTS table_pending (trace_id TEXT PRIMARY KEY, glidein TEXT, jobs TEXT);
CREATE TABLE IF NOT EXISTS forgotten (id INTEGER PRIMARY KEY, forgotten_at REAL, started REAL);
CREATE INDEX IF NOT EXISTS forgotten_at ON forgotten(forgotten_at);
"""

_TABLES = re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", SCHEMA)


def _schema_columns() -> dict:
    """{table: its columns} as this version's SCHEMA makes them."""
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(SCHEMA)
        return {table: {row[1] for row in db.execute(f"PRAGMA table_info({table})")} for table in _TABLES}
    finally:
        db.close()


_COLUMNS = _schema_columns()

OPEN, ENDED, SENDING, DONE, SKIPPED = "open", "ended", "sending", "done", "skipped"
QUARANTINED = "quarantined"  # failed alone while others went through: waits for --retry-quarantined


class LedgerError(UserError):
    """A ledger that cannot be used as it is: damaged, empty, not a ledger, locked. Never
    taken for a fresh start, which would send again every glidein whose output is still in
    the Factory's logs."""

    exit_code = EXIT_LEDGER


FRESH_START = ("remove it only to start afresh: every glidein whose output is still in the "
               "Factory's logs would be sent again")
OPEN_WAIT_S = 5.0      # at start, a lock held longer than this is named, not waited out
BUSY_WAIT_S = 30.0     # later, a write waits this long for another writer to finish


def glidein_key(entry_dir: str, cluster: int, proc: int) -> str:
    return f"{entry_dir}|{cluster}.{proc}"


def _forgotten_id(gkey: str) -> int:
    """A glidein key's 64-bit digest (SQLite's signed INTEGER)."""
    return int.from_bytes(hashlib.blake2b(gkey.encode(), digest_size=8).digest(), "big", signed=True)


class Ledger:
    """The ledger at ``path``: created (whole, or not at all) when missing; refused with a
    LedgerError when it is empty, damaged, not a ledger or locked. ``read_only``: for
    `status`, which changes nothing and may run as a user who cannot write it."""

    def __init__(self, path, read_only: bool = False):
        self.path = Path(path)
        if read_only:
            self.db = _connect_read_only(self.path)
            _check_is_ledger(self.db, self.path)
            return
        if not self.path.exists():
            _create(self.path)
        elif self.path.is_file() and self.path.stat().st_size == 0:
            raise LedgerError(f"{self.path} is empty, not a forwarder ledger; {FRESH_START}")
        try:
            self.db = sqlite3.connect(str(self.path), timeout=OPEN_WAIT_S, isolation_level=None)
            _check_is_ledger(self.db, self.path)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            with self.transaction():          # a writer holding it now is named, not waited on
                pass
        except sqlite3.OperationalError as exc:
            if _is_locked(exc):
                raise locked(self.path) from exc
            raise
        self.db.execute(f"PRAGMA busy_timeout={int(BUSY_WAIT_S * 1000)}")

    def close(self):
        self.db.close()

    def transaction(self):
        return _Transaction(self.db, self.path)

    # -- activity logs ---------------------------------------------------------------
    def log_state(self, path) -> bytes | None:
        row = self.db.execute("SELECT state FROM logs WHERE path=?", (str(path),)).fetchone()
        return row[0] if row else None

    def save_log_state(self, path, state: bytes, events: int):
        self.db.execute(
            "INSERT INTO logs(path, state, events, updated) VALUES (?,?,?,?) "
            "ON CONFLICT(path) DO UPDATE SET state=excluded.state, "
            "events=logs.events+excluded.events, updated=excluded.updated",
            (str(path), state, events, time.time()))

    # -- glideins ----------------------------------------------------------------------
    def glidein(self, gkey):
        cur = self.db.execute("SELECT * FROM glideins WHERE gkey=?", (gkey,))
        row = cur.fetchone()
        return dict(zip([d[0] for d in cur.description], row)) if row else None

    def upsert_glidein(self, gkey, entry_dir, instance, entry, cluster, proc, activity_log=None):
        """A glidein seen in ``activity_log`` (None: known by its output alone): it can be
        forgotten only once that log is gone too (``forget_gone``)."""
        self.db.execute(
            "INSERT INTO glideins(gkey, entry_dir, instance, entry, cluster, proc, status, updated, activity_log) "
            "VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(gkey) DO UPDATE SET activity_log=excluded.activity_log "
            "WHERE excluded.activity_log IS NOT NULL AND activity_log IS NOT excluded.activity_log",
            (gkey, entry_dir, instance, entry, cluster, proc, OPEN, time.time(), activity_log))

    def knows(self, gkey) -> bool:
        return self.db.execute("SELECT 1 FROM glideins WHERE gkey=?", (gkey,)).fetchone() is not None

    def remembers(self, gkey) -> bool:
        """Whether the ledger has the glidein's row, or forgot it within the retention window."""
        return self.knows(gkey) or self.forgotten(gkey) is not None

    def known_outputs(self, entry_dir: str) -> list[tuple]:
        """(cluster, proc) of every glidein of an entry directory the ledger knows: one range
        of the key's index, for a forwarder's first listing of that directory."""
        low, high = entry_dir + "|", entry_dir + "}"      # "}" sorts right after "|"
        return self.db.execute("SELECT cluster, proc FROM glideins WHERE gkey >= ? AND gkey < ?",
                               (low, high)).fetchall()

    def append_events(self, gkey, events):
        """Keep a glidein's Factory-side events (journal Events) typed, as JSON rows."""
        row = self.db.execute("SELECT COALESCE(MAX(seq), -1) FROM factory_events WHERE gkey=?", (gkey,)).fetchone()
        seq = row[0] + 1
        self.db.executemany("INSERT INTO factory_events(gkey, seq, event) VALUES (?,?,?)",
                            [(gkey, seq + i, json.dumps([e.time, e.op, e.key, e.fields, e.links]))
                             for i, e in enumerate(events)])

    def factory_events(self, gkey) -> list:
        """The events ``append_events`` kept, in order (``line_no`` orders equal times)."""
        rows = self.db.execute("SELECT event FROM factory_events WHERE gkey=? ORDER BY seq", (gkey,))
        return [Event(when, op, key, fields, links, line_no=n)
                for n, (when, op, key, fields, links) in enumerate((json.loads(r[0]) for r in rows), 1)]

    def activity_state(self, gkey):
        row = self.db.execute("SELECT activity_state FROM glideins WHERE gkey=?", (gkey,)).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def save_activity_state(self, gkey, state: dict):
        self.db.execute("UPDATE glideins SET activity_state=? WHERE gkey=?", (json.dumps(state), gkey))

    def early_spans(self, gkey) -> dict:
        """Span ids (hex) of a glidein's Factory stages sent before it ended: id -> ``sending``
        (export under way or uncertain) or ``sent``."""
        return dict(self.db.execute("SELECT span_id, state FROM early_spans WHERE gkey=?", (gkey,)))

    def mark_early(self, gkey, span_ids, state):
        self.db.executemany("INSERT INTO early_spans(gkey, span_id, state) VALUES (?,?,?) "
                            "ON CONFLICT (gkey, span_id) DO UPDATE SET state=excluded.state",
                            [(gkey, sid, state) for sid in span_ids])

    def mark_ended(self, gkey, when):
        self.db.execute("UPDATE glideins SET status=?, ended_at=?, updated=? WHERE gkey=? AND status=?",
                        (ENDED, when, time.time(), gkey, OPEN))

    def with_status(self, status, limit=None):
        query = "SELECT gkey FROM glideins WHERE status=? ORDER BY ended_at, gkey"
        if limit:
            query += f" LIMIT {int(limit)}"
        return [r[0] for r in self.db.execute(query, (status,))]

    # a glidein being sent keeps its span ids in ``sending_spans``, deleted when it settles, so
    # their pages are reused rather than left emptied in the glideins table
    def mark_sending(self, gkey, trace_id, span_ids):
        self.db.execute("UPDATE glideins SET status=?, trace_id=?, updated=? WHERE gkey=?",
                        (SENDING, trace_id, time.time(), gkey))
        self.db.execute("INSERT OR REPLACE INTO sending_spans(gkey, span_ids) VALUES (?,?)", (gkey, json.dumps(span_ids)))

    def pending_spans(self, gkey) -> list[str]:
        row = self.db.execute("SELECT span_ids FROM sending_spans WHERE gkey=?", (gkey,)).fetchone()
        return json.loads(row[0]) if row and row[0] else []

    def _settled(self, gkey):
        self.db.execute("DELETE FROM sending_spans WHERE gkey=?", (gkey,))

    def mark_done(self, gkey, spans, note=""):
        self.db.execute("UPDATE glideins SET status=?, spans=?, note=?, updated=? WHERE gkey=?",
                        (DONE, spans, note, time.time(), gkey))
        self._finished(gkey)

    def mark_skipped(self, gkey, note):
        self.db.execute("UPDATE glideins SET status=?, note=?, updated=? WHERE gkey=?",
                        (SKIPPED, note, time.time(), gkey))
        self._finished(gkey)

    def _finished(self, gkey):
        """A glidein done or skipped for good keeps only its row: its Factory events, the ids
        of its stages sent early and of the spans it was sending are not needed again."""
        self.db.execute("DELETE FROM factory_events WHERE gkey=?", (gkey,))
        self.db.execute("DELETE FROM early_spans WHERE gkey=?", (gkey,))
        self._settled(gkey)

    def back_to_ended(self, gkey):
        self.db.execute("UPDATE glideins SET status=? WHERE gkey=?", (ENDED, gkey))
        self._settled(gkey)

    def failed_alone(self, gkey, reason) -> int:
        """One more failed export of this glidein on its own; returns its count of them."""
        self.db.execute("UPDATE glideins SET attempts=COALESCE(attempts, 0)+1, note=? WHERE gkey=?",
                        (reason, gkey))
        return self.db.execute("SELECT attempts FROM glideins WHERE gkey=?", (gkey,)).fetchone()[0]

    def quarantine(self, gkey, reason):
        self.db.execute("UPDATE glideins SET status=?, note=?, updated=? WHERE gkey=?",
                        (QUARANTINED, reason, time.time(), gkey))
        self._settled(gkey)

    def release_quarantined(self) -> int:
        """Give every quarantined glidein a fresh set of tries (``forward --retry-quarantined``)."""
        return self.db.execute("UPDATE glideins SET status=?, attempts=0 WHERE status=?",
                               (ENDED, QUARANTINED)).rowcount

    def quarantined(self) -> dict:
        return dict(self.db.execute("SELECT gkey, note FROM glideins WHERE status=?", (QUARANTINED,)))

    # -- the glidein table (factory/sink.py): rows owed, then the file named, then written ---
    # ``table_rows`` keeps a small row per glidein (its claim, file and state); the rows'
    # values wait in ``table_pending`` and are deleted once written, so its pages are reused and
    # the ledger grows by about 150 bytes per glidein, not by the rows (a few kB each)
    def claim_table_rows(self, claims):
        """Glideins' rows are owed to the table: ``claims`` are (trace id, gkey, day, glidein
        row, job rows), the rows encoded by the sink (factory/sink.py); a glidein claimed before
        keeps its claim."""
        self.db.executemany("INSERT OR IGNORE INTO table_pending(trace_id, glidein, jobs) SELECT ?, ?, ? "
                            "WHERE NOT EXISTS (SELECT 1 FROM table_rows WHERE trace_id=?)",
                            [(trace_id, glidein, jobs, trace_id) for trace_id, _, _, glidein, jobs in claims])
        self.db.executemany("INSERT OR IGNORE INTO table_rows(trace_id, gkey, day, state) VALUES (?,?,?,'pending')",
                            [claim[:3] for claim in claims])

    def pending_table_rows(self) -> list[tuple]:
        """(trace id, day, file or None) of every row owed; their values from ``owed_table_rows``."""
        return self.db.execute("SELECT trace_id, day, file FROM table_rows WHERE state='pending'").fetchall()

    def owed_table_rows(self, trace_id) -> tuple:
        """(glidein row, job rows) of an owed glidein, as the sink encoded them."""
        row = self.db.execute("SELECT glidein, jobs FROM table_pending WHERE trace_id=?", (trace_id,)).fetchone()
        if row is None:
            raise LedgerError(f"{self.path} owes the glidein table the rows of {trace_id} but holds none; "
                              "the ledger was changed by hand or by another program")
        return row

    def name_table_files(self, token):
        """The owed rows not yet given a file go to file ``token``."""
        self.db.execute("UPDATE table_rows SET file=? WHERE state='pending' AND file IS NULL", (token,))

    def table_files_written(self, tokens):
        for token in tokens:
            self.db.execute("DELETE FROM table_pending WHERE trace_id IN "
                            "(SELECT trace_id FROM table_rows WHERE file=? AND state='pending')", (token,))
            self.db.execute("UPDATE table_rows SET state='written' WHERE file=? AND state='pending'", (token,))

    # -- forwarding again (factory/redo.py) -------------------------------------------------
    def finished_between(self, entry: str, since: float, until: float) -> list[tuple]:
        """(gkey, cluster, proc, activity log) of ``entry``'s glideins done or skipped that
        ended at or after ``since`` and before ``until``."""
        return self.db.execute(
            "SELECT gkey, cluster, proc, activity_log FROM glideins WHERE status IN (?, ?) AND entry=? "
            "AND ended_at >= ? AND ended_at < ?", (DONE, SKIPPED, entry, since, until)).fetchall()

    def reopen(self, gkey, activity=None):
        """A finished glidein made new again, with its Factory events as its activity log
        gives them (``activity``: activity.GlideinActivity; None: known by its output alone,
        ended as before). Its trace id stays: the next export asks the backend what it holds."""
        self.db.execute("UPDATE glideins SET status=?, spans=0, note='redo', attempts=0, activity_state=NULL "
                        "WHERE gkey=?", (OPEN if activity is not None else ENDED, gkey))
        self._finished(gkey)
        if activity is not None:
            self.append_events(gkey, activity.events)
            self.save_activity_state(gkey, activity.state())
            if activity.ended_at is not None:
                self.mark_ended(gkey, activity.ended_at)

    # -- forgetting (factory/retention.py) ------------------------------------------------
    def finished_before(self, cutoff: float) -> list[tuple]:
        """(gkey, entry dir, cluster, proc, activity log, absent since) of the glideins done or
        skipped that ended before ``cutoff``: the rows retention may forget (an index range)."""
        return self.db.execute(
            "SELECT gkey, entry_dir, cluster, proc, activity_log, absent_since FROM glideins "
            "WHERE status IN (?, ?) AND ended_at < ?", (DONE, SKIPPED, cutoff)).fetchall()

    def open_before(self, cutoff: float) -> list[tuple]:
        """(gkey, entry dir, cluster, proc, activity log, absent since) of the glideins still
        open that this ledger first saw before ``cutoff`` (an index range)."""
        return self.db.execute(
            "SELECT gkey, entry_dir, cluster, proc, activity_log, absent_since FROM glideins "
            "WHERE status=? AND ended_at IS NULL AND updated < ?", (OPEN, cutoff)).fetchall()

    def mark_absent(self, gkeys, since: float):
        """Glideins whose files a sweep found gone (``since`` then, unless found gone before)."""
        self.db.executemany("UPDATE glideins SET absent_since=? WHERE gkey=? AND absent_since IS NULL",
                            [(since, gkey) for gkey in gkeys])

    def mark_present(self, gkeys):
        """Glideins whose files came back: absent no more."""
        self.db.executemany("UPDATE glideins SET absent_since=NULL WHERE gkey=?", [(gkey,) for gkey in gkeys])

    def forget_open(self, gkeys, now: float):
        """Forget glideins that never ended here and never can (retention.py): their row and
        what it kept for them, remembering when their Factory events began (``forgotten``)."""
        for gkey in gkeys:
            started = min((e.time for e in self.factory_events(gkey)), default=None)
            if self.db.execute("DELETE FROM glideins WHERE gkey=? AND status=?", (gkey, OPEN)).rowcount:
                self._finished(gkey)
                self._remember_forgotten(gkey, now, started if started is not None else now)

    def forget(self, gkeys, cutoff: float, now: float):
        """Forget glideins that can never be seen again (remembering their ids: ``forgotten``),
        and the table rows written for glideins that ended a day before ``cutoff`` or earlier
        (a claim is checked against them only while its glidein can still be converted: never,
        once it is done)."""
        for gkey in gkeys:
            if self.db.execute("DELETE FROM glideins WHERE gkey=? AND status IN (?, ?)",
                               (gkey, DONE, SKIPPED)).rowcount:
                self._remember_forgotten(gkey, now, None)
        day = time.strftime("%Y-%m-%d", time.gmtime(cutoff - 86400))
        self.db.execute("DELETE FROM table_rows WHERE state='written' AND day < ?", (day,))

    # a forgotten glidein is remembered by a 64-bit digest of its key (16 bytes a row with its
    # time, whatever the key's length) for the retention window: one that comes back (files
    # restored, a log moved back) is recognised, never made a new glidein and sent again
    def _remember_forgotten(self, gkey, now: float, started):
        self.db.execute("INSERT OR REPLACE INTO forgotten(id, forgotten_at, started) VALUES (?,?,?)",
                        (_forgotten_id(gkey), now, started))

    def forgotten(self, gkey) -> tuple | None:
        """(forgotten at, its Factory events' first time when it was forgotten open, else
        None) of a glidein forgotten within the retention window, or None."""
        return self.db.execute("SELECT forgotten_at, started FROM forgotten WHERE id=?",
                               (_forgotten_id(gkey),)).fetchone()

    def unforget(self, gkey):
        self.db.execute("DELETE FROM forgotten WHERE id=?", (_forgotten_id(gkey),))

    def prune_forgotten(self, before: float):
        """The ids forgotten before ``before`` are forgotten in turn (an index range)."""
        self.db.execute("DELETE FROM forgotten WHERE forgotten_at < ?", (before,))

    def log_paths(self) -> list[tuple]:
        """(path, absent since) of every activity log with a reader position."""
        return self.db.execute("SELECT path, absent_since FROM logs").fetchall()

    def mark_logs(self, absent, present, since: float):
        """Activity logs found gone (``since`` then, unless found gone before) or back."""
        self.db.executemany("UPDATE logs SET absent_since=? WHERE path=? AND absent_since IS NULL",
                            [(since, str(p)) for p in absent])
        self.db.executemany("UPDATE logs SET absent_since=NULL WHERE path=?", [(str(p),) for p in present])

    def forget_logs(self, paths):
        """Forget the reader positions of activity logs the Factory deleted."""
        self.db.executemany("DELETE FROM logs WHERE path=?", [(str(p),) for p in paths])

    # -- counters ----------------------------------------------------------------------
    def bump(self, name, by=1):
        self.db.execute("INSERT INTO counters(name, value) VALUES (?,?) "
                        "ON CONFLICT(name) DO UPDATE SET value=value+excluded.value", (name, by))

    def set_counter(self, name, value: int):
        """A gauge kept beside the counters (the last pass's time, its duration)."""
        self.db.execute("INSERT INTO counters(name, value) VALUES (?,?) "
                        "ON CONFLICT(name) DO UPDATE SET value=excluded.value", (name, int(value)))

    def counters(self) -> dict:
        return dict(self.db.execute("SELECT name, value FROM counters"))

    def oldest_waiting(self) -> float | None:
        """When the longest-waiting ended glidein not yet forwarded ended (its output is still
        to be read: ended, sending or quarantined), or None."""
        row = self.db.execute("SELECT MIN(ended_at) FROM glideins WHERE status IN (?,?,?)",
                              (ENDED, SENDING, QUARANTINED)).fetchone()
        return row[0] if row else None


class _Transaction:
    def __init__(self, db, path: Path):
        self.db, self.path = db, path

    def __enter__(self):
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if _is_locked(exc):
                raise locked(self.path) from exc
            raise
        return self.db

    def __exit__(self, exc_type, exc, tb):
        if not exc_type:
            self.db.execute("COMMIT")
        elif self.db.in_transaction:   # SQLite itself rolls back on some errors (a full disk)
            self.db.execute("ROLLBACK")
        return False


def _create(path: Path):
    """A new ledger, schema and all, renamed into place: a forwarder killed while making
    it leaves no empty file behind (which would be refused)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = path.with_name(f".{path.name}.new-{os.getpid()}")
    try:
        db = sqlite3.connect(str(fresh), isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
        finally:
            db.close()
        os.replace(fresh, path)
    finally:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{fresh}{suffix}")


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """The ledger opened read-only (a URI with mode=ro): for a user who may not write it
    or its directory, also while a forwarder writes it."""
    if not path.is_file():
        raise LedgerError(f"no forwarder ledger at {path}")
    if path.stat().st_size == 0:
        raise LedgerError(f"{path} is empty, not a forwarder ledger; {FRESH_START}")
    if not Path(f"{path}-wal").exists():
        # no forwarder has it open (a running one keeps its -wal and -shm files): the file
        # alone is the ledger, read as it is, and SQLite's read-only mode would make the
        # -wal and -shm files a reader must not leave behind
        return sqlite3.connect(f"{path.resolve().as_uri()}?immutable=1", uri=True, isolation_level=None)
    uri = f"{path.resolve().as_uri()}?mode=ro"
    db = sqlite3.connect(uri, uri=True, timeout=OPEN_WAIT_S, isolation_level=None)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            db.close()        # e.g. a copy or query holding it in SQLite's EXCLUSIVE locking mode
            holders = ", ".join(lock_holders(path)) or "another process"
            raise LedgerError(f"{path} is locked by {holders} for longer than {OPEN_WAIT_S:g} s: try again once "
                              "it lets go") from None
        # WAL with no -shm file beside it ("unable to open", "attempt to write a readonly
        # database") in a directory this user cannot write: no forwarder is running (it would
        # have made the -shm file), so the file alone is the ledger
        db.close()
        db = sqlite3.connect(f"{path.resolve().as_uri()}?immutable=1", uri=True, isolation_level=None)
    except sqlite3.DatabaseError:
        pass   # not a database: _check_is_ledger says so
    return db


def check_ledger_file(path: Path) -> None:
    """LedgerError unless ``path`` reads as a forwarder ledger, read as the file is (SQLite's
    immutable mode, which makes no -wal or -shm file): for --check-config, once it knows no
    process holds the ledger."""
    if not path.is_file():
        raise LedgerError(f"{path} is not a file, not a forwarder ledger")
    if path.stat().st_size == 0:
        raise LedgerError(f"{path} is empty, not a forwarder ledger; {FRESH_START}")
    db = sqlite3.connect(f"{path.resolve().as_uri()}?immutable=1", uri=True, isolation_level=None)
    try:
        _check_is_ledger(db, path)
    finally:
        db.close()


def _is_locked(exc: sqlite3.OperationalError) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)


def locked(path: Path) -> LedgerError:
    """The error of a ledger another process holds locked, naming that process."""
    holders = lock_holders(path)
    who = ", ".join(holders) if holders else "another process (not one this user can see)"
    return LedgerError(f"{path} is locked by {who}: another forwarder, or a copy or query of the ledger "
                       "being made; stop it or let it finish, then start again")


def lock_holders(path) -> list[str]:
    """Processes other than this one holding a write lock on the ledger or on its -wal or
    -shm file (SQLite's locks are POSIX record locks, which the kernel lists in /proc/locks),
    each as ``pid N (its command line)``; [] where /proc/locks cannot be read."""
    files = set()
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            st = os.stat(f"{path}{suffix}")
            files.add((os.major(st.st_dev), os.minor(st.st_dev), st.st_ino))
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    pids = []
    for line in lines:
        fields = line.split()      # "16: POSIX  ADVISORY  WRITE 314 fe:00:10281389 120 120"
        if len(fields) < 6 or fields[1] == "->" or fields[1] != "POSIX" or fields[3] != "WRITE":
            continue
        try:
            major, minor, inode = fields[5].split(":")
            key, pid = (int(major, 16), int(minor, 16), int(inode)), int(fields[4])
        except ValueError:
            continue
        if key in files and pid not in (os.getpid(), -1) and pid not in pids:
            pids.append(pid)
    return [f"pid {pid} ({_command_of(pid)})" for pid in pids]


def _command_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            words = handle.read(4096).split(b"\0")
    except OSError:
        return "command unknown"
    text = " ".join(" ".join(w.decode("utf-8", "replace").split()) for w in words if w)   # one line
    return (text[:120] + "...") if len(text) > 120 else (text or "command unknown")


def _check_is_ledger(db: sqlite3.Connection, path: Path):
    """LedgerError unless ``db`` reads as a forwarder ledger (an empty database is one that
    is new: _create made it)."""
    try:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc)):
            raise
        raise LedgerError(f"{path} is damaged ({exc}); restore it from a backup, or {FRESH_START}") from exc
    if tables and "glideins" not in tables:
        raise LedgerError(f"{path} is an SQLite database but not a forwarder ledger; {FRESH_START}")
    if not tables:
        raise LedgerError(f"{path} holds no tables, not a forwarder ledger; {FRESH_START}")
    missing = [f"{table} table" for table in sorted(set(_TABLES) - tables)]
    for table in sorted(set(_TABLES) & tables):
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        missing += [f"{table}.{column} column" for column in sorted(_COLUMNS[table] - have)]
    if missing:     # nothing converts a ledger of another layout (docs/support-policy.md)
        raise LedgerError(f"{path} is a ledger of an earlier development version (no {', '.join(missing)}), "
                          f"which this version does not convert (docs/support-policy.md); {FRESH_START}")
