"""The glidein table built from traces that already exist: the embedded store (read once, in
file order) or Jaeger's query API (a day at a time). Rows are the forwarder's (rows.py), from
the same spans read back; glideins the table already holds are left out, so a backfill that
was stopped can simply be run again."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from . import layout, reader, rollup, writer
from .readable import decode_line, readable_spans
from .rows import NoGlideinRoot, glidein_rows
from .schema import DATASETS

#: rows held before they are written as one file per day
CHUNK_GLIDEINS = 200_000


@dataclass
class BackfillReport:
    glideins: int = 0          # rows written
    already: int = 0           # glideins the table held
    spans: int = 0             # spans read
    not_glideins: int = 0      # traces without a glidein root (user traces, submit cycles)
    problems: list = field(default_factory=list)


class _Rows:
    """Rows waiting to be written, by day; written a chunk at a time under the table's lock,
    leaving out glideins the table holds by then."""

    def __init__(self, table_dir: Path, report: BackfillReport):
        self.table_dir = Path(table_dir)
        self.report = report
        self.glideins: dict = defaultdict(list)
        self.jobs: dict = defaultdict(list)
        self.count = 0
        self.seen: set = set()

    def add_spans(self, spans):
        try:
            self.add_rows(*glidein_rows(spans))
        except NoGlideinRoot:
            self.report.not_glideins += 1

    def add_rows(self, row, jobs):
        if row["trace_id"] in self.seen:
            return
        self.seen.add(row["trace_id"])
        day = layout.day_of(row["ended_at"])
        self.glideins[day].append(row)
        self.jobs[day].extend(jobs)
        self.count += 1
        if self.count >= CHUNK_GLIDEINS:
            self.write()

    def write(self):
        if not self.count:
            return
        with layout.locked(self.table_dir):
            writer.finish_compactions(self.table_dir)
            held = reader.trace_ids(self.table_dir, set(self.glideins))
            token = writer.new_token()
            glideins = {d: [r for r in rows if r["trace_id"] not in held] for d, rows in self.glideins.items()}
            jobs = {d: [r for r in rows if r["trace_id"] not in held] for d, rows in self.jobs.items()}
            writer.append(self.table_dir, glideins, jobs, token)
        written = sum(len(rows) for rows in glideins.values())
        self.report.glideins += written
        self.report.already += self.count - written
        self.glideins.clear()
        self.jobs.clear()
        self.count = 0


#: bytes of store lines one worker reads at a time
PIECE_BYTES = 8 * 1024 * 1024
_WANTED: dict = {}   # trace id -> spans the store's index counts: set before the workers fork


def _read_range(piece):
    """One piece of a store file: (rows of the glideins whose spans are all in it, the ids of
    the other glideins it has spans of and the lines that hold them, spans read, problems)."""
    rows, partial, lines_of, spans_read, problems = [], defaultdict(dict), defaultdict(set), 0, []
    path, lines = piece.path, piece.lines()
    for number, raw in enumerate(lines):
        try:
            spans = decode_line(raw)
        except ValueError:
            problems.append(f"{path}: a line that is not OTLP JSON, skipped")
            continue
        spans_read += len(spans)
        for span in spans:
            trace = span.context.trace_id
            wanted = _WANTED.get(trace)
            if wanted is not None:
                group = partial[trace]
                group.setdefault(span.context.span_id, span)
                lines_of[trace].add(number)
                if len(group) >= wanted:
                    del partial[trace], lines_of[trace]
                    try:
                        rows.append(glidein_rows(list(group.values())))
                    except NoGlideinRoot:
                        pass
    numbers = sorted(set().union(*lines_of.values())) if lines_of else []
    return rows, set(partial), [lines[n] for n in numbers], spans_read, problems


def from_store(store_dir, table_dir, *, workers: int | None = None) -> BackfillReport:
    """Every glidein trace of the embedded store. The store is read once, in pieces (in
    ``workers`` processes, default one per core); a trace is complete when it holds as many
    spans as the store's index counts for it (the rare trace split across pieces is joined)."""
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor

    from ..exporters.store import Store, line_pieces
    report = BackfillReport()
    expected = {trace: count for trace, count, name, _, _ in Store(store_dir).summaries() if name}
    held = reader.trace_ids(table_dir)
    report.already = sum(1 for trace in expected if trace in held)
    _WANTED.clear()
    _WANTED.update((int(trace, 16), count) for trace, count in expected.items() if trace not in held)
    rows = _Rows(table_dir, report)
    split: dict = defaultdict(dict)
    pieces = line_pieces(store_dir, PIECE_BYTES)
    workers = min(workers or os.cpu_count() or 1, len(pieces))
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) if workers > 1 else None
    try:
        for done, partial, lines, spans_read, problems in (pool.map(_read_range, pieces) if pool
                                                           else map(_read_range, pieces)):
            report.spans += spans_read
            report.problems += problems
            for row, jobs in done:
                rows.add_rows(row, jobs)
            for raw in lines:      # traces split across pieces: their spans joined here
                for span in decode_line(raw):
                    trace = span.context.trace_id
                    if trace in partial:
                        split[trace].setdefault(span.context.span_id, span)
            for trace in partial:
                if len(split[trace]) >= _WANTED[trace]:
                    rows.add_spans(list(split.pop(trace).values()))
    finally:
        if pool is not None:
            pool.shutdown()
        _WANTED.clear()
    for group in split.values():   # fewer spans than the index counted: what there is
        rows.add_spans(list(group.values()))
    rows.write()
    return report


def from_jaeger(base_url: str, table_dir, since: dt.date, until: dt.date, *, service: str = "glidein",
                timeout: float = 30.0, fetch=None) -> BackfillReport:
    """The glideins of ``service`` whose traces started from day ``since`` to day ``until``
    (UTC, both included), asked of Jaeger's query API a day at a time."""
    from ..factory import jaeger_query
    report = BackfillReport()
    rows = _Rows(table_dir, report)
    day = since
    while day <= until:
        start = dt.datetime(day.year, day.month, day.day, tzinfo=dt.timezone.utc).timestamp()
        for spans in jaeger_query.iter_traces(base_url, service, start, start + 86400, report.problems,
                                              timeout=timeout, fetch=fetch):
            report.spans += len(spans)
            rows.add_spans(readable_spans(spans))
        rows.write()
        day += dt.timedelta(days=1)
    return report


def missing_rollups(table_dir) -> tuple[int, int, list]:
    """The rollup (rollup.py) of every data file of the table that has none usable: a table
    written before rollups existed, whose ``rollups/`` was deleted, or of an older rollup
    version; pass files included (a compaction removes their rollups with them). Under the
    table's lock, so no compaction removes a file being read. Returns (rollups written, files
    that had one, problems: the files whose rows do not read, named and left without one)."""
    import pyarrow.parquet as pq
    written, kept, problems = 0, 0, []
    with layout.locked(Path(table_dir)):
        for dataset in DATASETS:
            scan = reader.usable_files(table_dir, dataset)
            have = rollup.usable(scan.files, scan.rows)
            kept += len(have)
            problems += scan.problems
            for path in scan.files:
                if path in have:
                    continue
                try:
                    rows = pq.read_table(path, schema=writer.arrow_schema(dataset))
                except (OSError, ValueError) as exc:
                    problems.append(f"{path}: damaged Parquet file, no rollup written ({str(exc)[:200]})")
                    continue
                rollup.write(rows, dataset, path)
                written += 1
    return written, kept, problems

