"""Spans read back for the glidein table, as the SDK's ReadableSpans (what rows.py takes):
from flat span dicts (``otlp_json.flatten_request``, ``jaeger_query.flatten_trace``), and
from the store's lines for the backfill's bulk read, where msgspec decodes only the fields
the rows read (ids, parent, name, times, status, attributes, resource) with no dicts in
between, about 3 times faster than ``json`` + ``flatten_request``. A line it does not take as
an ordinary request is read by that reference path instead, so both give the same spans.
Either way each span is made by the converter's ``stored_span``, the one place spans are made."""

from __future__ import annotations

import json
from typing import Union

import msgspec
from msgspec import UNSET, Struct, UnsetType
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, Status, StatusCode, TraceFlags

from ..core.converter.readable_span import stored_span
from ..exporters.otlp_json import flatten_request


class _Value(Struct, frozen=True, gc=False):
    """An AnyValue of one of the kinds the typed path converts; any other kind (array, kvlist,
    bytes) leaves all four unset and sends the line to the reference path. (msgspec evaluates
    these annotations: ``Union``, as Python 3.9 has no ``X | Y`` of types.)"""
    stringValue: Union[str, UnsetType] = UNSET
    intValue: Union[int, str, UnsetType] = UNSET       # "12" in OTLP JSON
    doubleValue: Union[float, UnsetType] = UNSET
    boolValue: Union[bool, UnsetType] = UNSET


class _KeyValue(Struct, frozen=True, gc=False):
    key: str
    value: _Value = _Value()


class _Status(Struct, frozen=True, gc=False):
    code: int = 0
    message: str = ""


class _Span(Struct, gc=False):
    traceId: str
    spanId: str
    parentSpanId: str = ""
    name: str = ""
    startTimeUnixNano: Union[int, str] = 0
    endTimeUnixNano: Union[int, str] = 0
    status: _Status = _Status()
    attributes: list[_KeyValue] = []


class _ScopeSpans(Struct, gc=False):
    spans: list[_Span] = []


class _Resource(Struct, frozen=True, gc=False):
    attributes: list[_KeyValue] = []


class _ResourceSpans(Struct, gc=False):
    resource: _Resource = _Resource()
    scopeSpans: list[_ScopeSpans] = []


class _Request(Struct, gc=False):
    resourceSpans: list[_ResourceSpans] = []


_DECODER = msgspec.json.Decoder(_Request)
_STATUS = {0: Status(StatusCode.UNSET), 1: Status(StatusCode.OK), 2: Status(StatusCode.ERROR)}
_CODES = {0: StatusCode.UNSET, 1: StatusCode.OK, 2: StatusCode.ERROR}
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


class _Unusual(Exception):
    """A value the typed path does not convert: the line goes to the reference path."""


def _value(value: _Value):
    if value.intValue is not UNSET:
        return int(value.intValue)
    if value.doubleValue is not UNSET:
        return value.doubleValue
    if value.boolValue is not UNSET:
        return value.boolValue
    raise _Unusual


def _attributes(items) -> dict:
    out = {}
    for kv in items:        # most values are text: those without a call
        value = kv.value
        text = value.stringValue
        out[kv.key] = text if text is not UNSET else _value(value)
    return out


def _spans(request: _Request) -> list:
    """The typed request's spans; contexts shared within the line (a trace id, a parent)."""
    out = []
    trace_hex, trace_id, parents = None, 0, {}
    for resource_spans in request.resourceSpans:
        resource = Resource(_attributes(resource_spans.resource.attributes))
        for scope in resource_spans.scopeSpans:
            for span in scope.spans:
                if span.traceId != trace_hex:
                    trace_hex, trace_id, parents = span.traceId, int(span.traceId, 16), {}
                parent = None
                if span.parentSpanId:
                    parent = parents.get(span.parentSpanId)
                    if parent is None:
                        parent = parents[span.parentSpanId] = SpanContext(trace_id, int(span.parentSpanId, 16), True)
                status = span.status
                out.append(stored_span(
                    span.name, resource, SpanContext(trace_id, int(span.spanId, 16), True, _SAMPLED), parent,
                    Status(_CODES.get(status.code, StatusCode.UNSET), status.message) if status.message
                    else _STATUS.get(status.code, _STATUS[0]),
                    int(span.startTimeUnixNano), int(span.endTimeUnixNano), _attributes(span.attributes)))
    return out


def readable_spans(flat_spans) -> list:
    """Flat span dicts (otlp_json.flatten_request, jaeger_query.flatten_trace) as SDK spans:
    ids, parent, name, times, status, attributes and resource, what rows.py reads."""
    resources: dict = {}
    out = []
    for span in flat_spans:
        try:
            context = SpanContext(int(span["trace_id"], 16), int(span["span_id"], 16), True,
                                  TraceFlags(TraceFlags.SAMPLED))
            parent = span.get("parent_span_id")
            parent_context = SpanContext(context.trace_id, int(parent, 16), True) if parent else None
        except (KeyError, ValueError, TypeError):
            continue
        resource_attrs = span.get("resource") or {}
        resource = resources.get(id(resource_attrs))
        if resource is None:
            resource = resources[id(resource_attrs)] = Resource(resource_attrs)
        out.append(stored_span(span.get("name", ""), resource, context, parent_context,
                               Status(_CODES.get(span.get("status_code"), StatusCode.UNSET),
                                      span.get("status_message") or None),
                               int(span.get("start_ns") or 0), int(span.get("end_ns") or 0),
                               span.get("attributes") or {}))
    return out


def decode_line(raw: bytes) -> list[ReadableSpan]:
    """One store line's spans; ValueError when the line is not OTLP JSON at all."""
    try:
        return _spans(_DECODER.decode(raw))
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, _Unusual, ValueError, TypeError):
        pass
    try:
        return readable_spans(list(flatten_request(json.loads(raw))))
    except (TypeError, AttributeError) as exc:
        raise ValueError(str(exc)) from exc
