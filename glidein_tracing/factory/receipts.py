"""Whether the backend holds the span the forwarder would send, not only one with its id.

Span ids are computable, so a node that can reach the collector can post spans under a
victim glidein's ids, and a journal can claim an export that never happened. Reconciliation
asks the backend what it holds of a trace (its receipts: span id -> name, stage, start, end,
digest) and counts a span as delivered only when the backend's copy says what ours says
(core/converter/digest.py); anything else is sent (again). Times are compared in microseconds, the
precision Jaeger keeps.
"""

from __future__ import annotations

from ..core import ids
from ..core.conventions import GLIDEIN_TRACING_DIGEST, STAGE


def receipts_of(span_dicts) -> dict:
    """Span id (hex) -> receipt, of plain span dicts (otlp_json.flatten_request's shape, as
    the store and jaeger_query.flatten_trace give them)."""
    return {s["span_id"]: (s.get("name", ""), str(s["attributes"].get(STAGE, "")),
                           int(s.get("start_ns") or 0) // 1000, int(s.get("end_ns") or 0) // 1000,
                           s["attributes"].get(GLIDEIN_TRACING_DIGEST))
            for s in span_dicts}


def delivered(spans, held: dict) -> set:
    """Ids (hex) of the SDK ``spans`` whose copy in ``held`` (receipts_of) matches: same name,
    stage, start and digest, end within 1 us (a backend keeping start and duration rounds)."""
    out = set()
    for span in spans:
        span_id = ids.span_hex(span.context.span_id)
        receipt = held.get(span_id)
        if receipt is None:
            continue
        name, stage, start_us, end_us, digest = receipt
        if (name == span.name and stage == span.attributes.get(STAGE, "")
                and start_us == span.start_time // 1000 and abs(end_us - span.end_time // 1000) <= 1
                and digest is not None and digest == span.attributes.get(GLIDEIN_TRACING_DIGEST)):
            out.add(span_id)
    return out
