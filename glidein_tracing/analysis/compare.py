"""The "compare" view (BubbleUp / TraceQL ``compare()`` style): for the glideins of interest
(failed, or slow: setup or time to the first job above the 90th percentile) against the rest,
which values of entry, site, CPU model, OS, hour of day and glidein version are
over-represented. Per dimension and value: its share among the selection and among the rest,
and the lift (selection share / rest share); the values that differ most come first.
"""

from __future__ import annotations

# dimension -> SQL expression over a glidein row (a dimension whose column the table lacks is left out)
DIMENSIONS = {
    "entry": "entry", "site": "site", "cpu_model": "cpu_model", "os": "os_description",
    "hour_of_day": "CAST(hour(COALESCE(node_start_at, submitted_at)) AS VARCHAR)",
    "glidein_version": "glidein_version",
}
MIN_COUNT = 5        # a value seen fewer times in the selection says too little
TOP = 5


def selections(con) -> dict:
    """name -> SQL condition of the glideins compared against the rest."""
    p90_setup, p90_first = con.execute(
        "SELECT quantile_cont(setup_s, 0.9), quantile_cont(idle_before_first_job_s, 0.9) FROM glideins").fetchone()
    out = {"failed": "failure_domain IS NOT NULL"}
    if p90_setup is not None:
        out["slow_setup"] = f"setup_s > {float(p90_setup)!r}"
    if p90_first is not None:
        out["slow_first_job"] = f"idle_before_first_job_s > {float(p90_first)!r}"
    return out


def compare(con, condition: str, columns: set) -> list[dict]:
    """Per dimension, the values most over-represented where ``condition`` holds."""
    out = []
    for name, expr in DIMENSIONS.items():
        if name in ("glidein_version", "cpu_model", "os") and expr not in columns:
            continue
        rows = con.execute(
            f"WITH t AS (SELECT COALESCE({expr}, '(unknown)') AS v, ({condition}) IS TRUE AS sel FROM glideins), "
            "c AS (SELECT v, SUM(CASE WHEN sel THEN 1 ELSE 0 END) AS a, SUM(CASE WHEN sel THEN 0 ELSE 1 END) AS b "
            "FROM t GROUP BY v), n AS (SELECT SUM(a) AS na, SUM(b) AS nb FROM c) "
            "SELECT v, a, b, a / NULLIF(na, 0), b / NULLIF(nb, 0) FROM c, n").fetchall()
        values = []
        for value, a, b, share_sel, share_rest in rows:
            if not a or a < MIN_COUNT:
                continue
            lift = (share_sel / share_rest) if share_rest else float("inf")
            values.append({"value": value, "selected": int(a), "rest": int(b), "share_selected": round(share_sel, 4),
                           "share_rest": round(share_rest or 0.0, 4),
                           "lift": round(lift, 2) if lift != float("inf") else None})
        values.sort(key=lambda v: -(v["lift"] if v["lift"] is not None else 1e9))
        top = [v for v in values if v["lift"] is None or v["lift"] > 1.0][:TOP]
        if top:
            out.append({"dimension": name, "values": top})
    # the dimensions whose best value stands out most first
    return sorted(out, key=lambda d: -(d["values"][0]["lift"] or 1e9))


def compare_section(con, columns: set) -> dict:
    return {name: {"condition": cond, "dimensions": compare(con, cond, columns)}
            for name, cond in selections(con).items()}
