"""The "compare" view (BubbleUp / TraceQL ``compare()`` style): for the glideins of interest
(failed, or slow: setup or time to the first job above the 90th percentile) against the rest,
which values of entry, site, CPU model, OS, hour of day and glidein version are
over-represented. Per dimension and value: its share among the selection and among the rest,
and the lift (selection share / rest share); the values that differ most come first.
"""

from __future__ import annotations

# dimension -> SQL expression over the dataset's glidein counts (glidein_counts.py); the hour of
# day is the hour's, in UTC as the timestamps are
DIMENSIONS = {
    "entry": "entry", "site": "site", "cpu_model": "cpu_model", "os": "os_description",
    "hour_of_day": "CAST(((b % 24) + 24) % 24 AS VARCHAR)", "glidein_version": "glidein_version",
}
MIN_COUNT = 5        # a value seen fewer times in the selection says too little
TOP = 5


def selections(overall: dict) -> dict:
    """name -> SQL condition of the glideins compared against the rest; ``overall``: the
    statistics' overall metrics (their p90s, stats.py). Declared to the dataset before any
    section counts the glideins (``Dataset.declare_selections``): one pass counts them all."""
    out = {"failed": "failure_domain IS NOT NULL"}
    for name, metric in (("slow_setup", "setup_s"), ("slow_first_job", "idle_before_first_job_s")):
        p90 = (overall.get(metric) or {}).get("p90")
        if p90 is not None:
            out[name] = f"{metric} > {float(p90)!r}"
    return out


def _counts(data, conditions: dict) -> dict:
    """Per dimension and value, the glideins in each selection and in all (from the counts)."""
    con = data.con
    data.declare_selections(conditions)
    table = data.glidein_counts()
    dims = DIMENSIONS
    values = ", ".join(f"COALESCE(CAST({expr} AS VARCHAR), '(unknown)') AS {name}" for name, expr in dims.items())
    selected = ", ".join(f"sel_{name}" for name in conditions)
    sums = ", ".join(f"SUM(sel_{name})" for name in conditions)
    sets = ", ".join(f"({name})" for name in dims)
    rows = con.execute(f"SELECT {', '.join(f'GROUPING({n})' for n in dims)}, {', '.join(dims)}, SUM(n), {sums} "
                       f"FROM (SELECT {values}, n, {selected} FROM {table}) GROUP BY GROUPING SETS ({sets})").fetchall()
    out: dict = {}
    k = len(dims)
    for row in rows:
        index = list(row[:k]).index(0)
        out.setdefault(list(dims)[index], []).append((row[k + index], row[2 * k], row[2 * k + 1:]))
    return out


def _ranked(groups: list, which: int) -> list[dict]:
    """A dimension's values most over-represented in selection ``which`` (lift > 1) first."""
    n_sel = sum(g[2][which] for g in groups)
    n_rest = sum(g[1] - g[2][which] for g in groups)
    values = []
    for value, total, selected in groups:
        a, b = selected[which], total - selected[which]
        if a < MIN_COUNT or not n_sel:
            continue
        share_sel, share_rest = a / n_sel, (b / n_rest if n_rest else 0.0)
        lift = share_sel / share_rest if share_rest else None
        values.append({"value": value, "selected": int(a), "rest": int(b), "share_selected": round(share_sel, 4),
                       "share_rest": round(share_rest, 4), "lift": None if lift is None else round(lift, 2)})
    values.sort(key=lambda v: (-(v["lift"] if v["lift"] is not None else 1e9), v["value"]))
    return [v for v in values if v["lift"] is None or v["lift"] > 1.0][:TOP]


def compare_section(data, overall: dict) -> dict:
    """Per selection: its condition and, per dimension, the over-represented values, the
    dimensions whose best value stands out most first (ties by name); ``overall``: the
    statistics' overall metrics, whose p90s define the slow selections."""
    conditions = selections(overall)
    counts = _counts(data, conditions)
    out = {}
    for which, (name, cond) in enumerate(conditions.items()):
        dims = [{"dimension": d, "values": top} for d, groups in counts.items() if (top := _ranked(groups, which))]
        dims.sort(key=lambda d: (-(d["values"][0]["lift"] or 1e9), d["dimension"]))
        out[name] = {"condition": cond, "dimensions": dims}
    return out
