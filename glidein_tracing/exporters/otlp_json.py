"""OTLP JSON, the store's format: the one module that writes it (from SDK spans, with the
SDK's own encoder; from plain span dicts, which ``span_dict`` makes of SDK spans) and reads it
back into plain span dicts.

The encoding is the SDK's own protobuf (``encode_spans``) rendered with the OTLP/JSON
rules: camelCase keys, enums as integers, trace and span ids as hex (not base64). That is
what the OTel Collector's file exporter writes and its ``otlpjsonfile`` receiver reads.
"""

from __future__ import annotations

import base64

from .. import __version__

ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(node: dict) -> None:
    for name in ID_FIELDS:
        value = node.get(name)
        if value:
            node[name] = base64.b64decode(value).hex()


def encode_request(spans) -> dict:
    """One ExportTraceServiceRequest as an OTLP JSON dict."""
    # imported here: the Frontend's group processes write with request_from_span_dicts
    # only, and protobuf is a cost at every start of theirs (frontend_hooks/otlp_http.py)
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    message = encode_spans(spans)
    data = MessageToDict(message, use_integers_for_enums=True)
    for resource_spans in data.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                _hex_ids(span)
                for link in span.get("links", []):
                    _hex_ids(link)
    return data


def any_value(value: dict):
    """An OTLP AnyValue as a Python value."""
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [any_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return {kv["key"]: any_value(kv.get("value", {})) for kv in value["kvlistValue"].get("values", [])}
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def attributes(items) -> dict:
    return {kv["key"]: any_value(kv.get("value", {})) for kv in items or []}


def flatten_request(request: dict):
    """Yield one plain dict per span of an OTLP JSON request: ids, name, times (ns), status,
    attributes, resource attributes, events and links. This is what analysis and `show` read."""
    for resource_spans in request.get("resourceSpans", []) or []:
        resource = attributes((resource_spans.get("resource") or {}).get("attributes"))
        for scope_spans in resource_spans.get("scopeSpans", []) or []:
            for span in scope_spans.get("spans", []) or []:
                yield flatten_span(span, resource)


def flatten_span(span: dict, resource: dict) -> dict:
    """One OTLP JSON span as the plain dict ``flatten_request`` yields, with ``resource``."""
    status = span.get("status") or {}
    return {
        "trace_id": (span.get("traceId") or "").lower(),
        "span_id": (span.get("spanId") or "").lower(),
        "parent_span_id": (span.get("parentSpanId") or "").lower(),
        "name": span.get("name", ""),
        "start_ns": int(span.get("startTimeUnixNano", 0) or 0),
        "end_ns": int(span.get("endTimeUnixNano", 0) or 0),
        "status_code": int(status.get("code", 0) or 0),
        "status_message": status.get("message", ""),
        "attributes": attributes(span.get("attributes")),
        "resource": resource,
        "events": [{"name": e.get("name", ""),
                    "time_ns": int(e.get("timeUnixNano", 0) or 0),
                    "attributes": attributes(e.get("attributes"))}
                   for e in span.get("events", []) or []],
        "links": [{"trace_id": (l.get("traceId") or "").lower(),
                   "span_id": (l.get("spanId") or "").lower(),
                   "attributes": attributes(l.get("attributes"))}
                  for l in span.get("links", []) or []],
    }


def span_dict(span, resource: dict) -> dict:
    """An SDK span (``ReadableSpan``) as the plain dict ``flatten_request`` yields, with
    ``resource`` (pass one dict per resource: ``request_from_span_dicts`` groups by it)."""
    parent = span.parent
    return {
        "trace_id": f"{span.context.trace_id:032x}",
        "span_id": f"{span.context.span_id:016x}",
        "parent_span_id": f"{parent.span_id:016x}" if parent is not None else "",
        "name": span.name,
        "start_ns": span.start_time or 0,
        "end_ns": span.end_time or 0,
        "status_code": span.status.status_code.value,
        "status_message": span.status.description or "",
        "attributes": dict(span.attributes or {}),
        "resource": resource,
        "events": [{"name": event.name, "time_ns": event.timestamp, "attributes": dict(event.attributes or {})}
                   for event in span.events],
        "links": [{"trace_id": f"{link.context.trace_id:032x}", "span_id": f"{link.context.span_id:016x}",
                   "attributes": dict(link.attributes or {})} for link in span.links],
    }


def _any_value(value) -> dict:
    if type(value) is str:   # most values: one test, not four
        return {"stringValue": value}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _kvs(attrs: dict) -> list:
    return [{"key": k, "value": _any_value(v)} for k, v in attrs.items()]


def request_from_span_dicts(spans: list[dict]) -> dict:
    """Flat span dicts (``flatten_request``'s shape) -> one OTLP JSON ExportTraceServiceRequest:
    its inverse, for tools that make span dicts themselves (the synthetic generator, tests)."""
    by_resource: dict[int, tuple] = {}
    for span in spans:
        resource = span.get("resource") or {}
        by_resource.setdefault(id(resource), (resource, []))[1].append(span)
    resource_spans = []
    for resource, group in by_resource.values():
        encoded = []
        for span in group:
            item = {"traceId": span["trace_id"], "spanId": span["span_id"], "name": span.get("name", ""),
                    "kind": 1, "startTimeUnixNano": str(span.get("start_ns", 0)),
                    "endTimeUnixNano": str(span.get("end_ns", 0)),
                    "attributes": _kvs(span.get("attributes") or {}),
                    "status": {}}
            if span.get("parent_span_id"):
                item["parentSpanId"] = span["parent_span_id"]
            if span.get("status_code"):
                item["status"]["code"] = span["status_code"]
            if span.get("status_message"):
                item["status"]["message"] = span["status_message"]
            if span.get("events"):
                item["events"] = [{"name": e.get("name", ""), "timeUnixNano": str(e.get("time_ns", 0)),
                                   "attributes": _kvs(e.get("attributes") or {})} for e in span["events"]]
            if span.get("links"):
                item["links"] = [{"traceId": l.get("trace_id", ""), "spanId": l.get("span_id", ""),
                                  "attributes": _kvs(l.get("attributes") or {})} for l in span["links"]]
            encoded.append(item)
        resource_spans.append({"resource": {"attributes": _kvs(resource)},
                               "scopeSpans": [{"scope": {"name": "glidein_tracing", "version": __version__},
                                               "spans": encoded}]})
    return {"resourceSpans": resource_spans}
