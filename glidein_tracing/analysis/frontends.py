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


def _sums_sql(gwms: bool) -> str:
    """One scan: the sums per (client, group); a client's are the sums of its groups'. A
    term is NULL outside ENTRY_SUMS_OF (a CASE, as aggregates.py sums them: ten FILTER clauses
    cost a third more CPU, bench_analysis's Frontend section against its limit)."""
    sums = "".join(f", SUM(CASE WHEN {ENTRY_SUMS_OF} THEN {term} END) AS {name}" for name, term in ENTRY_SUMS.items()) \
        if gwms else ""
    return f"""SELECT client, client_group, COUNT(*) AS n, COUNT(*) FILTER (WHERE failed) AS failed,
        COUNT(*) FILTER (WHERE COALESCE(jobs, 0) = 0) AS no_job_glideins, COALESCE(SUM(jobs), 0) AS jobs,
        COUNT(*) FILTER (WHERE condor_s IS NOT NULL) AS ran{sums}
    FROM glideins GROUP BY ALL"""


def _sql(gwms: bool) -> str:
    """Over the sums per (client, group): a row per group and one per client, with the ratios
    (``no_job_glideins``, the rows' count, is not ENTRY_SUMS' ``no_job``, GlideinWMS's)."""
    names = ("n", "failed", "no_job_glideins", "jobs", "ran") + (tuple(ENTRY_SUMS) if gwms else ())
    ratios = "".join(f", CASE WHEN lasted > 0 THEN {RATIOS[c].format(**{n: n for n in ENTRY_SUMS})} END"
                     for c in COLUMNS[1:]) if gwms else ""
    sums = ", ".join(f"CAST(SUM({n}) AS DOUBLE) AS {n}" for n in names)
    return f"""SELECT client, client_group, whole, n, failed, no_job_glideins, jobs, ran{ratios} FROM (
    SELECT client, client_group, GROUPING(client_group) AS whole, {sums}
    FROM frontend_sums GROUP BY GROUPING SETS ((client, client_group), (client))) ORDER BY client, whole, client_group"""


def frontends_section(con, columns: set) -> list[dict]:
    """A row per Frontend client and group, then one per client (``group`` None) when it has
    more than one group; JSON-ready."""
    gwms = "gwms_lasted_s" in columns
    sums = con.sql(_sums_sql(gwms)).to_arrow_table()
    con.register("frontend_sums", sums)
    try:
        rows = con.execute(_sql(gwms)).fetchall()
    finally:
        con.unregister("frontend_sums")
    groups_of: dict = {}
    for client, _, whole, *_ in rows:
        groups_of[client] = groups_of.get(client, 0) + (not whole)
    out = []
    for client, group, whole, n, failed, no_job, jobs, ran, *gwms in rows:
        if whole and groups_of[client] < 2:
            continue
        g = dict(zip(COLUMNS[1:], gwms)) if gwms and gwms[0] is not None else {}
        g.update({k: int(g[k]) for k in ("glideins", "traced", "untraced") if g.get(k) is not None})
        out.append({"client": client, "group": None if whole else group, "glideins": int(n),
                    "failed_pct": round(100 * failed / n, 2), "no_job_pct": round(100 * no_job / n, 2),
                    "jobs": int(jobs), "jobs_per_glidein": round(float(jobs) / ran, 3) if ran else None,
                    "efficiency_pct": round(100 - g["badp"], 2) if g else None,
                    **{f"gwms_{k}": round(v, 2) if isinstance(v, float) else v for k, v in g.items()}})
    return out
