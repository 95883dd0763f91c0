"""Services' outage windows, and the breakdown of failures by domain, service and label.

Failure rules (failure_rules.py) name the service a failure blames (``*.failure.service``).
This module finds, per service, when it stopped working and for how long, by the rule the
per-site windows use (failures.py): hourly buckets; a run of at least ``MIN_BUCKETS`` buckets,
each with at least ``MIN_GLIDEINS`` attempts, whose rate of failures blamed on the service is
at least ``max(baseline + MIN_EXCESS, FACTOR x baseline)`` (the baseline: the median of its
hourly rates), and whose failures are more than chance allows (binomial tail at most
``MAX_P`` under its overall rate). A service serves every attempt, so a bucket's rate is
the failures blamed on it over all attempts (glideins or jobs) started in that hour.

It works on plain columns (start times, the failure's service or "", failed flags), so any
table (numpy arrays, a DuckDB result) can feed it. Each window says whether it was planned:
whether a declared downtime (downtimes.py) of the service covers it.
"""

from __future__ import annotations

import math

import numpy as np

from .failures import (BUCKET_S, FACTOR, MAX_P, MIN_BUCKETS, MIN_EXCESS, MIN_GLIDEINS, _runs,
                       binomial_tail, normalise)


def outage_runs(total: np.ndarray, bad: np.ndarray) -> list[tuple[int, int, float]]:
    """(first, last, baseline) of each outage run in one group's hourly counts."""
    enough = total >= MIN_GLIDEINS
    if not enough.any():
        return []
    rate = np.where(enough, bad / np.maximum(total, 1), 0.0)
    baseline = float(np.median(rate[enough]))
    high = enough & (rate >= max(baseline + MIN_EXCESS, FACTOR * baseline))
    usual = float(bad.sum() / max(total.sum(), 1))
    out = []
    for first, last in _runs(high):
        if last - first + 1 < MIN_BUCKETS:
            continue
        if binomial_tail(int(total[first:last + 1].sum()), int(bad[first:last + 1].sum()), usual) > MAX_P:
            continue
        out.append((int(first), int(last), baseline))
    return out


def service_windows(times, services, failed, downtimes=None) -> list[dict]:
    """Outage windows per service, earliest first: service, start, end, hours, attempts,
    failures, rate, baseline, and ``planned`` with the declared downtime that covers it."""
    times = np.asarray(times, dtype=float)
    services = np.asarray(services, dtype=object)
    failed = np.asarray(failed, dtype=bool)
    known = np.isfinite(times)
    if not known.any():
        return []
    t0 = math.floor(times[known].min() / BUCKET_S) * BUCKET_S
    bucket = ((times[known] - t0) // BUCKET_S).astype(np.int64)
    total = np.bincount(bucket)
    blamed = failed[known] & (services[known] != "")
    names, codes = np.unique(services[known][blamed].astype(str), return_inverse=True)
    out = []
    for code, name in enumerate(names):
        bad = np.bincount(bucket[blamed][codes == code], minlength=len(total))
        for first, last, baseline in outage_runs(total, bad):
            start, end = t0 + first * BUCKET_S, t0 + (last + 1) * BUCKET_S
            attempts, hits = int(total[first:last + 1].sum()), int(bad[first:last + 1].sum())
            downtime = _declared(downtimes, name, start, end)
            out.append({"service": str(name), "start": start, "end": end, "hours": (end - start) / 3600,
                        "attempts": attempts, "failures": hits, "failure_rate": round(hits / attempts, 4),
                        "baseline_rate": round(baseline, 4), "planned": downtime is not None,
                        "downtime": downtime.describe() if downtime is not None else ""})
    return sorted(out, key=lambda w: (w["start"], w["service"]))


def _declared(downtimes, service: str, start: float, end: float):
    """A declared downtime of ``service`` that covers any part of [start, end), or None."""
    if downtimes is None:
        return None
    for entry in downtimes.entries:
        if service.lower() in entry.names and entry.start < end and entry.end > start:
            return entry
    return None


def window_of(times, services, failed, windows: list[dict]) -> np.ndarray:
    """For each row, the index in ``windows`` of the outage of its own service it failed
    inside, else -1."""
    times = np.asarray(times, dtype=float)
    services = np.asarray(services, dtype=object)
    failed = np.asarray(failed, dtype=bool)
    out = np.full(len(times), -1, dtype=np.int64)
    for index, window in enumerate(windows):
        inside = failed & (services == window["service"]) & (times >= window["start"]) & (times < window["end"])
        out[inside & (out < 0)] = index
    return out


def breakdown(domains, services, labels, core_hours) -> list[dict]:
    """Failures by domain, then service, then label, each with its count and core-hours,
    most core-hours first: the report's table of what failures cost."""
    rows: dict = {}
    for domain, service, label, hours in zip(domains, services, labels, core_hours):
        key = (str(domain), str(service or ""), str(label or ""))
        count, total = rows.get(key, (0, 0.0))
        rows[key] = (count + 1, total + float(hours if hours == hours else 0.0))
    out = [{"domain": d, "service": s, "label": lab, "failures": n, "core_hours": round(h, 3)}
           for (d, s, lab), (n, h) in rows.items()]
    return sorted(out, key=lambda r: (-r["core_hours"], -r["failures"], r["domain"], r["service"], r["label"]))


def top_unclassified(messages, rules, *, top: int = 10) -> list[dict]:
    """The most frequent failure messages no rule decided, once normalised (numbers, ids,
    paths, hosts out): what to write a rule for next."""
    counts: dict = {}
    normal: dict = {}
    for message, rule in zip(messages, rules):
        if rule or not message:
            continue
        text = normal.get(message)
        if text is None:
            text = normal[message] = normalise(str(message))
        counts[text] = counts.get(text, 0) + 1
    return [{"message": m, "count": n} for m, n in sorted(counts.items(), key=lambda kv: -kv[1])[:top]]
