"""One trace as a self-contained HTML waterfall page (``show TRACE_ID --html FILE``, and the
trace pages the analysis report links to when no Jaeger UI is given).

Each span is a row in tree order (tree.ordered): its name indented by depth, stage, duration,
status, and a bar placed on the trace's time axis; a failed span is red. The row's attributes
(and a failed stage's or job's log tail) unfold under it. No script, no network: plain HTML and CSS,
every value escaped (span names and attributes come from worker nodes: untrusted).
"""

from __future__ import annotations

import html
import time

from ..core import conventions as c
from ..core.log_tail import LOG_TAIL_EVENT
from .tree import STATUS, _duration, ordered

STAGE_COLORS = {c.STAGE_GLIDEIN: "#7f7f7f", c.STAGE_FACTORY_SUBMIT: "#bcbd22", c.STAGE_FACTORY_QUEUE: "#dbdb8d",
                c.STAGE_FACTORY_HELD: "#ff9896", c.STAGE_SETUP: "#1f77b4", c.STAGE_VALIDATION: "#aec7e8",
                c.STAGE_CONDOR: "#2ca02c", c.STAGE_IDLE: "#c7c7c7", c.STAGE_JOB: "#98df8a", c.STAGE_JOB_PHASE: "#c5e5b5",
                c.STAGE_TEARDOWN: "#9467bd", c.STAGE_POST_FAILURE_SLEEP: "#f7b6d2"}
MAX_ATTR_CHARS = 2000
STYLE = """body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;width:100%}
td,th{padding:2px 6px;font-size:13px;vertical-align:top;border-bottom:1px solid #eee;text-align:left}
td.bar{width:55%;position:relative}div.bar{position:absolute;top:4px;height:12px;min-width:2px;border-radius:2px}
.err{color:#c00;font-weight:bold}div.err{background:#d62728 !important}
details{font-size:12px;color:#444}pre{white-space:pre-wrap;margin:2px 0}"""


def _attrs_html(span: dict) -> str:
    items = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v)[:MAX_ATTR_CHARS])}</td></tr>"
                    for k, v in sorted(span["attributes"].items()))
    tails = "".join(f"<pre>{html.escape(str(e['attributes'].get(c.LOG_LINES, ''))[:MAX_ATTR_CHARS])}</pre>"
                    for e in span.get("events") or () if e["name"] in (LOG_TAIL_EVENT, c.JOB_LOG_TAIL))
    return f"<details><summary>attributes</summary><table>{items}</table>{tails}</details>"


def render_html(spans: list[dict], *, title: str = "") -> str:
    """The waterfall page of one trace's spans (flat span dicts, otlp_json.flatten_request)."""
    rows = ordered(spans)
    trace_id = spans[0]["trace_id"] if spans else ""
    starts = [s["start_ns"] for s, _ in rows if s["start_ns"]]
    ends = [max(s["end_ns"], s["start_ns"]) for s, _ in rows if s["start_ns"]]
    t0, t1 = (min(starts), max(ends)) if starts else (0, 1)
    width = max(t1 - t0, 1)
    body = []
    for span, depth in rows:
        stage = str(span["attributes"].get(c.STAGE, ""))
        status = STATUS.get(span["status_code"], "")
        left = 100.0 * (span["start_ns"] - t0) / width if span["start_ns"] else 0.0
        size = 100.0 * max(span["end_ns"] - span["start_ns"], 0) / width
        err = " err" if span["status_code"] == 2 else ""
        body.append(
            f"<tr class='span'><td style='padding-left:{6 + 14 * min(depth, 32)}px'>{html.escape(str(span['name']))}"
            f"{_attrs_html(span)}</td><td>{html.escape(stage)}</td>"
            f"<td>{_duration(max(span['end_ns'] - span['start_ns'], 0))}</td><td class='{err.strip()}'>{status}</td>"
            f"<td class='bar'><div class='bar{err}' style='left:{left:.3f}%;width:{size:.3f}%;"
            f"background:{STAGE_COLORS.get(stage, '#17becf')}'></div></td></tr>")
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t0 / 1e9)) if starts else "-"
    heading = html.escape(title or f"trace {trace_id}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{heading}</title><style>{STYLE}</style></head>"
            f"<body><h1>{heading}</h1><p>{len(spans)} spans, starting {when}, lasting "
            f"{_duration(t1 - t0) if starts else '-'}.</p><table id='waterfall'><tr><th>span</th><th>stage</th>"
            f"<th>duration</th><th>status</th><th>timeline</th></tr>{''.join(body)}</table></body></html>")
