"""What failures cost by domain, service and label; services' outage windows, planned or not;
and the failure messages no rule decided yet, as SQL over the small tables the dataset sums
once (failure_groups.py: the failed rows' groups, all glideins and jobs counted per hour, the
jobs only once a failure is blamed on a service).

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

from ..table.failed_groups import BUCKET_S, first_examples
from .failure_groups import most
from .failures import message_groups, outage_runs


def _views(data) -> list:
    """The views that have the rule columns, each as (view, its attempts' table, its failed groups' table)."""
    summed = data.failure_groups()
    return [(view, every, failed) for view, every, failed in (("glideins", data.glidein_counts, summed.glideins),
                                                              ("jobs", data.job_hours, summed.blamed_jobs))
            if view in summed.rules]


def _failed(data) -> str:
    """The failed attempts' groups (b, service, downtime, n, examples) of the views that have
    the rule columns, as one relation: what a service's windows count."""
    return " UNION ALL ".join(f"SELECT b, failure_service AS service, failure_downtime AS downtime, n, examples "
                              f"FROM {table}" for _, _, table in _views(data))


def _attempts(data) -> str:
    """All attempts (b, n) of the views that have the rule columns, as one relation: a service's
    windows' denominators (the jobs counted per hour on first use: only these windows need them)."""
    return " UNION ALL ".join(f"SELECT b, n FROM {every()}" for _, every, _ in _views(data))


def breakdown(data) -> list[dict]:
    """Failed glideins and jobs by domain, then service, then label, with their count and the
    core-hours they cost, most core-hours first."""
    con, summed = data.con, data.failure_groups()
    parts = [f"SELECT '{kind}' AS kind, failure_domain AS d, COALESCE(failure_service, '') AS s, "
             f"COALESCE(failure_label, '') AS l, n, COALESCE(core_h, 0) AS h FROM {table}"
             for kind, view, table in (("glidein", "glideins", summed.glideins), ("job", "jobs", summed.jobs))
             if view in summed.rules]
    if not parts:
        return []
    rows = con.execute(f"SELECT d, s, l, COALESCE(SUM(n) FILTER (WHERE kind = 'glidein'), 0) AS g, "
                       f"COALESCE(SUM(n) FILTER (WHERE kind = 'job'), 0) AS j, SUM(h) AS h "
                       f"FROM ({' UNION ALL '.join(parts)}) GROUP BY 1, 2, 3 ORDER BY h DESC, g + j DESC, 1, 2, 3").fetchall()
    return [{"domain": d, "service": s, "label": lab, "glideins": int(g), "jobs": int(j), "core_hours": round(h, 3)}
            for d, s, lab, g, j, h in rows]


def service_windows(data) -> list[dict]:
    """Outage windows per service, earliest first: service, start, end, hours, attempts,
    failures, rates, ``planned`` (and the declared ``downtime`` its failures fell in), examples."""
    con, failed = data.con, _failed(data)
    if not failed:
        return []
    blamed = con.execute(f"SELECT service, b, SUM(n) FROM ({failed}) WHERE b IS NOT NULL "
                         "AND COALESCE(service, '') <> '' GROUP BY 1, 2 ORDER BY 1").fetchall()
    if not blamed:          # no failure blamed on a service: no window, and no attempts to count
        return []
    totals = con.execute(f"SELECT b, SUM(n) FROM ({_attempts(data)}) WHERE b IS NOT NULL GROUP BY 1").fetchall()
    if not totals:
        return []
    first = min(b for b, _ in totals)
    total = np.zeros(max(b for b, _ in totals) - first + 1, dtype=np.int64)
    for b, n in totals:
        total[b - first] = n
    out = []
    by_service: dict = {}
    for service, b, n in blamed:
        by_service.setdefault(service, np.zeros_like(total))[b - first] = n
    for service, bad in by_service.items():
        for lo, hi, baseline in outage_runs(total, bad):
            start, end = float((first + lo) * BUCKET_S), float((first + hi + 1) * BUCKET_S)
            n, k = int(total[lo:hi + 1].sum()), int(bad[lo:hi + 1].sum())
            downtime, examples = con.execute(
                f"SELECT (SELECT {most('downtime', 'c')} FROM (SELECT downtime, SUM(n) AS c FROM ({failed}) "
                "  WHERE service = $1 AND b BETWEEN $2 AND $3 AND COALESCE(downtime, '') <> '' GROUP BY 1)), "
                f"(SELECT {first_examples('examples')} FROM ({failed}) WHERE service = $1 "
                "  AND b BETWEEN $2 AND $3)", [service, first + lo, first + hi]).fetchone()
            out.append({"service": service, "start": start, "end": end, "hours": (end - start) / 3600,
                        "attempts": n, "failures": k, "failure_rate": round(k / n, 4),
                        "baseline_rate": round(baseline, 4), "planned": downtime is not None,
                        "downtime": downtime or "", "examples": examples or []})
    return sorted(out, key=lambda w: (w["start"], w["service"]))


def top_unclassified(data, *, top: int = 10) -> list[dict]:
    """The most frequent failed glideins' messages no rule decided (no ``failure_rule``), once
    normalised (numbers, ids, paths, hosts out): what to write a rule for next."""
    if "glideins" not in data.failure_groups().rules:
        return []
    return message_groups(data, "unclassified", top)


def services_section(data, *, top: int = 10) -> dict:
    """The failure rules' part of the failures section (JSON-ready), of a Dataset."""
    return {"by_domain_service_label": breakdown(data), "service_outages": service_windows(data),
            "top_unclassified": top_unclassified(data, top=top)}
