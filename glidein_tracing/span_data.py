"""SpanData: one finished span as plain values, what the converter makes and the OTLP encoder reads.

The forwarder moves a Factory's backlog span by span, and the SDK's ``ReadableSpan`` costs it
twice: building one (its constructor, a ``SpanContext`` per span) and reading it back (every
field is a property; ``attributes`` wraps the dict in a new mapping proxy on each read;
``kind`` and ``status`` are enums hashed or looked into). SpanData keeps the same content as
slots of plain values (ids as ints, kind and status code as ints), like OTel Java's exported
``SpanData``. The forwarder converts to SpanData and encodes it directly; every SDK exporter
still gets ``ReadableSpan``s (``to_readable``), and our encoder takes any ``ReadableSpan``
(``from_readable``), so there is one encoder and one converter.
"""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, SpanKind, TraceFlags
from opentelemetry.trace.status import Status, StatusCode

UNSET, OK, ERROR = StatusCode.UNSET.value, StatusCode.OK.value, StatusCode.ERROR.value
INTERNAL = SpanKind.INTERNAL.value
_SHARED_STATUS = {UNSET: Status(StatusCode.UNSET), OK: Status(StatusCode.OK)}   # immutable
_SPAN_KINDS = {kind.value: kind for kind in SpanKind}
_STATUS_CODES = {code.value: code for code in StatusCode}


class SpanData:
    """One span. ``events`` and ``links`` are the SDK's own ``Event`` and ``Link`` objects
    (rare: notes and linked traces); ``resource`` and ``scope`` are shared by a glidein's
    spans. Read it, do not change it: like an SDK span, it is finished."""

    __slots__ = ("name", "trace_id", "span_id", "trace_state", "flags", "parent_id", "parent_remote",
                 "parent_flags", "kind", "start", "end", "attributes", "events", "links", "status_code",
                 "status_description", "resource", "scope")

    def __init__(self, name, trace_id, span_id, parent_id, start, end, attributes, resource, scope, *,
                 status_code=UNSET, status_description=None, events=(), links=(), flags=1,
                 parent_remote=False, parent_flags=1, kind=INTERNAL, trace_state=None):
        self.name = name
        self.trace_id = trace_id                  # int, 128 bits
        self.span_id = span_id                    # int, 64 bits
        self.trace_state = trace_state            # TraceState or None
        self.flags = flags                        # W3C trace flags of this span
        self.parent_id = parent_id                # int, or None for a root
        self.parent_remote = parent_remote
        self.parent_flags = parent_flags
        self.kind = kind                          # SpanKind value
        self.start = start                        # ns since the epoch
        self.end = end
        self.attributes = attributes              # dict
        self.events = events
        self.links = links
        self.status_code = status_code            # StatusCode value
        self.status_description = status_description
        self.resource = resource
        self.scope = scope

    def __repr__(self):
        return f"SpanData({self.name!r}, trace_id={self.trace_id:032x}, span_id={self.span_id:016x})"


def to_readable(span: SpanData) -> ReadableSpan:
    """The SDK's view of a SpanData, for any SDK span exporter."""
    context = SpanContext(span.trace_id, span.span_id, is_remote=False,
                          trace_flags=TraceFlags(span.flags), trace_state=span.trace_state)
    parent = None
    if span.parent_id is not None:
        parent = SpanContext(span.trace_id, span.parent_id, is_remote=span.parent_remote,
                             trace_flags=TraceFlags(span.parent_flags))
    status = _SHARED_STATUS.get(span.status_code) if span.status_description is None else None
    if status is None:
        status = Status(_STATUS_CODES[span.status_code], span.status_description)
    return ReadableSpan(name=span.name, context=context, parent=parent, resource=span.resource,
                        attributes=span.attributes, events=span.events, links=span.links,
                        kind=_SPAN_KINDS[span.kind], status=status, start_time=span.start,
                        end_time=span.end, instrumentation_scope=span.scope)


def from_readable(span: ReadableSpan) -> SpanData:
    """A SpanData holding what an SDK span says (for encoding spans made elsewhere)."""
    context, parent, status = span.context, span.parent, span.status
    return SpanData(
        span.name, context.trace_id, context.span_id,
        parent.span_id if parent is not None else None, span.start_time, span.end_time,
        dict(span.attributes or {}), span.resource, span.instrumentation_scope,
        status_code=status.status_code.value, status_description=status.description,
        events=span.events, links=span.links, flags=int(context.trace_flags),
        parent_remote=bool(parent is not None and parent.is_remote),
        parent_flags=int(parent.trace_flags) if parent is not None else 1,
        kind=span.kind.value, trace_state=context.trace_state or None)


def as_span_data(spans) -> list:
    """SpanData for every span of ``spans``, which may mix SpanData and SDK spans."""
    return [span if type(span) is SpanData else from_readable(span) for span in spans]


def readable_spans(spans) -> list:
    """SDK spans for every span of ``spans``, which may mix SpanData and SDK spans."""
    return [to_readable(span) if type(span) is SpanData else span for span in spans]


def export_span_data(exporter, spans):
    """Export SpanData with ``exporter``: directly when it takes SpanData (``export_span_data``),
    else as the SDK spans every SpanExporter takes."""
    direct = getattr(exporter, "export_span_data", None)
    if direct is not None:
        return direct(spans)
    return exporter.export(readable_spans(spans))
