"""The root and the trace id: the first thing derived, since every span id hangs on it.

The trace id is the Factory's when it gives one, else the journal's (``@trace_id`` on the
root's start line), else the one ids.py derives from the glidein's identity; without any
the journal holds no glidein trace. A Frontend request's context on the root becomes a link
on ``factory.submit``: the root carries no link (``links_off_the_root``).
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
    links_off_the_root(draft)


# the stages that carry the root's links, the first present: the Factory's first, else the node's
# (their journal keys are their stage names)
LINK_CARRIERS = (c.STAGE_FACTORY_SUBMIT, c.STAGE_SETUP)


def links_off_the_root(draft: Draft) -> None:
    """The root's links (the Frontend request's, any a journal line gave it) go on
    ``factory.submit``, else ``setup``: Jaeger's UI (jaeger-ui v1.76, its critical path's
    ``getChildOfSpans`` and ``sanitizeOverFlowingChildren``) takes a span's first reference
    for its parent, and the root's first reference would be a link into another trace, so
    the UI draws no critical path at all. A root alone keeps them (nothing else can)."""
    root = draft.root
    carrier = next((draft.spans[key] for key in LINK_CARRIERS if key in draft.spans), None)
    if carrier is None or not root.links:
        return
    moving = [link for link in root.links if link not in carrier.links]
    room = max(draft.limits.max_links - len(carrier.links), 0)
    carrier.links.extend(moving[:room])
    draft.dropped["links"] += len(moving[room:])
    root.links = []


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
