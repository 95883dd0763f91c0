"""A journal line's field text -> typed values: span attributes, resource attributes, times.

The journal writes every value as text; a type suffix on the name (``:i``, ``:f``, ``:b``)
says what it is. ``@`` fields are control, ``r.`` fields are resource readings
(resources.py) and ``res.`` fields are resource attributes: only the rest become span
attributes. Everything here comes from a worker node, so nothing raises on bad text.
"""

from __future__ import annotations

import functools
from datetime import datetime

from ..journal import BOOL, FLOAT, INT
from ..numbers import finite_float


def typed_value(suffix: str, value: str):
    """A field's text as the type its suffix names (i, f, b); the text when it does not parse."""
    try:
        if suffix == INT:
            return int(finite_float(value))
        if suffix == FLOAT:
            return finite_float(value)
        return value.strip().lower() in ("true", "1", "yes")
    except (ValueError, OverflowError):   # "1e999:i" is text, not a crash
        return value


def _split_type(name: str) -> tuple[str, str]:
    """``name:i`` -> (``name``, ``i``) for the journal's type suffixes (:i, :f, :b); else (name, "")."""
    base, _, suffix = name.rpartition(":")
    return (base, suffix) if base and suffix in (INT, FLOAT, BOOL) else (name, "")


def _typed(name: str, value: str):
    """Apply the journal's type suffix (:i, :f, :b) to one field."""
    key, suffix = _split_type(name)
    return key, (typed_value(suffix, value) if suffix else value)


_FIELD_PLAN: dict = {}   # journal field name -> None (not a span attribute) or (key, type suffix)


def _plan(name: str):
    """How one journal field name becomes a span attribute (names repeat: decided once and
    remembered in ``_FIELD_PLAN``, which the caller looks in first)."""
    plan = None if name.startswith(("@", "r.", "res.")) else _split_type(name)
    if len(_FIELD_PLAN) < 100_000:
        _FIELD_PLAN[name] = plan
    return plan


def span_attributes(fields: dict) -> dict:
    """Span attributes of one event: every field that is not control (@) or resource (r.)."""
    out = {}
    plans = _FIELD_PLAN
    for name, value in fields.items():
        plan = plans.get(name, False)
        if plan is False:
            plan = _plan(name)
        if plan is None or value == "":
            continue  # control/resource field; or empty: a hook writes every field it knows of
        key, suffix = plan
        out[key] = typed_value(suffix, value) if suffix else value
    return out


def resource_attributes(fields: dict) -> dict:
    """Resource attributes of one event: its ``res.`` fields, typed, without the prefix."""
    out = {}
    for name, value in fields.items():
        if name.startswith("res."):
            key, typed = _typed(name[4:], value)
            out[key] = typed
    return out


@functools.lru_cache(maxsize=1024)
def parse_iso(text: str) -> float | None:
    """ISO 8601 with offset (GlideinWMS records) -> epoch seconds; None when unparsable.
    Cached: one script's end is usually the next one's start."""
    try:
        return datetime.fromisoformat(text.strip().replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError):
        return None


def number(value):
    """A ClassAd value as a number, or None (booleans are not numbers here)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
