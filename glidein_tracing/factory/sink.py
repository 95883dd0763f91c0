"""The forwarder's side of the glidein table: a row for every glidein it finishes, written
exactly once across crashes, reruns and concurrent forwarders.

How: ``add`` computes a finished glidein's rows from its spans (before sampling drops them);
``claim``, called in the transaction that marks a batch of glideins done, records their rows
in the ledger (``table_rows``, keyed by trace id: a second claim of one glidein is ignored;
the rows themselves, MessagePack arrays of the schema's columns in order, wait in
``table_pending`` until written);
``flush``, under the table's lock, gives the claimed rows a file name in the ledger, writes
the files (skipping any that a killed writer already wrote), then marks them written. A
forwarder killed anywhere leaves rows claimed or named in the ledger, and the next flush
finishes them: no row is lost, none is written twice."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import msgspec

from ..core.crash_points import crash_point
from ..table import layout, writer
from ..table.rows import GLIDEIN_COLUMNS, NoGlideinRoot, glidein_values


class TableSink:
    def __init__(self, directory, ledger):
        self.directory = Path(directory)
        self.ledger = ledger
        self._rows: dict = {}      # gkey -> (trace id, day, glidein values, job values), until claimed
        self._claimed: dict = {}   # trace id -> (glidein values, job values) claimed in this pass
        self.quarantined: list = []   # damaged files the last flush's compactions moved aside

    def add(self, gkey, spans, kept: bool) -> int:
        """Rows of a glidein the forwarder converted (kept: its trace goes to the backend),
        kept as value tuples in the schema's column order: what the ledger holds and the
        writer takes, with no column names repeated per row. Returns the node's values the
        rows refused as implausible (the pass reports them)."""
        try:
            row, jobs = glidein_values(spans, trace_kept=kept)
        except NoGlideinRoot:
            return 0
        self._rows[gkey] = (row[_TRACE_ID], layout.day_of(row[_ENDED_AT]), row, jobs)
        return row[_IMPLAUSIBLE] or 0

    def claim(self, gkeys):
        """In the ledger transaction that marks ``gkeys`` done: their rows are now owed."""
        claims = []
        for gkey in gkeys:
            item = self._rows.pop(gkey, None)
            if item is not None:
                trace_id, day, row, jobs = item
                claims.append((trace_id, gkey, day, _encode(row), _encode(jobs)))
                self._claimed[trace_id] = (row, jobs)
        if claims:
            self.ledger.claim_table_rows(claims)

    def flush(self) -> int:
        """Write every claimed row (this pass's and any a killed forwarder left); the number
        of glideins written."""
        self._rows.clear()   # glideins not done this pass are converted again when they are
        self.quarantined = []
        try:
            with layout.locked(self.directory):
                return self._flush()
        finally:
            self._claimed.clear()

    def _flush(self) -> int:
        writer.finish_compactions(self.directory)
        with self.ledger.transaction():   # no claim comes in between: all that is named is here
            pending = self.ledger.pending_table_rows()
            if any(file is None for _, _, file in pending):
                token = writer.new_token()
                self.ledger.name_table_files(token)
                pending = [(trace_id, day, file or token) for trace_id, day, file in pending]
        if not pending:
            return 0
        crash_point("table_before_write")
        self._write(pending)
        crash_point("table_after_write")
        with self.ledger.transaction():
            self.ledger.table_files_written({file for _, _, file in pending})
        return len(pending)

    def _write(self, pending):
        by_file = defaultdict(lambda: (defaultdict(list), defaultdict(list)))
        for trace_id, day, file in pending:
            glideins, jobs = by_file[file]
            row, job_rows = self._claimed.get(trace_id) or self._owed(trace_id)
            glideins[day].append(row)
            jobs[day].extend(job_rows)
        for token, (glideins, jobs) in by_file.items():
            writer.append(self.directory, glideins, jobs, token, self.quarantined)

    def _owed(self, trace_id):
        """The rows of a glidein claimed but not written by an earlier pass (a killed
        forwarder's, or another forwarder's), from the ledger, in column order: MessagePack
        (bytes), or JSON (text) as a forwarder before 2026-12-06 left them."""
        glidein, jobs = self.ledger.owed_table_rows(trace_id)
        decode = _decode if isinstance(glidein, bytes) else msgspec.json.decode
        return tuple(decode(glidein)), [tuple(job) for job in decode(jobs)]


_TRACE_ID, _ENDED_AT = GLIDEIN_COLUMNS.index("trace_id"), GLIDEIN_COLUMNS.index("ended_at")
_IMPLAUSIBLE = GLIDEIN_COLUMNS.index("implausible_values")
#: the owed rows in the ledger: MessagePack, which takes half the CPU of JSON and 60 % of its
#: bytes for these rows (numbers, mostly), and keeps a float as it is (JSON writes NaN as null)
_encode, _decode = msgspec.msgpack.Encoder().encode, msgspec.msgpack.Decoder().decode


class NoTable:
    """A forwarder configured without a table."""
    quarantined: list = []

    def add(self, gkey, spans, kept: bool) -> int:
        return 0

    def claim(self, gkeys):
        pass

    def flush(self) -> int:
        return 0


def table_dir(setting: str | None, ledger_path) -> Path | None:
    """The table's directory from the ``table`` setting: a directory, 'none' (None: no
    table), or unset (the directory ``glidein-table`` beside the ledger)."""
    if setting is not None and setting.strip().lower() == "none":
        return None
    return Path(setting) if setting else Path(ledger_path).parent / "glidein-table"


def table_sink(setting: str | None, ledger_path, ledger):
    """The forwarder's table from its ``table`` setting (table_dir)."""
    where = table_dir(setting, ledger_path)
    return NoTable() if where is None else TableSink(where, ledger)
