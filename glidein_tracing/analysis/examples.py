"""Example glideins for the report's links (to their waterfall pages or to Jaeger): the slowest
setups, the longest idle ones, and per recommended entry the glideins its change would have
cut (their idle time before a first job or after the last one above the proposed Max_Idle or
Max_Tail), from one scan of the rows. Ties go to the higher trace id, so two runs pick the same.
"""

from __future__ import annotations

from ..table.aggregates import sql_text

TOP = 3
IDLE = "COALESCE(idle_no_job_s, 0) + COALESCE(idle_tail_s, 0) + COALESCE(idle_before_first_job_s, 0)"


def _top(value: str, where: str = "true") -> str:
    return f"max_by(trace_id, {{'v': {value}, 't': trace_id}}, {TOP}) FILTER (WHERE {value} IS NOT NULL AND {where})"


def _cut_condition(rec: dict) -> str:
    """The glideins of a recommended entry whose idle exceeds a proposed threshold."""
    parts = []
    for change in rec["changes"]:
        if change["knob"] == "GLIDEIN_Max_Idle":
            parts.append(f"(jobs = 0 AND idle_no_job_s > {change['proposed_s']!r}) OR "
                         f"(jobs > 0 AND idle_before_first_job_s > {change['proposed_s']!r})")
        elif change["knob"] == "GLIDEIN_Max_Tail":
            parts.append(f"(jobs > 0 AND idle_tail_s > {change['proposed_s']!r})")
        elif change["knob"] == "GLIDEIN_Retire_Time":
            parts.append(f"condor_s > {change['proposed_s']!r}")
    return f"entry = {sql_text(rec['entry'])} AND ({' OR '.join(parts)})" if parts else "false"


def examples_section(con, recommended: list) -> dict:
    """slowest_setup, longest_idle (trace ids), and cut: entry -> trace ids, for the
    recommended entries (``recommended``: the what-if's per-entry recommendations)."""
    cuts = [(rec["entry"], _cut_condition(rec)) for rec in recommended]
    columns = [_top("setup_s"), _top(IDLE, "condor_s IS NOT NULL")] + [_top(IDLE, cond) for _, cond in cuts]
    row = con.execute(f"SELECT {', '.join(columns)} FROM glideins").fetchone()
    return {"slowest_setup": row[0] or [], "longest_idle": row[1] or [],
            "cut": {entry: ids or [] for (entry, _), ids in zip(cuts, row[2:])}}
