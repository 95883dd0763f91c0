"""The root and the trace id: the first thing derived, since every span id hangs on it.

The trace id is the Factory's when it gives one, else the journal's (``@trace_id`` on the
root's start line), else the one ids.py derives from the glidein's identity; without any
the journal holds no glidein trace. A Frontend request's context on the root becomes a link
on the root and on ``factory.submit``.
"""

from __future__ import annotations

from .. import conventions as c
from .. import ids
from .draft import ROOT, Draft


class ConversionError(ValueError):
    """The journal holds no glidein trace (no root and no trace id)."""


def settle_root(draft: Draft, factory_trace_id: str | None) -> None:
    """Make sure the trace has its root (stage and name ``glidein``) and its trace id."""
    root = draft.span(ROOT)
    root.parent = None
    root.stage = root.stage or c.STAGE_GLIDEIN
    root.name = root.name or c.STAGE_GLIDEIN
    draft.trace_id = factory_trace_id or draft.trace_id or _trace_id_from_identity(root.attrs)
    if not draft.trace_id:
        raise ConversionError("journal has no glidein root with a trace id or identity")
    request = root.attrs.get(c.GLIDEIN_REQUEST_TRACEPARENT, "")
    parsed = ids.parse_traceparent(str(request))
    if parsed:
        root.attrs[c.GLIDEIN_REQUEST_TRACE_ID] = parsed[0]   # Jaeger shows no incoming links: search by it
        root.links.append(request)
        if c.STAGE_FACTORY_SUBMIT in draft.spans:
            draft.spans[c.STAGE_FACTORY_SUBMIT].links.append(request)


def name_root(draft: Draft) -> None:
    """``glidein ENTRY OUTCOME`` (as far as known): what a trace list shows of each trace is its
    service and its root's name, and the entry and the outcome are the classes an operator
    tells glideins apart by. Both are bounded (the Factory's entries, the outcomes), as span
    names must be; the glidein's own cluster.proc is not, and stays an attribute."""
    root = draft.root
    entry = root.attrs.get(c.GLIDEIN_ENTRY) or draft.resource_attrs.get(c.GLIDEIN_ENTRY) or ""
    outcome = root.attrs.get(c.GLIDEIN_OUTCOME) or ""
    root.name = " ".join(str(part) for part in (c.SPAN_GLIDEIN, entry, outcome) if part)


def _trace_id_from_identity(attrs) -> str | None:
    needed = (c.GLIDEIN_FACTORY, c.GLIDEIN_NAME, c.GLIDEIN_ENTRY, c.GLIDEIN_CLUSTER, c.GLIDEIN_PROC)
    if not all(str(attrs.get(k, "")) for k in needed):
        return None
    return ids.GlideinIdentity(
        factory=str(attrs[c.GLIDEIN_FACTORY]), name=str(attrs[c.GLIDEIN_NAME]),
        entry=str(attrs[c.GLIDEIN_ENTRY]), schedd=str(attrs.get(c.GLIDEIN_SCHEDD, "")),
        cluster=str(attrs[c.GLIDEIN_CLUSTER]), proc=str(attrs[c.GLIDEIN_PROC]),
        index=str(attrs.get(c.GLIDEIN_MULTI_INDEX, "0"))).trace_id
