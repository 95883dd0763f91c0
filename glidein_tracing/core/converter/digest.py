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

from ..ids import span_hex, trace_hex


def digest(trace_id: int, span_id: int, parent_span_id: int, name: str, stage: str,
           start_ns: int, end_ns: int, status_code: int) -> str:
    """16 hex digits of BLAKE2b over a span's ids, parent, name, stage, times and status
    (readable_span.py sets it on every span it makes)."""
    text = (f"{trace_hex(trace_id)}{span_hex(span_id)}{span_hex(parent_span_id)}\n{name}\n{stage}\n{start_ns}\n"
            f"{end_ns}\n{status_code}")
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).hexdigest()
