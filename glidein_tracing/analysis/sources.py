"""Where spans come from: the embedded store, OTLP JSON files, or Jaeger's query API.

Every source yields *batches* of flat span dicts (the shape of
``exporters.otlp_json.flatten_request``); ``group_traces`` turns batches into
``(trace_id, spans)`` groups with bounded memory, and ``collect_table`` builds the compact
``TimelineTable`` from groups, merging the rare trace whose spans were split far apart.

Bounded memory: the store usually holds one glidein per line (the exporter writes one
request per export), but a trace may be split (exported live, then recovered later, or
Factory spans forwarded separately). ``group_traces`` keeps at most ``max_pending`` open
traces and closes a trace once ``idle_batches`` batches went by without a span of it. A
span that arrives after its trace was closed starts a fragment, and ``collect_table``
merges fragments into the trace's timeline (flagged ``fragmented``), never holding spans of
closed traces.
"""

from __future__ import annotations

import glob
import json
import os
import time
from collections import OrderedDict
from operator import itemgetter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..factory import jaeger_query
from ..exporters.otlp_json import attributes, flatten_request
from ..exporters.store import store_files
from . import fastread
from .timeline import (K_GLIDEIN, R_KIND, GlideinTimeline, TableBuilder, TimelineTable, is_glidein_span, span_record,
                       timeline_fields, timeline_from_spans)


@dataclass
class ReadReport:
    """What reading found besides spans: counted, never fatal."""

    files: int = 0
    lines: int = 0
    bad_lines: int = 0
    spans: int = 0
    spans_without_trace_id: int = 0
    traces: int = 0
    fragments: int = 0
    not_glidein_traces: int = 0
    errors: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return {k: (v[:20] if isinstance(v, list) else v) for k, v in self.__dict__.items()}


# a line (one request) is ~9 KB: with the default 8 KB buffer every line takes the slow path
READ_BUFFER = 1 << 20

# -- files --------------------------------------------------------------------------------

def _request_of(line, report: ReadReport) -> dict | None:
    """One JSON Lines line as a request (a JSON object); anything else is counted a bad line."""
    try:
        request = json.loads(line)
    except ValueError:
        request = None
    if isinstance(request, dict):
        return request
    report.bad_lines += 1
    return None


def _requests_in_text(text: str, report: ReadReport):
    """One JSON document (a request, or a list of them) or JSON Lines of requests."""
    stripped = text.strip()
    if not stripped:
        return
    try:
        whole = json.loads(stripped)
    except ValueError:
        whole = None
    if whole is not None:
        report.lines += 1
        for request in (whole if isinstance(whole, list) else [whole]):
            if isinstance(request, dict):
                yield request
            else:
                report.bad_lines += 1
        return
    for line in stripped.splitlines():
        if not line.strip():
            continue
        report.lines += 1
        request = _request_of(line, report)
        if request is not None:
            yield request


def _flatten(request: dict, report: ReadReport) -> list:
    try:
        spans = list(flatten_request(request))
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        report.bad_lines += 1
        if len(report.errors) < 20:
            report.errors.append(f"unusable request: {exc}")
        return []
    report.spans += len(spans)
    return spans


def iter_jsonl_batches(path, report: ReadReport):
    """Span batches of one JSON Lines file (one batch per line), streaming."""
    report.files += 1
    with open(path, "rb", buffering=READ_BUFFER) as handle:
        for raw in handle:
            if not raw.strip():
                continue
            report.lines += 1
            request = _request_of(raw, report)
            if request is not None:
                yield _flatten(request, report)


def iter_jsonl_records(path, report: ReadReport):
    """Span record batches of one JSON Lines file (``fastread``): the same lines, counts and
    records as ``iter_jsonl_batches`` followed by ``span_record``, several times faster."""
    report.files += 1
    decode = fastread.decode_line
    with open(path, "rb", buffering=READ_BUFFER) as handle:
        for raw in handle:
            if not raw.strip():
                continue
            report.lines += 1
            records = decode(raw)
            if records is None:     # not an ordinary request: exactly as the reference path
                request = _request_of(raw, report)
                if request is None:
                    continue
                try:
                    records = fastread.reference_records(request)
                except (TypeError, ValueError, AttributeError, KeyError) as exc:
                    report.bad_lines += 1
                    if len(report.errors) < 20:
                        report.errors.append(f"unusable request: {exc}")
                    records = []
            report.spans += len(records)
            yield records


def _is_jsonl(path) -> bool:
    with open(path, "rb") as handle:
        first_line = handle.readline().strip()
    try:
        json.loads(first_line)
    except ValueError:
        return False
    return bool(first_line)


def iter_otlp_file_batches(path, report: ReadReport):
    """An OTLP JSON file: JSON Lines of ExportTraceServiceRequest, or one JSON document."""
    path = Path(path)
    if _is_jsonl(path):
        yield from iter_jsonl_batches(path, report)
        return
    report.files += 1
    for request in _requests_in_text(path.read_text(encoding="utf-8", errors="replace"), report):
        yield _flatten(request, report)


def iter_otlp_file_records(path, report: ReadReport):
    """Span record batches of an OTLP JSON file (``iter_otlp_file_batches`` as records)."""
    if _is_jsonl(path):
        yield from iter_jsonl_records(path, report)
        return
    for batch in iter_otlp_file_batches(path, report):
        yield [span_record(span) for span in batch]


def iter_store_batches(directory, report: ReadReport):
    for path in store_files(directory):
        yield from iter_jsonl_batches(path, report)


def iter_store_records(directory, report: ReadReport):
    for path in store_files(directory):
        yield from iter_jsonl_records(path, report)


def expand_paths(patterns) -> list[Path]:
    out = []
    for pattern in patterns:
        matches = sorted(glob.glob(str(pattern))) or [str(pattern)]
        for match in matches:
            path = Path(match)
            if path.is_dir():
                out.extend(store_files(path) or sorted(path.glob("*.json*")))
            else:
                out.append(path)
    return out


# -- Jaeger (jaeger_query.py reads its API) ---------------------------------------------------

def iter_jaeger_batches(base_url: str, service: str, since: float, until: float, report: ReadReport,
                        *, limit: int = 500, min_window_s: float = 1.0, timeout: float = 30.0,
                        fetch=None):
    """Traces of ``service`` between ``since`` and ``until`` (epoch s), one batch per trace.

    Pages by time window: a window whose answer is full (``limit`` traces) is split in two
    and asked again, so no trace is silently cut off; traces seen in two windows are given
    once. ``fetch(url) -> json`` can be replaced (tests)."""
    fetch = fetch or (lambda url: jaeger_query.get_json(url, timeout))
    base = base_url.rstrip("/")
    seen: set[str] = set()
    windows = [(float(since), float(until))]
    while windows:
        start, end = windows.pop()
        try:
            answer = fetch(jaeger_query.search_url(base, service, start, end, limit))
        except (OSError, ValueError) as exc:
            report.errors.append(f"jaeger query {start:.0f}-{end:.0f}: {exc}")
            continue
        report.lines += 1
        traces = (answer or {}).get("data") or []
        if len(traces) >= limit and end - start > min_window_s:
            middle = (start + end) / 2
            windows.append((middle, end))
            windows.append((start, middle))
            continue
        for trace in traces:
            trace_id = str(trace.get("traceID", "")).lower().zfill(32)
            if trace_id in seen:
                continue
            seen.add(trace_id)
            spans = jaeger_query.flatten_trace(trace)
            report.spans += len(spans)
            yield spans


# -- grouping -----------------------------------------------------------------------------------

def group_traces(batches, report: ReadReport | None = None, *, max_pending: int = 20000,
                 idle_batches: int = 2000, trace_of=None):
    """``(trace_id, spans)`` per trace from span batches, holding at most ``max_pending``
    open traces; a trace is closed when ``idle_batches`` batches passed without its spans.
    ``trace_of(span)`` gives a span's trace id (default: the dict's ``trace_id``; records:
    ``operator.itemgetter(0)``)."""
    report = report or ReadReport()
    trace_of = trace_of or _trace_id_of
    pending: OrderedDict[str, list] = OrderedDict()
    touched: dict[str, int] = {}
    for number, batch in enumerate(batches):
        ids = list(map(trace_of, batch))
        if ids and ids[0] and ids.count(ids[0]) == len(ids):   # the usual case: one trace per batch
            order = ids[:1]
            local = {ids[0]: list(batch)}
        else:
            # the batch's spans by trace, then the open traces are touched in the order of
            # their last span in the batch, as span-by-span would
            local = {}
            last: dict[str, int] = {}
            for index, (span, trace_id) in enumerate(zip(batch, ids)):
                if not trace_id:
                    report.spans_without_trace_id += 1
                    continue
                group = local.get(trace_id)
                if group is None:
                    local[trace_id] = [span]
                else:
                    group.append(span)
                last[trace_id] = index
            order = local if len(local) < 2 else sorted(local, key=last.__getitem__)
        for trace_id in order:
            group = pending.get(trace_id)
            if group is None:
                pending[trace_id] = local[trace_id]
            else:
                group.extend(local[trace_id])
                pending.move_to_end(trace_id)
            touched[trace_id] = number
        while pending:
            oldest = next(iter(pending))
            if len(pending) > max_pending or touched[oldest] < number - idle_batches:
                del touched[oldest]
                yield oldest, pending.pop(oldest)
            else:
                break
    for trace_id, spans in pending.items():
        yield trace_id, spans


def _trace_id_of(span: dict):
    return span.get("trace_id")


def is_glidein_trace(spans) -> bool:
    """A glidein trace has a span of a glidein stage (not only frontend/submit-cycle spans)."""
    return any(is_glidein_span(span.get("attributes"), span.get("name")) for span in spans)


def collect_table(groups, report: ReadReport | None = None, *, keep=None, records: bool = False) -> TimelineTable:
    """The timeline table of trace groups; fragments of one trace are merged.

    Each timeline goes into the compact table at once; only the row index per trace id and
    the (rare) late fragments are held. ``keep(table) -> bool mask`` filters afterwards
    (e.g. by entry or site), so a filter sees merged timelines. ``records``: the groups hold
    span records (``timeline.span_record``), not span dicts."""
    report = report or ReadReport()
    builder = TableBuilder()
    rows: dict[str, int] = {}
    late: dict[str, object] = {}
    for trace_id, spans in groups:
        if records:
            if not any([rec[R_KIND][K_GLIDEIN] for rec in spans]):
                report.not_glidein_traces += 1
                continue
            fields = timeline_fields(trace_id, spans)
            if trace_id not in rows:       # the usual case: no GlideinTimeline object
                rows[trace_id] = builder.add_fields(fields)
                continue
            timeline = GlideinTimeline(*fields)
        elif not is_glidein_trace(spans):
            report.not_glidein_traces += 1
            continue
        else:
            timeline = timeline_from_spans(trace_id, spans)
        if trace_id in rows:
            report.fragments += 1
            previous = late.get(trace_id)
            late[trace_id] = previous.merge(timeline) if previous is not None else timeline
            continue
        rows[trace_id] = builder.add(timeline)
    table = builder.finish()
    if late:
        drop = np.zeros(len(table), dtype=bool)
        extra = TableBuilder()
        for trace_id, fragment in late.items():
            row = rows[trace_id]
            drop[row] = True
            extra.add(table.timeline(row).merge(fragment))
        table = TimelineTable.concat([table.select(~drop), extra.finish()])
    if keep is not None and len(table):
        table = table.select(keep(table))
    report.traces = len(table)
    return table


def default_workers() -> int:
    """Reading processes used when none are given: every core this process may run on, at
    most 4 (1 on a single core: no pool)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


def _file_table(path: str, max_pending: int, fast: bool = False):
    """One file -> (table, report): the unit of work of the parallel loader."""
    report = ReadReport()
    if fast:
        groups = group_traces(iter_otlp_file_records(path, report), report, max_pending=max_pending,
                              trace_of=_RECORD_TRACE)
        table = collect_table(groups, report, records=True)
    else:
        table = collect_table(group_traces(iter_otlp_file_batches(path, report), report, max_pending=max_pending),
                              report)
    return table, report


_RECORD_TRACE = itemgetter(0)


def merge_duplicate_traces(table: TimelineTable) -> tuple[TimelineTable, int]:
    """Merge rows with the same trace id (a trace split across files read separately)."""
    first: dict[str, int] = {}
    duplicates: dict[int, list[int]] = {}
    for row, trace_id in enumerate(table.trace_ids or ()):
        seen = first.setdefault(trace_id, row)
        if seen != row:
            duplicates.setdefault(seen, []).append(row)
    if not duplicates:
        return table, 0
    drop = np.zeros(len(table), dtype=bool)
    extra = TableBuilder()
    for row, others in duplicates.items():
        merged = table.timeline(row)
        drop[row] = True
        for other in others:
            merged = merged.merge(table.timeline(other))
            drop[other] = True
        extra.add(merged)
    return TimelineTable.concat([table.select(~drop), extra.finish()]), sum(map(len, duplicates.values()))


def _size(path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _read_file(path: str, max_pending: int, fast: bool, cache_store, key):
    """Read one file (in a worker process or in this one) and, with a cache, write its entry
    there too, so that missing entries are filled in parallel: ``((table, report), written)``."""
    table, part = _file_table(path, max_pending, fast)
    written = False
    if cache_store is not None:
        from . import cache
        written = cache.save(cache_store, path, key, table, dict(part.__dict__))
    return (table, part), written


def load_files_parallel(paths, workers: int, report: ReadReport, *, keep=None,
                        max_pending: int = 20000, fast: bool | None = None, cache_store=None,
                        cache_stats: dict | None = None) -> TimelineTable:
    """Read files in ``workers`` processes (one file per task), then merge traces split
    across files. Each worker returns compact numpy columns, never spans.

    ``cache_store``: the store directory whose ``analysis.cache`` holds per-file tables: files
    that did not change since they were cached are not read again; the others are read and
    cached. The table is the same as without the cache. ``cache_stats`` gets hits, misses,
    written and pruned counts."""
    fast = fastread.available() if fast is None else fast
    paths = [str(p) for p in paths]
    parts: list = [None] * len(paths)
    keys: list = [None] * len(paths)
    stats = {"hits": 0, "misses": 0, "written": 0, "pruned": 0}
    if cache_store is not None:
        from . import cache
        stats["pruned"] = cache.prune(cache_store, [Path(p).name for p in paths])
        for index, path in enumerate(paths):
            keys[index] = cache.file_key(path, max_pending)    # before reading: see analysis.cache
            hit = cache.load(cache_store, path, keys[index])
            if hit is not None:
                table, counts = hit
                part = ReadReport()
                part.__dict__.update(counts)
                parts[index] = (table, part)
                stats["hits"] += 1
    todo = [index for index, part in enumerate(parts) if part is None]
    stats["misses"] = len(todo)
    store = None if cache_store is None else str(cache_store)
    if workers > 1 and len(todo) > 1:
        from concurrent.futures import ProcessPoolExecutor
        # largest files first (the store's newest file is usually the smallest), so that no
        # worker is left alone with a big file at the end; each task returns the compact
        # table of its file (and has written its cache entry), never spans
        order = sorted(todo, key=lambda i: -_size(paths[i]))
        with ProcessPoolExecutor(max_workers=min(workers, len(todo))) as pool:
            futures = {pool.submit(_read_file, paths[i], max_pending, fast, store, keys[i]): i
                       for i in order}
            for future, index in futures.items():
                parts[index], written = future.result()
                stats["written"] += written
    else:
        for index in todo:
            parts[index], written = _read_file(paths[index], max_pending, fast, store, keys[index])
            stats["written"] += written
    if cache_stats is not None:
        cache_stats.update(stats)
    tables = []
    for table, part in parts:
        tables.append(table)
        for name, value in part.__dict__.items():
            if name == "errors":
                report.errors.extend(value[: max(0, 20 - len(report.errors))])
            elif name != "traces":
                setattr(report, name, getattr(report, name) + value)
    table, merged = merge_duplicate_traces(TimelineTable.concat(tables))
    report.fragments += merged
    if keep is not None and len(table):
        table = table.select(keep(table))
    report.traces = len(table)
    return table


def load_table(*, store=None, otlp_files=None, jaeger=None, service="glidein", since=None, until=None,
               keep=None, report: ReadReport | None = None, max_pending: int = 20000,
               workers: int | None = None, fast: bool | None = None, cache: bool = False,
               cache_stats: dict | None = None) -> TimelineTable:
    """Read one source into a TimelineTable (files in ``workers`` processes when > 1; default
    ``default_workers()``: every core, at most 4; 1 reads in this process).

    ``fast`` (default: ``fastread.available()``): read JSON Lines with the typed decoder of
    ``fastread`` into span records; False: the reference path (``json`` + span dicts). Both
    give the same table. ``cache`` (store only): keep each store file's table in
    ``<store>/.analysis-cache`` and read only files that changed (``analysis.cache``); the
    files are then always read one by one, as with ``workers`` > 1, and the table is the same
    as without the cache."""
    report = report or ReadReport()
    fast = fastread.available() if fast is None else fast
    workers = default_workers() if workers is None else max(1, int(workers))
    records = False
    if store is not None:
        if not Path(store).is_dir():
            raise FileNotFoundError(f"no store directory {store}")
        paths = store_files(store)
        if cache or (workers > 1 and len(paths) > 1):
            return load_files_parallel(paths, workers, report, keep=keep, max_pending=max_pending, fast=fast,
                                       cache_store=store if cache else None, cache_stats=cache_stats)
        batches = iter_store_records(store, report) if fast else iter_store_batches(store, report)
        records = fast
    elif otlp_files:
        paths = expand_paths(otlp_files)
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise FileNotFoundError(f"no such file: {', '.join(missing)}")
        if workers > 1 and len(paths) > 1:
            return load_files_parallel(paths, workers, report, keep=keep, max_pending=max_pending, fast=fast)
        read = iter_otlp_file_records if fast else iter_otlp_file_batches
        batches = (batch for path in paths for batch in read(path, report))
        records = fast
    elif jaeger:
        until = time.time() if until is None else until
        since = until - 86400 if since is None else since
        batches = iter_jaeger_batches(jaeger, service, since, until, report)
    else:
        raise ValueError("no source: give a store, OTLP JSON files or a Jaeger URL")
    groups = group_traces(batches, report, max_pending=max_pending, trace_of=_RECORD_TRACE if records else None)
    return collect_table(groups, report, keep=keep, records=records)
