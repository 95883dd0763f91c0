"""The forwarder's side of the glidein table: a row for every glidein it finishes, written
exactly once across crashes, reruns and concurrent forwarders.

How: ``add`` computes a finished glidein's rows from its spans (before sampling drops them);
``claim``, called in the transaction that marks the glidein done, records the rows in the
ledger (``table_rows``, keyed by trace id: a second claim of one glidein is ignored);
``flush``, under the table's lock, gives the claimed rows a file name in the ledger, writes
the files (skipping any that a killed writer already wrote), then marks them written. A
forwarder killed anywhere leaves rows claimed or named in the ledger, and the next flush
finishes them: no row is lost, none is written twice."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import msgspec

from ..factory.delivery import crash_point
from . import layout, writer
from .rows import NoGlideinRoot, glidein_rows


class TableSink:
    def __init__(self, directory, ledger):
        self.directory = Path(directory)
        self.ledger = ledger
        self._rows: dict = {}      # gkey -> (trace id, day, glidein row, job rows), until claimed
        self._claimed: dict = {}   # trace id -> (glidein row, job rows) claimed in this pass

    def add(self, gkey, spans, kept: bool):
        """Rows of a glidein the forwarder converted (kept: its trace goes to the backend)."""
        try:
            row, jobs = glidein_rows(spans, trace_kept=kept)
        except NoGlideinRoot:
            return
        self._rows[gkey] = (row["trace_id"], layout.day_of(row["ended_at"]), row, jobs)

    def claim(self, gkey):
        """In the ledger transaction that marks ``gkey`` done: its rows are now owed."""
        item = self._rows.pop(gkey, None)
        if item is not None:
            trace_id, day, row, jobs = item
            self.ledger.claim_table_rows(trace_id, gkey, day, msgspec.json.encode(row).decode(),
                                         msgspec.json.encode(jobs).decode())
            self._claimed[trace_id] = (row, jobs)

    def flush(self) -> int:
        """Write every claimed row (this pass's and any a killed forwarder left); the number
        of glideins written."""
        self._rows.clear()   # glideins not done this pass are converted again when they are
        try:
            with layout.locked(self.directory):
                return self._flush()
        finally:
            self._claimed.clear()

    def _flush(self) -> int:
        writer.finish_compactions(self.directory)
        with self.ledger.transaction():   # no claim comes in between: all that is named is here
            pending = self.ledger.pending_table_rows()
            if any(not item["file"] for item in pending):
                token = writer.new_token()
                self.ledger.name_table_files(token)
                for item in pending:
                    item["file"] = item["file"] or token
        if not pending:
            return 0
        crash_point("table_before_write")
        self._write(pending)
        crash_point("table_after_write")
        with self.ledger.transaction():
            self.ledger.table_files_written({item["file"] for item in pending})
        return len(pending)

    def _write(self, pending):
        by_file = defaultdict(lambda: (defaultdict(list), defaultdict(list)))
        for item in pending:
            glideins, jobs = by_file[item["file"]]
            row, job_rows = self._claimed.get(item["trace_id"]) or (
                msgspec.json.decode(item["glidein"]), msgspec.json.decode(item["jobs"]))
            glideins[item["day"]].append(row)
            jobs[item["day"]].extend(job_rows)
        for token, (glideins, jobs) in by_file.items():
            writer.append(self.directory, glideins, jobs, token)


class NoTable:
    """A forwarder configured without a table."""

    def add(self, gkey, spans, kept: bool):
        pass

    def claim(self, gkey):
        pass

    def flush(self) -> int:
        return 0


def table_sink(setting: str | None, ledger_path, ledger):
    """The forwarder's table from its ``table`` setting: a directory, 'none', or unset (the
    directory ``glidein-table`` beside the ledger)."""
    if setting is not None and setting.strip().lower() == "none":
        return NoTable()
    return TableSink(Path(setting) if setting else Path(ledger_path).parent / "glidein-table", ledger)
