"""Bounds: every span ends, within its parent, and a trace holds at most so many spans.

A killed glidein leaves stages open: they are closed at the last known time (or their
parent's end) and marked ``glidein.closed_by=converter``, the root ``glidein.incomplete``. The
root covers every stage. GLIDEIN_TRACING_MAX_SPANS bounds the spans a journal can make: the
earliest are kept, the rest counted on the root.
"""

from __future__ import annotations

from .. import conventions as c
from .draft import ROOT, Draft, SpanDraft
from .readable_span import MIN_DURATION_NS, ns

_MANY = ("job/", "idle/")   # the keys a long-lived glidein has thousands of


def close_open_spans(draft: Draft) -> None:
    """Drop spans that never started (e.g. an attr line only), close those never ended, and
    stretch the root over all."""
    for key in [k for k, s in draft.spans.items() if s.start is None and k != ROOT]:
        del draft.spans[key]
    for span in draft.spans.values():
        _close(draft, span)
    _root_bounds(draft)


def _close(draft: Draft, span: SpanDraft, depth: int = 0) -> None:
    """Close a stage a killed glidein left open at the last known time, or at its
    parent's end when that came first (a job cut by a SIGTERM ends with its condor
    phase): a stage never outlives its parent."""
    if span.end is not None:
        return
    last = draft.last_time
    end = last if last is not None else span.start
    parent = draft.spans.get(span.parent) if span.parent else None
    if parent is not None and parent is not span and depth < 8:
        _close(draft, parent, depth + 1)
        if parent.end is not None and end is not None and span.start is not None:
            end = min(end, max(parent.end, span.start))
    span.end = end
    span.closed_by_converter = True
    span.attrs[c.GLIDEIN_CLOSED_BY] = c.CLOSED_BY_CONVERTER


def _root_bounds(draft: Draft) -> None:
    """The root covers every stage (the Factory's view may start before the node's)."""
    root = draft.root
    starts = [s.start for s in draft.spans.values() if s.start is not None]
    ends = [s.end for s in draft.spans.values() if s.end is not None]
    if root.start is None:
        root.start = min(starts) if starts else draft.last_time
    root.start = min([root.start] + starts)
    if root.end is None or root.closed_by_converter:
        root.end = max([root.start] + ends)
    if any(s.closed_by_converter for s in draft.spans.values()):
        root.attrs[c.GLIDEIN_INCOMPLETE] = True


def lasting(draft: Draft) -> None:
    """Every span lasts (a viewer flags one whose end is not after its start): one measured
    as lasting nothing, below its clock's resolution (a whole-second event log), ends 1 us
    after its start and says so (``glidein.time.placed=min_duration``); its parents stretch
    over it. Judged on the microseconds the span is sent with (``ns``), not on the float
    seconds: 1e-6 added to an epoch float can round to the start's own microsecond, and the
    1 us readable_span then adds would put the span outside the parent stretched here."""
    for span in draft.spans.values():
        if span.start is None or span.end is None:
            continue
        start_ns = ns(span.start)
        if ns(span.end) <= start_ns:
            span.end = (start_ns + MIN_DURATION_NS) // 1000 / 1e6
            span.attrs[c.GLIDEIN_TIME_PLACED] = c.TIME_PLACED_MIN_DURATION
            parent, depth = draft.spans.get(span.parent) if span.parent else None, 0
            while parent is not None and parent.end is not None and parent.end < span.end and depth < 64:
                parent.end, depth = span.end, depth + 1
                parent = draft.spans.get(parent.parent) if parent.parent else None


def cap_jobs(draft: Draft) -> None:
    """GLIDEIN_TRACING_MAX_SPANS: a glidein running thousands of short jobs keeps the first
    ones as spans; the rest are counted on the root, not traced."""
    many = draft.keys_starting(_MANY)
    room = max(0, draft.limits.max_spans - (len(draft.spans) - len(many)))
    if len(many) <= room:
        return
    many.sort(key=lambda k: (draft.spans[k].start, k))   # keep the earliest
    dropped = many[room:]
    for key in dropped:
        del draft.spans[key]
    root = draft.root.attrs
    root[c.GLIDEIN_TRACING_JOBS_NOT_TRACED] = sum(1 for k in dropped if k.startswith("job/"))
    root[c.GLIDEIN_TRACING_IDLE_NOT_TRACED] = sum(1 for k in dropped if k.startswith("idle/"))


def cap_spans(draft: Draft) -> None:
    """Spans of every kind together stay within the cap (a journal can open any number
    of keys, or chain parents 300,000 deep): the earliest are kept, the rest counted."""
    max_spans = draft.limits.max_spans
    if len(draft.spans) <= max_spans:
        return
    others = sorted((k for k in draft.spans if k != ROOT), key=lambda k: (draft.spans[k].start, k))
    for key in others[max_spans - 1:]:
        del draft.spans[key]
        draft.dropped["spans"] += 1
