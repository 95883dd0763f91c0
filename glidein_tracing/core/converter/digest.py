"""A digest of what each span says, set on it by the converter (``glidein_tracing.digest``),
so the forwarder can tell the span it would send from another one under the same id.

Span ids are computable from a glidein's identity, so anyone who can reach the collector
can post spans under a victim's ids. Before the forwarder counts a span as delivered
(factory/receipts.py) it compares the backend's copy with its own: name, stage, start, end
and this digest, which also covers the parent and the status. The node and the Factory
convert the same journal lines the same way, so a span sent live by the node and the same
span made at the Factory carry the same digest.
"""

from __future__ import annotations

import hashlib

from opentelemetry.sdk.trace import ReadableSpan

from ..conventions import GLIDEIN_TRACING_DIGEST, STAGE
from .readable_span import with_attributes


def digest(span: ReadableSpan) -> str:
    """16 hex digits of BLAKE2b over the span's ids, parent, name, stage, times and status."""
    parent = span.parent.span_id if span.parent is not None else 0
    text = (f"{span.context.trace_id:032x}{span.context.span_id:016x}{parent:016x}\n{span.name}\n"
            f"{span.attributes.get(STAGE, '')}\n{span.start_time}\n{span.end_time}\n"
            f"{span.status.status_code.value}")
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).hexdigest()


def stamped(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    """``spans`` with each one's digest among its attributes."""
    return [with_attributes(s, {GLIDEIN_TRACING_DIGEST: digest(s)}) for s in spans]
