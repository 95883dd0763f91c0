"""Per Frontend client and group, in the spirit of GlideinWMS's ``analyze_frontends`` (whose
numbers come from the Factory's monitoring): what each group's glideins did, from the rows, in
one scan. Per (client, group), and per client over its groups when it has several: glideins,
the share that failed, the share that ran no job, jobs, jobs per glidein whose HTCondor ran,
efficiency (JobsGoodput / Lasted, GlideinWMS's quantities: 100 - badp), and GlideinWMS's
analyze_entries columns over the group's glideins (entries.py: the same definitions, another
key).
"""

from __future__ import annotations

from ..table.aggregates import ENTRY_SUMS, ENTRY_SUMS_OF
from .entries import COLUMNS, RATIOS


def _sql(gwms: bool) -> str:
    sums = "".join(f", SUM({term}) FILTER (WHERE {ENTRY_SUMS_OF}) AS {name}" for name, term in ENTRY_SUMS.items()) \
        if gwms else ""
    ratios = "".join(f", CASE WHEN lasted > 0 THEN {RATIOS[c].format(**{n: n for n in ENTRY_SUMS})} END"
                     for c in COLUMNS[1:]) if gwms else ""
    return f"""SELECT client, client_group, whole, n, failed, no_job, jobs, ran{ratios} FROM (
    SELECT client, client_group, GROUPING(client_group) AS whole, COUNT(*) AS n,
        COUNT(*) FILTER (WHERE failed) AS failed, COUNT(*) FILTER (WHERE COALESCE(jobs, 0) = 0) AS no_job,
        COALESCE(SUM(jobs), 0) AS jobs, COUNT(*) FILTER (WHERE condor_s IS NOT NULL) AS ran{sums}
    FROM glideins GROUP BY GROUPING SETS ((client, client_group), (client))) ORDER BY client, whole, client_group"""


def frontends_section(con, columns: set) -> list[dict]:
    """A row per Frontend client and group, then one per client (``group`` None) when it has
    more than one group; JSON-ready."""
    rows = con.execute(_sql("gwms_lasted_s" in columns)).fetchall()
    groups_of: dict = {}
    for client, _, whole, *_ in rows:
        groups_of[client] = groups_of.get(client, 0) + (not whole)
    out = []
    for client, group, whole, n, failed, no_job, jobs, ran, *gwms in rows:
        if whole and groups_of[client] < 2:
            continue
        g = dict(zip(COLUMNS[1:], gwms)) if gwms and gwms[0] is not None else {}
        out.append({"client": client, "group": None if whole else group, "glideins": int(n),
                    "failed_pct": round(100 * failed / n, 2), "no_job_pct": round(100 * no_job / n, 2),
                    "jobs": int(jobs), "jobs_per_glidein": round(jobs / ran, 3) if ran else None,
                    "efficiency_pct": round(100 - g["badp"], 2) if g else None,
                    **{f"gwms_{k}": round(v, 2) if isinstance(v, float) else v for k, v in g.items()}})
    return out
