"""Jaeger's query API (v1 JSON under ``/api/traces``): the one client of it, for the
forwarder (what of a trace already arrived) and the analysis (the traces of a service
in a time window), and the reading of its traces as flat span dicts (as ``otlp_json``'s).

Jaeger's own UI and API serve this JSON; the API is read with Python's ``urllib``, which
trusts the system CA store.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

from ..core import conventions as c


MAX_ANSWER_BYTES = 256 * 1024 * 1024   # one answer: Jaeger's, or whatever answers at its address


def get_json(url: str, timeout: float, max_bytes: int = MAX_ANSWER_BYTES):
    """The JSON document at ``url``; ValueError when the answer is larger than ``max_bytes``,
    not JSON, or nested deeper than the interpreter can read (an answer is not trusted)."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (operator's URL)
        data = response.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"answer larger than {max_bytes} bytes")
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("answer nested too deeply") from None


def search_url(base_url: str, service: str, start_s: float, end_s: float, limit: int,
               tags: dict | None = None) -> str:
    """The search for ``service``'s traces that started between two times (epoch seconds),
    with a span carrying each of ``tags`` (attribute -> value) when given."""
    params = {"service": service, "start": int(start_s * 1e6), "end": int(end_s * 1e6), "limit": limit}
    if tags:
        params["tags"] = json.dumps(tags, separators=(",", ":"))
    return f"{base_url.rstrip('/')}/api/traces?{urllib.parse.urlencode(params)}"


def search_traces(base_url: str, service: str, start_s: float, end_s: float, limit: int,
                  tags: dict | None = None, timeout: float = 10.0) -> list | None:
    """One search (``search_url``) as lists of flat span dicts, one per trace; None when
    Jaeger cannot tell (unreachable, an answer that is not its JSON)."""
    try:
        data = get_json(search_url(base_url, service, start_s, end_s, limit, tags), timeout)
        return [flatten_trace(trace) for trace in data.get("data") or []]
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return None


def trace_spans(base_url: str, trace_id: str, timeout: float = 10.0) -> list | None:
    """The spans Jaeger holds of one trace, as flat span dicts (flatten_trace): empty when
    it has none, None when it cannot tell (unreachable, an answer that is not its JSON)."""
    try:
        data = get_json(f"{base_url.rstrip('/')}/api/traces/{trace_id}", timeout)
    except urllib.error.HTTPError as exc:
        return [] if exc.code == 404 else None
    except (OSError, ValueError):
        return None
    try:
        return [span for trace in data.get("data") or [] for span in flatten_trace(trace)]
    except (AttributeError, KeyError, TypeError, ValueError):
        return None


_STATUS = {"ERROR": 2, "OK": 1, "UNSET": 0}
_DROP_TAGS = {"span.kind", "otel.status_code", "otel.status_description", "otel.scope.name",
              "otel.scope.version", "otel.library.name", "otel.library.version",
              "internal.span.format"}


def _tag_value(tag: dict):
    value = tag.get("value")
    kind = str(tag.get("type", "")).lower()
    if kind == "int64":
        try:
            return int(value)
        except (TypeError, ValueError):
            return value
    if kind == "float64":
        try:
            return float(value)
        except (TypeError, ValueError):
            return value
    if kind == "bool" and isinstance(value, str):
        return value.lower() == "true"
    return value


def _tags(tags) -> dict:
    return {t.get("key", ""): _tag_value(t) for t in tags or [] if isinstance(t, dict)}


def flatten_trace(trace: dict) -> list:
    """One Jaeger v1 trace (``/api/traces`` JSON) as flat span dicts (times us -> ns)."""
    processes = trace.get("processes") or {}
    resources = {}
    for pid, process in processes.items():
        resource = _tags((process or {}).get("tags"))
        if (process or {}).get("serviceName"):
            resource.setdefault(c.SERVICE_NAME, process["serviceName"])
        resources[pid] = resource
    out = []
    for span in trace.get("spans") or []:
        tags = _tags(span.get("tags"))
        trace_id = str(span.get("traceID") or trace.get("traceID") or "").lower().zfill(32)
        parent, links = "", []
        for ref in span.get("references") or []:
            ref_trace = str(ref.get("traceID", "")).lower().zfill(32)
            ref_span = str(ref.get("spanID", "")).lower().zfill(16)
            if ref.get("refType") == "CHILD_OF" and ref_trace == trace_id and not parent:
                parent = ref_span
            else:
                links.append({"trace_id": ref_trace, "span_id": ref_span, "attributes": {}})
        status = _STATUS.get(str(tags.get("otel.status_code", "")).upper(), 0)
        if not status and tags.get("error") is True:
            status = 2
        start_us = int(span.get("startTime") or 0)
        duration_us = int(span.get("duration") or 0)
        out.append({
            "trace_id": trace_id,
            "span_id": str(span.get("spanID", "")).lower().zfill(16),
            "parent_span_id": parent,
            "name": span.get("operationName", ""),
            "start_ns": start_us * 1000,
            "end_ns": (start_us + duration_us) * 1000,
            "status_code": status,
            "status_message": str(tags.get("otel.status_description", "")),
            "attributes": {k: v for k, v in tags.items() if k not in _DROP_TAGS},
            "resource": resources.get(span.get("processID"), {}),
            "events": [{"name": str(_tags(log.get("fields")).get("event", "")),
                        "time_ns": int(log.get("timestamp") or 0) * 1000,
                        "attributes": _tags(log.get("fields"))}
                       for log in span.get("logs") or []],
            "links": links,
        })
    return out


def iter_traces(base_url: str, service: str, start_s: float, end_s: float, errors: list, *,
                limit: int = 500, min_window_s: float = 1.0, timeout: float = 30.0, fetch=None):
    """Each trace of ``service`` that started between two times, once, as flat span dicts.
    A window whose answer is full (``limit`` traces) is split in two and asked again, so no
    trace is silently cut off; a window that cannot be read is named in ``errors``."""
    fetch = fetch or (lambda url: get_json(url, timeout))
    seen: set[str] = set()
    windows = [(float(start_s), float(end_s))]
    while windows:
        start, end = windows.pop()
        try:
            answer = fetch(search_url(base_url, service, start, end, limit))
        except (OSError, ValueError) as exc:
            errors.append(f"jaeger query {start:.0f}-{end:.0f}: {exc}")
            continue
        traces = (answer or {}).get("data") or []
        if len(traces) >= limit and end - start > min_window_s:
            middle = (start + end) / 2
            windows += [(middle, end), (start, middle)]
            continue
        for trace in traces:
            trace_id = str(trace.get("traceID", "")).lower().zfill(32)
            if trace_id not in seen:
                seen.add(trace_id)
                yield flatten_trace(trace)
