"""The one place a span becomes the SDK's ``ReadableSpan``: every span the converter makes,
the glidein's own and those in a user's trace, is made by ``readable_span``; a span read back
from where it was exported (the store, Jaeger: the glidein table's backfill) by ``stored_span``.

What every span shares is decided here: the instrumentation scope, sampled, internal kind,
times in ns at the microsecond, a span that lasts (a viewer flags one whose end is not after
its start), siblings that meet set 1 us apart (``apart``), and attribute values OTLP can carry.
"""

from __future__ import annotations

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, TraceFlags
from opentelemetry.trace.status import Status

from ... import __version__
from ..conventions import GLIDEIN_TIME_PLACED, GLIDEIN_TRACING_DIGEST, STAGE, TIME_PLACED_MIN_DURATION
from .digest import digest

SCOPE = InstrumentationScope("glidein_tracing", __version__)
SAMPLED = TraceFlags(TraceFlags.SAMPLED)
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1   # OTLP's int_value: a larger int goes as text
MIN_DURATION_NS = 1000   # a span measured as lasting nothing lasts 1 us (Jaeger's resolution)


def readable_span(*, name: str, resource: Resource, trace_id: int, span_id: int,
                  parent: SpanContext | None, status: Status, start_ns: int, end_ns: int,
                  attributes: dict, events=(), links=()) -> ReadableSpan:
    """One finished span of ours (``trace_id``, ``span_id``) under ``parent``, with its
    ``glidein_tracing.digest`` (digest.py). A span whose end is not after its start (shorter
    than its clock's resolution) ends 1 us after it, marked ``glidein.time.placed=min_duration``."""
    if end_ns <= start_ns:
        end_ns = start_ns + MIN_DURATION_NS
        attributes = {**attributes, GLIDEIN_TIME_PLACED: TIME_PLACED_MIN_DURATION}
    attributes = {**within_otlp(attributes), GLIDEIN_TRACING_DIGEST: digest(
        trace_id, span_id, parent.span_id if parent is not None else 0, name, attributes.get(STAGE, ""),
        start_ns, end_ns, status.status_code.value)}
    return ReadableSpan(
        name=name, resource=resource, instrumentation_scope=SCOPE,
        context=SpanContext(trace_id, span_id, is_remote=False, trace_flags=SAMPLED),
        parent=parent, kind=SpanKind.INTERNAL, status=status, start_time=start_ns,
        end_time=end_ns, attributes=attributes, events=events, links=links)


def lasting_within(start_ns: int, low_ns: int, high_ns: int) -> tuple[int, int]:
    """(start, end) of a span measured as lasting nothing at ``start_ns``: 1 us long, within
    [low_ns, high_ns] (its parent) when the parent lasts that long."""
    end = min(start_ns + MIN_DURATION_NS, high_ns)
    return max(min(start_ns, end - MIN_DURATION_NS), low_ns), end


GAP_NS = MIN_DURATION_NS   # how far apart siblings that met are set (apart)


def apart(times: dict, parents: dict, fixed: dict, placed: frozenset = frozenset()) -> dict:
    """``times`` (key -> (start ns, end ns), on the microsecond) with siblings (same parent in
    ``parents``) that meet exactly set 1 us apart: the earlier one ends 1 us sooner, else the
    later one starts 1 us later (first, when the earlier is one of ``placed``: a script placed
    in its record's second may end at the second's very start); children that shared that end or start move with it, and
    nothing moves that would then last 1 us or less. ``fixed``: key -> (the part of the trace
    the span may have been sent with before the rest: the Factory's stages while the glidein
    ran, the node's sent live; the parts it may still move for): such a span moves only for a
    sibling of those parts, never as a child (a changed copy would be a second span under its
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
        return key not in fixed or fixed.get(other, (None,))[0] in fixed[key][1]

    for key in sorted(times, key=lambda k: times[k][0]):
        start = out[key][0]
        for earlier in ending.get((parents.get(key), start), ()):
            if out[earlier][1] == start and earlier != key:
                moves = [(earlier, key, False), (key, earlier, True)]
                for mover, other, start_side in (moves[::-1] if earlier in placed else moves):
                    if may_move(mover, other) and _move(mover, start, out, children, fixed, start_side,
                                                        fixed.get(other, (None,))[0]):
                        break
                break
    return out


def _move(key: str, at: int, times: dict, children: dict, fixed: dict, start_side: bool, part) -> bool:
    """``key``'s end (or start) at ``at``, and its descendants' that share it, 1 us inward;
    False (nothing moved) when one of them would then last 1 us or less, or may not move for
    ``part`` (the sibling's part of the trace)."""
    side = 0 if start_side else 1
    moving, stack = [], [key]
    while stack:
        current = stack.pop()
        moving.append(current)
        stack.extend(k for k in children.get(current, ()) if times[k][side] == at)
    if any(times[k][1] - times[k][0] <= 2 * GAP_NS for k in moving) \
            or any(k in fixed and part not in fixed[k][1] for k in moving[1:]):
        return False
    for k in moving:
        times[k] = (at + GAP_NS, times[k][1]) if start_side else (times[k][0], at - GAP_NS)
    return True


def stored_span(name: str, resource: Resource, context: SpanContext, parent: SpanContext | None,
                status: Status, start_ns: int, end_ns: int, attributes: dict) -> ReadableSpan:
    """A span read back as it was exported, taken as it is: its digest is among its attributes
    already, and re-making it (or anything else) would cost the backfill more than the read."""
    return ReadableSpan(name, context, parent, resource, attributes, status=status, start_time=start_ns,
                        end_time=end_ns)


def with_attributes(span: ReadableSpan, changes: dict) -> ReadableSpan:
    """The same span with ``changes`` over its attributes (a step after the converter, such as
    the VO's failure rules, re-deciding some of them)."""
    return ReadableSpan(
        name=span.name, resource=span.resource, instrumentation_scope=span.instrumentation_scope,
        context=span.context, parent=span.parent, kind=span.kind, status=span.status,
        start_time=span.start_time, end_time=span.end_time,
        attributes=within_otlp({**(span.attributes or {}), **changes}), events=span.events, links=span.links)


def local_parent(trace_id: int, span_id: int) -> SpanContext:
    """The context of a parent span in the same trace, made here."""
    return SpanContext(trace_id, span_id, is_remote=False, trace_flags=SAMPLED)


def remote_context(trace_id: int, span_id: int, flags: int) -> SpanContext:
    """A context from a traceparent (a user's span, a link target): only the sampled bit kept."""
    return SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(flags & 1))


def ns(seconds: float) -> int:
    """Epoch seconds -> ns. Journal times have microseconds; a double at today's epoch is
    ~256 ns coarse, so round at the microsecond (seconds * 1e9 would land 1 us early)."""
    return int(round(seconds * 1e6)) * 1000


def within_otlp(attrs: dict) -> dict:
    """``attrs`` with every int OTLP cannot carry (beyond int64) as its text: one such value
    from a journal or a ClassAd must not fail the export of a whole batch."""
    if any(type(v) is int and not INT64_MIN <= v <= INT64_MAX for v in attrs.values()):
        return {k: str(v) if type(v) is int and not INT64_MIN <= v <= INT64_MAX else v
                for k, v in attrs.items()}
    return attrs
