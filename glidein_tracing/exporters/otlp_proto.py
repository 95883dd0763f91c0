"""OTLP protobuf encoding of SDK spans, grouped by resource, about twice as fast as the SDK's.

The forwarder must move a Factory's backlog (tens of thousands of spans a second) on one
core. The SDK's ``encode_spans`` hashes each span's Resource and re-encodes the same
resource attributes for every span; our spans arrive grouped per glidein (one resource),
so we encode each resource once and build messages with the generated protobuf classes.
A test checks that the result equals the SDK's encoding message for message.
"""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

# span flags in OTLP: bit 8 "we know whether the parent is remote", bit 9 "it is remote"
# (the SDK encoder leaves the W3C sampled bit out; so do we)
_HAS_IS_REMOTE = 0x100
_IS_REMOTE = 0x200


def _set_value(target: AnyValue, value) -> None:
    # assigning fields of added messages is several times faster than building them
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        target.int_value = value
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, str):
        target.string_value = value
    elif isinstance(value, bytes):
        target.bytes_value = value
    elif isinstance(value, (list, tuple)):
        values = target.array_value.values
        for item in value:
            _set_value(values.add(), item)
    else:
        target.string_value = str(value)


def _add_attributes(container, attributes) -> None:
    add = container.add
    for key, value in (attributes or {}).items():
        pair = add()
        pair.key = key
        _set_value(pair.value, value)


def _flags(context, parent) -> int:
    flags = _HAS_IS_REMOTE
    if parent is not None and parent.is_remote:
        flags |= _IS_REMOTE
    return flags


def _fill_span(message, span) -> None:
    context = span.context
    message.trace_id = context.trace_id.to_bytes(16, "big")
    message.span_id = context.span_id.to_bytes(8, "big")
    if span.parent is not None:
        message.parent_span_id = span.parent.span_id.to_bytes(8, "big")
    message.name = span.name
    message.kind = span.kind.value + 1
    message.start_time_unix_nano = span.start_time
    message.end_time_unix_nano = span.end_time
    message.flags = _flags(context, span.parent)
    if span.attributes:
        _add_attributes(message.attributes, span.attributes)
    for event in span.events:
        added = message.events.add()
        added.name = event.name
        added.time_unix_nano = event.timestamp
        _add_attributes(added.attributes, event.attributes)
    for link in span.links:
        added = message.links.add()
        added.trace_id = link.context.trace_id.to_bytes(16, "big")
        added.span_id = link.context.span_id.to_bytes(8, "big")
        added.flags = _HAS_IS_REMOTE | (_IS_REMOTE if link.context.is_remote else 0)
        _add_attributes(added.attributes, link.attributes)
    status = span.status
    message.status.SetInParent()
    if status.status_code.value:
        message.status.code = status.status_code.value
        if status.description:
            message.status.message = status.description


def encode_request(spans) -> ExportTraceServiceRequest:
    """One ExportTraceServiceRequest for ``spans`` (any mix of resources and scopes)."""
    request = ExportTraceServiceRequest()
    groups: dict = {}
    for span in spans:
        resource = span.resource
        entry = groups.get(id(resource))
        if entry is None:
            resource_spans = request.resource_spans.add()
            _add_attributes(resource_spans.resource.attributes, resource.attributes)
            if resource.schema_url:
                resource_spans.schema_url = resource.schema_url
            entry = groups[id(resource)] = (resource_spans, {})
        resource_spans, scopes = entry
        scope = span.instrumentation_scope
        scope_key = (scope.name, scope.version) if scope else ("", "")
        scope_spans = scopes.get(scope_key)
        if scope_spans is None:
            scope_spans = scopes[scope_key] = resource_spans.scope_spans.add()
            if scope:
                scope_spans.scope.name = scope.name
                if scope.version:
                    scope_spans.scope.version = scope.version
                if scope.schema_url:
                    scope_spans.schema_url = scope.schema_url
        _fill_span(scope_spans.spans.add(), span)
    return request
