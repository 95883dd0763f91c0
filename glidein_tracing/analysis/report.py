"""Reports of an analysis: a terminal summary, a JSON document, a self-contained HTML page.

``analyze(table, ...)`` computes the document (stats, and the what-if grid when asked);
``summary_text(doc)`` renders it for a terminal; ``write_json``; ``render_html(doc, table)``
draws the plots with matplotlib (Agg backend, imported only here) and embeds them as base64
PNG, so the page is one file that opens anywhere with no network.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import time

import numpy as np

from .. import __version__
from .failures import failures_section
from .stats import OWN_TIMEOUT_REASONS, Derived, compute_stats
from .whatif import DEFAULT_LOST_BUDGET, Settings, candidate_grid, evaluate_grid

WASTE_CATEGORIES = ("validation", "idle_before_first_job", "idle_between_jobs", "idle_tail", "no_job", "badput")


def analyze(table, *, current: Settings | None = None, whatif: bool = False, max_idle=None, max_tail=None,
            retire=None, budget: float = DEFAULT_LOST_BUDGET, source: dict | None = None,
            read: dict | None = None, derived: Derived | None = None, failures: bool = True) -> dict:
    current = current or Settings()
    d = derived or Derived(table)
    doc = {"tool": f"glidein_tracing {__version__}", "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "source": source or {}, "read": read or {}, "current_settings": current.as_dict(),
           "stats": compute_stats(table, d)}
    if failures:
        doc["failures"] = failures_section(table)
    if whatif:
        doc["whatif"] = evaluate_grid(table, current, candidate_grid(current, max_idle, max_tail, retire),
                                      derived=d, budget=budget)
    return doc


def write_json(doc: dict, path) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(doc, handle, indent=1, sort_keys=False, default=_json_default)
        handle.write("\n")


def _json_default(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


# -- terminal ---------------------------------------------------------------------------------

def _fmt_s(value) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    value = float(value)
    if value >= 86400:
        return f"{value / 86400:.1f}d"
    if value >= 3600:
        return f"{value / 3600:.1f}h"
    if value >= 120:
        return f"{value / 60:.1f}m"
    return f"{value:.1f}s"


METRIC_LABELS = {
    "queue_wait_s": "queue wait", "setup_s": "setup (validation)", "time_to_first_job_s": "time to first job",
    "idle_before_first_job_s": "idle before 1st job", "idle_between_jobs_s": "idle between jobs",
    "tail_s": "tail after last job", "no_job_s": "idle, never a job", "jobs_per_glidein": "jobs per glidein",
    "job_runtime_s": "job runtime", "lifetime_s": "lifetime",
}


def summary_text(doc: dict, *, top: int = 10) -> str:
    st = doc["stats"]
    lines = []
    add = lines.append
    src = doc.get("source") or {}
    add(f"glideins {st['glideins']:,}  jobs {st['jobs']:,} (failed {st['failed_jobs']:,})"
        + (f"  from {src.get('kind', '')} {src.get('where', '')}" if src else ""))
    read = doc.get("read") or {}
    if read.get("bad_lines") or read.get("not_glidein_traces") or read.get("fragments"):
        add(f"read: {read.get('lines', 0):,} lines, {read.get('bad_lines', 0)} unreadable, "
            f"{read.get('not_glidein_traces', 0)} non-glidein traces, {read.get('fragments', 0)} split traces merged")
    problems = {k: v for k, v in st["problems"].items() if v}
    add("problems: " + (", ".join(f"{k} {v}" for k, v in problems.items()) if problems else "none"))
    add("outcomes: " + ", ".join(f"{k} {v:,}" for k, v in st["outcomes"]["overall"].items()))
    add("shutdown reasons: " + (", ".join(f"{k} {v:,}" for k, v in st["shutdown_reasons"]["overall"].items()) or "-"))
    inferred = st["inferred_settings"]
    cur = doc["current_settings"]
    parts = []
    for key, knob in (("max_idle", "GLIDEIN_Max_Idle"), ("max_tail", "GLIDEIN_Max_Tail")):
        est = inferred.get(key)
        parts.append(f"{knob} ~ {est['estimate_s']:.0f} s ({est['support']:,} shutdowns)" if est
                     else f"{knob} ? (too few timeout shutdowns)")
    add("seen in the data: " + "; ".join(parts) + f"  [assumed current: {cur['max_idle']:.0f}/{cur['max_tail']:.0f}/"
        f"{cur['retire']:.0f} s]")
    w = st["waste_core_hours"]["overall"]
    life = w.get("lifetime") or 0.0
    pct = lambda x: f"{100 * x / life:.1f}%" if life else "-"  # noqa: E731
    add("")
    add("core-hours: " + "  ".join(f"{k} {w[k]:,.1f} ({pct(w[k])})" for k in
                                   ("validation", "idle", "no_job", "badput", "goodput")) + f"  of {life:,.1f}")
    add(f"  idle = before first job {w['idle_before_first_job']:,.1f} + between jobs {w['idle_between_jobs']:,.1f}"
        f" + tail {w['idle_tail']:,.1f}")
    add("")
    add(f"{'':22s} {'count':>9s} {'p50':>8s} {'p90':>8s} {'p99':>8s}")
    for metric, label in METRIC_LABELS.items():
        row = st["metrics"]["overall"].get(metric)
        if not row or not row["count"]:
            continue
        fmt = (lambda v: f"{v:.1f}" if v is not None else "-") if metric == "jobs_per_glidein" else _fmt_s
        add(f"{label:22s} {row['count']:9,d} {fmt(row['p50']):>8s} {fmt(row['p90']):>8s} {fmt(row['p99']):>8s}")
    scripts = st["validation_scripts"][:top]
    if scripts:
        add("")
        add(f"{'validation script':34s} {'share':>6s} {'p50':>7s} {'p90':>7s} {'fails':>6s} {'rate':>7s}  errors")
        for s in scripts:
            errors = ", ".join(f"{k} {v}" for k, v in sorted(s["error_types"].items(), key=lambda kv: -kv[1]))
            add(f"{s['script'][:34]:34s} {100 * s['share_of_validation_time']:5.1f}% {_fmt_s(s['p50']):>7s} "
                f"{_fmt_s(s['p90']):>7s} {s['failures']:6d} {100 * s['failure_rate']:6.2f}%  {errors}")
    by_entry = st["waste_core_hours"]["by_entry"]
    if by_entry:
        add("")
        add(f"{'entry (most waste first)':30s} {'validation':>10s} {'idle':>9s} {'no_job':>9s} {'badput':>9s} {'waste %':>8s}")
        ranked = sorted(by_entry.items(), key=lambda kv: -(kv[1]["validation"] + kv[1]["idle"] + kv[1]["no_job"]
                                                           + kv[1]["badput"]))
        for name, e in ranked[:top]:
            waste = e["validation"] + e["idle"] + e["no_job"] + e["badput"]
            share = 100 * waste / e["lifetime"] if e["lifetime"] else 0.0
            add(f"{name[:30]:30s} {e['validation']:10,.1f} {e['idle']:9,.1f} {e['no_job']:9,.1f} "
                f"{e['badput']:9,.1f} {share:7.1f}%")
    lines.extend(_failures_text(doc.get("failures"), top))
    wi = doc.get("whatif")
    if wi:
        add("")
        rep = wi["current_replay"]
        add(f"what-if: replay of the current settings {'reproduces' if rep['exact'] else 'DOES NOT reproduce'} the "
            f"recorded idle waste ({rep['replayed_idle_core_hours'] + rep['replayed_no_job_core_hours']:,.1f} vs "
            f"{rep['recorded_idle_core_hours'] + rep['recorded_no_job_core_hours']:,.1f} core-hours)")
        rec = wi["recommended"]
        e = rec["expected"]
        s = rec["settings"]
        add(f"recommended (lose at most {100 * wi['lost_budget']:.2f}% of jobs = {rec['lost_jobs_allowed']:,}): "
            f"GLIDEIN_Max_Idle {s['max_idle']:.0f}  GLIDEIN_Max_Tail {s['max_tail']:.0f}  "
            f"GLIDEIN_Retire_Time {s['retire']:.0f}")
        add(f"  expected: saves {e['saved_core_hours']:,.1f} core-hours of idle "
            f"({100 * e['saved_core_hours'] / wi['recorded_waste_core_hours'] if wi['recorded_waste_core_hours'] else 0:.1f}%),"
            f" {e['net_saved_core_hours']:,.1f} net of {e['glideins_cut_short']:,} replacement glideins; "
            f"loses {e['lost_jobs']:,} jobs ({e['lost_job_core_hours']:,.1f} core-hours to run elsewhere)")
        add("")
        add(f"Pareto front ({len(wi['pareto_front'])} of {len(wi['candidates'])} candidates):")
        add(f"  {'Max_Idle':>8s} {'Max_Tail':>8s} {'Retire':>7s} {'saved ch':>10s} {'net ch':>10s} {'lost jobs':>9s}")
        for p in wi["pareto_front"][: top + 5]:
            s = p["settings"]
            add(f"  {s['max_idle']:8.0f} {s['max_tail']:8.0f} {s['retire']:7.0f} {p['saved_core_hours']:10,.1f} "
                f"{p['net_saved_core_hours']:10,.1f} {p['lost_jobs']:9,d}")
        per = wi.get("by_entry") or {}
        changed = [(k, v) for k, v in per.items() if v["recommended"] != wi["current"]]
        if changed:
            add("")
            add("per entry (where another setting is better):")
            for name, v in sorted(changed, key=lambda kv: -kv[1]["net_saved_core_hours"])[:top]:
                s = v["recommended"]
                add(f"  {name[:30]:30s} Max_Idle {s['max_idle']:5.0f} Max_Tail {s['max_tail']:5.0f} "
                    f"Retire {s['retire']:6.0f}: saves {v['saved_core_hours']:,.1f} ch, loses {v['lost_jobs']} jobs")
    return "\n".join(lines)


def _when_text(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(epoch))


def _failures_text(f: dict | None, top: int) -> list:
    """The failures section of the terminal summary (failures.py)."""
    if not f or not (f["failed_glideins"] or f["failed_jobs"]):
        return []
    out = ["", f"failures: {f['failed_glideins']:,} of {f['glideins']:,} glideins, "
               f"{f['failed_jobs']:,} of {f['jobs']:,} jobs"]
    domains = sorted(set(f["glideins_by_domain"]) | set(f["jobs_by_domain"]),
                     key=lambda d: -(f["glidein_core_hours_by_domain"].get(d, 0) + f["job_core_hours_by_domain"].get(d, 0)))
    out.append(f"  {'domain':12s} {'glideins':>9s} {'core-h':>10s} {'jobs':>7s} {'core-h':>10s}")
    for d in domains:
        out.append(f"  {d[:12]:12s} {f['glideins_by_domain'].get(d, 0):9,d} "
                   f"{f['glidein_core_hours_by_domain'].get(d, 0.0):10,.1f} {f['jobs_by_domain'].get(d, 0):7,d} "
                   f"{f['job_core_hours_by_domain'].get(d, 0.0):10,.1f}")
    if f["glideins_by_domain_and_type"]:
        out.append("  by error type: " + ", ".join(f"{t} ({d}) {c:,}" for d, t, c in f["glideins_by_domain_and_type"][:top]))
    sites = sorted(f["by_site"].items(), key=lambda kv: -kv[1]["failed"])
    if sites:
        out.append("  by site: " + ", ".join(f"{name} {s['failed']:,}/{s['glideins']:,}" for name, s in sites[:top]))
    if f["outages"]:
        out.append(f"outage windows (site failure rate far above its hourly median, {len(f['outages'])}):")
        for o in f["outages"]:
            out.append(f"  {o['site']}: {_when_text(o['start'])} - {_when_text(o['end'])} UTC, {o['failed']:,} of "
                       f"{o['glideins']:,} glideins failed ({100 * o['failure_rate']:.0f}% vs "
                       f"{100 * o['baseline_rate']:.0f}% usually), mostly {o['error_type']} ({o['domain']}); "
                       f"e.g. {', '.join(o['examples'][:1])}")
    else:
        out.append("outage windows: none")
    if f["top_messages"]:
        out.append("top failure messages:")
        for m in f["top_messages"][:top]:
            out.append(f"  {m['count']:7,d}  [{m['domain']}] {m['message'][:90]}  e.g. {', '.join(m['examples'][:1])}")
    return out


# -- HTML ----------------------------------------------------------------------------------------

def _figure_png(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _hist_log(ax, values, title, color="#4472c4", mark=None):
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    ax.set_title(title, fontsize=9)
    if not len(values):
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        return
    low, high = max(values.min(), 0.1), max(values.max(), 1.0)
    bins = np.logspace(np.log10(low), np.log10(high * 1.01), 50) if high / low > 20 else 50
    ax.hist(values, bins=bins, color=color)
    if high / low > 20:
        ax.set_xscale("log")
    for p, style in ((50, "-"), (90, "--"), (99, ":")):
        ax.axvline(np.percentile(values, p), color="k", linestyle=style, linewidth=0.8, label=f"p{p}")
    if mark:
        for x, label in mark:
            ax.axvline(x, color="#c00000", linewidth=1.2, label=label)
    ax.legend(fontsize=6)
    ax.tick_params(labelsize=7)


def plots(doc: dict, table, derived: Derived | None = None) -> list[tuple[str, str, str]]:
    """(id, title, base64 PNG) of every figure."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    d = derived or Derived(table)
    iv = d.iv
    cur = doc["current_settings"]
    out = []
    # 1. distributions
    fig, axes = plt.subplots(2, 4, figsize=(14, 6))
    series = [
        (table.g["queue_s"], "queue wait (s)", None),
        (table.g["setup_s"], "setup / validation (s)", None),
        (d.time_to_first_job, "time to first job (s)", None),
        (iv.gap[~iv.first], "idle between jobs (s)", [(cur["max_tail"], "Max_Tail")]),
        (iv.tail[d.has_jobs], "tail after last job (s)", [(cur["max_tail"], "Max_Tail")]),
        (iv.L[iv.has_condor & ~d.has_jobs], "idle, never a job (s)", [(cur["max_idle"], "Max_Idle")]),
        (d.job_seconds, "job runtime (s)", None),
        (d.lifetime, "glidein lifetime (s)", None),
    ]
    for ax, (values, title, mark) in zip(axes.flat, series):
        _hist_log(ax, values, title, mark=mark)
    fig.tight_layout()
    out.append(("distributions", "Distributions (p50 solid, p90 dashed, p99 dotted; red: current knob)",
                _figure_png(fig)))
    plt.close(fig)

    # 2. timeout shutdown clusters (linear scale around the knobs)
    reasons = table.names["reason"]
    own = np.isin(table.g["reason"], [reasons.index(r) for r in OWN_TIMEOUT_REASONS if r in reasons])
    inferred = doc["stats"]["inferred_settings"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.6))
    for ax, values, knob, key in ((axes[0], iv.L[iv.has_condor & ~d.has_jobs & own], "Max_Idle", "max_idle"),
                                  (axes[1], iv.tail[d.has_jobs & own], "Max_Tail", "max_tail")):
        values = values[np.isfinite(values)]
        ax.set_title(f"glideins that stopped on their own: {'idle, never a job' if key == 'max_idle' else 'tail'}"
                     " (s)", fontsize=9)
        if len(values):
            high = np.percentile(values, 99.5)
            ax.hist(values[values <= high], bins=80, color="#70ad47")
        ax.axvline(cur[key], color="#c00000", label=f"current {knob} {cur[key]:.0f}")
        if inferred.get(key):
            ax.axvline(inferred[key]["estimate_s"], color="k", linestyle="--",
                       label=f"seen {inferred[key]['estimate_s']:.0f}")
        ax.legend(fontsize=7)
        ax.tick_params(labelsize=7)
    fig.tight_layout()
    out.append(("shutdowns", "Where timeout shutdowns cluster", _figure_png(fig)))
    plt.close(fig)

    # 3. waste by category, overall and per entry
    waste = doc["stats"]["waste_core_hours"]
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.5), gridspec_kw={"width_ratios": [1, 3]})
    colors = ["#ffc000", "#5b9bd5", "#9dc3e6", "#2e75b6", "#a5a5a5", "#c00000"]
    overall = waste["overall"]
    axes[0].bar(range(len(WASTE_CATEGORIES)), [overall[c] for c in WASTE_CATEGORIES], color=colors)
    axes[0].set_xticks(range(len(WASTE_CATEGORIES)))
    axes[0].set_xticklabels([c.replace("_", " ") for c in WASTE_CATEGORIES], rotation=40, ha="right", fontsize=7)
    axes[0].set_ylabel("core-hours")
    axes[0].set_title("waste, all glideins", fontsize=9)
    ranked = sorted(waste["by_entry"].items(), key=lambda kv: -sum(kv[1][c] for c in WASTE_CATEGORIES))[:15]
    bottom = np.zeros(len(ranked))
    for color, category in zip(colors, WASTE_CATEGORIES):
        heights = np.array([e[category] for _, e in ranked])
        axes[1].bar(range(len(ranked)), heights, bottom=bottom, color=color, label=category.replace("_", " "))
        bottom += heights
    axes[1].set_xticks(range(len(ranked)))
    axes[1].set_xticklabels([name for name, _ in ranked], rotation=40, ha="right", fontsize=7)
    axes[1].set_title("waste by entry (top 15)", fontsize=9)
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    out.append(("waste", "Waste in core-hours, by the Factory's categories", _figure_png(fig)))
    plt.close(fig)

    # 4. validation scripts
    scripts = doc["stats"]["validation_scripts"][:15]
    if scripts:
        fig, axes = plt.subplots(1, 2, figsize=(13, 0.35 * len(scripts) + 1.5))
        names = [s["script"] for s in scripts][::-1]
        axes[0].barh(names, [100 * s["share_of_validation_time"] for s in scripts][::-1], color="#ffc000")
        axes[0].set_xlabel("share of validation time (%)")
        axes[1].barh(names, [100 * s["failure_rate"] for s in scripts][::-1], color="#c00000")
        axes[1].set_xlabel("failure rate (%)")
        for ax in axes:
            ax.tick_params(labelsize=7)
        fig.tight_layout()
        out.append(("validation", "Validation scripts: where setup time goes, which fail", _figure_png(fig)))
        plt.close(fig)

    # 5. trade-off
    wi = doc.get("whatif")
    if wi:
        fig, ax = plt.subplots(figsize=(9, 5))
        pts = wi["candidates"]
        ax.scatter([p["lost_jobs"] for p in pts], [p["saved_core_hours"] for p in pts], s=12, color="#a5a5a5",
                   label="candidate")
        front = wi["pareto_front"]
        ax.plot([p["lost_jobs"] for p in front], [p["saved_core_hours"] for p in front], "o-", color="#2e75b6",
                markersize=4, label="Pareto front")
        for p in front[:12]:
            s = p["settings"]
            ax.annotate(f"{s['max_idle']:.0f}/{s['max_tail']:.0f}/{s['retire']:.0f}",
                        (p["lost_jobs"], p["saved_core_hours"]), fontsize=6, xytext=(3, 3), textcoords="offset points")
        rec = wi["recommended"]["expected"]
        ax.scatter([rec["lost_jobs"]], [rec["saved_core_hours"]], s=120, facecolors="none", edgecolors="#c00000",
                   linewidths=2, label="recommended")
        ax.scatter([0], [0], marker="x", color="k", s=60, label="current")
        ax.set_xlabel("jobs lost (would need another glidein)")
        ax.set_ylabel("idle core-hours saved")
        if max((p["lost_jobs"] for p in pts), default=0) > 100:
            ax.set_xscale("symlog", linthresh=10)
        ax.legend(fontsize=7)
        ax.set_title("What-if: Max_Idle/Max_Tail/Retire candidates", fontsize=9)
        fig.tight_layout()
        out.append(("tradeoff", "Trade-off: core-hours saved vs jobs lost", _figure_png(fig)))
        plt.close(fig)
    return out


def _table_html(headers, rows) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1400px;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}
th{background:#f3f3f3}td:first-child{text-align:left}img{max-width:100%;display:block;margin:.5em 0}
pre{background:#f7f7f7;padding:.8em;font-size:.8em;overflow:auto}.note{color:#555;font-size:.9em}
"""


def _trace_link(trace_id: str, jaeger_ui: str | None) -> str:
    """A trace id, as a link to the trace in Jaeger's UI when its URL is known (escaped)."""
    text = html.escape(trace_id)
    if not jaeger_ui:
        return f"<code>{text}</code>"
    url = html.escape(f"{jaeger_ui.rstrip('/')}/trace/{trace_id}", quote=True)
    return f"<a href=\"{url}\"><code>{text}</code></a>"


def _failures_html(f: dict | None, jaeger_ui: str | None) -> list:
    """The failures section of the HTML report; trace ids link to Jaeger with ``jaeger_ui``."""
    if not f or not (f["failed_glideins"] or f["failed_jobs"]):
        return []
    links = lambda ids: ", ".join(_trace_link(t, jaeger_ui) for t in ids)  # noqa: E731
    parts = ["<h2 id='failures'>Failures</h2>",
             f"<p>{f['failed_glideins']:,} of {f['glideins']:,} glideins and {f['failed_jobs']:,} of "
             f"{f['jobs']:,} jobs failed. Domains: docs/failures.md.</p>"]
    domains = sorted(set(f["glideins_by_domain"]) | set(f["jobs_by_domain"]))
    parts.append(_table_html(("domain", "glideins", "glidein core-h", "jobs", "job core-h"),
                             [(d, f["glideins_by_domain"].get(d, 0), f["glidein_core_hours_by_domain"].get(d, 0.0),
                               f["jobs_by_domain"].get(d, 0), f["job_core_hours_by_domain"].get(d, 0.0))
                              for d in domains]))
    parts.append(_table_html(("domain", "error type", "glideins"), f["glideins_by_domain_and_type"]))
    parts.append(_table_html(("site", "glideins", "failed", "by domain"),
                             [(name, s["glideins"], s["failed"], ", ".join(f"{d} {c}" for d, c in s["by_domain"].items()))
                              for name, s in sorted(f["by_site"].items())]))
    parts.append("<h2 id='outages'>Outage windows</h2>")
    if f["outages"]:
        rows = "".join(
            f"<tr><td>{html.escape(o['site'])}</td><td>{_when_text(o['start'])}</td><td>{_when_text(o['end'])}</td>"
            f"<td>{o['glideins']}</td><td>{o['failed']}</td><td>{100 * o['failure_rate']:.0f}%</td>"
            f"<td>{100 * o['baseline_rate']:.0f}%</td><td>{html.escape(o['error_type'])}</td>"
            f"<td>{html.escape(o['domain'])}</td><td>{links(o['examples'])}</td></tr>" for o in f["outages"])
        parts.append("<table><thead><tr><th>site</th><th>start (UTC)</th><th>end</th><th>glideins</th><th>failed</th>"
                     f"<th>rate</th><th>usual rate</th><th>error type</th><th>domain</th><th>examples</th></tr></thead>"
                     f"<tbody>{rows}</tbody></table>")
    else:
        parts.append("<p>None: no site failed far above its usual hourly rate for two hours or more.</p>")
    if f["top_messages"]:
        parts.append("<h2 id='messages'>Top failure messages</h2>")
        rows = "".join(f"<tr><td>{html.escape(m['message'])}</td><td>{m['count']}</td><td>{html.escape(m['domain'])}</td>"
                       f"<td>{links(m['examples'])}</td></tr>" for m in f["top_messages"])
        parts.append("<table><thead><tr><th>message (numbers, ids, paths, hosts taken out)</th><th>count</th>"
                     f"<th>domain</th><th>examples</th></tr></thead><tbody>{rows}</tbody></table>")
    return parts


def render_html(doc: dict, table, derived: Derived | None = None, *, jaeger_ui: str | None = None) -> str:
    st = doc["stats"]
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>glidein timeouts report</title>"
             f"<style>{CSS}</style></head><body>",
             "<h1>Glidein lifetime and timeout report</h1>",
             f"<p class='note'>{html.escape(doc['tool'])}, {html.escape(doc['generated_at'])}. "
             "Definitions: docs/analysis.md.</p>",
             f"<pre>{html.escape(summary_text(doc))}</pre>"]
    if st["glideins"]:
        for figure_id, title, png in plots(doc, table, derived):
            parts.append(f"<h2>{html.escape(title)}</h2>")
            parts.append(f"<img id='plot-{figure_id}' alt='{html.escape(title)}' src='data:image/png;base64,{png}'>")
    else:
        parts.append("<p>No glidein traces: nothing to plot.</p>")
    rows = []
    for metric, label in METRIC_LABELS.items():
        for name, per in sorted(st["metrics"]["by_entry"].items()):
            row = per.get(metric)
            if row and row["count"]:
                rows.append((label, name, row["count"], row["p50"], row["p90"], row["p99"]))
    if rows:
        parts.append("<h2>Percentiles per entry</h2>")
        parts.append(_table_html(("metric", "entry", "count", "p50", "p90", "p99"), rows))
    parts.extend(_failures_html(doc.get("failures"), jaeger_ui))
    wi = doc.get("whatif")
    if wi:
        parts.append("<h2>What-if candidates (Pareto front)</h2>")
        parts.append(_table_html(
            ("Max_Idle", "Max_Tail", "Retire", "saved core-h", "net saved core-h", "lost jobs", "glideins cut short"),
            [(p["settings"]["max_idle"], p["settings"]["max_tail"], p["settings"]["retire"], p["saved_core_hours"],
              p["net_saved_core_hours"], p["lost_jobs"], p["glideins_cut_short"]) for p in wi["pareto_front"]]))
        if wi.get("by_entry"):
            parts.append("<h2>Recommended per entry</h2>")
            parts.append(_table_html(
                ("entry", "glideins", "jobs", "Max_Idle", "Max_Tail", "Retire", "saved core-h", "lost jobs"),
                [(k, v["glideins"], v["jobs"], v["recommended"]["max_idle"], v["recommended"]["max_tail"],
                  v["recommended"]["retire"], v["saved_core_hours"], v["lost_jobs"])
                 for k, v in sorted(wi["by_entry"].items())]))
    parts.append("</body></html>")
    return "\n".join(parts)
