"""Numbers read from text (flags, settings files, environment variables, journals): finite
ones only.

``float()`` takes "nan", "inf" and "1e999": a NaN compares false with every bound, so a range
check lets it through (a sampling ratio of NaN dropped every healthy glidein, an interval of
NaN busy-looped), and an infinite timeout never ends. Everything that reads a number goes
through ``finite_float``.
"""

from __future__ import annotations

import math


def finite_float(value) -> float:
    """``float(value)``, or ValueError when it is not a finite number (NaN, infinity)."""
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"not a finite number: {value!r}")
    return number


def is_finite_number(value) -> bool:
    """Whether ``value`` (already a number) is an int or a finite float."""
    return not isinstance(value, float) or math.isfinite(value)
