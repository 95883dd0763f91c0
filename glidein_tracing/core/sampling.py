"""Trace sampling by trace id ratio, decided once per glidein.

The ratio is the one the glidein ran with (knob GLIDEIN_TRACING_SAMPLING_RATIO): the setup
hook writes it into the journal (``@sampling_ratio``) and the converter puts it on the root
(``glidein_tracing.sampling_ratio``), so live export on the node and the forwarder at the
Factory apply the same ratio to the same rule: a glidein is kept when the first 8 hex digits
of its trace id, as a number, fall below ``ratio * 2**32``. Failed glideins are always kept:
they are the ones operators look for (an untraced glidein is never failed). A glidein whose
root carries no ratio (e.g. no journal came back) is kept.
"""

from __future__ import annotations

from opentelemetry.trace.status import StatusCode

from . import conventions as c, ids
from .failure import glidein_failed

RATIO_ATTRIBUTE = c.GLIDEIN_TRACING_SAMPLING_RATIO   # on the root


def parse_ratio(text) -> float | None:
    """A ratio from a journal field: a number in [0, 1], else None."""
    try:
        ratio = float(text)
    except (TypeError, ValueError):
        return None
    return ratio if 0.0 <= ratio <= 1.0 else None


def threshold(ratio: float) -> int:
    ratio = min(1.0, max(0.0, float(ratio)))
    return int(ratio * 2 ** 32)


def keep(trace_id: str, ratio: float, failed: bool = False) -> bool:
    if failed or ratio >= 1.0:
        return True
    return int(trace_id[:8], 16) < threshold(ratio)


def keep_glidein(spans, override: float | None = None, *, running: bool = False) -> bool:
    """The decision for one converted glidein (SDK spans, root first), by the ratio on its
    root unless ``override`` (an operator's explicit choice) is given; failed when its root is
    in error or its outcome is not ``ok``. A ``running`` glidein has not failed yet (its
    journal so far converts as incomplete): the ratio alone decides, and if it fails later
    the Factory forwarder sends what it kept back."""
    root = spans[0]
    ratio = override if override is not None else root.attributes.get(RATIO_ATTRIBUTE, 1.0)
    failed = not running and glidein_failed(root.status.status_code is StatusCode.ERROR, root.attributes)
    return keep(ids.trace_hex(root.context.trace_id), ratio, failed)
