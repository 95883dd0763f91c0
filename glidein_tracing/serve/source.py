"""Where the service reads: the embedded store through its index, or Jaeger's query API
through the project's one client of it (exporters/jaeger_query.py, never proxied raw), and
the glidein table's recent days. Every read is bounded: one trace by id, a page of a user's
traces, a few days of the table."""

from __future__ import annotations

import time
from pathlib import Path

from ..core import conventions as c

MAX_PAGE = 50
JAEGER_LOOKBACK_S = 14 * 86400     # how far back a user's traces are searched in Jaeger
MAX_TABLE_DAYS = 7


class SourceError(Exception):
    """The store or Jaeger cannot answer now (the service answers 503)."""


class Source:
    """One trace by id and a user's traces by activity, from the store or from Jaeger."""

    def __init__(self, config):
        self.jaeger = config.jaeger
        self.where = f"Jaeger at {config.jaeger}" if config.jaeger else ""
        self.services = config.jaeger_services
        self.store = None
        if not self.jaeger:
            from ..exporters.store import Store, default_store_dir
            self.store = Store(Path(config.store) if config.store else default_store_dir(), read_only=True)
            self.where = f"the store {self.store.directory}"      # as ``why`` names it (why/sources.py)

    def trace(self, trace_id: str) -> list:
        """The spans of one trace (32 hex digits, checked by the caller); [] when none."""
        if self.store is not None:
            return self._store_call(self.store.trace, trace_id)
        from ..exporters.jaeger_query import trace_spans
        from ..why.sources import decoded_arrays
        spans = trace_spans(self.jaeger, trace_id)
        if spans is None:
            raise SourceError("Jaeger cannot be read")
        return [decoded_arrays(span) for span in spans]

    def traces(self, trace_ids: list) -> dict:
        """{trace id: its spans} of several traces (a page of a user's submissions)."""
        if self.store is not None:
            return self._store_call(self.store.traces, trace_ids)
        return {trace_id: self.trace(trace_id) for trace_id in trace_ids}

    def owned(self, owner: str, before_ns: int | None, limit: int) -> list:
        """(trace id, first ns, last ns) of the traces holding ``owner``'s jobs, latest
        activity first, active before ``before_ns`` (the next page) when given."""
        limit = max(1, min(limit, MAX_PAGE))
        if self.store is not None:
            return self._store_call(self.store.owned, owner, before_ns, limit)
        from ..exporters.jaeger_query import search_traces
        from ..why.sources import decoded_arrays
        end_s = time.time() if before_ns is None else before_ns / 1e9
        found: dict = {}
        for service in self.services:
            traces = search_traces(self.jaeger, service, end_s - JAEGER_LOOKBACK_S, end_s, limit,
                                   tags={c.JOB_OWNER: owner})
            if traces is None:
                raise SourceError("Jaeger cannot be read")
            for spans in traces:
                spans = [decoded_arrays(span) for span in spans]
                mine = [s for s in spans if s["attributes"].get(c.JOB_OWNER) == owner]
                if mine:
                    trace_id = mine[0]["trace_id"]
                    first = min(s["start_ns"] for s in mine)
                    last = max(max(s["end_ns"], s["start_ns"]) for s in mine)
                    old = found.get(trace_id, (first, last))
                    found[trace_id] = (min(old[0], first), max(old[1], last))
        rows = sorted(((t, f, last) for t, (f, last) in found.items()
                       if before_ns is None or last < before_ns), key=lambda r: -r[2])
        return rows[:limit]

    @staticmethod
    def _store_call(method, *args):
        import sqlite3
        from ..exporters.store import StoreError
        try:
            return method(*args)
        except (StoreError, OSError, sqlite3.Error) as exc:
            raise SourceError(f"the store cannot be read: {exc}") from exc


def table_rows(table_dir, days: int, columns: list, now: float | None = None) -> list:
    """The glidein table's rows (dicts of ``columns``) of the last ``days`` UTC days (at most
    MAX_TABLE_DAYS): only those days' files are read, so the cost does not grow with the table."""
    import pyarrow.parquet as pq

    from ..table.reader import usable_files
    now = time.time() if now is None else now
    wanted = {time.strftime("%Y-%m-%d", time.gmtime(now - 86400 * back)) for back in range(min(days, MAX_TABLE_DAYS))}
    out = []
    for path in usable_files(table_dir, "glideins").files:
        if path.parent.name.split("=", 1)[-1] not in wanted:
            continue
        try:
            part = pq.read_table(path, columns=columns, partitioning=None).to_pylist()
        except (OSError, ValueError):
            continue
        out.extend(part)
    return out
