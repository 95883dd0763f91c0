"""What failures cost by domain, service and label; services' outage windows, planned or not;
and the failure messages no rule decided yet, as SQL over the glidein table.

Failure rules (glidein_tracing/failure_rules/) name the service a failure blames and its
label; the forwarder writes them with the declared downtime the failure fell in into the
table's ``failure_service``, ``failure_label``, ``failure_rule`` and ``failure_downtime``
columns (glideins and jobs). Outage windows per service follow the per-site rule
(failures.py): hourly buckets; a run of at least ``MIN_BUCKETS`` buckets, each with at least
``MIN_GLIDEINS`` attempts, whose rate of failures blamed on the service is at least
``max(baseline + MIN_EXCESS, FACTOR x baseline)`` (the baseline: the median of its hourly
rates), and whose failures are more than chance allows (binomial tail at most ``MAX_P``). A
service serves every attempt, so a bucket's rate is the failures blamed on it over all
attempts (glideins by the time they met their site, jobs by their start) in that hour. A
window is planned when its failures fell in a declared downtime (``failure_downtime``).
"""

from __future__ import annotations

import numpy as np

from .failures import BUCKET_S, EXAMPLES, MET_SITE, normalised_sql, outage_runs
from .stats import CORES, NODE_LIFE

RULE_COLUMNS = ("failure_service", "failure_label", "failure_rule", "failure_downtime")
GLIDEIN_CORE_H = f"GREATEST(COALESCE({NODE_LIFE}, 0), 0) * {CORES} / 3600.0"
JOB_CORE_H = "COALESCE(wall_s, 0) * COALESCE(NULLIF(request_cpus, 0), 1) / 3600.0"


def _has_rule_columns(con, view: str) -> bool:
    """Files written before the failure rules lack these columns (read NULL when some have them)."""
    return set(RULE_COLUMNS) <= {r[0] for r in con.execute(f"DESCRIBE {view}").fetchall()}


def _attempts(con) -> str:
    """Every glidein and job with when it met its site or started, its failure's service and
    downtime, and whether it failed: the rows the services' windows count."""
    parts = []
    for view, when, trace in (("glideins", MET_SITE, "trace_id"), ("jobs", "epoch(started_at)", "trace_id")):
        if _has_rule_columns(con, view):
            parts.append(f"SELECT {when} AS t, failure_service AS service, failure_downtime AS downtime, "
                         f"failure_domain IS NOT NULL AS failed, {trace} AS trace_id FROM {view}")
    return " UNION ALL ".join(parts)


def breakdown(con) -> list[dict]:
    """Failed glideins and jobs by domain, then service, then label, with their count and the
    core-hours they cost, most core-hours first."""
    parts = [f"SELECT '{kind}' AS kind, failure_domain AS d, COALESCE(failure_service, '') AS s, "
             f"COALESCE(failure_label, '') AS l, {cost} AS h FROM {view} WHERE failure_domain IS NOT NULL"
             for kind, view, cost in (("glidein", "glideins", GLIDEIN_CORE_H), ("job", "jobs", JOB_CORE_H))
             if _has_rule_columns(con, view)]
    if not parts:
        return []
    rows = con.execute(f"SELECT d, s, l, COUNT(*) FILTER (WHERE kind = 'glidein'), COUNT(*) FILTER (WHERE kind = 'job'), "
                       f"SUM(h) FROM ({' UNION ALL '.join(parts)}) GROUP BY 1, 2, 3 "
                       "ORDER BY 6 DESC, 4 + 5 DESC, 1, 2, 3").fetchall()
    return [{"domain": d, "service": s, "label": lab, "glideins": int(g), "jobs": int(j), "core_hours": round(h, 3)}
            for d, s, lab, g, j, h in rows]


def service_windows(con) -> list[dict]:
    """Outage windows per service, earliest first: service, start, end, hours, attempts,
    failures, rates, ``planned`` (and the declared ``downtime`` its failures fell in), examples."""
    attempts = _attempts(con)
    if not attempts:
        return []
    bucket = f"CAST(floor(t / {BUCKET_S}) AS BIGINT)"
    totals = con.execute(f"SELECT {bucket}, COUNT(*) FROM ({attempts}) WHERE t IS NOT NULL GROUP BY 1").fetchall()
    if not totals:
        return []
    first = min(b for b, _ in totals)
    total = np.zeros(max(b for b, _ in totals) - first + 1, dtype=np.int64)
    for b, n in totals:
        total[b - first] = n
    out = []
    blamed = con.execute(f"SELECT service, {bucket}, COUNT(*) FROM ({attempts}) WHERE t IS NOT NULL AND failed "
                         "AND COALESCE(service, '') <> '' GROUP BY 1, 2 ORDER BY 1").fetchall()
    by_service: dict = {}
    for service, b, n in blamed:
        by_service.setdefault(service, np.zeros_like(total))[b - first] = n
    for service, bad in by_service.items():
        for lo, hi, baseline in outage_runs(total, bad):
            start, end = float((first + lo) * BUCKET_S), float((first + hi + 1) * BUCKET_S)
            n, k = int(total[lo:hi + 1].sum()), int(bad[lo:hi + 1].sum())
            downtime, examples = con.execute(
                f"SELECT mode(NULLIF(downtime, '')), list(trace_id ORDER BY trace_id)[1:{EXAMPLES}] FROM ({attempts}) "
                "WHERE failed AND service = ? AND t >= ? AND t < ?", [service, start, end]).fetchone()
            out.append({"service": service, "start": start, "end": end, "hours": (end - start) / 3600,
                        "attempts": n, "failures": k, "failure_rate": round(k / n, 4),
                        "baseline_rate": round(baseline, 4), "planned": downtime is not None,
                        "downtime": downtime or "", "examples": examples or []})
    return sorted(out, key=lambda w: (w["start"], w["service"]))


def top_unclassified(con, *, top: int = 10) -> list[dict]:
    """The most frequent failed glideins' messages no rule decided (no ``failure_rule``), once
    normalised (numbers, ids, paths, hosts out): what to write a rule for next."""
    if not _has_rule_columns(con, "glideins"):
        return []
    rows = con.execute(f"SELECT {normalised_sql('failure_message')} AS m, COUNT(*), mode(failure_domain), "
                       f"list(trace_id ORDER BY trace_id)[1:{EXAMPLES}] FROM glideins WHERE failure_domain IS NOT NULL "
                       "AND COALESCE(failure_rule, '') = '' AND COALESCE(failure_message, '') <> '' "
                       "GROUP BY m ORDER BY 2 DESC, 1 LIMIT ?", [top]).fetchall()
    return [{"message": m, "count": int(c), "domain": d or "", "examples": ex or []} for m, c, d, ex in rows]


def services_section(con, *, top: int = 10) -> dict:
    """The failure rules' part of the failures section (JSON-ready)."""
    return {"by_domain_service_label": breakdown(con), "service_outages": service_windows(con),
            "top_unclassified": top_unclassified(con, top=top)}
