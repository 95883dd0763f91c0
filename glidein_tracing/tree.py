"""Print one trace as an indented tree: stage, duration, status, key attributes."""

from __future__ import annotations

from .log_tail import LOG_TAIL_EVENT

KEY_ATTRIBUTES = (
    "glidein.entry", "glidein.site", "glidein.outcome", "error.type", "glidein.failure.domain",
    "job.failure.domain", "glidein.idle.kind",
    "job.global_id", "job.exit_code", "job.user_traceparent", "glidein.shutdown.reason",
    "glidein.resource.cpu_user_s", "glidein.resource.max_rss_bytes",
)
STATUS = {0: "", 1: "ok", 2: "ERROR"}


def _duration(ns: int) -> str:
    seconds = ns / 1e9
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def _log_tail(attrs: dict, indent: str) -> list[str]:
    """A failed stage's log tail, under the stage, each line marked ``|``."""
    note = f" ({attrs['log.note']})" if attrs.get("log.note") else ""
    out = [f"{indent}log tail of {attrs.get('log.source', '?')}{note}:"]
    text = str(attrs.get("log.lines", ""))
    out += [f"{indent}| {line}" for line in text.split("\n")] if text else []
    return out


def render(spans: list[dict], attributes=KEY_ATTRIBUTES) -> str:
    """``spans``: plain span dicts (otlp_json.flatten_request) of one trace."""
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
    lines = []
    if spans:
        lines.append(f"trace {spans[0]['trace_id']}  ({len(spans)} spans)")

    def walk(span, depth):
        attrs = span["attributes"]
        stage = attrs.get("glidein.stage", "?")
        extra = " ".join(f"{k}={attrs[k]}" for k in attributes if k in attrs and k != "glidein.stage")
        status = STATUS.get(span["status_code"], "")
        links = f" links={len(span['links'])}" if span["links"] else ""
        lines.append(f"{'  ' * depth}{span['name']} [{stage}] {_duration(span['end_ns'] - span['start_ns'])}"
                     f"{' ' + status if status else ''}{links}{' ' + extra if extra else ''}")
        for event in span.get("events") or ():
            if event["name"] == LOG_TAIL_EVENT:
                lines.extend(_log_tail(event["attributes"], "  " * (depth + 1)))
        # equal start times (per-script records have 1 s resolution): keep the recorded order
        for child in sorted(children.get(span["span_id"], []),
                            key=lambda s: (s["start_ns"], order[s["span_id"]])):
            walk(child, depth + 1)

    for root in sorted(roots, key=lambda s: s["start_ns"]):
        walk(root, 0)
    return "\n".join(lines)
