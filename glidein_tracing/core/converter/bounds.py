"""Bounds: every span ends, within its parent, and a trace holds at most so many spans.

A killed glidein leaves stages open: they are closed at the last known time (or their
parent's end) and marked ``glidein.closed_by=converter``, the root ``glidein.incomplete``. The
root covers every stage. GLIDEIN_TRACING_MAX_SPANS bounds the spans a journal can make: the
earliest are kept, the rest counted on the root.
"""

from __future__ import annotations

from .. import conventions as c
from .draft import ROOT, Draft, SpanDraft

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


MIN_DURATION_S = 1e-6   # Jaeger's resolution


def lasting(draft: Draft) -> None:
    """Every span lasts (a viewer flags one whose end is not after its start): one measured
    as lasting nothing, below its clock's resolution (a whole-second event log), ends 1 us
    after its start and says so (``glidein.time.placed=min_duration``); its parents stretch
    over it."""
    for span in draft.spans.values():
        if span.start is not None and span.end is not None and span.end <= span.start:
            span.end = span.start + MIN_DURATION_S
            span.attrs[c.GLIDEIN_TIME_PLACED] = c.TIME_PLACED_MIN_DURATION
            parent, depth = draft.spans.get(span.parent) if span.parent else None, 0
            while parent is not None and parent.end is not None and parent.end < span.end and depth < 64:
                parent.end, depth = span.end, depth + 1
                parent = draft.spans.get(parent.parent) if parent.parent else None


GAP_NS = 1000   # Jaeger's resolution: 1 us


def apart(times: dict, parents: dict, fixed: dict, placed: frozenset = frozenset()) -> dict:
    """``times`` (key -> (start ns, end ns), on the microsecond) with siblings (same parent in
    ``parents``) that meet exactly set 1 us apart: the earlier one ends 1 us sooner, else the
    later one starts 1 us later (first, when the earlier is one of ``placed``: a script placed
    in its record's second may end at the second's very start); children that shared that end or start move with it, and
    nothing moves that would then last 1 us or less. ``fixed``: key -> the part of the trace
    the span may have been sent with before the rest (the Factory's stages while the glidein
    ran, the node's sent live; a job is a part of its own): such a span moves only for a
    sibling of its own part, never as a child (a changed copy would be a second span under its
    id). Jaeger's critical path steps back from a stage only to a sibling that ended strictly
    before it began (jaeger-ui v1.76, ``findLastFinishingChildSpan``: ``end <
    returningChildStartTime``), so stages that meet (setup and condor, a job and the idle gap
    after it) would leave the earlier one off the path. The times that meet come from one
    record or one event, so 1 us says nothing measured. Spans that overlap (a SIGTERM:
    HTCondor's shutdown overlaps cleanup) stay as they are."""
    children: dict = {}
    ending: dict = {}     # (parent, end) -> keys of the children ending then
    for key, (_start, end) in times.items():
        children.setdefault(parents.get(key), []).append(key)
        ending.setdefault((parents.get(key), end), []).append(key)
    out = dict(times)

    def may_move(key, other):
        return fixed.get(key) is None or fixed.get(key) == fixed.get(other)

    for key in sorted(times, key=lambda k: times[k][0]):
        start = out[key][0]
        for earlier in ending.get((parents.get(key), start), ()):
            if out[earlier][1] == start and earlier != key:
                moves = [(earlier, key, False), (key, earlier, True)]
                for mover, other, start_side in (moves[::-1] if earlier in placed else moves):
                    if may_move(mover, other) and _move(mover, start, out, children, fixed, start_side):
                        break
                break
    return out


def _move(key: str, at: int, times: dict, children: dict, fixed: dict, start_side: bool) -> bool:
    """``key``'s end (or start) at ``at``, and its descendants' that share it, 1 us inward;
    False (nothing moved) when one of them would then last 1 us or less, or is fixed."""
    side = 0 if start_side else 1
    moving, stack = [], [key]
    while stack:
        current = stack.pop()
        moving.append(current)
        stack.extend(k for k in children.get(current, ()) if times[k][side] == at)
    if any(times[k][1] - times[k][0] <= 2 * GAP_NS for k in moving) or any(k in fixed for k in moving[1:]):
        return False
    for k in moving:
        times[k] = (at + GAP_NS, times[k][1]) if start_side else (times[k][0], at - GAP_NS)
    return True


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
