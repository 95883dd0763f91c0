"""Fast reading of OTLP JSON Lines (the store's files) into span records.

``otlp_json.flatten_request`` turns a ``json.loads``'d request into span dicts; for a store of a
million glideins (~9 GB) that is most of the end-to-end time. This module decodes each line
with msgspec into typed structs that hold only the fields the analysis reads (events, links,
kinds, scopes, status messages are skipped by the parser without being built), keeps only the
attributes the timeline reads (``timeline.TIMELINE_KEYS``) and yields the records of
``timeline.timeline_from_records`` directly, with no span dicts in between.

Same results as the reference path (``json.loads`` + ``flatten_request`` + ``span_record``), line
by line: a line the typed decoder does not accept as an ordinary request (malformed JSON,
unexpected types, numbers out of range, ...) is handed to the reference path, which then
counts it (bad line) or reads it exactly as before. Attributes the analysis does not read are
still checked the way the reference converts them (an ``intValue`` that is not an integer
makes the request unusable there, so here too). tests/test_analysis_fastread.py compares
both paths on synthetic stores and on odd lines.

``available()`` is false when msgspec is missing or ``GLIDEIN_TRACING_FAST_READ=0``: then
the sources use the reference path.
"""

from __future__ import annotations

import json
import os

from ..exporters.otlp_json import any_value, flatten_request
from .timeline import IDENTITY_KEYS, TIMELINE_KEYS, span_kind, span_record

try:
    import msgspec
    from msgspec import UNSET, Struct, UnsetType
except ImportError:  # pragma: no cover - msgspec is a dependency; the reference path still works
    msgspec = None


def available() -> bool:
    return msgspec is not None and os.environ.get("GLIDEIN_TRACING_FAST_READ", "1") not in ("0", "false", "no")


if msgspec is not None:
    class AnyValue(Struct, frozen=True, gc=False):
        stringValue: str | None | UnsetType = UNSET
        intValue: int | str | UnsetType = UNSET
        doubleValue: float | str | UnsetType = UNSET
        boolValue: bool | None | UnsetType = UNSET
        arrayValue: msgspec.Raw | UnsetType = UNSET      # rare: converted by the reference code
        kvlistValue: msgspec.Raw | UnsetType = UNSET
        bytesValue: msgspec.Raw | UnsetType = UNSET

    _NO_VALUE = AnyValue()

    class KeyValue(Struct, gc=False):
        key: str
        value: AnyValue = _NO_VALUE

    class Status(Struct, frozen=True, gc=False):
        code: int | str | None = None

    _NO_STATUS = Status()

    _NULL = msgspec.Raw(b"null")

    class Span(Struct, gc=False):   # a null status is refused (the reference path takes it)
        traceId: str | None = None
        spanId: str | None = None
        parentSpanId: str | None = None
        name: str = ""
        startTimeUnixNano: int | str | None = None
        endTimeUnixNano: int | str | None = None
        status: Status = _NO_STATUS
        attributes: msgspec.Raw = _NULL         # decoded on first sight (_span_attributes)

    class ScopeSpans(Struct, gc=False):
        spans: list[Span] | None = None

    class Resource(Struct, gc=False):
        attributes: list[KeyValue] | None = None

    class ResourceSpans(Struct, gc=False):
        resource: Resource | None = None
        scopeSpans: list[ScopeSpans] | None = None

    class Request(Struct, gc=False):
        resourceSpans: list[ResourceSpans] | None = None

    _DECODER = msgspec.json.Decoder(Request)
    _ATTRIBUTES_DECODER = msgspec.json.Decoder(list[KeyValue] | None)
    _DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError)


def _rare_value(value):
    """An AnyValue with no string or int value: as ``otlp_json.any_value`` gives it."""
    if value.doubleValue is not UNSET:
        return float(value.doubleValue)
    if value.boolValue is not UNSET:
        return bool(value.boolValue)
    for name in ("arrayValue", "kvlistValue", "bytesValue"):
        raw = getattr(value, name)
        if raw is not UNSET:
            return any_value({name: json.loads(bytes(raw))})
    return None


def _attributes(items, wanted) -> dict:
    """``otlp_json.attributes`` restricted to ``wanted`` keys; every value is still converted
    (so a value the reference cannot convert raises here too). Last key wins, as in a dict."""
    out = {}
    for kv in items or ():
        value = kv.value
        key = kv.key
        if key in wanted:
            converted = value.stringValue
            if converted is UNSET:
                converted = value.intValue
                converted = int(converted) if converted is not UNSET else _rare_value(value)
            out[key] = converted
        elif value.stringValue is UNSET:     # not read, but converted as the reference would
            if value.intValue is not UNSET:
                int(value.intValue)
            elif type(value.doubleValue) is not float:   # a JSON number needs no converting
                _rare_value(value)
    return out


# (span name, raw attributes JSON) -> span_kind: most spans repeat another's name and
# attributes exactly (a validation script's id and status, a queue span's stage), so their
# attributes are decoded once per worker.
_KINDS: dict = {}
_KINDS_MAX = 50_000
_STATUS_CODES = {None: 0, 0: 0, 1: 1, 2: 2}


# spans whose attributes are unique to them (a glidein's identity, a job's ids and exit code,
# the condor phase's shutdown): decoded each time, never cached, so the cache holds only
# kinds that repeat instead of filling with one-off keys and being cleared
_UNCACHED_NAMES = frozenset({"glidein", "job", "condor"})


def _kind_of(name: str, raw: bytes) -> tuple:
    attrs = _attributes(_ATTRIBUTES_DECODER.decode(raw), TIMELINE_KEYS)
    stage = attrs.get("glidein.stage")
    if stage and type(stage) is str and "glidein.user_view" not in attrs:  # span_kind, the usual case
        return stage, not stage.startswith("frontend."), attrs
    return span_kind(attrs, name)


def _span_kind(key: tuple) -> tuple:
    kind = _kind_of(*key)
    if len(_KINDS) >= _KINDS_MAX:
        _KINDS.clear()
    _KINDS[key] = kind
    return kind


def request_records(request) -> list:
    """The span records (``timeline.span_record``) of one decoded request; raises where
    ``flatten_request`` raises."""
    out = []
    append = out.append
    kinds = _KINDS
    codes = _STATUS_CODES
    for resource_spans in request.resourceSpans or ():
        res = resource_spans.resource
        resource = _attributes(res.attributes, IDENTITY_KEYS) if res is not None else {}
        for scope_spans in resource_spans.scopeSpans or ():
            for span in scope_spans.spans or ():
                name = span.name
                if name in _UNCACHED_NAMES:
                    kind = _kind_of(name, span.attributes)
                else:
                    key = (name, bytes(span.attributes))
                    kind = kinds.get(key) or _span_kind(key)
                code = span.status.code
                status = codes.get(code)
                append(((span.traceId or "").lower(), (span.spanId or "").lower(), int(span.startTimeUnixNano or 0),
                        int(span.endTimeUnixNano or 0), name, int(code or 0) if status is None else status, kind,
                        resource))
    return out


def reference_records(request: dict) -> list:
    """The same records from a ``json.loads``'d request, through ``otlp_json.flatten_request``
    (the reference path, used for lines the typed decoder does not take)."""
    return [span_record(span) for span in flatten_request(request)]


def decode_line(raw: bytes):
    """Records of one line, or None when the typed decoder does not take it."""
    try:
        return request_records(_DECODER.decode(raw))
    except _DECODE_ERRORS:
        return None
    except (TypeError, ValueError, AttributeError, KeyError):
        return None
