"""Who sees what. An operator sees every trace. A user sees a trace that holds their own
jobs (a span whose ``job.owner``, HTCondor's job Owner, is their name), without the spans of
other users' jobs in it (a glidein runs several users' jobs) nor anything under those. Any
other trace is, to them, a trace that does not exist: the same 404, so its existence does
not leak."""

from __future__ import annotations

from ..core import conventions as c


def visible_spans(caller, spans: list) -> list | None:
    """The spans of one trace ``caller`` may see, or None: to them the trace does not exist."""
    if not spans:
        return None
    if caller.operator:
        return spans
    owners = {s["attributes"].get(c.JOB_OWNER) for s in spans}
    if caller.name not in owners:
        return None
    if owners <= {caller.name, None}:
        return spans
    hidden = {s["span_id"] for s in spans if s["attributes"].get(c.JOB_OWNER) not in (None, caller.name)}
    children: dict = {}
    for span in spans:
        children.setdefault(span["parent_span_id"], []).append(span["span_id"])
    todo = list(hidden)
    while todo:                      # an explicit walk: a journal may chain parents deep
        for child in children.get(todo.pop(), ()):
            if child not in hidden:
                hidden.add(child)
                todo.append(child)
    return [s for s in spans if s["span_id"] not in hidden]
