"""Print one trace as an indented tree: stage, duration, status, key attributes.

Every value from a span is escaped (terminal.escape, line breaks too): one span is one
line, and nothing in a span can drive the reader's terminal."""

from __future__ import annotations

from ..core import conventions as c
from ..core.log_tail import LOG_TAIL_EVENT
from ..core.terminal import escape

KEY_ATTRIBUTES = (
    c.GLIDEIN_ENTRY, c.GLIDEIN_SITE, c.GLIDEIN_OUTCOME, c.ERROR_TYPE, c.GLIDEIN_FAILURE_DOMAIN,
    c.JOB_FAILURE_DOMAIN, c.GLIDEIN_IDLE_KIND,
    c.JOB_GLOBAL_ID, c.JOB_EXIT_CODE, c.JOB_PHASE_EXIT_CODE, c.JOB_PHASE_SIGNAL, c.JOB_USER_TRACEPARENT,
    c.GLIDEIN_SHUTDOWN_REASON,
    c.GLIDEIN_RESOURCE_CPU_USER_S, c.GLIDEIN_RESOURCE_MAX_RSS_BYTES, c.GLIDEIN_RESOURCE_MAX_RSS_SOURCE,
    c.GLIDEIN_RESOURCE_MAX_RSS_KIND,
)
STATUS = {0: "", 1: "ok", 2: "ERROR"}
MAX_INDENT = 32  # deeper spans say their depth instead of indenting further (output stays linear)


def _duration(ns: int) -> str:
    seconds = ns / 1e9
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def _field(value) -> str:
    return escape(value, newlines=False)


def _log_tail(attrs: dict, indent: str) -> list[str]:
    """A failed stage's log tail, under the stage, each line marked ``|``."""
    note = f" ({_field(attrs[c.LOG_NOTE])})" if attrs.get(c.LOG_NOTE) else ""
    out = [f"{indent}log tail of {_field(attrs.get(c.LOG_SOURCE, '?'))}{note}:"]
    text = str(attrs.get(c.LOG_LINES, ""))
    out += [f"{indent}| {_field(line)}" for line in text.split("\n")] if text else []
    return out


def ordered(spans: list[dict]) -> list[tuple[dict, int]]:
    """(span, depth) in tree order: roots by start, children by start under their parent.
    An explicit stack, not recursion: a glidein's journal can chain parents arbitrarily deep
    (a parent cycle never reaches a root, so it is never listed: no span is visited twice)."""
    by_id = {s["span_id"]: s for s in spans}
    order = {s["span_id"]: index for index, s in enumerate(spans)}
    children: dict[str, list] = {}
    roots = []
    for span in spans:
        parent = span["parent_span_id"]
        if parent and parent in by_id:
            children.setdefault(parent, []).append(span)
        else:
            roots.append(span)
    out = []
    stack = [(root, 0) for root in sorted(roots, key=lambda s: s["start_ns"], reverse=True)]
    while stack:
        span, depth = stack.pop()
        out.append((span, depth))
        # equal start times (per-script records have 1 s resolution): keep the recorded order
        kids = sorted(children.get(span["span_id"], []), key=lambda s: (s["start_ns"], order[s["span_id"]]))
        stack.extend((child, depth + 1) for child in reversed(kids))
    return out


def render(spans: list[dict], attributes=KEY_ATTRIBUTES) -> str:
    """``spans``: plain span dicts (otlp_json.flatten_request) of one trace."""
    lines = []
    if spans:
        lines.append(f"trace {_field(spans[0]['trace_id'])}  ({len(spans)} spans)")

    def line(span, depth):
        attrs = span["attributes"]
        stage = _field(attrs.get(c.STAGE, "?"))
        extra = " ".join(f"{k}={_field(attrs[k])}" for k in attributes if k in attrs and k != c.STAGE)
        status = STATUS.get(span["status_code"], "")
        links = f" links={len(span['links'])}" if span["links"] else ""
        indent = "  " * min(depth, MAX_INDENT) + (f"<depth {depth}> " if depth > MAX_INDENT else "")
        return (f"{indent}{_field(span['name'])} [{stage}] {_duration(span['end_ns'] - span['start_ns'])}"
                f"{' ' + status if status else ''}{links}{' ' + extra if extra else ''}")

    for span, depth in ordered(spans):
        lines.append(line(span, depth))
        for event in span.get("events") or ():
            if event["name"] in (LOG_TAIL_EVENT, c.JOB_LOG_TAIL):
                lines.extend(_log_tail(event["attributes"], "  " * min(depth + 1, MAX_INDENT)))
            elif event["name"] == c.JOB_PHASE_MARK:
                lines.append(f"{'  ' * min(depth + 1, MAX_INDENT)}mark: {event['attributes'].get('message', '')}")
    return "\n".join(lines)
