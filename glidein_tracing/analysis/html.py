"""The analysis as one self-contained HTML page: each summary is a sortable table (units in its
headers) beside its plot (matplotlib, embedded as a base64 SVG image), every trace id a link:
to the trace's waterfall page rendered from the store (waterfall.py, which links on to Jaeger),
else to ``--jaeger-ui`` when given, else plain text. No network, no external file: it opens anywhere. The page is
drawn from the analysis document alone (its histograms: stats.py), with no query.
"""

from __future__ import annotations

import base64
import html
import io
import math
import statistics
import time

from .report import METRIC_LABELS, PASTE_REPLACES, fmt_s
from .histograms import PLOT_BINS_PER_DECADE

WASTE_CATEGORIES = ("validation", "idle_before_first_job", "idle_between_jobs", "idle_tail", "no_job", "badput")
CSS = """body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1500px;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}
.row{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}.row>div{flex:1 1 480px;min-width:0}
.row>div.plot{flex:1 1 640px;min-width:min(640px,100%)}.summary{font-size:15px;margin:.3em 0}
img{max-width:100%}table{border-collapse:collapse;font-size:13px;margin:.4em 0}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right}th{background:#f3f3f3;cursor:pointer;user-select:none}
td:first-child,th:first-child{text-align:left}th.asc:after{content:' \\25B2'}th.desc:after{content:' \\25BC'}
.note{color:#555;font-size:13px}pre.paste{font-size:12px;background:#f7f7f7;padding:.5em;overflow-x:auto}code{font-size:12px}"""
# click a header to sort by it (numbers by the cell's data-v value), again to reverse
SORT_JS = """<script>document.querySelectorAll('table.sortable th').forEach(function(th){th.addEventListener('click',
function(){var t=th.closest('table'),i=Array.from(th.parentNode.children).indexOf(th),b=t.tBodies[0],
d=th.classList.contains('asc')?-1:1;t.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc')});
th.classList.add(d>0?'asc':'desc');Array.from(b.rows).sort(function(x,y){var p=x.cells[i],q=y.cells[i],
u=p.dataset.v,v=q.dataset.v;if(u!==undefined&&v!==undefined)return d*(parseFloat(u)-parseFloat(v));
return d*p.textContent.localeCompare(q.textContent)}).forEach(function(r){b.appendChild(r)})})});</script>"""


class Page:
    """Builds the page's HTML; ``link`` turns a trace id into its link (or plain text)."""

    def __init__(self, jaeger_ui: str | None, trace_pages: dict | None):
        self.jaeger_ui, self.trace_pages = jaeger_ui, trace_pages or {}
        self.parts: list[str] = []

    def link(self, trace_id: str, short: bool = False) -> str:
        """The trace id (``short``: its first 8 digits, the whole in the tooltip) as a link."""
        tid = html.escape(str(trace_id))
        text = f"<code title='{tid}'>{tid[:8]}</code>" if short else f"<code>{tid}</code>"
        if trace_id in self.trace_pages:
            return f"<a href='{html.escape(self.trace_pages[trace_id])}'>{text}</a>"
        if self.jaeger_ui:
            return f"<a href='{html.escape(self.jaeger_ui.rstrip('/'))}/trace/{tid}'>{text}</a>"
        return text

    @staticmethod
    def cell(value, fmt=None) -> str:
        """A table cell; numbers keep their raw value for sorting; ``(value, fmt)``: this cell's format."""
        if isinstance(value, tuple):
            value, fmt = value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            text = fmt(value) if fmt else (f"{value:,.2f}" if isinstance(value, float) else f"{value:,}")
            return f"<td data-v='{value!r}'>{html.escape(text)}</td>"
        return f"<td>{value if isinstance(value, Raw) else html.escape('' if value is None else str(value))}</td>"

    def table(self, headers, rows, fmts=None) -> str:
        fmts = fmts or [None] * len(headers)
        head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
        body = "".join("<tr>" + "".join(self.cell(v, f) for v, f in zip(row, fmts)) + "</tr>" for row in rows)
        return f"<table class='sortable'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def section(self, title: str, table: str, plot: tuple | None = None, note: str = "", anchor: str = "",
                stacked: bool = False) -> None:
        """A heading, a note, the table and its plot beside it (``stacked``: below it)."""
        figure = (f"<div class='plot'><img id='plot-{plot[0]}' alt='{html.escape(title)}' "
                  f"src='data:image/svg+xml;base64,{plot[1]}'></div>") if plot else ""
        note = f"<p class='note'>{note}</p>" if note else ""
        anchor = f" id='{anchor}'" if anchor else ""
        body = f"{table}<div class='row'>{figure}</div>" if stacked else f"<div class='row'><div>{table}</div>{figure}</div>"
        self.parts.append(f"<h2{anchor}>{html.escape(title)}</h2>{note}{body}")


class Raw(str):
    """Cell content that is already HTML (links)."""


def duration_unit(values) -> tuple:
    """(unit, seconds per unit) for a column of seconds, as the terminal writes them (fmt_s):
    h from 2 h, min from 2 min, else s, by the column's largest value."""
    top = max((abs(v) for v in values if isinstance(v, (int, float))), default=0)
    return ("h", 3600.0) if top >= 7200 else ("min", 60.0) if top >= 120 else ("s", 1.0)


def duration_columns(headers: list, rows: list, columns: list) -> tuple:
    """The headers with each duration column's unit ("p50 (min)") and a format per column
    (its values in that unit; the cells keep the seconds to sort by)."""
    headers, fmts = list(headers), [None] * len(headers)
    for c in columns:
        unit, per = duration_unit([r[c] for r in rows])
        headers[c] = f"{headers[c]} ({unit})"
        fmts[c] = lambda v, per=per: f"{v / per:,.1f}"
    return headers, fmts


def _figure(width: float, height: float, rows: int = 1, columns: int = 1):
    """A figure and its axes, without pyplot (no figure manager, no global state to close)."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height))
    return fig, fig.subplots(rows, columns)


def _svg(fig) -> str:
    """The figure as base64 SVG, its text left to the browser's fonts: a third less drawing time
    than an Agg PNG (no glyph outlines, no rasterizing)."""
    import matplotlib
    buffer = io.BytesIO()
    # labels inside the image (a tight box), minus signs as ASCII (a font without U+2212 drops it)
    with matplotlib.rc_context({"svg.fonttype": "none", "axes.unicode_minus": False}):
        fig.savefig(buffer, format="svg", dpi=80, bbox_inches="tight", pad_inches=0.1)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _log_stairs(ax, edges: list, counts: list) -> None:
    """A histogram of bins PLOT_BINS_PER_DECADE per decade (lower ``edges``, gaps empty) as one
    filled step patch on an x axis in log10(seconds), one plain label with its unit per decade:
    a patch per bar and matplotlib's log axes (minor ticks) cost most of the drawing."""
    from matplotlib import ticker
    first = [round(math.log10(e) * PLOT_BINS_PER_DECADE) for e in edges]
    dense = [0] * (first[-1] - first[0] + 1)
    for b, count in zip(first, counts):
        dense[b - first[0]] = count
    ax.stairs(dense, [(first[0] + i) / PLOT_BINS_PER_DECADE for i in range(len(dense) + 1)], fill=True,
              color="#4472c4")
    low, high = math.floor(first[0] / PLOT_BINS_PER_DECADE), math.ceil((first[-1] + 1) / PLOT_BINS_PER_DECADE)
    decades = range(low, high + 1, max(1, math.ceil((high - low) / 6)))      # at most 7 labels
    ax.set_xticks(decades, [fmt_s(10.0 ** d) if d >= 0 else f"{10.0 ** d:g}s" for d in decades])
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.yaxis.set_major_locator(ticker.MaxNLocator(4))


def _distributions_figure(doc: dict):
    metrics = ("queue_wait_s", "setup_s", "time_to_first_job_s", "idle_between_jobs_s", "tail_s", "no_job_s",
               "job_runtime_s", "lifetime_s")
    fig, axes = _figure(13, 5.5, 2, 4)
    for ax, metric in zip(axes.flat, metrics):
        histogram = doc["stats"]["histograms"].get(metric) or {"edges": [], "counts": []}
        # a given y skips matplotlib's title placement, which measures every tick label again
        ax.set_title(f"{METRIC_LABELS[metric]} (s)", fontsize=9, y=1.0)
        if histogram["counts"]:
            _log_stairs(ax, histogram["edges"], histogram["counts"])
        ax.tick_params(labelsize=7)
    return fig


def _shutdowns_figure(doc: dict):
    """The timeout shutdowns' seconds idle (10 s bins from the statistics, grouped to about 80 bars
    over 0-1.6 x the setting in force) with that setting."""
    cur, seen = doc["current_settings"], doc["stats"]["settings_in_force"]
    fig, axes = _figure(11, 3.4, 1, 2)
    for ax, key in zip(axes, ("max_idle", "max_tail")):
        high = 1.6 * cur[key]
        width = 10 * max(1, round(high / 80 / 10))
        bars: dict = {}
        for start, count in seen.get(f"{key}_shutdowns_10s", []):
            if start < high:
                bars[start // width * width] = bars.get(start // width * width, 0) + count
        starts = range(0, int(high) + width, width)
        ax.stairs([bars.get(s, 0) for s in starts[:-1]], list(starts), fill=True, color="#70ad47")
        ax.axvline(cur[key], color="#c00000", label=f"in force {cur[key]:.0f} s")
        ax.set_xlim(0, high)
        what = "idle, never a job" if key == "max_idle" else "tail"
        ax.set_title(f"stopped on their own: {what} (s)", fontsize=9, y=1.0)
        ax.legend(fontsize=7)
    return fig


def _waste_figure(doc: dict):
    waste = doc["stats"]["waste_core_hours"]
    ranked = sorted(waste["by_entry"].items(), key=lambda kv: -sum(kv[1][c] for c in WASTE_CATEGORIES))[:15]
    fig, ax = _figure(9, 4)
    bottom = [0.0] * len(ranked)
    for category in WASTE_CATEGORIES:
        heights = [e[category] for _, e in ranked]
        ax.bar(range(len(ranked)), heights, bottom=bottom, label=category.replace("_", " "))
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax.set_xticks(range(len(ranked)), [name for name, _ in ranked], rotation=40, ha="right", fontsize=7)
    ax.set_ylabel("core-hours")
    ax.legend(fontsize=7)
    return fig


def _validation_figure(doc: dict):
    groups = doc["stats"]["validation_groups"]
    fig, ax = _figure(7, 0.5 * len(groups) + 1.2)
    ax.barh([g["group"] for g in groups][::-1], [100 * g["share_of_validation_time"] for g in groups][::-1],
            color="#ffc000")
    ax.set_xlabel("share of validation time (%)")
    return fig


def _tradeoff_figure(doc: dict):
    """Jobs lost against net core-hours saved over the period: every candidate as one setting
    for the whole Factory (grey, its Pareto front in blue), each entry's recommendation (red,
    labelled) and their sum, the Factory-wide figure (red star). Signed axes: a loss is below 0."""
    from matplotlib import ticker
    wi = doc["whatif"]
    recs = wi["recommendations"]["entries"]
    fig, ax = _figure(10, 5)
    pts, front = wi["candidates"], wi["pareto_front"]
    ax.axhline(0, color="#444", linewidth=0.8)
    ax.scatter([p["lost_jobs"] for p in pts], [p["net_saved_core_hours"] for p in pts], s=14, color="#a5a5a5",
               label="one setting for the whole Factory")
    ax.plot([p["lost_jobs"] for p in front], [p["net_saved_core_hours"] for p in front], "o-", color="#2e75b6",
            markersize=4, label="its Pareto front")
    if recs:
        ax.scatter([r["lost_jobs"] for r in recs], [r["net_core_hours"] for r in recs], s=70, facecolors="none",
                   edgecolors="#c00000", linewidths=2, label="recommended, per entry")
        for r in recs[:8]:
            ax.annotate(r["entry"], (r["lost_jobs"], r["net_core_hours"]), fontsize=7, xytext=(4, 4),
                        textcoords="offset points", color="#c00000")
        ax.scatter([sum(r["lost_jobs"] for r in recs)], [sum(r["net_core_hours"] for r in recs)], marker="*", s=220,
                   color="#c00000", label="recommended, Factory-wide (their sum)")
    ax.set_xlabel("jobs lost (they need another glidein)")
    ax.set_ylabel(f"net core-hours saved in {wi['recommendations']['days']:.1f} days (< 0: a cost)")
    if max((p["lost_jobs"] for p in pts), default=0) > 100:
        ax.set_xscale("symlog", linthresh=10)
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.grid(True, color="#eee")
    ax.legend(fontsize=7, loc="best")
    return fig


def _trend_figure(doc: dict):
    """Per day: waste and efficiency (% of Lasted), the trend over the period."""
    days = [d for d in doc["trend"] if d["efficiency_pct"] is not None]
    fig, ax = _figure(10, 2.6)
    x = list(range(len(days)))
    ax.plot(x, [d["efficiency_pct"] for d in days], "o-", color="#2e75b6", markersize=3, label="efficiency (%)")
    ax.plot(x, [d["waste_pct"] for d in days], "o-", color="#c00000", markersize=3, label="waste (%)")
    step = max(1, len(days) // 10)
    ax.set_xticks(x[::step], [d["day"] for d in days][::step], fontsize=7)
    ax.set_ylim(0, 100)
    ax.set_ylabel("% of Lasted")
    ax.legend(fontsize=7, loc="center right")
    return fig


def _plots(doc: dict) -> dict:
    """id -> base64 SVG of every figure, from what the document holds (the statistics' histograms)."""
    figures = {"distributions": _distributions_figure, "shutdowns": _shutdowns_figure, "waste": _waste_figure,
               "validation": _validation_figure}
    if doc.get("whatif"):
        figures["tradeoff"] = _tradeoff_figure
    if any(d["efficiency_pct"] is not None for d in doc.get("trend") or []):
        figures["trend"] = _trend_figure
    out = {}
    for name, draw in figures.items():
        fig = draw(doc)
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.2, top=0.9, wspace=0.35, hspace=0.5)
        out[name] = _svg(fig)
    return out


def _overview(page: Page, doc: dict, plots: dict) -> None:
    st = doc["stats"]
    w = st["waste_core_hours"]["overall"]
    life = w["lifetime"] or 1.0
    rows = [(k.replace("_", " "), w[k], 100 * w[k] / life) for k in (*WASTE_CATEGORIES, "goodput", "other")]
    page.section("Where the core-hours go", page.table(("category", "core-hours", "share of life (%)"), rows),
                 ("waste", plots["waste"]), f"{st['glideins']:,} glideins, {st['jobs']:,} jobs, "
                 f"{w['lifetime']:,.1f} core-hours of glidein life; outcomes: " +
                 ", ".join(f"{html.escape(str(k))} {v:,}" for k, v in st["outcomes"]["overall"].items()))
    rows = []
    for metric, label in METRIC_LABELS.items():
        r = st["metrics"]["overall"].get(metric)
        if r:
            fmt = (lambda v: f"{v:.1f}") if metric == "jobs_per_glidein" else fmt_s
            rows.append((label, r["count"], *((r[q], fmt) for q in ("mean", "p50", "p90", "p99"))))
    page.section("Distributions", page.table(("metric", "count", "mean", "p50", "p90", "p99"), rows),
                 ("distributions", plots["distributions"]),
                 "units in each cell as on the terminal (s, m = minutes, h, d); percentiles from log-binned histograms, within "
                 f"{100 * st['metrics']['max_relative_error']:.1f} % of the exact values (jobs per glidein exact)")
    per = []
    for entry, metrics in sorted(st["metrics"]["by_entry"].items()):
        get = lambda m, q: (metrics.get(m) or {}).get(q)  # noqa: E731
        per.append((entry, get("setup_s", "count"), get("queue_wait_s", "p50"), get("setup_s", "p50"),
                    get("time_to_first_job_s", "p50"), get("tail_s", "p90"), get("no_job_s", "p50")))
    headers, fmts = duration_columns(["entry", "glideins", "queue wait p50", "setup p50", "to 1st job p50", "tail p90",
                                      "no-job idle p50"], per, [2, 3, 4, 5, 6])
    page.section("Per entry", page.table(headers, per, fmts))


def _gwms(page: Page, doc: dict, plots: dict) -> None:
    cols = ("entry", "strt (%)", "fval (%)", "0job (%)", "val (%)", "idle (%)", "wst (%)", "badp (%)",
            "waste (h)", "time (h)", "glideins", "traced", "untraced")
    keys = ("entry", "strt", "fval", "0job", "val", "idle", "wst", "badp", "waste", "time", "glideins", "traced",
            "untraced")
    page.section("GlideinWMS analyze_entries", page.table(cols, [[e[k] for k in keys] for e in doc["entries"]]),
                 note="GlideinWMS's columns and definitions (docs/analysis.md), from the table's gwms_* columns; "
                      "traced and untraced: the glideins whose journal came back and those of entries that do not trace")
    _frontends(page, doc)
    _windows(page, doc)
    seen = doc["stats"]["settings_in_force"]
    rows = [(knob, doc["current_settings"][key], (seen.get(key) or {}).get("estimate_s"),
             (seen.get(key) or {}).get("support")) for key, knob in (("max_idle", "GLIDEIN_Max_Idle"),
                                                                     ("max_tail", "GLIDEIN_Max_Tail"))]
    page.section("Timeout shutdowns", page.table(("knob", "in force (s)", "seen in the data (s)", "shutdowns"), rows),
                 ("shutdowns", plots["shutdowns"]))
    groups = doc["stats"]["validation_groups"]
    rows = [(g["group"], g["runs"], g["total_s"], 100 * g["share_of_validation_time"], g["p50"], g["p90"], g["p99"])
            for g in groups]
    failed = "".join(f"<li>{html.escape(f['script'])} {html.escape(f['error_type'])}: {f['failures']:,}</li>"
                     for f in doc["stats"]["failed_scripts"])
    headers, fmts = duration_columns(["list", "glideins", "total", "share (%)", "p50", "p90", "p99"], rows, [2, 4, 5, 6])
    page.section("Validation", page.table(headers, rows, fmts) + (f"<p>failed scripts:</p><ul>{failed}</ul>" if failed
                                                                else ""), ("validation", plots["validation"]))


def _frontends(page: Page, doc: dict) -> None:
    rows = [(f"{r['client']} / {r['group'] if r['group'] is not None else '(all groups)'}", r["glideins"],
             r["failed_pct"], r["no_job_pct"], r["jobs"], r["jobs_per_glidein"], r["efficiency_pct"], r.get("gwms_wst"),
             r.get("gwms_badp"), r.get("gwms_waste"), r.get("gwms_time")) for r in doc.get("frontends") or []]
    if rows:
        page.section("Per Frontend client and group (as analyze_frontends)", page.table(
            ("client / group", "glideins", "failed (%)", "no job (%)", "jobs", "jobs per glidein", "efficiency (%)",
             "wst (%)", "badp (%)", "waste (h)", "time (h)"), rows),
            note="efficiency: JobsGoodput / Lasted (GlideinWMS's quantities); wst, badp, waste, time: analyze_entries' "
                 "columns over the group's glideins")


def _windows(page: Page, doc: dict) -> None:
    w = doc.get("windows")
    if not w:
        return
    keys = ("strt", "0job", "wst", "badp", "waste", "time", "glideins")
    rows = [(f"last {p['hours']:g} h", "(all)", *[(p["total"] or {}).get(k) for k in keys]) for p in w["periods"]]
    rows += [(f"last {p['hours']:g} h", e["entry"], *[e[k] for k in keys]) for p in w["periods"] for e in p["entries"]]
    page.section(f"Recent periods, ending {time.strftime('%Y-%m-%d %H:%M', time.gmtime(w['end']))} UTC", page.table(
        ("period", "entry", "strt (%)", "0job (%)", "wst (%)", "badp (%)", "waste (h)", "time (h)", "glideins"), rows),
        note="analyze_entries' columns over the glideins that ended in each period")


def _failures(page: Page, doc: dict) -> None:
    f = doc["failures"]
    domains = sorted(set(f["glideins_by_domain"]) | set(f["jobs_by_domain"]))
    rows = [(d, f["glideins_by_domain"].get(d, 0), f["glidein_core_hours_by_domain"].get(d, 0.0),
             f["jobs_by_domain"].get(d, 0), f["job_core_hours_by_domain"].get(d, 0.0)) for d in domains]
    page.section("Failures by domain", page.table(("domain", "glideins", "glidein core-hours", "jobs",
                                                   "job core-hours"), rows),
                 note=f"{f['failed_glideins']:,} of {f['glideins']:,} traced glideins and {f['failed_jobs']:,} of "
                      f"{f['jobs']:,} jobs failed")
    rows = [(o["site"], time.strftime("%Y-%m-%d %H:%M", time.gmtime(o["start"])),
             time.strftime("%Y-%m-%d %H:%M", time.gmtime(o["end"])), o["glideins"], o["failed"],
             100 * o["failure_rate"], 100 * o["baseline_rate"], o["error_type"], o["domain"],
             Raw(" ".join(page.link(t) for t in o["examples"]))) for o in f["outages"]]
    page.section("Outage windows", page.table(("site", "from (UTC)", "to (UTC)", "glideins", "failed", "rate (%)",
                                               "usual (%)", "error type", "domain", "examples"), rows)
                 if rows else "<p>none</p>", note="hourly failure rate far above the site's median hour")
    rows = [(m["message"], m["count"], m["domain"], Raw(" ".join(page.link(t) for t in m["examples"])))
            for m in f["top_messages"]]
    page.section("Top failure messages", page.table(("message", "glideins", "domain", "examples"), rows))
    _rule_failures(page, f)


def _rule_failures(page: Page, f: dict) -> None:
    """The failure rules' part: cost by domain/service/label, services' outages, messages no rule decided."""
    rows = [(r["domain"], r["service"], r["label"], r["glideins"], r["jobs"], r["core_hours"])
            for r in f["by_domain_service_label"]]
    page.section("Failures by domain, service and label", page.table(
        ("domain", "service", "label", "glideins", "jobs", "core-hours"), rows) if rows else "<p>none</p>")
    rows = [(w["service"], time.strftime("%Y-%m-%d %H:%M", time.gmtime(w["start"])),
             time.strftime("%Y-%m-%d %H:%M", time.gmtime(w["end"])), w["attempts"], w["failures"],
             100 * w["failure_rate"], 100 * w["baseline_rate"], "planned" if w["planned"] else "unplanned",
             w["downtime"], Raw(" ".join(page.link(t) for t in w["examples"]))) for w in f["service_outages"]]
    page.section("Services' outage windows", page.table(
        ("service", "from (UTC)", "to (UTC)", "attempts", "failed", "rate (%)", "usual (%)", "kind",
         "declared downtime", "examples"), rows) if rows else "<p>none</p>",
        note="planned: its failures fell in a declared downtime")
    rows = [(m["message"], m["count"], m["domain"], Raw(" ".join(page.link(t) for t in m["examples"])))
            for m in f["top_unclassified"]]
    page.section("Failure messages no rule decided", page.table(("message", "glideins", "domain", "examples"), rows)
                 if rows else "<p>none</p>", note="what to write a failure rule for next")


def _compare(page: Page, doc: dict) -> None:
    for name, section in doc["compare"].items():
        rows = [(d["dimension"], v["value"], v["selected"], 100 * v["share_selected"], 100 * v["share_rest"],
                 v["lift"] if v["lift"] is not None else float("inf")) for d in section["dimensions"]
                for v in d["values"]]
        page.section(f"Compare: {name.replace('_', ' ')} glideins against the rest",
                     page.table(("dimension", "value", "glideins", "share here (%)", "share in the rest (%)",
                                 "lift (x)"), rows), note=f"selection: <code>{html.escape(section['condition'])}</code>")


def _populations(page: Page, doc: dict) -> None:
    from .report import POPULATION_LABELS
    p = doc.get("populations")
    if not p:
        return
    a, b = p["populations"]["a"], p["populations"]["b"]
    rows = []
    for key, (label, scale, unit) in POPULATION_LABELS.items():
        d = p["differences"].get(key) or {}
        value = lambda v: None if v is None else scale * v  # noqa: E731
        rows.append((label + (f" ({unit})" if unit else ""), value(a.get(key)), value(b.get(key)),
                     value(d.get("difference")), value(d.get("low")), value(d.get("high")),
                     "yes" if d.get("significant") else "no"))
    fmt = lambda v: f"{v:,.3f}"  # noqa: E731
    page.section(f"Compare A: {p['selections']['a']['given']} ({a['glideins']:,} glideins) against B: "
                 f"{p['selections']['b']['given']} ({b['glideins']:,} glideins)",
                 page.table(("measure", "A", "B", "A - B", "interval low", "interval high", "significant"), rows,
                            [None, fmt, fmt, fmt, fmt, fmt, None]),
                 note=f"intervals: {100 * p['interval']['family_level']:.0f} % for all {p['interval']['measures']} "
                      "measures together (Bonferroni); significant: the interval excludes 0")


def _whatif(page: Page, doc: dict, plots: dict) -> None:
    wi = doc.get("whatif")
    if not wi:
        return
    rows = [(p["settings"]["max_idle"], p["settings"]["max_tail"], p["settings"]["retire"], p["saved_core_hours"],
             p["net_saved_core_hours"], p["lost_jobs"], p["glideins_cut_short"]) for p in wi["candidates"]]
    rep = wi["current_replay"]
    note = ("Every candidate applied to the whole Factory at once (the recommendations above are per entry). "
            f"The replay of the current settings {'reproduces' if rep['exact'] else 'does NOT reproduce'} the "
            "recorded waste.")
    page.section("What-if: timeout candidates, one setting everywhere", page.table(
        ("Max_Idle (s)", "Max_Tail (s)", "Retire (s)", "saved core-hours", "net saved core-hours", "jobs lost",
         "glideins cut short"), rows), note=note)


def trend_ends(trend: list, days: int = 7):
    """((first, last), n): the median day's efficiency and waste over the first and the last
    ``n`` full days (at most ``days``, at most half of them), or None with fewer than 4 full
    days. A full day holds at least half the median day's glideins: the period's edge days
    hold only its shortest glideins (the first) or its longest (the last), whose efficiency
    says nothing of a trend."""
    known = [d for d in trend if d["efficiency_pct"] is not None]
    typical = statistics.median(d["glideins"] for d in known) if known else 0
    full = [d for d in known if d["glideins"] >= typical / 2]
    if len(full) < 4:
        return None
    n = min(days, len(full) // 2)
    ends = [{"from": part[0]["day"], "to": part[-1]["day"],
             **{k: statistics.median(d[k] for d in part) for k in ("efficiency_pct", "waste_pct")}}
            for part in (full[:n], full[-n:])]
    return tuple(ends), n


def _summary(page: Page, doc: dict, plots: dict) -> None:
    """The page's first lines: core-hours, waste share, efficiency, and the trend per day."""
    st = doc["stats"]
    w = st["waste_core_hours"]["overall"]
    life = w.get("lifetime") or 0.0
    waste = sum(w.get(k) or 0.0 for k in ("validation", "idle", "no_job", "badput"))
    share = lambda v: f"{100 * v / life:.1f} %" if life else "-"  # noqa: E731
    text = (f"{st['glideins']:,} glideins, {st['jobs']:,} jobs: <b>{life:,.0f} core-hours</b> of glidein life; "
            f"<b>efficiency {share(w.get('goodput') or 0.0)}</b> (goodput / lifetime); <b>waste {share(waste)}</b> "
            f"(validation {share(w.get('validation') or 0)}, idle {share(w.get('idle') or 0)}, never a job "
            f"{share(w.get('no_job') or 0)}, badput {share(w.get('badput') or 0)})")
    trend = trend_ends(doc.get("trend") or [])
    if trend:
        (first, last), days = trend
        text += (f". Per day (GlideinWMS's Lasted, the median of {days} days): efficiency "
                 f"{first['efficiency_pct']:.1f} % from {first['from']} to {first['to']}, "
                 f"{last['efficiency_pct']:.1f} % from {last['from']} to {last['to']}; waste "
                 f"{first['waste_pct']:.1f} % then {last['waste_pct']:.1f} %")
    page.parts.append(f"<p class='summary' id='summary'>{text}.</p>")


def _trend(page: Page, doc: dict, plots: dict) -> None:
    if "trend" in plots:
        page.section("Trend per day", "", ("trend", plots["trend"]), stacked=True,
                     note="efficiency: JobsGoodput x GLIDEIN_CPUS / Lasted x cores; waste: (Lasted - JobsLasted) / "
                          "Lasted; per UTC day the glideins ended (the last days hold only the longest glideins)")


def _examples(page: Page, doc: dict) -> None:
    """Example traces per question, linked (waterfall pages or Jaeger)."""
    ex = doc.get("examples") or {}
    f = doc["failures"]
    failed = [t for m in f["top_messages"][:3] for t in m["examples"][:1]]
    rows = [("slowest setups", ex.get("slowest_setup")), ("longest idle glideins", ex.get("longest_idle")),
            ("failures (one per top message)", failed)]
    rows += [(f"glideins the change at {entry} would have cut", ids) for entry, ids in (ex.get("cut") or {}).items()]
    page.section("Example traces", page.table(("what", "traces"), [
        (what, Raw(" ".join(page.link(t) for t in ids or []) or "none")) for what, ids in rows]),
        note="each links to its waterfall page (--store) or to Jaeger (--jaeger-ui)", anchor="examples")


def _recommendations(page: Page, doc: dict, plots: dict) -> None:
    """The what-if's answer, first: per entry and Frontend group, the change and the line to
    paste, its net saving per month with its uncertainty, what it costs; the Factory-wide sum."""
    from .report import change_text
    wi = doc.get("whatif")
    if not wi:
        return
    r = wi["recommendations"]
    f = r["factory"]
    headers = ("change", "net core-hours / month", "+/- core-hours / month", "jobs lost", "jobs lost (%)",
               "glideins affected", "glideins", "glideins it would have cut (examples)")
    cut = (doc.get("examples") or {}).get("cut") or {}

    def rows(recs, name):
        return [(name(x), change_text(x["changes"]), x["net_core_hours_per_month"],
                 x["uncertainty_core_hours_per_month"], x["lost_jobs"], 100 * x["lost_job_share"], x["glideins_affected"],
                 x["glideins"], Raw(" ".join(page.link(t, short=True) for t in cut.get(x.get("entry"), []))))
                for x in recs]

    def paste(recs, name, where):
        lines = [html.escape(f"<!-- {name(x)}: {where} -->\n{c['attr']}") for x in recs for c in x["changes"]]
        return f"<p class='note'>to paste:</p><pre class='paste'>{chr(10).join(lines)}</pre>" if lines else ""
    one = lambda v: f"{v:,.1f}"  # noqa: E731
    fmts = [None, None, one, one, None, lambda v: f"{v:.2f}", None, None, None]
    note = (f"Factory-wide: <b>{f['net_core_hours_per_month']:,.1f} +/- {f['uncertainty_core_hours_per_month']:,.1f} "
            f"core-hours per month</b>, the sum of the {f['entries']} entries below; {f['lost_jobs']:,} jobs lost, "
            f"{f['glideins_affected']:,} glideins affected. From {f['glideins']:,} glideins and {f['jobs']:,} jobs over "
            f"{r['days']:.1f} days (a month is {r['month_days']:.0f} days). Rule: {html.escape(r['rule'])}. "
            f"Why the glidein counts differ: the replay counts the glideins whose HTCondor ran ({f['glideins']:,} of "
            f"the {doc['stats']['glideins']:,} in the table); analyze_entries counts those GlideinWMS accounted "
            f"(Lasted known: {sum(e['glideins'] for e in doc['entries']):,}).")
    page.section("Recommendations per entry (glideinWMS.xml, the entry's <attrs>)",
                 page.table(("entry",) + headers, rows(r["entries"], lambda x: x["entry"]), fmts)
                 + paste(r["entries"], lambda x: x["entry"], f"in the entry's <attrs>, {PASTE_REPLACES}")
                 if r["entries"] else "<p>none: no change saves core-hours on both halves of the period within the "
                                      "lost-jobs budget</p>", ("tradeoff", plots["tradeoff"]), note=note,
                 anchor="recommendations", stacked=True)
    if r["groups"]:
        page.section("Recommendations per Frontend group (frontend.xml, the group's <attrs>)",
                     page.table(("client / group",) + headers, rows(r["groups"], lambda x: f"{x['client']} / {x['group']}"),
                                fmts) + paste(r["groups"], lambda x: f"{x['client']} / {x['group']}",
                                              "in frontend.xml, the group's <attrs>"),
                     note="Not additive with the entries' recommendations: the same glideins.")
    if r["not_recommended"]:
        page.section("Not recommended", page.table(("entry or group", "why", "change", "net core-hours / month",
                                                    "+/- core-hours / month"), [
            (x.get("entry") or f"{x.get('client')} / {x.get('group')}", x["reason"], change_text(x.get("changes", [])),
             x.get("net_core_hours_per_month", ""), x.get("uncertainty_core_hours_per_month", ""))
            for x in r["not_recommended"]]))


def render_html(doc: dict, *, jaeger_ui: str | None = None, trace_pages: dict | None = None) -> str:
    """The page; ``trace_pages``: trace id -> relative path of its waterfall page."""
    page = Page(jaeger_ui, trace_pages)
    head = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>glidein analysis</title><style>{CSS}</style>"
            f"</head><body><h1>Glidein analysis</h1><p class='note'>{html.escape(doc['tool'])}, "
            f"{html.escape(doc['generated_at'])}; {doc['dataset']['glidein_files']} glidein files"
            + "".join(f"; skipped {html.escape(s['file'])}: {html.escape(s['reason'])}" for s in doc["dataset"]["skipped"])
            + "</p>")
    if not doc["stats"]["glideins"]:
        return head + "<p>No glidein rows in the dataset (after filters).</p></body></html>"
    plots = _plots(doc)
    _summary(page, doc, plots)
    _recommendations(page, doc, plots)
    _trend(page, doc, plots)
    _overview(page, doc, plots)
    _gwms(page, doc, plots)
    _failures(page, doc)
    _populations(page, doc)
    _compare(page, doc)
    _whatif(page, doc, plots)
    _examples(page, doc)
    return head + "".join(page.parts) + SORT_JS + "</body></html>"
