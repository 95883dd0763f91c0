"""Deterministic trace and span ids (docs/ids.md).

Every party that knows a glidein's identity computes the same ids with no coordination, so a
span exported twice (live from the node, later from the returned stderr) is the same span.
The bash hooks compute the same values with ``sha256sum``; tests check that they agree.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

ID_SCHEME = "gt1"
# version-trace_id-span_id-flags, then, in versions after 00 only, "-" and more fields
TRACEPARENT_RE = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-[\x21-\x7e]*)?")
_ZERO_TRACE, _ZERO_SPAN = "0" * 32, "0" * 16   # the invalid all-zero ids


def _hex_prefix(text: str, digits: int) -> str:
    value = hashlib.sha256(text.encode("utf-8")).hexdigest()[:digits]
    if set(value) == {"0"}:  # all-zero ids are invalid in W3C trace context
        value = value[:-1] + "1"
    return value


@dataclass(frozen=True)
class GlideinIdentity:
    """What the Factory, the glidein and the job all know about one glidein."""

    factory: str
    name: str
    entry: str
    schedd: str
    cluster: str
    proc: str
    index: str = "0"

    @property
    def trace_id(self) -> str:
        fields = (ID_SCHEME, self.factory, self.name, self.entry, self.schedd,
                  str(self.cluster), str(self.proc), str(self.index or "0"))
        return _hex_prefix("".join(f + "\n" for f in fields), 32)


def trace_hex(trace_id: int) -> str:
    """A trace id as W3C and OTLP/JSON write it: 32 lowercase hex digits."""
    return format(trace_id, "032x")


def span_hex(span_id: int) -> str:
    """A span id as W3C and OTLP/JSON write it: 16 lowercase hex digits."""
    return format(span_id, "016x")


def span_id(trace_id: str, span_key: str) -> str:
    """The id of the span called ``span_key`` (e.g. ``setup``, ``job/<GlobalJobId>``) in a trace."""
    return _hex_prefix(f"{trace_id}\n{span_key}\n", 16)


def span_id_int(trace_id: str, span_key: str) -> int:
    """span_id() as an integer, without the hex round trip (the converter's hot path)."""
    digest = hashlib.sha256(f"{trace_id}\n{span_key}\n".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") or 1


def parse_traceparent(value: str):
    """Return (trace_id, span_id, flags) of a W3C traceparent, or None when it is not valid as
    W3C Trace Context writes it: lower-case hex only, nothing around it (no spaces, no line
    end), version ``ff`` invalid, version ``00`` exactly four fields, a later version possibly
    more after a ``-`` (its first four are read), all-zero ids invalid."""
    match = TRACEPARENT_RE.fullmatch(value) if isinstance(value, str) else None
    if not match:
        return None
    version, trace, span, flags, rest = match.groups()
    if version == "ff" or (version == "00" and rest is not None):
        return None
    if trace == _ZERO_TRACE or span == _ZERO_SPAN:
        return None
    return trace, span, int(flags, 16)


def format_traceparent(trace_id: str, span: str, sampled: bool = True) -> str:
    return f"00-{trace_id}-{span}-{'01' if sampled else '00'}"
