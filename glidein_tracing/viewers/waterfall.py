"""One trace as a self-contained HTML waterfall page (``show TRACE_ID --html FILE``, and the
trace pages the analysis report links to when no Jaeger UI is given).

What an operator opening a failed glidein looks for comes first: the verdict (failure domain,
evidence, the rule that decided and its advice) and each failed stage with its log tail, in
plain sight. Then each span is a row in tree order (tree.ordered): its name indented by depth,
stage, duration, status, and a bar on the trace's time axis (ticks and grid lines, seconds
since the trace began); a failed span is red and shows its verdict and log tail under its
name. Every attribute unfolds under its row. Links go to the trace in Jaeger (``jaeger_ui``)
and back to the report that linked here (``report``). No script, no network: plain HTML and
CSS, every value escaped (span names and attributes come from worker nodes: untrusted).
"""

from __future__ import annotations

import html
import time
import urllib.parse

from ..core import conventions as c
from ..core.log_tail import LOG_TAIL_EVENT
from .tree import STATUS, _duration, ordered

STAGE_COLORS = {c.STAGE_GLIDEIN: "#7f7f7f", c.STAGE_FACTORY_SUBMIT: "#bcbd22", c.STAGE_FACTORY_QUEUE: "#dbdb8d",
                c.STAGE_FACTORY_HELD: "#ff9896", c.STAGE_SETUP: "#1f77b4", c.STAGE_VALIDATION: "#aec7e8",
                c.STAGE_CONDOR: "#2ca02c", c.STAGE_IDLE: "#c7c7c7", c.STAGE_JOB: "#98df8a", c.STAGE_JOB_PHASE: "#c5e5b5",
                c.STAGE_TEARDOWN: "#9467bd", c.STAGE_POST_FAILURE_SLEEP: "#f7b6d2"}
MAX_ATTR_CHARS = 2000
MAX_TICKS = 8
# tick steps in seconds: 1-2-5 below a minute, then minutes, hours, days
TICK_STEPS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600,
              900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)
# the verdict's attributes, in the order they explain a failure
VERDICT = ((c.GLIDEIN_FAILURE_DOMAIN, "failure domain"), (c.GLIDEIN_FAILURE_SERVICE, "service"),
           (c.GLIDEIN_FAILURE_EVIDENCE, "evidence"), (c.GLIDEIN_FAILURE_RULE, "rule"),
           (c.GLIDEIN_FAILURE_LABEL, "label"), (c.GLIDEIN_FAILURE_ADVICE, "advice"),
           (c.GLIDEIN_FAILURE_DOWNTIME, "downtime"),
           (c.JOB_FAILURE_DOMAIN, "failure domain"), (c.JOB_FAILURE_SERVICE, "service"),
           (c.JOB_FAILURE_EVIDENCE, "evidence"), (c.JOB_FAILURE_RULE, "rule"),
           (c.JOB_FAILURE_LABEL, "label"), (c.JOB_FAILURE_ADVICE, "advice"),
           (c.JOB_FAILURE_DOWNTIME, "downtime"), (c.ERROR_TYPE, "error type"))
STYLE = """body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;width:100%}
td,th{padding:2px 6px;font-size:13px;vertical-align:top;border-bottom:1px solid #eee;text-align:left}
td.bar{width:55%;position:relative}div.bar{position:absolute;top:4px;height:12px;min-width:2px;border-radius:2px}
th.axis{position:relative;height:2.2em;padding:0}span.tick{position:absolute;bottom:2px;font-weight:normal;
font-size:11px;color:#555;border-left:1px solid #999;padding-left:2px;height:1em;white-space:nowrap}
.err{color:#c00;font-weight:bold}div.err{background:#d62728 !important}tr.failed td{background:#fff5f5}
details{font-size:12px;color:#444}pre{white-space:pre-wrap;margin:2px 0}
pre.tail{font-size:12px;background:#f6f6f6;border-left:3px solid #d62728;padding:4px 6px;max-height:24em;overflow:auto}
dl.verdict{display:grid;grid-template-columns:max-content auto;gap:2px 12px;margin:4px 0;font-size:13px}
dl.verdict dt{color:#555}dl.verdict dd{margin:0;font-weight:bold}section#failed{border:1px solid #e3b3b3;
padding:0 1em 0.5em;margin:1em 0;background:#fffafa}p.links a{margin-right:1.5em}.sub{color:#555;font-size:13px}"""


def _escape(value, limit: int = MAX_ATTR_CHARS) -> str:
    return html.escape(str(value)[:limit])


def _attrs_html(span: dict) -> str:
    items = "".join(f"<tr><td>{_escape(k)}</td><td>{_escape(v)}</td></tr>"
                    for k, v in sorted(span["attributes"].items()))
    return f"<details><summary>attributes</summary><table>{items}</table></details>"


def _tails(span: dict) -> list[dict]:
    return [e["attributes"] for e in span.get("events") or () if e["name"] in (LOG_TAIL_EVENT, c.JOB_LOG_TAIL)]


def _tails_html(span: dict) -> str:
    """A failed stage's or job's log tails, shown (not folded): what explains the failure."""
    out = []
    for tail in _tails(span):
        note = f" ({_escape(tail[c.LOG_NOTE])})" if tail.get(c.LOG_NOTE) else ""
        out.append(f"<div class='sub'>log tail of {_escape(tail.get(c.LOG_SOURCE, '?'))}{note}</div>"
                   f"<pre class='tail'>{_escape(tail.get(c.LOG_LINES, ''))}</pre>")
    return "".join(out)


def _verdict_html(span: dict) -> str:
    """The verdict a failed span carries (domain, evidence, rule, advice ...) and its status."""
    attrs = span["attributes"]
    items = [(label, attrs[name]) for name, label in VERDICT if attrs.get(name) not in (None, "")]
    if span.get("status_message"):
        items.append(("status", span["status_message"]))
    if not items:
        return ""
    return "<dl class='verdict'>" + "".join(f"<dt>{_escape(label)}</dt><dd>{_escape(value)}</dd>"
                                            for label, value in items) + "</dl>"


def _tick_label(seconds: float, step: float) -> str:
    if seconds == 0:
        return "0"
    if step < 1:
        return f"{seconds:.3f}".rstrip("0").rstrip(".") + "s"
    if step < 60:
        return f"{seconds:g}s"
    if step < 3600:
        return f"{seconds / 60:g}m"
    if step < 86400:
        return f"{seconds / 3600:g}h"
    return f"{seconds / 86400:g}d"


def time_axis(width_ns: int) -> tuple[float, list[tuple[float, str]]]:
    """(step in seconds, [(position in % of the axis, label)]) for a trace ``width_ns`` long."""
    width_s = max(width_ns, 1) / 1e9
    step = next((s for s in TICK_STEPS if width_s / s <= MAX_TICKS), TICK_STEPS[-1])
    ticks, n = [], 0
    while n * step <= width_s * 0.95 and n <= MAX_TICKS * 2:    # a label at the very end would overflow
        ticks.append((100.0 * n * step / width_s, _tick_label(round(n * step, 6), step)))
        n += 1
    return step, ticks


def _links_html(trace_id: str, jaeger_ui: str | None, report: str | None) -> str:
    links = []
    if jaeger_ui:
        href = f"{jaeger_ui.rstrip('/')}/trace/{urllib.parse.quote(trace_id)}"
        links.append(f"<a id='jaeger' href='{html.escape(href)}'>open this trace in Jaeger</a>")
    if report:
        links.append(f"<a id='report' href='{html.escape(report)}'>back to the report</a>")
    return f"<p class='links'>{''.join(links)}</p>" if links else ""


def _summary_html(root: dict | None) -> str:
    """The glidein's identity as an operator names it: entry, site, its Factory job id, outcome."""
    if root is None:
        return ""
    attrs = root["attributes"]
    parts = []
    for name, label in ((c.GLIDEIN_ENTRY, "entry"), (c.GLIDEIN_SITE, "site"), (c.GLIDEIN_OUTCOME, "outcome")):
        if attrs.get(name) not in (None, ""):
            parts.append(f"{label} <b>{_escape(attrs[name])}</b>")
    if attrs.get(c.GLIDEIN_CLUSTER) is not None:
        parts.insert(2, f"job <b>{_escape(attrs[c.GLIDEIN_CLUSTER])}.{_escape(attrs.get(c.GLIDEIN_PROC, 0))}</b>")
    return f"<p>{', '.join(parts)}</p>" if parts else ""


def _failed_html(rows) -> str:
    """What failed, first: the root's verdict, then each failed span with its own and its log tail."""
    failed = [(s, d) for s, d in rows if s["status_code"] == 2 or _tails(s)
              or (d == 0 and s["attributes"].get(c.GLIDEIN_FAILURE_DOMAIN))]
    if not failed:
        return ""
    parts = ["<section id='failed'><h2>What failed</h2>"]
    for span, _depth in failed:
        stage = span["attributes"].get(c.STAGE, "")
        parts.append(f"<h3>{_escape(span['name'])} <span class='sub'>({_escape(stage)})</span></h3>"
                     f"{_verdict_html(span)}{_tails_html(span)}")
    return "".join(parts) + "</section>"


def render_html(spans: list[dict], *, title: str = "", jaeger_ui: str | None = None,
                report: str | None = None) -> str:
    """The waterfall page of one trace's spans (flat span dicts, otlp_json.flatten_request);
    ``jaeger_ui``: the Jaeger UI's base URL, ``report``: the (relative) URL of the report."""
    style, heading, body = waterfall(spans, title=title, jaeger_ui=jaeger_ui, report=report)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{heading}</title><style>{style}</style></head>"
            f"<body><h1>{heading}</h1>{body}</body></html>")


def waterfall(spans: list[dict], *, title: str = "", jaeger_ui: str | None = None,
              report: str | None = None) -> tuple:
    """(its CSS, its heading, its HTML) of one trace's waterfall, for a page of its own
    (render_html) or under another's heading (the service's tracking statement)."""
    rows = ordered(spans)
    trace_id = spans[0]["trace_id"] if spans else ""
    roots = [s for s, depth in rows if depth == 0 and s["attributes"].get(c.STAGE) == c.STAGE_GLIDEIN]
    starts = [s["start_ns"] for s, _ in rows if s["start_ns"]]
    ends = [max(s["end_ns"], s["start_ns"]) for s, _ in rows if s["start_ns"]]
    t0, t1 = (min(starts), max(ends)) if starts else (0, 1)
    width = max(t1 - t0, 1)
    step, ticks = time_axis(width)
    grid = 100.0 * step * 1e9 / width
    body = []
    for span, depth in rows:
        stage = str(span["attributes"].get(c.STAGE, ""))
        status = STATUS.get(span["status_code"], "")
        left = 100.0 * (span["start_ns"] - t0) / width if span["start_ns"] else 0.0
        size = 100.0 * max(span["end_ns"] - span["start_ns"], 0) / width
        failed = span["status_code"] == 2
        err = " err" if failed else ""
        shown = (_verdict_html(span) if failed else "") + _tails_html(span)
        body.append(
            f"<tr class='span{' failed' if failed else ''}'><td style='padding-left:{6 + 14 * min(depth, 32)}px'>"
            f"{_escape(span['name'])}{shown}{_attrs_html(span)}</td><td>{_escape(stage)}</td>"
            f"<td>{_duration(max(span['end_ns'] - span['start_ns'], 0))}</td><td class='{err.strip()}'>{status}</td>"
            f"<td class='bar'><div class='bar{err}' style='left:{left:.3f}%;width:{size:.3f}%;"
            f"background:{STAGE_COLORS.get(stage, '#17becf')}'></div></td></tr>")
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t0 / 1e9)) if starts else "-"
    heading = _escape(title or (roots[0]["name"] if roots else f"trace {trace_id}"))
    axis = "".join(f"<span class='tick' style='left:{pos:.3f}%'>{label}</span>" for pos, label in ticks)
    style = STYLE + (f"td.bar{{background-image:repeating-linear-gradient(to right,#e8e8e8 0,#e8e8e8 1px,"
                     f"transparent 1px,transparent {grid:.4f}%)}}")
    return style, heading, (
            f"<p class='sub'>trace {_escape(trace_id)}</p>"
            f"{_links_html(trace_id, jaeger_ui, report)}{_summary_html(roots[0] if roots else None)}"
            f"<p>{len(spans)} spans, starting {when}, lasting {_duration(t1 - t0) if starts else '-'}.</p>"
            f"{_failed_html(rows)}"
            f"<table id='waterfall'><tr><th>span</th><th>stage</th><th>duration</th><th>status</th>"
            f"<th class='axis' title='time since the trace began'>{axis}</th></tr>{''.join(body)}</table>")
