"""The glidein table built from traces that already exist: the embedded store (read once, in
file order) or Jaeger's query API (a day at a time). Rows are the forwarder's (rows.py), from
the same spans read back; glideins the table already holds are left out, so a backfill that
was stopped can simply be run again."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..core.progress import bar
from . import layout, reader, rollup, writer
from .readable import decode_line, readable_spans
from .rows import GLIDEIN_COLUMNS, NoGlideinRoot, glidein_values
from .schema import DATASETS, GLIDEINS_DATASET, JOBS_DATASET

#: rows held before they are written as one file per day
CHUNK_GLIDEINS = 200_000
_TRACE_ID, _ENDED_AT = GLIDEIN_COLUMNS.index("trace_id"), GLIDEIN_COLUMNS.index("ended_at")


@dataclass
class BackfillReport:
    glideins: int = 0          # rows written
    already: int = 0           # glideins the table held
    spans: int = 0             # spans read
    not_glideins: int = 0      # traces without a glidein root (user traces, submit cycles)
    problems: list = field(default_factory=list)


class _Values:
    """Rows as value tuples in column order (rows.glidein_values) by the day they go to,
    until they become Arrow tables: what a worker sends back is columns, not Python rows."""

    def __init__(self):
        self.by_day: dict = defaultdict(lambda: ([], []))

    def add(self, row: tuple, jobs: list):
        glideins, job_rows = self.by_day[layout.day_of(row[_ENDED_AT])]
        glideins.append(row)
        job_rows.extend(jobs)

    def tables(self) -> dict:
        """day -> (glideins, jobs) as Arrow tables (writer.to_table); the rows are let go."""
        out = {day: (writer.to_table(GLIDEINS_DATASET, glideins), writer.to_table(JOBS_DATASET, jobs))
               for day, (glideins, jobs) in self.by_day.items()}
        self.by_day.clear()
        return out


def _to_ipc(table) -> bytes:
    """An Arrow table as an IPC stream, how a worker sends it: 5-10 times cheaper to make and
    to read back than pickling the table."""
    import pyarrow as pa
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as stream:
        stream.write_table(table)
    return sink.getvalue().to_pybytes()


def _from_ipc(data: bytes):
    import pyarrow as pa
    return pa.ipc.open_stream(data).read_all()


def _without(table, trace_ids: set):
    """``table``'s rows of glideins other than ``trace_ids``."""
    if not trace_ids:
        return table
    import pyarrow as pa
    import pyarrow.compute as pc
    return table.filter(pc.invert(pc.is_in(table["trace_id"], value_set=pa.array(list(trace_ids), pa.string()))))


class _Rows:
    """Rows waiting to be written, as Arrow tables by day (a worker's piece, or the traces
    joined or fetched here); written a chunk at a time under the table's lock, leaving out
    glideins the table holds by then and any met twice (the first is kept)."""

    def __init__(self, table_dir: Path, report: BackfillReport):
        self.table_dir = Path(table_dir)
        self.report = report
        self.tables: dict = defaultdict(list)   # day -> [(glideins, jobs)]
        self.values = _Values()                 # rows made here, not yet tables
        self.count = 0
        self.seen: set = set()

    def add_spans(self, spans):
        try:
            row, jobs = glidein_values(spans)
        except NoGlideinRoot:
            self.report.not_glideins += 1
            return
        if row[_TRACE_ID] in self.seen:
            return
        self.seen.add(row[_TRACE_ID])
        self.values.add(row, jobs)
        self._grown(1)

    def add_tables(self, tables: dict):
        """A piece's rows: day -> Arrow tables of its glideins and their jobs."""
        for day, (glideins, jobs) in tables.items():
            glideins, jobs = _from_ipc(glideins), _from_ipc(jobs)
            ids = glideins.column("trace_id").to_pylist()
            again = self.seen.intersection(ids)
            self.seen.update(ids)
            self.tables[day].append((_without(glideins, again), _without(jobs, again)))
            self._grown(len(ids) - len(again))

    def _grown(self, glideins: int):
        self.count += glideins
        if self.count >= CHUNK_GLIDEINS:
            self.write()

    def write(self):
        if not self.count:
            return
        for day, tables in self.values.tables().items():
            self.tables[day].append(tables)
        import pyarrow as pa
        with layout.locked(self.table_dir):
            writer.finish_compactions(self.table_dir)
            held = reader.trace_ids(self.table_dir, set(self.tables))
            token = writer.new_token()
            glideins, jobs = {}, {}
            for day, tables in self.tables.items():
                day_glideins = pa.concat_tables([g for g, _ in tables])
                there = held.intersection(day_glideins.column("trace_id").to_pylist())
                glideins[day] = _without(day_glideins, there)
                jobs[day] = _without(pa.concat_tables([j for _, j in tables]), there)
            writer.append(self.table_dir, glideins, jobs, token)
        written = sum(table.num_rows for table in glideins.values())
        self.report.glideins += written
        self.report.already += self.count - written
        self.tables.clear()
        self.count = 0


#: bytes of store lines one worker reads at a time
PIECE_BYTES = 8 * 1024 * 1024
_WANTED: dict = {}   # trace id -> spans the store's index counts: set before the workers fork


@dataclass
class _Piece:
    """What a worker found in one piece of a store file."""
    tables: dict = field(default_factory=dict)   # day -> the glideins whole in it, their jobs (IPC)
    partial: set = field(default_factory=set)    # ids of the glideins it has only some spans of
    lines: list = field(default_factory=list)    # the lines that hold those spans
    spans: int = 0
    not_glideins: int = 0
    problems: list = field(default_factory=list)


def _read_range(piece) -> _Piece:
    """One piece of a store file: its whole glideins' rows, made into Arrow tables here (in
    the worker), and what it holds of the others."""
    out, values = _Piece(), _Values()
    groups, lines_of, done = defaultdict(dict), defaultdict(set), set()
    path, lines = piece.path, piece.lines()
    for number, raw in enumerate(lines):
        try:
            spans = decode_line(raw)
        except ValueError:
            out.problems.append(f"{path}: a line that is not OTLP JSON, skipped")
            continue
        out.spans += len(spans)
        for span in spans:
            context = span.context
            trace = context.trace_id
            wanted = _WANTED.get(trace)
            if wanted is None or trace in done:     # not a glidein to write, or whole already
                continue
            group = groups[trace]
            group.setdefault(context.span_id, span)
            lines_of[trace].add(number)
            if len(group) >= wanted:
                del groups[trace], lines_of[trace]
                done.add(trace)
                try:
                    values.add(*glidein_values(list(group.values())))
                except NoGlideinRoot:
                    out.not_glideins += 1
    out.tables = {day: (_to_ipc(glideins), _to_ipc(jobs)) for day, (glideins, jobs) in values.tables().items()}
    out.partial = set(groups)
    out.lines = [lines[n] for n in sorted(set().union(*lines_of.values()))] if lines_of else []
    return out


def from_store(store_dir, table_dir, *, workers: int | None = None, progress: bool = False) -> BackfillReport:
    """Every glidein trace of the embedded store. The store is read once, in pieces (in
    ``workers`` processes, default one per core), each worker making its pieces' rows into
    Arrow tables; a trace is complete when it holds as many spans as the store's index counts
    for it (the rare trace split across pieces is joined here). ``progress``: a bar of the
    store's bytes read (core/progress.py)."""
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor

    from ..exporters.store import Store, line_pieces
    report = BackfillReport()
    expected = {trace: count for trace, count, name, _, _
                in Store(store_dir, read_only=True, progress=progress).summaries() if name}
    held = reader.trace_ids(table_dir)
    report.already = sum(1 for trace in expected if trace in held)
    _WANTED.clear()
    _WANTED.update((int(trace, 16), count) for trace, count in expected.items() if trace not in held)
    rows = _Rows(table_dir, report)
    split: dict = defaultdict(dict)
    pieces = line_pieces(store_dir, PIECE_BYTES)
    workers = min(workers or os.cpu_count() or 1, len(pieces))
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) if workers > 1 else None
    shown = bar(sum(p.end - p.start for p in pieces), desc="backfill: store read", unit="B", unit_scale=True,
                enabled=progress)
    try:
        results = pool.map(_read_range, pieces) if pool else map(_read_range, pieces)
        for source, piece in zip(pieces, results):
            shown.update(source.end - source.start)
            report.spans += piece.spans
            report.not_glideins += piece.not_glideins
            report.problems += piece.problems
            rows.add_tables(piece.tables)
            for raw in piece.lines:      # traces split across pieces: their spans joined here
                for span in decode_line(raw):
                    trace = span.context.trace_id
                    if trace in piece.partial:
                        split[trace].setdefault(span.context.span_id, span)
            for trace in piece.partial:
                if len(split[trace]) >= _WANTED[trace]:
                    rows.add_spans(list(split.pop(trace).values()))
    finally:
        shown.close()
        if pool is not None:
            pool.shutdown()
        _WANTED.clear()
    for group in split.values():   # fewer spans than the index counted: what there is
        rows.add_spans(list(group.values()))
    rows.write()
    return report


def from_jaeger(base_url: str, table_dir, since: dt.date, until: dt.date, *, service: str = "glidein",
                timeout: float = 30.0, fetch=None, progress: bool = False) -> BackfillReport:
    """The glideins of ``service`` whose traces started from day ``since`` to day ``until``
    (UTC, both included), asked of Jaeger's query API a day at a time (``progress``: a bar of
    the days)."""
    from ..exporters import jaeger_query
    report = BackfillReport()
    rows = _Rows(table_dir, report)
    day = since
    with bar((until - since).days + 1, desc="backfill: days from Jaeger", unit="day", enabled=progress) as days:
        while day <= until:
            start = dt.datetime(day.year, day.month, day.day, tzinfo=dt.timezone.utc).timestamp()
            for spans in jaeger_query.iter_traces(base_url, service, start, start + 86400, report.problems,
                                                  timeout=timeout, fetch=fetch):
                report.spans += len(spans)
                rows.add_spans(readable_spans(spans))
            rows.write()
            days.update(1)
            day += dt.timedelta(days=1)
    return report


def missing_rollups(table_dir, progress: bool = False) -> tuple[int, int, list]:
    """The rollups (rollup.py, each kind) of every data file of the table that has none usable:
    a table written before rollups (or that kind) existed, whose ``rollups/`` was deleted, or of
    an older rollup version; pass files included (a compaction removes their rollups with
    them). Under the table's lock, so no compaction removes a file being read. Returns (files
    whose rollups were written, files that had theirs, problems: the files whose rows do not
    read, named and left without one)."""
    import pyarrow.parquet as pq
    written, kept, problems = 0, 0, []
    with layout.locked(Path(table_dir)):
        lacking = []
        for dataset in DATASETS:
            scan = reader.usable_files(table_dir, dataset)
            have = {kind: rollup.usable(scan.files, scan.rows, kind)[0] for kind in rollup.kinds_of(dataset)}
            problems += scan.problems
            for path in scan.files:
                missing = [kind for kind, rolled in have.items() if path not in rolled]
                if missing:
                    lacking.append((dataset, path, missing))
                else:
                    kept += 1
        with bar(len(lacking), desc="rollups", unit="file", enabled=progress) as shown:
            for dataset, path, kinds in lacking:
                shown.update(1)
                try:
                    rows = pq.read_table(path, schema=writer.arrow_schema(dataset))
                except (OSError, ValueError) as exc:
                    problems.append(f"{path}: damaged Parquet file, no rollup written ({str(exc)[:200]})")
                    continue
                rollup.write(rollup.compute(rows, dataset, kinds), path)
                written += 1
    return written, kept, problems
