"""Trace sampling by trace id ratio: the same decision on the node and at the Factory.

A glidein is kept when the first 8 hex digits of its trace id, as a number, fall below
``ratio * 2**32``. The bash cleanup hook computes the same with shell arithmetic, so a
glidein is either traced everywhere or nowhere. Failed glideins are always kept: they are
the ones operators look for.
"""

from __future__ import annotations

from opentelemetry.trace.status import StatusCode


def threshold(ratio: float) -> int:
    ratio = min(1.0, max(0.0, float(ratio)))
    return int(ratio * 2 ** 32)


def keep(trace_id: str, ratio: float, failed: bool = False) -> bool:
    if failed or ratio >= 1.0:
        return True
    return int(trace_id[:8], 16) < threshold(ratio)


def keep_glidein(spans, ratio: float) -> bool:
    """The decision for one converted glidein (SDK spans, root first): failed when its root is
    in error or its outcome is not ``ok``."""
    root = spans[0]
    failed = (root.status.status_code is StatusCode.ERROR
              or root.attributes.get("glidein.outcome") not in ("ok", None))
    return keep(format(root.context.trace_id, "032x"), ratio, failed)
