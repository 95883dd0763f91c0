"""Distributions and waste per entry and site: SQL over the glidein table (dataset.py).

Every number is one aggregate over the ``glideins`` (or ``jobs``) view, overall, per entry and
per site in one scan (GROUPING SETS). Definitions (docs/analysis.md has the long form):
``queue_wait_s``, ``setup_s``, ``time_to_first_job_s`` (node start to the first job),
``idle_before_first_job_s``, ``idle_between_jobs_s`` (per glidein with 2+ jobs, the sum of its
gaps), ``tail_s``, ``no_job_s``, ``jobs_per_glidein``, ``job_runtime_s``, ``lifetime_s``
(node start to the end of the glidein). Waste in core-hours (seconds x the glidein's cores,
jobs x their cores): ``validation`` (setup; the whole node life of a glidein whose validation
failed, its post-failure sleep included), ``idle_*`` (glideins that ran jobs), ``no_job``,
``badput`` (failed jobs), ``goodput``, ``other`` (teardown and gaps between stages).
"""

from __future__ import annotations

QUANTILES = (0.5, 0.9, 0.99)
# exact percentiles hold every value in memory (DuckDB cannot spill them): beyond this many
# glideins they are approximate (t-digest, approx_quantile), and the document says so
EXACT_QUANTILE_ROWS = 2_000_000


def quantile_function(con) -> str:
    """``quantile_cont`` (exact) for up to EXACT_QUANTILE_ROWS glideins, else ``approx_quantile``."""
    rows = con.execute("SELECT COUNT(*) FROM glideins").fetchone()[0]
    return "quantile_cont" if rows <= EXACT_QUANTILE_ROWS else "approx_quantile"
OWN_TIMEOUT_REASONS = ("max_idle", "daemon_shutdown")

# SQL fragments over one glidein row (plain SQL: DuckDB and Spark read the same)
CORES = "COALESCE(NULLIF(cpus, 0), cpu_logical_count, 1)"
NODE_LIFE = "(epoch(ended_at) - epoch(node_start_at))"
VALIDATION_FAILED = "(outcome = 'validation_failed')"
JOB_FAILED = ("(failure_domain IS NOT NULL OR COALESCE(exit_code, 0) <> 0 OR exit_signal IS NOT NULL "
              "OR exit_by IN ('remove', 'hold', 'evict'))")

# metric -> (expression, the rows it has a value for)
GLIDEIN_METRICS = {
    "queue_wait_s": ("queue_wait_s", "true"),
    "setup_s": ("setup_s", "true"),
    "time_to_first_job_s": ("epoch(condor_start_at) - epoch(node_start_at) + idle_before_first_job_s", "jobs > 0"),
    "idle_before_first_job_s": ("idle_before_first_job_s", "jobs > 0"),
    "idle_between_jobs_s": ("idle_between_jobs_s", "jobs > 1"),
    "tail_s": ("idle_tail_s", "jobs > 0"),
    "no_job_s": ("idle_no_job_s", "jobs = 0"),
    "jobs_per_glidein": ("jobs", "condor_s IS NOT NULL"),
    "lifetime_s": (NODE_LIFE, "true"),
}
WASTE = {   # category -> seconds x cores of one glidein row
    "validation": f"CASE WHEN {VALIDATION_FAILED} THEN GREATEST({NODE_LIFE}, setup_s) ELSE setup_s END",
    "idle_before_first_job": "CASE WHEN jobs > 0 THEN idle_before_first_job_s END",
    "idle_between_jobs": "CASE WHEN jobs > 0 THEN idle_between_jobs_s END",
    "idle_tail": "CASE WHEN jobs > 0 THEN idle_tail_s END",
    "no_job": "CASE WHEN jobs = 0 THEN idle_no_job_s END",
    "other": f"CASE WHEN NOT {VALIDATION_FAILED} THEN GREATEST({NODE_LIFE} - setup_s - COALESCE(condor_s, 0), 0) END",
    "lifetime": NODE_LIFE,
}
GROUPS = (("overall", None), ("by_entry", "entry"), ("by_site", "site"))


def _round(value, digits=3):
    return None if value is None else round(float(value), digits)


def _grouped(con, select: str, view: str, where: str = "") -> list:
    """Rows of ``select`` per grouping set (), (entry), (site): (grouping key, group, values...)."""
    sql = (f"SELECT GROUPING(entry) AS ge, GROUPING(site) AS gs, entry, site, {select} FROM {view} {where} "
           "GROUP BY GROUPING SETS ((), (entry), (site))")
    out = []
    for row in con.execute(sql).fetchall():
        ge, gs, entry, site = row[:4]
        key = "overall" if ge and gs else "by_entry" if not ge else "by_site"
        out.append((key, entry if key == "by_entry" else site, row[4:]))
    return out


def _place(doc: dict, key: str, group, name: str, value) -> None:
    if key == "overall":
        doc["overall"][name] = value
    else:
        doc[key].setdefault(group, {})[name] = value


def distributions(con) -> dict:
    """count, mean, p50/p90/p99 of every metric, overall / per entry / per site."""
    qs = ", ".join(str(q) for q in QUANTILES)
    quantile = quantile_function(con)
    parts = []
    for expr, cond in GLIDEIN_METRICS.values():
        value = f"CASE WHEN {cond} THEN {expr} END"
        parts += [f"COUNT({value})", f"AVG({value})", f"{quantile}({value}, [{qs}])"]
    doc = {"overall": {}, "by_entry": {}, "by_site": {}, "exact": quantile == "quantile_cont"}
    names = list(GLIDEIN_METRICS) + ["job_runtime_s"]
    rows = _grouped(con, ", ".join(parts), "glideins")
    rows_jobs = _grouped(con, f"COUNT(wall_s), AVG(wall_s), {quantile}(wall_s, [{qs}])", "jobs")
    for source, metric_names in ((rows, names[:-1]), (rows_jobs, names[-1:])):
        for key, group, values in source:
            for index, name in enumerate(metric_names):
                count, mean, quantiles = values[3 * index: 3 * index + 3]
                if not count:
                    continue
                entry = {"count": int(count), "mean": _round(mean)}
                entry.update({f"p{int(q * 100)}": _round(v) for q, v in zip(QUANTILES, quantiles or ())})
                _place(doc, key, group, name, entry)
    return doc


def waste_core_hours(con) -> dict:
    """Core-hours per waste category, overall / per entry / per site."""
    cats = list(WASTE)
    select = ", ".join(f"SUM(({expr}) * {CORES}) / 3600.0" for expr in WASTE.values())
    doc = {"overall": {}, "by_entry": {}, "by_site": {}}
    for key, group, values in _grouped(con, select, "glideins"):
        row = {c: _round(v or 0.0) for c, v in zip(cats, values)}
        row["idle"] = round(row["idle_before_first_job"] + row["idle_between_jobs"] + row["idle_tail"], 3)
        if key == "overall":
            doc["overall"].update(row)
        else:
            doc[key][group] = row
    job_cores = "COALESCE(NULLIF(request_cpus, 0), 1)"
    select = (f"SUM(CASE WHEN {JOB_FAILED} THEN wall_s * {job_cores} ELSE 0 END) / 3600.0, "
              f"SUM(CASE WHEN {JOB_FAILED} THEN 0 ELSE wall_s * {job_cores} END) / 3600.0")
    for key, group, (bad, good) in _grouped(con, select, "jobs"):
        target = doc["overall"] if key == "overall" else doc[key].setdefault(group, {})
        target["badput"], target["goodput"] = _round(bad or 0.0), _round(good or 0.0)
    for rows in [doc["overall"], *doc["by_entry"].values(), *doc["by_site"].values()]:
        for category in ("badput", "goodput", *cats, "idle"):
            rows.setdefault(category, 0.0)
    return doc


def _counts(con, column: str, where: str) -> dict:
    out = {"overall": {}, "by_entry": {}}
    sql = (f"SELECT entry, {column}, COUNT(*) FROM glideins WHERE {where} AND {column} IS NOT NULL "
           f"GROUP BY GROUPING SETS (({column}), (entry, {column})) ORDER BY 3 DESC")
    for entry, value, count in con.execute(sql).fetchall():
        (out["overall"] if entry is None else out["by_entry"].setdefault(entry, {}))[value] = int(count)
    return out


def validation_groups(con) -> list:
    """Per validation group (main, entry, client, client_group lists): total time, share,
    percentiles; and the scripts that failed validation, by error type."""
    groups = ("main", "entry", "client", "client_group")
    qs = ", ".join(str(q) for q in QUANTILES)
    quantile = quantile_function(con)
    select = ", ".join(f"SUM(validation_{g}_s), COUNT(validation_{g}_s), {quantile}(validation_{g}_s, [{qs}])"
                       for g in groups)
    values = con.execute(f"SELECT {select} FROM glideins").fetchone()
    grand = sum(values[3 * i] or 0.0 for i in range(len(groups))) or 1.0
    out = []
    for index, group in enumerate(groups):
        total, runs, quantiles = values[3 * index: 3 * index + 3]
        if not runs:
            continue
        row = {"group": group, "runs": int(runs), "total_s": _round(total, 1),
               "share_of_validation_time": round((total or 0.0) / grand, 4)}
        row.update({f"p{int(q * 100)}": _round(v) for q, v in zip(QUANTILES, quantiles or ())})
        out.append(row)
    return sorted(out, key=lambda r: -r["total_s"])


def failed_scripts(con, top: int = 15) -> list:
    sql = (f"SELECT failure_stage, failure_type, COUNT(*) FROM glideins WHERE {VALIDATION_FAILED} "
           "GROUP BY 1, 2 ORDER BY 3 DESC LIMIT ?")
    return [{"script": s or "(unknown)", "error_type": t or "", "failures": int(c)}
            for s, t, c in con.execute(sql, [top]).fetchall()]


def estimate_threshold(con, expr: str, where: str, bin_s: float = 10.0) -> dict | None:
    """Where timeout shutdowns cluster: the densest 60 s window of 10 s bins, then the low
    edge (2nd percentile) of the values near it, rounded to 10 s. None with too few values."""
    rows = con.execute(f"SELECT floor(v / {bin_s}) AS b, COUNT(*) FROM (SELECT {expr} AS v FROM glideins "
                       f"WHERE {where}) WHERE v > 0 GROUP BY b ORDER BY b").fetchall()
    total = sum(c for _, c in rows)
    if total < 10:
        return None
    bins = {int(b): c for b, c in rows}
    best = max(bins, key=lambda b: sum(bins.get(b + k, 0) for k in range(6)))
    low = best * bin_s
    p2, p50, support = con.execute(
        f"SELECT quantile_cont(v, 0.02), median(v), COUNT(*) FROM (SELECT {expr} AS v FROM glideins WHERE {where}) "
        f"WHERE v >= ? AND v < ?", [low - bin_s, low + 6 * bin_s + 120]).fetchone()
    return {"estimate_s": float(round(p2 / bin_s) * bin_s), "support": int(support),
            "share": round(support / total, 3), "p50_s": round(float(p50), 1)}


def settings_in_force(con) -> dict:
    """The lifetime knobs the table records (the most common value of each), and where the
    timeout shutdowns cluster in the data (a check of what the table says)."""
    own = "shutdown_reason IN ('max_idle', 'daemon_shutdown')"
    recorded = con.execute("SELECT mode(max_idle_s), mode(max_tail_s), mode(retire_time_s) FROM glideins").fetchone()
    return {"recorded": {"max_idle": recorded[0], "max_tail": recorded[1], "retire": recorded[2]},
            "max_idle": estimate_threshold(con, "idle_no_job_s", f"jobs = 0 AND {own}"),
            "max_tail": estimate_threshold(con, "idle_tail_s", f"jobs > 0 AND {own}")}


def compute_stats(con) -> dict:
    """The statistics section of the analysis document (JSON-ready)."""
    totals = con.execute("SELECT COUNT(*), COALESCE(SUM(jobs), 0), "
                         f"COALESCE(SUM(CASE WHEN {VALIDATION_FAILED} THEN 1 ELSE 0 END), 0), "
                         "COALESCE(SUM(CASE WHEN jobs = 0 AND condor_s IS NOT NULL THEN 1 ELSE 0 END), 0) "
                         "FROM glideins").fetchone()
    failed_jobs = con.execute(f"SELECT COUNT(*) FROM jobs WHERE {JOB_FAILED}").fetchone()[0]
    return {"glideins": int(totals[0]), "jobs": int(totals[1]), "failed_jobs": int(failed_jobs),
            "validation_failed_glideins": int(totals[2]), "glideins_without_jobs": int(totals[3]),
            "metrics": distributions(con), "waste_core_hours": waste_core_hours(con),
            "outcomes": _counts(con, "outcome", "true"),
            "shutdown_reasons": _counts(con, "shutdown_reason", "condor_s IS NOT NULL"),
            "validation_groups": validation_groups(con), "failed_scripts": failed_scripts(con),
            "settings_in_force": settings_in_force(con)}


def log_histograms(con, metrics, per_decade: int = 10) -> dict:
    """metric -> (bin lower edges, counts) in log-spaced bins, for plots: one scan per view,
    the rows never leave the database."""
    out = {m: ([], []) for m in metrics}
    for view, names in (("glideins", [m for m in metrics if m in GLIDEIN_METRICS]),
                        ("jobs", [m for m in metrics if m == "job_runtime_s"])):
        if not names:
            continue
        exprs = {m: (("wall_s", "true") if m == "job_runtime_s" else GLIDEIN_METRICS[m]) for m in names}
        items = ", ".join(f"{{'m': '{m}', 'v': CASE WHEN {cond} THEN {expr} END}}" for m, (expr, cond) in exprs.items())
        rows = con.execute(f"SELECT x.m, CAST(floor(log10(x.v) * {per_decade}) AS INTEGER) AS b, COUNT(*) FROM "
                           f"(SELECT UNNEST([{items}]) AS x FROM {view}) WHERE x.v > 0 GROUP BY 1, 2 ORDER BY 1, 2"
                           ).fetchall()
        for m, b, c in rows:
            out[m][0].append(10 ** (b / per_decade))
            out[m][1].append(c)
    return out


def linear_histogram(con, expr: str, where: str, low: float, high: float, bins: int = 80) -> tuple[list, list]:
    width = (high - low) / bins or 1.0
    rows = con.execute(f"SELECT CAST(floor(({expr} - {low!r}) / {width!r}) AS INTEGER) AS b, COUNT(*) FROM glideins "
                       f"WHERE {where} AND {expr} >= {low!r} AND {expr} < {high!r} GROUP BY b ORDER BY b").fetchall()
    return [low + b * width for b, _ in rows], [c for _, c in rows]
