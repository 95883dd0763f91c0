"""Statistics of a TimelineTable: percentiles per entry and site, waste, validation scripts.

Everything is computed with numpy over the columns (no per-glidein Python), so a million
glideins take seconds. Definitions (docs/analysis.md has the long form):

- ``queue_wait_s``: time in the site's queue (Factory clock, sum of ``factory.queue``);
- ``setup_s``: the setup stage (download + all validation scripts), per script in
  ``validation_scripts``;
- ``time_to_first_job_s``: node start (first node-side span) to the first job start;
- ``idle_before_first_job_s``, ``idle_between_jobs_s`` (one value per gap), ``tail_s`` (idle
  after the last job), ``no_job_s`` (the whole condor phase of a glidein that never ran a job);
- ``jobs_per_glidein``, ``job_runtime_s``, ``lifetime_s`` (node start to end of cleanup).

Waste, in core-hours (duration x the glidein's cores, jobs x their cores), in the Factory's
categories: ``validation`` (the setup stage; the whole life of a glidein whose validation
failed, as it keeps the slot ~20 min), ``idle`` (before the first job + between jobs + tail,
glideins that ran jobs), ``no_job`` (condor phase of glideins that never ran a job),
``badput`` (failed jobs: non-zero exit, signal, evicted/removed/held). ``goodput`` and
``other`` (teardown and the moments between stages) complete the life.
"""

from __future__ import annotations

import numpy as np

from .timeline import PROBLEMS, Intervals, TimelineTable

QUANTILES = (0.5, 0.9, 0.99)
# shutdown reasons that are the glidein's own timeouts (as opposed to being killed)
OWN_TIMEOUT_REASONS = ("max_idle", "daemon_shutdown")


def group_summary(codes: np.ndarray, values: np.ndarray, n_groups: int, qs=QUANTILES) -> dict:
    """count, mean and quantiles (linear interpolation, as numpy.percentile) of values per
    group code; NaNs skipped.

    No value is sorted: values are grouped by a stable radix sort of the small integer codes,
    and in each group only the two order statistics around each quantile are selected
    (np.partition, linear time). A full argsort of 8 million validation times took seconds."""
    codes = np.asarray(codes, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(values)
    if not ok.all():
        codes, values = codes[ok], values[ok]
    if n_groups <= 1:
        v, c = values, np.zeros(len(values), dtype=np.int64)
    else:
        small = codes.astype(np.int16 if n_groups < 2**15 else np.int32 if n_groups < 2**31 else np.int64)
        order = np.argsort(small, kind="stable")
        v, c = values[order], codes[order]
    counts = np.bincount(c, minlength=n_groups)[:n_groups]
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    sums = np.bincount(c, weights=v, minlength=n_groups)[:n_groups]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = {"count": counts, "mean": np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)}
    results = [np.full(n_groups, np.nan) for _ in qs]
    for group in np.nonzero(counts)[0]:
        start, count = int(starts[group]), int(counts[group])
        positions = [q * (count - 1) for q in qs]
        lows = [int(np.floor(p)) for p in positions]
        highs = [min(low + 1, count - 1) for low in lows]
        segment = v[start:start + count]
        if count > 2:
            segment = np.partition(segment, sorted(set(lows + highs)))
        elif count == 2 and segment[0] > segment[1]:
            segment = segment[::-1]
        for result, position, low, high in zip(results, positions, lows, highs):
            frac = position - low
            result[group] = segment[low] * (1 - frac) + segment[high] * frac
    for q, result in zip(qs, results):
        out[f"p{int(round(q * 100))}"] = result
    return out


def _rows(summary: dict, index: int) -> dict:
    out = {}
    for key, column in summary.items():
        value = column[index]
        if key == "count":
            out[key] = int(value)
        else:
            out[key] = None if not np.isfinite(value) else round(float(value), 3)
    return out


class Derived:
    """Per-glidein and per-job quantities shared by stats, the what-if replay and plots."""

    def __init__(self, table: TimelineTable):
        self.table = table
        g, j = table.g, table.jobs
        iv = self.iv = Intervals(table)
        n = len(table)
        self.cores = np.where(np.isfinite(g["cores"]) & (g["cores"] > 0), g["cores"], 1.0)
        self.lifetime = g["node_end"] - g["node_start"]
        vfail = np.zeros(n, dtype=bool)
        if len(table.vals["failed"]):
            vfail[table.vals["glidein"][table.vals["failed"]]] = True
        outcome_names = table.names["outcome"]
        if "validation_failed" in outcome_names:
            vfail |= g["outcome"] == outcome_names.index("validation_failed")
        self.validation_failed = vfail
        self.has_jobs = iv.n_jobs > 0
        first_start = np.full(n, np.nan)
        if len(j["start"]):
            first_start[self.has_jobs] = j["start"][iv.offsets[:-1][self.has_jobs]]
        self.time_to_first_job = first_start - g["node_start"]
        jg = iv.glidein
        self.job_seconds = iv.rel_e - iv.rel_s
        self.job_core_s = self.job_seconds * j["cores"]
        self.idle_before = np.bincount(jg[iv.first], weights=iv.gap[iv.first], minlength=n)
        self.idle_between = np.bincount(jg[~iv.first], weights=iv.gap[~iv.first], minlength=n)
        self.tail = np.where(self.has_jobs, iv.tail, 0.0)
        self.no_job = np.where(iv.has_condor & ~self.has_jobs, iv.L, 0.0)
        failed = j["failed"]
        self.badput_core_s = np.bincount(jg[failed], weights=self.job_core_s[failed], minlength=n)
        self.goodput_core_s = np.bincount(jg[~failed], weights=self.job_core_s[~failed], minlength=n)

    def waste_core_hours(self) -> dict:
        """Per glidein, core-hours per category (arrays)."""
        g = self.table.g
        c = self.cores
        setup = np.nan_to_num(g["setup_s"])
        life = np.nan_to_num(self.lifetime)
        validation = np.where(self.validation_failed, np.maximum(life, setup), setup) * c
        idle_before = self.idle_before * c
        idle_between = self.idle_between * c
        tail = self.tail * c
        no_job = self.no_job * c
        other = np.where(self.validation_failed, 0.0, np.maximum(life - setup - self.iv.L, 0.0)) * c
        h = 1 / 3600.0
        return {"validation": validation * h, "idle_before_first_job": idle_before * h,
                "idle_between_jobs": idle_between * h, "idle_tail": tail * h,
                "idle": (idle_before + idle_between + tail) * h, "no_job": no_job * h,
                "badput": self.badput_core_s * h, "goodput": self.goodput_core_s * h,
                "other": other * h, "lifetime": life * c * h}


def _metric_values(d: Derived) -> dict:
    """metric -> (group row per value, values)."""
    t, iv = d.table, d.iv
    n = len(t)
    rows = np.arange(n)
    jg = iv.glidein
    condor_rows = rows[iv.has_condor]
    return {
        "queue_wait_s": (rows, t.g["queue_s"]),
        "setup_s": (rows, t.g["setup_s"]),
        "time_to_first_job_s": (rows, d.time_to_first_job),
        "idle_before_first_job_s": (jg[iv.first], iv.gap[iv.first]),
        "idle_between_jobs_s": (jg[~iv.first], iv.gap[~iv.first]),
        "tail_s": (rows[d.has_jobs], iv.tail[d.has_jobs]),
        "no_job_s": (rows[iv.has_condor & ~d.has_jobs], iv.L[iv.has_condor & ~d.has_jobs]),
        "jobs_per_glidein": (condor_rows, iv.n_jobs[iv.has_condor].astype(float)),
        "job_runtime_s": (jg, d.job_seconds),
        "lifetime_s": (rows, d.lifetime),
    }


def estimate_threshold(values, bin_s: float = 10.0) -> dict | None:
    """Where timeout shutdowns cluster: the densest 10 s bin, then the low edge (2nd
    percentile) of the values near it, rounded to 10 s. None with too few values."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    if len(values) < 10:
        return None
    bins = np.floor(values / bin_s).astype(np.int64)
    uniq, counts = np.unique(bins, return_counts=True)
    # the densest 60 s window of bins
    window = 6
    cumulative = np.concatenate(([0], np.cumsum(counts)))
    dense = cumulative[np.searchsorted(uniq, uniq + window)] - cumulative[:-1]
    low = uniq[int(np.argmax(dense))] * bin_s
    near = values[(values >= low - bin_s) & (values < low + window * bin_s + 120)]
    estimate = float(np.round(np.percentile(near, 2) / bin_s) * bin_s)
    return {"estimate_s": estimate, "support": int(len(near)), "share": round(len(near) / len(values), 3),
            "p50_s": round(float(np.median(near)), 1)}


def infer_settings(d: Derived) -> dict:
    """Lifetime knobs as the data shows them: Max_Idle from glideins that never ran a job
    and stopped on their own; Max_Tail from tails of glideins stopped on their own."""
    t, iv = d.table, d.iv
    reasons = t.names["reason"]
    own = np.isin(t.g["reason"], [reasons.index(r) for r in OWN_TIMEOUT_REASONS if r in reasons])
    no_job = iv.has_condor & ~d.has_jobs & own
    tail = d.has_jobs & own
    starts = iv.rel_s
    return {
        "max_idle": estimate_threshold(iv.L[no_job]),
        "max_tail": estimate_threshold(iv.tail[tail]),
        "latest_job_start_s": round(float(starts.max()), 1) if len(starts) else None,
        "p99_job_start_s": round(float(np.percentile(starts, 99)), 1) if len(starts) else None,
    }


def _counts(codes, names, groups=None, group_names=None) -> dict:
    if groups is None:
        counts = np.bincount(codes, minlength=len(names))
        return {names[i]: int(c) for i, c in enumerate(counts) if c and names[i] != ""}
    out = {}
    n_names = max(len(names), 1)
    matrix = np.bincount(groups * n_names + codes, minlength=len(group_names) * n_names).reshape(-1, n_names)
    for gi, gname in enumerate(group_names):
        row = {names[i]: int(c) for i, c in enumerate(matrix[gi]) if c and names[i] != ""}
        if row:
            out[gname] = row
    return out


def validation_scripts(t: TimelineTable, d: Derived) -> list:
    """Per script: runs, time (total, share, percentiles), failures and error types, sorted by
    total time, the scripts that dominate setup first."""
    v = t.vals
    scripts, errors = t.names["script"], t.names["error"]
    ns = len(scripts)
    if not len(v["name"]):
        return []
    summary = group_summary(v["name"], v["seconds"], ns)
    total = np.bincount(v["name"], weights=v["seconds"], minlength=ns)
    core_h = np.bincount(v["name"], weights=v["seconds"] * d.cores[v["glidein"]], minlength=ns) / 3600.0
    failures = np.bincount(v["name"][v["failed"]], minlength=ns)
    error_matrix = np.bincount(v["name"][v["failed"]] * len(errors) + v["error"][v["failed"]],
                               minlength=ns * len(errors)).reshape(ns, len(errors))
    grand = total.sum() or 1.0
    out = []
    for i in np.argsort(-total):
        runs = int(summary["count"][i])
        if not runs:
            continue
        row = {"script": scripts[i], "runs": runs, "total_s": round(float(total[i]), 1),
               "share_of_validation_time": round(float(total[i] / grand), 4),
               "core_hours": round(float(core_h[i]), 3), "failures": int(failures[i]),
               "failure_rate": round(float(failures[i] / runs), 5),
               "error_types": {errors[k]: int(c) for k, c in enumerate(error_matrix[i]) if c}}
        row.update({k: val for k, val in _rows(summary, i).items() if k != "count"})
        out.append(row)
    return out


def compute_stats(table: TimelineTable, derived: Derived | None = None, *, by_script_entry: bool = True) -> dict:
    """The whole statistics document (JSON-ready)."""
    d = derived or Derived(table)
    t = table
    entries, sites = t.names["entry"], t.names["site"]
    n = len(t)
    metrics = _metric_values(d)
    out = {"glideins": n, "jobs": int(len(t.jobs["start"])),
           "failed_jobs": int(t.jobs["failed"].sum()),
           "metrics": {"overall": {}, "by_entry": {}, "by_site": {}}}
    for name, (rows, values) in metrics.items():
        overall = group_summary(rows, values, 1)
        out["metrics"]["overall"][name] = _rows(overall, 0)
        for key, codes, labels in (("by_entry", t.g["entry"], entries), ("by_site", t.g["site"], sites)):
            summary = group_summary(codes[rows], values, len(labels))
            for gi, label in enumerate(labels):
                if summary["count"][gi]:
                    out["metrics"][key].setdefault(label, {})[name] = _rows(summary, gi)
    waste = d.waste_core_hours()
    out["waste_core_hours"] = {"overall": {k: round(float(v.sum()), 3) for k, v in waste.items()},
                               "by_entry": {}, "by_site": {}}
    for key, codes, labels in (("by_entry", t.g["entry"], entries), ("by_site", t.g["site"], sites)):
        sums = {k: np.bincount(codes, weights=v, minlength=len(labels)) for k, v in waste.items()}
        present = np.bincount(codes, minlength=len(labels))
        for gi, label in enumerate(labels):
            if present[gi]:
                out["waste_core_hours"][key][label] = {k: round(float(s[gi]), 3) for k, s in sums.items()}
    reason_codes = t.g["reason"]
    out["shutdown_reasons"] = {"overall": _counts(reason_codes[d.iv.has_condor], t.names["reason"]),
                               "by_entry": _counts(reason_codes[d.iv.has_condor], t.names["reason"],
                                                   t.g["entry"][d.iv.has_condor], entries)}
    out["outcomes"] = {"overall": _counts(t.g["outcome"], t.names["outcome"]),
                       "by_entry": _counts(t.g["outcome"], t.names["outcome"], t.g["entry"], entries)}
    out["glideins_without_jobs"] = int((d.iv.has_condor & ~d.has_jobs).sum())
    out["validation_failed_glideins"] = int(d.validation_failed.sum())
    out["validation_scripts"] = validation_scripts(t, d)
    if by_script_entry and len(t.vals["name"]):
        ns = len(t.names["script"])
        codes = t.g["entry"][t.vals["glidein"]].astype(np.int64) * ns + t.vals["name"]
        summary = group_summary(codes, t.vals["seconds"], len(entries) * ns)
        per = {}
        for index in np.nonzero(summary["count"])[0]:
            per.setdefault(entries[index // ns], {})[t.names["script"][index % ns]] = _rows(summary, index)
        out["validation_by_entry"] = per
    problems = t.g["problems"]
    out["problems"] = {name: int(((problems & bit) != 0).sum()) for bit, name in PROBLEMS.items()}
    out["problem_glideins"] = int((problems != 0).sum())
    out["inferred_settings"] = infer_settings(d)
    return out
