"""Distributions and waste per entry and site: SQL over the glidein table (dataset.py).

Two scans make the whole section: one of the glideins and one of the jobs, each one aggregate
per (entry, site) of sums, counts and fine log-binned histograms (histograms.py); per entry, per
site and overall are sums of those rows, and the percentiles are read from the histograms
(within 1.01 % of the exact ones, in constant memory at any size). Definitions
(docs/analysis.md has the long form): ``queue_wait_s``, ``setup_s``, ``time_to_first_job_s``
(node start to the first job), ``idle_before_first_job_s``, ``idle_between_jobs_s`` (per
glidein with 2+ jobs, the sum of its gaps), ``tail_s``, ``no_job_s``, ``jobs_per_glidein``,
``job_runtime_s``, ``lifetime_s`` (node start to the end of the glidein). Waste in core-hours
(seconds x the glidein's cores, jobs x their cores): ``validation`` (setup; the whole node life
of a glidein whose validation failed, its post-failure sleep included), ``idle_*`` (glideins
that ran jobs), ``no_job``, ``badput`` (failed jobs), ``goodput``, ``other`` (teardown and gaps
between stages).
"""

from __future__ import annotations

import numpy as np

from .histograms import RELATIVE_ERROR, bin_sql, log_percentiles, merged, percentiles, plot_bins

QUANTILES = (0.5, 0.9, 0.99)


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


COUNTED = "jobs_per_glidein"     # whole numbers: its histogram counts the values themselves (exact)
LOG_METRICS = {name: metric for name, metric in GLIDEIN_METRICS.items() if name != COUNTED}
VALIDATION_GROUPS = ("main", "entry", "client", "client_group")
KNOBS = {"max_idle": "max_idle_s", "max_tail": "max_tail_s", "retire": "retire_time_s"}
OWN_TIMEOUT = f"shutdown_reason IN {OWN_TIMEOUT_REASONS}"
# where timeout shutdowns cluster: the seconds idle of the glideins that stopped on their own timeout
THRESHOLD_VALUES = {"max_idle": ("idle_no_job_s", f"jobs = 0 AND {OWN_TIMEOUT}"),
                    "max_tail": ("idle_tail_s", f"jobs > 0 AND {OWN_TIMEOUT}")}
LEVELS = (("overall", None), ("by_entry", "entry"), ("by_site", "site"))
# one group per (entry, site), keyed by their 64-bit hash: DuckDB turns each histogram() into a
# GROUP BY of its keys and the value, and an integer key costs a quarter less than two strings
PAIR_KEY = "hash(entry, site)"
PAIR = "first(entry) AS entry, first(site) AS site"


def _round(value, digits=3):
    return None if value is None else round(float(value), digits)


def _finite(expr: str, cond: str) -> str:
    return f"CASE WHEN {cond} AND isfinite({expr}) THEN {expr} END"


def _glidein_sql() -> str:
    """One scan of the glideins, per (entry, site): every sum, count and histogram the section needs."""
    values = {f"m_{name}": _finite(expr, cond) for name, (expr, cond) in LOG_METRICS.items()}
    values.update({f"v_{g}": _finite(f"validation_{g}_s", "true") for g in VALIDATION_GROUPS})
    sums = {f"w_{c}": f"({expr}) * {CORES} / 3600.0" for c, expr in WASTE.items()}
    inner = ", ".join([f"{expr} AS {name}" for name, expr in {**values, **sums}.items()] + [
        "jobs", "CASE WHEN {1} THEN {0} END AS n_{2}".format(*GLIDEIN_METRICS[COUNTED], COUNTED),
        f"{VALIDATION_FAILED} AS failed_validation", "condor_s IS NOT NULL AS ran_condor", "outcome",
        "shutdown_reason", *KNOBS.values()] + [
        f"CASE WHEN {cond} AND {expr} > 0 AND isfinite({expr}) THEN floor({expr}) END AS t_{knob}"
        for knob, (expr, cond) in THRESHOLD_VALUES.items()])
    aggregates = ", ".join(
        ["COUNT(*) AS glideins", "SUM(jobs) AS jobs",
         "COUNT(*) FILTER (WHERE failed_validation) AS validation_failed",
         "COUNT(*) FILTER (WHERE ran_condor AND jobs = 0) AS without_jobs",
         f"histogram(n_{COUNTED}) AS h_{COUNTED}",
         "histogram(outcome) AS h_outcome",
         "histogram(CASE WHEN ran_condor THEN shutdown_reason END) AS h_shutdown_reason"]
        + [f"SUM({name}) AS s_{name}, histogram({bin_sql(name)}) AS h_{name}" for name in values]
        + [f"SUM({name}) AS s_{name}" for name in sums]
        + [f"histogram({column}) AS h_{knob}" for knob, column in KNOBS.items()]
        + [f"histogram(t_{knob}) AS h_t_{knob}" for knob in THRESHOLD_VALUES])
    return f"SELECT {PAIR}, {aggregates} FROM (SELECT entry, site, {inner} FROM glideins) GROUP BY {PAIR_KEY}"


def _jobs_sql() -> str:
    """One scan of the jobs, per (entry, site): runtimes' histogram, failed jobs, badput, goodput."""
    cores = "COALESCE(NULLIF(request_cpus, 0), 1)"
    return (f"SELECT {PAIR}, SUM(wall) AS s_wall, histogram({bin_sql('wall')}) AS h_wall, "
            "COUNT(*) FILTER (WHERE failed) AS failed_jobs, "
            f"SUM(CASE WHEN failed THEN wall_s * {cores} ELSE 0 END) / 3600.0 AS badput, "
            f"SUM(CASE WHEN failed THEN 0 ELSE wall_s * {cores} END) / 3600.0 AS goodput "
            f"FROM (SELECT entry, site, wall_s, request_cpus, {_finite('wall_s', 'true')} AS wall, "
            f"{JOB_FAILED} AS failed FROM jobs) GROUP BY {PAIR_KEY}")


class _Scan:
    """The rows of one per-(entry, site) scan, summed per level: overall, per entry, per site."""

    def __init__(self, table):
        self.table = table
        self.owners = {key: ([None] * table.num_rows if column is None else table[column].to_pylist())
                       for key, column in LEVELS}

    def sums(self, column: str) -> dict:
        """level -> group -> the column's sum."""
        out = {"overall": {None: 0}}
        for key, owners in self.owners.items():
            groups = out.setdefault(key, {})
            for owner, value in zip(owners, self.table[column].to_pylist()):
                groups[owner] = groups.get(owner, 0) + (value or 0)
        return out

    def histograms(self, column: str) -> dict:
        """level -> group -> (keys in increasing order, counts) of a histogram column."""
        maps = self.table[column].combine_chunks()
        out = {key: merged(maps, owners) for key, owners in self.owners.items()}
        out["overall"].setdefault(None, (np.zeros(0), np.zeros(0, dtype=np.int64)))
        return out

    def counts(self, column: str) -> dict:
        """level -> group -> {value: count} of a histogram column of labels (few values)."""
        out = {"overall": {None: {}}}
        for key, owners in self.owners.items():
            groups = out.setdefault(key, {})
            for owner, pairs in zip(owners, self.table[column].to_pylist()):
                counter = groups.setdefault(owner, {})
                for value, count in pairs or ():
                    counter[value] = counter.get(value, 0) + count
        return out


def _place(doc: dict, key: str, group, name: str, value) -> None:
    if key == "overall":
        doc["overall"][name] = value
    else:
        doc[key].setdefault(group, {})[name] = value


def _summary(keys, counts, total=None) -> dict:
    """count, mean, p50/p90/p99 of a histogram; without ``total`` its keys are the values themselves."""
    count = int(counts.sum())
    if total is None:
        values = np.asarray(keys, dtype=float)
        total, quantiles = float(values @ counts), percentiles(values, values, counts, QUANTILES)
    else:
        quantiles = log_percentiles(keys, counts, QUANTILES)
    row = {"count": count, "mean": _round(total / count)}
    row.update({f"p{int(q * 100)}": _round(v) for q, v in zip(QUANTILES, quantiles)})
    return row


def _metric_columns(glideins: _Scan, jobs: _Scan) -> list:
    """(metric, scan, column) of every log-binned metric."""
    out = [(name, glideins, f"m_{name}") for name in LOG_METRICS]
    return out + [("job_runtime_s", jobs, "wall")]


def distributions(glideins: _Scan, jobs: _Scan) -> dict:
    """count, mean, p50/p90/p99 of every metric, overall / per entry / per site, from the histograms
    (within ``max_relative_error`` of the exact percentiles; jobs per glidein exact)."""
    doc = {"overall": {}, "by_entry": {}, "by_site": {}, "exact": False,
           "max_relative_error": round(RELATIVE_ERROR, 4)}
    for name, scan, column in _metric_columns(glideins, jobs):
        totals = scan.sums(f"s_{column}")
        for key, groups in scan.histograms(f"h_{column}").items():
            for group, (keys, counts) in groups.items():
                if counts.sum():
                    _place(doc, key, group, name, _summary(keys, counts, totals[key][group]))
    for key, groups in glideins.histograms(f"h_{COUNTED}").items():
        for group, (keys, counts) in groups.items():
            if counts.sum():
                _place(doc, key, group, COUNTED, _summary(keys, counts))
    return doc


def plot_histograms(glideins: _Scan, jobs: _Scan) -> dict:
    """metric -> {bin lower edges (s), counts}: every value above 0, 10 bins per decade (for plots)."""
    out = {}
    for name, scan, column in _metric_columns(glideins, jobs):
        edges, counts = plot_bins(*scan.histograms(f"h_{column}")["overall"][None])
        out[name] = {"edges": edges, "counts": counts}
    return out


def waste_core_hours(glideins: _Scan, jobs: _Scan) -> dict:
    """Core-hours per waste category, overall / per entry / per site."""
    doc = {"overall": {}, "by_entry": {}, "by_site": {}}
    columns = [(category, glideins, f"s_w_{category}") for category in WASTE]
    columns += [(category, jobs, category) for category in ("badput", "goodput")]
    for category, scan, column in columns:
        for key, groups in scan.sums(column).items():
            for group, value in groups.items():
                _place(doc, key, group, category, _round(value))
    for rows in [doc["overall"], *doc["by_entry"].values(), *doc["by_site"].values()]:
        for category in ("badput", "goodput", *WASTE):
            rows[category] = rows.get(category) or 0.0
        rows["idle"] = round(rows["idle_before_first_job"] + rows["idle_between_jobs"] + rows["idle_tail"], 3)
    return doc


def _label_counts(glideins: _Scan, column: str) -> dict:
    """overall and per entry: value -> glideins, most first."""
    counts = glideins.counts(column)

    def ranked(counter: dict) -> dict:
        return dict(sorted(((k, int(v)) for k, v in counter.items() if k is not None), key=lambda kv: -kv[1]))
    by_entry = {entry: ranked(counter) for entry, counter in counts["by_entry"].items()}
    return {"overall": ranked(counts["overall"][None]), "by_entry": {e: c for e, c in by_entry.items() if c}}


def validation_groups(glideins: _Scan) -> list:
    """Per validation group (main, entry, client, client_group lists): total time, share,
    percentiles (from the histograms)."""
    rows = {}
    for group in VALIDATION_GROUPS:
        total = glideins.sums(f"s_v_{group}")["overall"][None]
        keys, counts = glideins.histograms(f"h_v_{group}")["overall"][None]
        if counts.sum():
            rows[group] = (total, keys, counts)
    grand = sum(total for total, _, _ in rows.values()) or 1.0
    out = []
    for group, (total, keys, counts) in rows.items():
        summary = _summary(keys, counts, total)
        out.append({"group": group, "runs": summary["count"], "total_s": _round(total, 1),
                    "share_of_validation_time": round(total / grand, 4),
                    **{k: v for k, v in summary.items() if k.startswith("p")}})
    return sorted(out, key=lambda r: -r["total_s"])


def failed_scripts(con, top: int = 15) -> list:
    sql = (f"SELECT failure_stage, failure_type, COUNT(*) FROM glideins WHERE {VALIDATION_FAILED} "
           "GROUP BY 1, 2 ORDER BY 3 DESC LIMIT ?")
    return [{"script": s or "(unknown)", "error_type": t or "", "failures": int(c)}
            for s, t, c in con.execute(sql, [top]).fetchall()]


def estimate_threshold(seconds: np.ndarray, counts: np.ndarray, bin_s: int = 10) -> dict | None:
    """Where timeout shutdowns cluster, from their values in 1 s bins: the densest 60 s window of
    10 s bins, then the low edge (2nd percentile) of the values near it, rounded to 10 s (within
    1 s of the exact percentile). None with too few values."""
    total = int(counts.sum())
    if total < 10:
        return None
    tens, where = np.unique(np.floor_divide(seconds, bin_s).astype(np.int64), return_inverse=True)
    ends = np.concatenate([[0], np.cumsum(np.bincount(where, weights=counts))])
    windows = ends[np.searchsorted(tens, tens + 6)] - ends[:-1]       # glideins in [b, b + 6) per bin b
    low = int(tens[int(np.argmax(windows))]) * bin_s
    near = (seconds >= low - bin_s) & (seconds < low + 6 * bin_s + 120)
    p2, p50 = percentiles(seconds[near], seconds[near] + 1, counts[near], (0.02, 0.5))
    support = int(counts[near].sum())
    return {"estimate_s": float(round(p2 / bin_s) * bin_s), "support": support,
            "share": round(support / total, 3), "p50_s": round(float(p50), 1)}


def settings_in_force(glideins: _Scan) -> dict:
    """The lifetime knobs the table records (the most common value of each), and where the
    timeout shutdowns cluster in the data (a check of what the table says), with those
    shutdowns' histogram in 10 s bins (up to a day) for the plot."""
    recorded = {}
    for knob in KNOBS:
        keys, counts = glideins.histograms(f"h_{knob}")["overall"][None]
        recorded[knob] = float(keys[int(np.argmax(counts))]) if len(counts) else None
    out = {"recorded": recorded}
    for knob in THRESHOLD_VALUES:
        seconds, counts = glideins.histograms(f"h_t_{knob}")["overall"][None]
        seconds = np.asarray(seconds, dtype=float)
        out[knob] = estimate_threshold(seconds, counts)
        day = seconds < 86400
        starts, where = np.unique(np.floor_divide(seconds[day], 10).astype(np.int64), return_inverse=True)
        out[f"{knob}_shutdowns_10s"] = [[int(10 * s), int(c)] for s, c in
                                        zip(starts, np.bincount(where, weights=counts[day], minlength=len(starts)))]
    return out


def compute_stats(con) -> dict:
    """The statistics section of the analysis document (JSON-ready): one scan of the glideins and
    one of the jobs, per (entry, site), summed here per entry, per site and overall."""
    glideins = _Scan(con.sql(_glidein_sql()).to_arrow_table())
    jobs = _Scan(con.sql(_jobs_sql()).to_arrow_table())
    count = lambda scan, column: int(scan.sums(column)["overall"][None])  # noqa: E731
    return {"glideins": count(glideins, "glideins"), "jobs": count(glideins, "jobs"),
            "failed_jobs": count(jobs, "failed_jobs"),
            "validation_failed_glideins": count(glideins, "validation_failed"),
            "glideins_without_jobs": count(glideins, "without_jobs"),
            "metrics": distributions(glideins, jobs), "histograms": plot_histograms(glideins, jobs),
            "waste_core_hours": waste_core_hours(glideins, jobs),
            "outcomes": _label_counts(glideins, "h_outcome"),
            "shutdown_reasons": _label_counts(glideins, "h_shutdown_reason"),
            "validation_groups": validation_groups(glideins), "failed_scripts": failed_scripts(con),
            "settings_in_force": settings_in_force(glideins)}
