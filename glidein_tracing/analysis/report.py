"""Reports of an analysis: the JSON document, a terminal summary, and a self-contained HTML page.

``analyze(data, ...)`` runs every section's SQL on the same rows (dataset.py) and returns one
JSON-ready document; ``summary_text(doc)`` renders it for a terminal; ``render_html`` (html.py)
draws the page.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time

from .. import __version__
from .compare import compare_section, selections
from .entries import waste_table
from .failures import failures_section
from .frontends import frontends_section
from .services import services_section
from .stats import aggregate_scans, compute_stats
from .whatif import DEFAULT_LOST_BUDGET, Settings, candidate_grid, evaluate_grid
from .windows import daily_trend, windows_section
from .examples import examples_section
from .populations import builtin, compare_populations

# the sections analyze() runs, each timed and shown as a stage (the what-if only when asked)
STAGES = ("stats", "analyze_entries", "frontends", "failures", "compare", "trend", "examples")


def current_settings(doc_stats: dict, max_idle=None, max_tail=None, retire=None) -> Settings:
    """The settings the glideins ran with: given ones, else what the table records, else
    GlideinWMS's defaults."""
    recorded = doc_stats["settings_in_force"]["recorded"]
    default = Settings()
    pick = lambda given, key: float(given if given is not None else recorded.get(key) or getattr(default, key))  # noqa: E731
    return Settings(pick(max_idle, "max_idle"), pick(max_tail, "max_tail"), pick(retire, "retire"))


def analyze(data, *, current: dict | None = None, whatif: bool = False, max_idle=None, max_tail=None,
            retire=None, budget: float = DEFAULT_LOST_BUDGET, source: dict | None = None,
            windows: list | None = None, until: float | None = None, compare: list | None = None,
            timings: dict | None = None, stages=None) -> dict:
    """The whole analysis document; ``current``: max_idle/max_tail/retire the glideins ran with
    (None: what the table records); ``windows``: analyze_entries' recent periods (seconds back
    from ``until``, else from the latest glidein's end); ``compare``: two selections, or one
    built-in view's name (populations.py); ``timings``: filled with each
    section's seconds; ``stages``: a core.progress.Stages told of each section as it runs."""
    con, columns = data.con, data.columns("glideins")
    timings = {} if timings is None else timings

    def timed(name, work):
        started = time.perf_counter()
        with stages.stage(name) if stages is not None else contextlib.nullcontext():
            value = work()
        timings[name] = round(time.perf_counter() - started, 2)
        return value
    def statistics():
        scans = aggregate_scans(con)      # analyze_entries' sums are in the same aggregate
        return scans, compute_stats(con, scans)
    scans, stats = timed("stats", statistics)
    settings = current_settings(stats, **(current or {}))
    overall = stats["metrics"]["overall"]
    data.declare_selections(selections(overall))   # counted in the one pass the failures' totals share
    doc = {"tool": f"glidein_tracing {__version__}",
           "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(_generated_at())),
           "source": source or {},
           "dataset": {"glidein_files": len(data.glidein_files), "job_files": len(data.job_files),
                       "skipped": [{"file": f, "reason": r} for f, r in data.skipped],
                       "rollups": data.rollups,
                       "schema_versions": data.versions},
           "current_settings": settings.as_dict(), "stats": stats,
           "entries": timed("analyze_entries", lambda: waste_table(con, scans[0])) if "gwms_lasted_s" in columns else [],
           "frontends": timed("frontends", lambda: frontends_section(con, columns)),
           "failures": timed("failures", lambda: {**failures_section(data), **services_section(data)}),
           "compare": timed("compare", lambda: compare_section(data, overall))}
    if compare:
        a, b = builtin(compare[0], con) if len(compare) == 1 else compare
        doc["populations"] = compare_populations(con, columns, a, b)
    doc["trend"] = timed("trend", lambda: daily_trend(con, "date" in columns) if "gwms_lasted_s" in columns else [])
    if windows and "gwms_lasted_s" in columns:
        doc["windows"] = windows_section(con, windows, until, partitioned="date" in columns)
    if whatif and stats["glideins"] and data.has_jobs:
        grid = candidate_grid(settings, max_idle, max_tail, retire)
        doc["whatif"] = timed("whatif", lambda: evaluate_grid(data, settings, grid, budget=budget))
    elif whatif:
        doc["whatif_skipped"] = "no glideins" if not stats["glideins"] else "no jobs dataset: the replay needs the jobs"
    recommended = doc["whatif"]["recommendations"]["entries"] if doc.get("whatif") else []
    doc["examples"] = timed("examples", lambda: examples_section(con, recommended))
    return doc


def _generated_at() -> float:
    """Now, or SOURCE_DATE_EPOCH when set (the reproducible-builds convention): the same table
    then gives a byte-identical document, whose every list and mapping has a fixed order."""
    fixed = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    return float(fixed) if fixed.isdigit() else time.time()


def write_json(doc: dict, path) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(doc, handle, indent=1, default=str)
        handle.write("\n")


def fmt_s(value) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    value = float(value)
    for limit, div, unit in ((86400, 86400, "d"), (3600, 3600, "h"), (120, 60, "m")):
        if value >= limit:
            return f"{value / div:.1f}{unit}"
    return f"{value:.1f}s"


METRIC_LABELS = {
    "queue_wait_s": "queue wait", "setup_s": "setup (validation)", "time_to_first_job_s": "time to first job",
    "idle_before_first_job_s": "idle before 1st job", "idle_between_jobs_s": "idle between jobs",
    "tail_s": "tail after last job", "no_job_s": "idle, never a job", "jobs_per_glidein": "jobs per glidein",
    "job_runtime_s": "job runtime", "lifetime_s": "lifetime",
}


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(epoch))


def summary_text(doc: dict, *, top: int = 10) -> str:
    st, lines = doc["stats"], recommendations_text(doc)
    add = lines.append
    add(f"glideins {st['glideins']:,}  jobs {st['jobs']:,} (failed {st['failed_jobs']:,})  "
        f"from {doc['dataset']['glidein_files']} files")
    for skipped in doc["dataset"]["skipped"]:
        add(f"skipped {skipped['file']}: {skipped['reason']}")
    add("outcomes: " + ", ".join(f"{k} {v:,}" for k, v in st["outcomes"]["overall"].items()))
    add("shutdown reasons: " + (", ".join(f"{k} {v:,}" for k, v in st["shutdown_reasons"]["overall"].items()) or "-"))
    seen, cur = st["settings_in_force"], doc["current_settings"]
    add("seen in the data: " + "; ".join(
        f"{knob} ~ {seen[key]['estimate_s']:.0f} s ({seen[key]['support']:,} shutdowns)" if seen.get(key)
        else f"{knob} ? (too few timeout shutdowns)" for key, knob in (("max_idle", "GLIDEIN_Max_Idle"),
                                                                       ("max_tail", "GLIDEIN_Max_Tail")))
        + f"  [in force: {cur['max_idle']:.0f}/{cur['max_tail']:.0f}/{cur['retire']:.0f} s]")
    w = st["waste_core_hours"]["overall"]
    life = w.get("lifetime") or 0.0
    add("core-hours: " + "  ".join(f"{k} {w[k]:,.1f} ({100 * w[k] / life if life else 0:.1f}%)" for k in
                                   ("validation", "idle", "no_job", "badput", "goodput")) + f"  of {life:,.1f}")
    add(f"{'':22s} {'count':>9s} {'p50':>8s} {'p90':>8s} {'p99':>8s}")
    for metric, label in METRIC_LABELS.items():
        row = st["metrics"]["overall"].get(metric)
        if row:
            fmt = (lambda v: "-" if v is None else f"{v:.1f}") if metric == "jobs_per_glidein" else fmt_s
            add(f"{label:22s} {row['count']:9,d} {fmt(row['p50']):>8s} {fmt(row['p90']):>8s} {fmt(row['p99']):>8s}")
    if doc["entries"]:
        add(f"{'entry (analyze_entries)':30s} {'strt':>5s} {'fval':>5s} {'0job':>5s} {'val':>5s} {'idle':>5s} "
            f"{'wst':>5s} {'badp':>5s} {'waste h':>9s} {'time h':>9s} {'glideins':>8s} {'traced':>8s} {'untraced':>8s}")
        for e in doc["entries"][:top]:
            add(f"{e['entry'][:30]:30s} " + " ".join(f"{e[k]:4.0f}%" for k in ("strt", "fval", "0job", "val", "idle",
                                                                               "wst", "badp"))
                + f" {e['waste']:9,.1f} {e['time']:9,.1f} {e['glideins']:8,d} {e['traced']:8,d} {e['untraced']:8,d}")
    lines.extend(frontends_text(doc))
    lines.extend(populations_text(doc))
    lines.extend(windows_text(doc, top))
    f = doc["failures"]
    add(f"failures: {f['failed_glideins']:,} of {f['glideins']:,} traced glideins, {f['failed_jobs']:,} of {f['jobs']:,} jobs")
    for o in f["outages"]:
        add(f"  outage {o['site']}: {_when(o['start'])} - {_when(o['end'])} UTC, {o['failed']:,} of {o['glideins']:,} "
            f"failed ({100 * o['failure_rate']:.0f}% vs {100 * o['baseline_rate']:.0f}% usually), mostly "
            f"{o['error_type']} ({o['domain']})")
    if not f["outages"]:
        add("  outage windows: none")
    for m in f["top_messages"][:top]:
        add(f"  {m['count']:7,d}  [{m['domain']}] {m['message'][:90]}")
    if f["by_domain_service_label"]:
        add("  failures by domain / service / label (glideins, jobs, core-hours):")
    for r in f["by_domain_service_label"][:top]:
        add(f"  {r['glideins']:7,d} {r['jobs']:7,d} {r['core_hours']:9,.1f}  "
            f"{r['domain']} / {r['service'] or '-'} / {r['label'] or '-'}")
    for w in f["service_outages"]:
        add(f"  service outage {w['service']}: {_when(w['start'])} - {_when(w['end'])} UTC, {w['failures']:,} of "
            f"{w['attempts']:,} failed, " + (f"planned ({w['downtime']})" if w["planned"] else "unplanned"))
    for m in f["top_unclassified"][:top]:
        add(f"  no rule yet {m['count']:7,d}  [{m['domain']}] {m['message'][:90]}")
    for name, section in doc["compare"].items():
        best = [f"{d['dimension']}={d['values'][0]['value']} x{d['values'][0]['lift']}" for d in section["dimensions"][:3]]
        add(f"compare {name}: " + (", ".join(best) or "nothing over-represented"))
    lines.extend(_whatif_text(doc))
    return "\n".join(lines)


def frontends_text(doc: dict) -> list:
    """The per Frontend client and group table (frontends.py), with its headers."""
    rows = doc.get("frontends") or []
    if not rows:
        return []
    out = [f"{'Frontend client / group':40s} {'glideins':>9s} {'failed':>7s} {'0job':>6s} {'jobs':>9s} "
           f"{'jobs/gl':>7s} {'eff':>6s} {'wst':>5s} {'waste h':>10s} {'time h':>10s}"]
    for r in rows:
        name = f"{r['client']} / {r['group'] if r['group'] is not None else '(all groups)'}"
        pct = lambda v: "-" if v is None else f"{v:.1f}%"  # noqa: E731
        out.append(f"{name[:40]:40s} {r['glideins']:9,d} {pct(r['failed_pct']):>7s} {pct(r['no_job_pct']):>6s} "
                   f"{r['jobs']:9,d} {'-' if r['jobs_per_glidein'] is None else format(r['jobs_per_glidein'], '.2f'):>7s} "
                   f"{pct(r['efficiency_pct']):>6s} {pct(r.get('gwms_wst')):>5s} "
                   f"{r.get('gwms_waste') or 0:10,.1f} {r.get('gwms_time') or 0:10,.1f}")
    return out


POPULATION_LABELS = {"efficiency": ("efficiency (goodput / lifetime)", 100, "%"),
                     "failed": ("failure rate", 100, "%"), "jobs": ("jobs per glidein", 1, ""),
                     **{f"waste_{k}": (f"waste: {k.replace('_', ' ')} (core-h per glidein)", 1, "")
                        for k in ("validation", "idle_before_first_job", "idle_between_jobs", "idle_tail", "no_job")}}


def populations_text(doc: dict) -> list:
    """analyze --compare: each measure for A and B, the difference and its 95 % interval."""
    p = doc.get("populations")
    if not p:
        return []
    a, b = p["populations"]["a"], p["populations"]["b"]
    out = [f"compare A: {p['selections']['a']['given']} ({a['glideins']:,} glideins)  against  "
           f"B: {p['selections']['b']['given']} ({b['glideins']:,} glideins)",
           f"  {'':50s} {'A':>10s} {'B':>10s} {'A - B':>10s} {'interval (95% of all)':>24s}"]
    for key, (label, scale, unit) in POPULATION_LABELS.items():
        d = p["differences"].get(key)
        fmt = lambda v: "-" if v is None else f"{scale * v:.3f}{unit}"  # noqa: E731
        interval = f"[{fmt(d['low'])}, {fmt(d['high'])}]" if d else "-"
        mark = "  significant" if d and d["significant"] else ""
        out.append(f"  {label:50s} {fmt(a.get(key)):>10s} {fmt(b.get(key)):>10s} "
                   f"{fmt(d['difference'] if d else None):>10s} {interval:>24s}{mark}")
    return out


def windows_text(doc: dict, top: int) -> list:
    """analyze_entries' recent periods (windows.py): a total line per period, its top entries."""
    w = doc.get("windows")
    if not w:
        return []
    out = [f"recent periods, ending {_when(w['end'])} UTC (analyze_entries' columns, % of Lasted):"]
    for p in w["periods"]:
        t = p["total"]
        if not t:
            out.append(f"  last {p['hours']:g} h: no glidein ended")
            continue
        out.append(f"  last {p['hours']:g} h: {t['glideins']:,} glideins, time {t['time']:,.1f} h, waste "
                   f"{t['waste']:,.1f} h (wst {t['wst']:.0f}%, badp {t['badp']:.0f}%, 0job {t['0job']:.0f}%)")
        for e in p["entries"][:min(top, 5)]:
            out.append(f"    {e['entry'][:30]:30s} waste {e['waste']:9,.1f} h of {e['time']:9,.1f} h, "
                       f"{e['glideins']:7,d} glideins")
    return out


def change_text(changes: list) -> str:
    """``GLIDEIN_Max_Idle 1200 s -> 900 s, ...``"""
    return ", ".join(f"{c['knob']} {c['current_s']:.0f} -> {c['proposed_s']:.0f} s" for c in changes)


def recommendations_text(doc: dict) -> list:
    """The what-if's answer, first on the terminal: per entry (then per Frontend group) the
    change, its net saving per month with its uncertainty, the jobs it loses, the glideins it
    touches; the Factory-wide sum; the lines to paste; what was left out and why."""
    wi = doc.get("whatif")
    if not wi:
        return []
    r = wi["recommendations"]
    f = r["factory"]
    out = [f"RECOMMENDATIONS (replay of {f['glideins']:,} glideins, {f['jobs']:,} jobs over {r['days']:.1f} days; "
           f"per month = {r['month_days']:.0f} days; at most {100 * r['lost_budget']:.2f}% of an entry's jobs lost; "
           "kept only when it saves on both halves of the period)"]
    width = max([len(change_text(x["changes"])) for x in r["entries"] + r["groups"]] + [6])
    header = (f"  {'':30s} {'change':{width}s} {'net core-h/month':>16s} {'+/-':>8s} {'jobs lost':>9s} {'share':>7s} "
              f"{'glideins affected':>17s} {'of glideins':>11s}")

    def rows(recs: list, name) -> None:
        for x in recs:
            out.append(f"  {name(x)[:30]:30s} {change_text(x['changes']):{width}s} {x['net_core_hours_per_month']:16,.1f} "
                       f"{x['uncertainty_core_hours_per_month']:8,.1f} {x['lost_jobs']:9,d} "
                       f"{100 * x['lost_job_share']:6.2f}% {x['glideins_affected']:17,d} {x['glideins']:11,d}")
    out.append(header.replace(" " * 32, "  entry" + " " * 25, 1))
    rows(r["entries"], lambda x: x["entry"])
    if not r["entries"]:
        out.append("  (none: no change saves core-hours on both halves of the period within the lost-jobs budget)")
    out.append(f"  Factory-wide, the sum of the {f['entries']} entries above: {f['net_core_hours_per_month']:,.1f} "
               f"+/- {f['uncertainty_core_hours_per_month']:,.1f} core-hours per month, {f['lost_jobs']:,} jobs lost, "
               f"{f['glideins_affected']:,} glideins affected")
    if r["groups"]:
        out.append(header.replace(" " * 32, "  Frontend client / group" + " " * 8, 1))
        rows(r["groups"], lambda x: f"{x['client']} / {x['group']}")
    else:
        out.append("  Frontend groups: no change recommended for a whole group")
    if r["entries"]:
        out.append(f"  to paste into each entry's <attrs> in glideinWMS.xml, {PASTE_REPLACES}:")
        for x in r["entries"]:
            out.append(f"    <!-- entry {x['entry']} -->")
            out.extend(f"    {c['attr']}" for c in x["changes"])
    for x in r["groups"]:
        out.append(f"    <!-- Frontend group {x['client']} / {x['group']} (frontend.xml, the group's <attrs>) -->")
        out.extend(f"    {c['attr']}" for c in x["changes"])
    for x in r["not_recommended"]:
        who = x.get("entry") or f"{x.get('client')} / {x.get('group')}"
        figures = (f": {change_text(x['changes'])} saves {x['net_core_hours_per_month']:,.1f} +/- "
                   f"{x['uncertainty_core_hours_per_month']:,.1f} core-h/month, halves "
                   + " / ".join(f"{h:,.1f}" for h in x["halves_net_core_hours_per_month"])) if "settings" in x else ""
        out.append(f"  not recommended, {x['kind']} {who}: {x['reason']}{figures}")
    return out


#: how a recommended <attr> goes in: GlideinWMS's reconfig refuses a second one of a name
PASTE_REPLACES = ("each replacing the attr of the same name the entry has (a second one fails reconfig: "
           "\"Key '...' already exists\")")


def _whatif_text(doc: dict) -> list:
    wi = doc.get("whatif")
    if not wi:
        return [f"what-if skipped: {doc['whatif_skipped']}"] if doc.get("whatif_skipped") else []
    rep = wi["current_replay"]
    out = [f"what-if: replay of the current settings {'reproduces' if rep['exact'] else 'DOES NOT reproduce'} the "
           f"recorded idle waste ({rep['replayed_idle_core_hours'] + rep['replayed_no_job_core_hours']:,.1f} vs "
           f"{rep['recorded_idle_core_hours'] + rep['recorded_no_job_core_hours']:,.1f} core-hours)",
           f"Pareto front over the whole Factory, one setting everywhere ({len(wi['pareto_front'])} of "
           f"{len(wi['candidates'])} candidates):",
           f"  {'Max_Idle s':>10s} {'Max_Tail s':>10s} {'Retire s':>9s} {'saved core-h':>13s} {'net core-h':>11s} "
           f"{'jobs lost':>9s}"]
    for p in wi["pareto_front"][:15]:
        s = p["settings"]
        out.append(f"  {s['max_idle']:10.0f} {s['max_tail']:10.0f} {s['retire']:9.0f} {p['saved_core_hours']:13,.1f} "
                   f"{p['net_saved_core_hours']:11,.1f} {p['lost_jobs']:9,d}")
    return out
