"""Distributions and waste per entry and site: SQL over the glidein table (dataset.py).

Two aggregates make the whole section: one of the glideins and one of the jobs, each per
(entry, site) of sums, counts and fine log-binned histograms (table/aggregates.py, the
definitions; histograms.py), read from the files' rollups where present and computed from the
rows of the other files (table/rollup.py); per entry, per site and overall are sums of those
rows, and the percentiles are read from the histograms (within 1.01 % of the exact ones, in
constant memory at any size). Definitions
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

from ..table.aggregates import (COUNTED, KNOBS, LOG_METRICS, SCRIPT_SEPARATOR, THRESHOLD_VALUES, VALIDATION_GROUPS,
                                WASTE, long_rows)
from ..table.schema import GLIDEINS_DATASET, JOBS_DATASET
from .histograms import RELATIVE_ERROR, log_percentiles, merged, percentiles, plot_bins

QUANTILES = (0.5, 0.9, 0.99)
LEVELS = (("overall", None), ("by_entry", "entry"), ("by_site", "site"))


def _round(value, digits=3):
    return None if value is None else round(float(value), digits)


def _aggregate(con, dataset: str):
    """The statistics' aggregate of a dataset (table/aggregates.py), long rows summed per
    (entry, site, name, key, label): the rollups' rows (view ``<dataset>_rollups``) and the
    aggregate of the files without a usable one (``<dataset>_unrolled``), both from open_dataset.
    A rollup that cannot be read after all (damaged past its footer, deleted since it was
    chosen) makes every file read raw."""
    import duckdb
    # ordered: the document's per-entry and per-site mappings follow these rows, not DuckDB's
    # parallel grouping, so two runs on one table write the same bytes
    total = ("SELECT entry, site, name, key, label, SUM(value) AS value FROM {} GROUP BY ALL "
             "ORDER BY entry, site, name, key, label")
    con.register("_unrolled_rows", long_rows(con, dataset, f"{dataset}_unrolled"))
    try:
        return con.sql(total.format(f"(SELECT * FROM _unrolled_rows UNION ALL SELECT * FROM {dataset}_rollups)")
                       ).to_arrow_table()
    except duckdb.Error:
        con.unregister("_unrolled_rows")
        con.register("_unrolled_rows", long_rows(con, dataset, dataset))
        return con.sql(total.format("_unrolled_rows")).to_arrow_table()
    finally:
        con.unregister("_unrolled_rows")


def _by_name(name) -> tuple:
    """Sort key of an entry or site name, NULL first."""
    return (name is not None, "" if name is None else str(name))


class _Scan:
    """The statistics' aggregate of one dataset (long rows, one per (entry, site) and name, bin
    or label), summed per level: overall, per entry, per site."""

    def __init__(self, table):
        names = table["name"].to_numpy(zero_copy_only=False)
        order = np.argsort(names, kind="stable")
        found, starts = np.unique(names[order], return_index=True)
        self.rows = dict(zip(found, np.split(order, starts[1:])))
        self.key = table["key"].to_numpy(zero_copy_only=False)
        self.label = table["label"].to_numpy(zero_copy_only=False)
        self.value = np.nan_to_num(table["value"].to_numpy(zero_copy_only=False))
        self.owners, self.codes, self.names = {}, {}, {}
        for key, column in LEVELS:
            owners = [None] * table.num_rows if column is None else table[column].to_pylist()
            names = sorted(set(owners), key=_by_name)      # every mapping per entry or site in name order
            index = {owner: code for code, owner in enumerate(names)}
            self.codes[key] = np.array([index[owner] for owner in owners], dtype=np.int64)
            self.owners[key], self.names[key] = np.array(owners, dtype=object), names

    def _of(self, column: str) -> np.ndarray:
        return self.rows.get(column, np.zeros(0, dtype=np.int64))

    def sums(self, column: str) -> dict:
        """level -> group -> the column's sum."""
        rows, out = self._of(column), {"overall": {None: 0}}
        for key, owners in self.owners.items():
            groups = out.setdefault(key, {})
            for owner, value in zip(owners[rows], self.value[rows]):
                groups[owner] = groups.get(owner, 0) + value
        return self._in_name_order(out)

    @staticmethod
    def _in_name_order(out: dict) -> dict:
        return {key: {name: groups[name] for name in sorted(groups, key=_by_name)} for key, groups in out.items()}

    def histograms(self, column: str) -> dict:
        """level -> group -> (keys in increasing order, counts) of a histogram column."""
        rows, out = self._of(column), {}
        for key, codes in self.codes.items():
            groups = merged(self.key[rows], self.value[rows], codes[rows])
            out[key] = {self.names[key][code]: histogram for code, histogram in groups.items()}
        out["overall"].setdefault(None, (np.zeros(0), np.zeros(0, dtype=np.int64)))
        return out

    def counts(self, column: str) -> dict:
        """level -> group -> {label: count} of a histogram column of labels (few values)."""
        rows, out = self._of(column), {"overall": {None: {}}}
        for key, owners in self.owners.items():
            groups = out.setdefault(key, {})
            for owner, label, count in zip(owners[rows], self.label[rows], self.value[rows]):
                counter = groups.setdefault(owner, {})
                counter[label] = counter.get(label, 0) + int(count)
        return self._in_name_order(out)


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
        return dict(sorted(((k, int(v)) for k, v in counter.items() if k is not None), key=lambda kv: (-kv[1], kv[0])))
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


def failed_scripts(glideins: _Scan, top: int = 15) -> list:
    """The validation scripts that failed most, with their error type (ties by name)."""
    counts = glideins.counts("h_failing_script")["overall"][None]
    rows = sorted((-count, *label.split(SCRIPT_SEPARATOR, 1)) for label, count in counts.items())
    return [{"script": script or "(unknown)", "error_type": error_type, "failures": -count}
            for count, script, error_type in rows[:top]]


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


def aggregate_scans(con) -> tuple:
    """The glideins' and the jobs' aggregates per (entry, site) (rollups, and the rows of the
    files without one), each ready to be summed per entry, per site and overall."""
    return _Scan(_aggregate(con, GLIDEINS_DATASET)), _Scan(_aggregate(con, JOBS_DATASET))


def compute_stats(con, scans: tuple | None = None) -> dict:
    """The statistics section of the analysis document (JSON-ready), from ``scans``
    (``aggregate_scans``; read here when not given)."""
    glideins, jobs = scans or aggregate_scans(con)
    count = lambda scan, column: int(scan.sums(column)["overall"][None])  # noqa: E731
    return {"glideins": count(glideins, "glideins"), "jobs": count(glideins, "jobs"),
            "failed_jobs": count(jobs, "failed_jobs"),
            "validation_failed_glideins": count(glideins, "validation_failed"),
            "glideins_without_jobs": count(glideins, "without_jobs"),
            "metrics": distributions(glideins, jobs), "histograms": plot_histograms(glideins, jobs),
            "waste_core_hours": waste_core_hours(glideins, jobs),
            "outcomes": _label_counts(glideins, "h_outcome"),
            "shutdown_reasons": _label_counts(glideins, "h_shutdown_reason"),
            "validation_groups": validation_groups(glideins), "failed_scripts": failed_scripts(glideins),
            "settings_in_force": settings_in_force(glideins)}
