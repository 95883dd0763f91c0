"""The failures section of the report: who is to blame, where, when, and what was said.

It answers the operators' triage questions from the table's failure columns (each failed
glidein's ``failure_domain``, ``failure_type`` and ``failure_message``, each failed job's
``failure_domain``; failure.py decides the domains), as SQL over the small tables
the dataset sums once (failure_groups.py: the failed rows' groups, all glideins counted per
hour; ``Dataset.failure_groups``):

- failed glideins and jobs by domain and by error type, overall and per site and entry, with
  the core-hours each domain cost (a failed glidein's node life, its post-failure sleep
  included, times its cores; a failed job's run times its cores);
- per site, the failure rate in hourly buckets (by the node's start, or the submission for a
  glidein that never ran) and the **outage windows**: runs of at least ``MIN_BUCKETS``
  consecutive buckets, each with at least ``MIN_GLIDEINS`` glideins, whose failure rate is at
  least ``max(baseline + MIN_EXCESS, FACTOR x baseline)``, the baseline being the median of the
  site's hourly rates; and the window's failures must be at most ``MAX_P`` likely under the
  site's overall failure rate (binomial tail), so a few unlucky glideins are not an outage;
- the top failure messages, grouped once hex ids, paths, host names and numbers are replaced
  (in SQL, each distinct text once), with example trace ids;
- from the failure rules' columns (services.py): failures by domain, service and label with
  their core-hours, services' outage windows planned or not, and the messages no rule decided.
"""

from __future__ import annotations

import math

import numpy as np

from ..table.failed_groups import BUCKET_S, EXAMPLES, first_examples
from .failure_groups import most

MIN_GLIDEINS = 5
MIN_BUCKETS = 2
MIN_EXCESS = 0.25
FACTOR = 3.0
MAX_P = 1e-6


def failures_section(data, *, top: int = 10) -> dict:
    """The failures section of ``analyze``'s document (JSON-ready), of a Dataset."""
    con, summed = data.con, data.failure_groups()
    g, j = summed.glideins, summed.jobs
    n, failed = con.execute(f"SELECT SUM(n), SUM(failed) FROM {summed.counts}").fetchone()
    jobs, failed_jobs = con.execute(f"SELECT (SELECT COUNT(*) FROM jobs), (SELECT SUM(n) FROM {j})").fetchone()
    pairs = con.execute(f"SELECT failure_domain, COALESCE(failure_type, ''), SUM(n) FROM {g} "
                        "GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2").fetchall()
    by_domain = lambda table: con.execute(f"SELECT failure_domain, SUM(n), SUM(core_h) FROM {table} "  # noqa: E731
                                          "GROUP BY 1 ORDER BY 2 DESC, 1").fetchall()
    glidein_domains, job_domains = by_domain(g), by_domain(j)
    return {
        "failed_glideins": int(failed or 0), "glideins": int(n or 0), "failed_jobs": int(failed_jobs or 0),
        "jobs": int(jobs or 0),
        "glideins_by_domain": {d: int(c) for d, c, _ in glidein_domains},
        "glidein_core_hours_by_domain": {d: round(h, 3) for d, _, h in glidein_domains},
        "jobs_by_domain": {d: int(c) for d, c, _ in job_domains},
        "job_core_hours_by_domain": {d: round(h, 3) for d, _, h in job_domains},
        "glideins_by_domain_and_type": [[d, t, int(c)] for d, t, c in pairs],
        "by_site": _grouped(data, "site"), "by_entry": _grouped(data, "entry"),
        "outages": outage_windows(data), "top_messages": top_messages(data, top=top),
        "rule": {"bucket_s": BUCKET_S, "min_glideins": MIN_GLIDEINS, "min_buckets": MIN_BUCKETS,
                 "min_excess": MIN_EXCESS, "factor": FACTOR, "max_p": MAX_P},
    }


def _grouped(data, column: str) -> dict:
    """Per site or entry: glideins, failed, and failed by domain."""
    con, summed = data.con, data.failure_groups()
    out = {group: {"glideins": int(n), "failed": int(failed), "by_domain": {}} for group, n, failed in con.execute(
        f"SELECT {column}, SUM(n), SUM(failed) FROM {summed.counts} GROUP BY 1 ORDER BY 1").fetchall()}
    for group, domain, count in con.execute(f"SELECT {column}, failure_domain, SUM(n) FROM {summed.glideins} "
                                            "GROUP BY 1, 2 ORDER BY 1, 3 DESC, 2").fetchall():
        out[group]["by_domain"][domain] = int(count)
    return out


def hourly_counts(data) -> dict:
    """site -> (first bucket start, glideins per bucket, failed per bucket) as numpy arrays."""
    rows = data.con.execute(f"SELECT site, b, SUM(n), SUM(failed) FROM {data.failure_groups().counts} "
                       "WHERE b IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2").fetchall()
    out = {}
    by_site: dict = {}
    for site, bucket, total, bad in rows:
        by_site.setdefault(site, []).append((bucket, total, bad))
    for site, items in by_site.items():
        items.sort()
        first = items[0][0]
        total = np.zeros(items[-1][0] - first + 1, dtype=np.int64)
        bad = np.zeros_like(total)
        for bucket, t, b in items:
            total[bucket - first], bad[bucket - first] = t, b
        out[site] = (first * BUCKET_S, total, bad)
    return out


def outage_windows(data) -> list:
    """Outage windows per site (the module docstring's rule), earliest first."""
    out = []
    con, g = data.con, data.failure_groups().glideins
    for site, (t0, total, bad) in hourly_counts(data).items():
        for first, last, baseline in outage_runs(total, bad):
            n, k = int(total[first:last + 1].sum()), int(bad[first:last + 1].sum())
            lo, hi = t0 + first * BUCKET_S, t0 + (last + 1) * BUCKET_S
            window = [site, lo // BUCKET_S, hi // BUCKET_S - 1]
            error_type, domain, examples = con.execute(
                f"SELECT (SELECT {most('failure_type', 'c')} FROM (SELECT failure_type, SUM(n) AS c FROM {g} "
                "  WHERE site = $1 AND b BETWEEN $2 AND $3 AND failure_type IS NOT NULL GROUP BY 1)), "
                f"(SELECT {most('failure_domain', 'c')} FROM (SELECT failure_domain, SUM(n) AS c FROM {g} "
                "  WHERE site = $1 AND b BETWEEN $2 AND $3 GROUP BY 1)), "
                f"(SELECT {first_examples('examples')} FROM {g} WHERE site = $1 AND b BETWEEN $2 AND $3)",
                window).fetchone()
            out.append({"site": site, "start": float(lo), "end": float(hi), "glideins": n, "failed": k,
                        "failure_rate": round(k / n, 4) if n else 0.0, "baseline_rate": round(baseline, 4),
                        "error_type": error_type or "", "domain": domain or "", "examples": examples or []})
    return sorted(out, key=lambda o: (o["start"], o["site"]))


def outage_runs(total: np.ndarray, bad: np.ndarray) -> list[tuple[int, int, float]]:
    """(first, last, baseline) of each outage run in hourly counts (a site's or a service's):
    the module docstring's rule."""
    enough = total >= MIN_GLIDEINS
    if not enough.any():
        return []
    rate = np.where(enough, bad / np.maximum(total, 1), 0.0)
    baseline = float(np.median(rate[enough]))
    high = enough & (rate >= max(baseline + MIN_EXCESS, FACTOR * baseline))
    usual = float(bad.sum() / max(total.sum(), 1))
    return [(int(first), int(last), baseline) for first, last in _runs(high)
            if last - first + 1 >= MIN_BUCKETS
            and binomial_tail(int(total[first:last + 1].sum()), int(bad[first:last + 1].sum()), usual) <= MAX_P]


def binomial_tail(n: int, k: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p): how likely ``k`` or more failures of ``n`` are by chance."""
    if k <= 0:
        return 1.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
             for i in range(k, n + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


def _runs(mask: np.ndarray):
    """(first, last) index of each run of True in ``mask``."""
    edges = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    return zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1)


def top_messages(data, *, top: int = 10) -> list:
    """The most frequent failure messages once normalised: message, count, domain, examples."""
    return message_groups(data, "m IS NOT NULL", top)


def message_groups(data, where: str, top: int) -> list:
    """The failed glideins' normalised messages of the groups where ``where``, most frequent
    first: message, count, the domain most of them had, the first trace ids (picked for the
    ``top`` messages only, not merged for every message first)."""
    groups = data.failure_groups().glideins
    rows = data.con.execute(
        f"WITH top AS (SELECT m, SUM(c) AS c, {most('failure_domain', 'c')} AS d FROM ("
        f"    SELECT m, failure_domain, SUM(n) AS c FROM {groups} WHERE {where} GROUP BY 1, 2) "
        "  GROUP BY m ORDER BY 2 DESC, 1 LIMIT ?), "
        f"ex AS (SELECT m, min(e, {EXAMPLES}) AS ex FROM (SELECT m, unnest(examples) AS e FROM {groups} "
        f"  WHERE {where} AND m IN (SELECT m FROM top)) GROUP BY m) "
        "SELECT top.m, c, d, ex.ex FROM top LEFT JOIN ex USING (m) ORDER BY 2 DESC, 1", [top]).fetchall()
    return [{"message": m, "count": int(c), "domain": d or "", "examples": ex or []} for m, c, d, ex in rows]
