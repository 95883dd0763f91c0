"""The failures section of the report: who is to blame, where, when, and what was said.

It answers the operators' triage questions from the table's failure columns (each failed
glidein's domain, error type and message, each failed job's domain; failure.py decides the
domains):

- failed glideins and jobs by domain and by error type, overall and per site and entry, with
  the core-hours each domain cost (a failed glidein's node life, its post-failure sleep
  included, times its cores; a failed job's run times its cores);
- per site, the failure rate in hourly buckets (by the node's start, or the submission for a
  glidein that never ran) and the **outage windows**: runs of at least
  ``MIN_BUCKETS`` consecutive buckets, each with at least ``MIN_GLIDEINS`` glideins, whose
  failure rate is at least ``max(baseline + MIN_EXCESS, FACTOR x baseline)``, the baseline
  being the median of the site's hourly rates (an outage lifts only a few buckets, so the
  median stays the site's usual rate); and the window's failures must be more than chance
  allows: at most ``MAX_P`` likely under the site's overall failure rate (binomial tail), so
  a few unlucky glideins in a quiet hour are not an outage;
- the top failure messages, grouped once numbers, hex ids, paths and host names are taken
  out, with a count and example trace ids.

Everything is counted with numpy over whole columns (per-site hourly counters come from one
``bincount``): the cost grows with the glideins, not with sites x hours or glideins x glideins.
"""

from __future__ import annotations

import math
import re

import numpy as np

from .timeline import TimelineTable

BUCKET_S = 3600.0
MIN_GLIDEINS = 5         # a bucket with fewer glideins says too little about a rate
MIN_BUCKETS = 2          # an outage lasts at least this many consecutive buckets
MIN_EXCESS = 0.25        # ... with a failure rate at least this much above the baseline
FACTOR = 3.0             # ... and at least this many times the baseline
MAX_P = 1e-6             # ... and that many failures at most this likely by chance
EXAMPLES = 3

_NORMALISE = (
    (re.compile(r"\b[0-9a-f]{8,}\b", re.I), "<id>"),
    (re.compile(r"(?<![\w.-])(?:/[\w.@+-]+)+/?"), "<path>"),
    (re.compile(r"\b[a-z0-9-]+(?:\.[a-z0-9-]+)+\.[a-z]{2,}\b(?::\d+)?", re.I), "<host>"),
    (re.compile(r"\b\d+(?:\.\d+)?\b"), "<n>"),
    (re.compile(r"\s+"), " "),
)


def normalise(message: str) -> str:
    """A failure message with what differs between glideins (numbers, ids, paths, hosts) out."""
    for pattern, token in _NORMALISE:
        message = pattern.sub(token, message)
    return message.strip()


def failures_section(table: TimelineTable, *, top: int = 10) -> dict:
    """The failures section of ``analyze``'s document (JSON-ready)."""
    g, names = table.g, table.names
    n = len(table)
    domain_names = names.get("domain", [""])
    failed = g["domain"] != 0 if n else np.zeros(0, dtype=bool)
    life_h = np.nan_to_num(g["node_end"] - g["node_start"]).clip(min=0) / 3600.0
    core_h = life_h * g["cores"]
    jobs = table.jobs
    job_failed = jobs["failed"] & (jobs["domain"] != 0) if len(jobs["failed"]) else np.zeros(0, dtype=bool)
    job_core_h = np.clip(jobs["end"] - jobs["start"], 0, None) * jobs["cores"] / 3600.0

    def by_code(codes, weights=None, mask=None, labels=domain_names):
        if mask is not None:
            codes = codes[mask]
            weights = weights[mask] if weights is not None else None
        counts = np.bincount(codes, minlength=len(labels))
        out = {labels[c]: int(counts[c]) for c in np.flatnonzero(counts)}
        if weights is None:
            return out
        sums = np.bincount(codes, weights=weights, minlength=len(labels))
        return {labels[c]: round(float(sums[c]), 3) for c in np.flatnonzero(counts)}

    doc = {
        "failed_glideins": int(failed.sum()), "glideins": n,
        "failed_jobs": int(job_failed.sum()), "jobs": int(len(jobs["failed"])),
        "glideins_by_domain": by_code(g["domain"], mask=failed),
        "glidein_core_hours_by_domain": by_code(g["domain"], core_h, failed),
        "jobs_by_domain": by_code(jobs["domain"], mask=job_failed),
        "job_core_hours_by_domain": by_code(jobs["domain"], job_core_h, job_failed),
        "glideins_by_domain_and_type": _pairs(g["domain"][failed], g["ftype"][failed], domain_names,
                                              names.get("ftype", [""])),
        "by_site": _grouped(g["site"], names["site"], g["domain"], failed, domain_names),
        "by_entry": _grouped(g["entry"], names["entry"], g["domain"], failed, domain_names),
        "outages": outage_windows(table),
        "top_messages": top_messages(table, top=top),
        "rule": {"bucket_s": BUCKET_S, "min_glideins": MIN_GLIDEINS, "min_buckets": MIN_BUCKETS,
                 "min_excess": MIN_EXCESS, "factor": FACTOR, "max_p": MAX_P},
    }
    return doc


def _pairs(first, second, first_names, second_names) -> list:
    """[(first name, second name, count)] of the pairs present, most first."""
    if not len(first):
        return []
    key = first.astype(np.int64) * len(second_names) + second
    counts = np.bincount(key)
    rows = [(first_names[k // len(second_names)], second_names[k % len(second_names)], int(counts[k]))
            for k in np.flatnonzero(counts)]
    return sorted(rows, key=lambda r: -r[2])


def _grouped(group_codes, group_names, domain_codes, failed, domain_names) -> dict:
    """Per group (site or entry): glideins, failed, and failed by domain (one bincount of
    (group, domain) pairs: linear in the glideins whatever the number of groups)."""
    if not len(group_codes):
        return {}
    totals = np.bincount(group_codes, minlength=len(group_names))
    n_domains = len(domain_names)
    pairs = np.bincount(group_codes[failed].astype(np.int64) * n_domains + domain_codes[failed],
                        minlength=len(group_names) * n_domains).reshape(len(group_names), n_domains)
    return {group_names[code]: {
        "glideins": int(totals[code]), "failed": int(pairs[code].sum()),
        "by_domain": {domain_names[d]: int(c) for d, c in enumerate(pairs[code]) if c}}
        for code in np.flatnonzero(totals)}


def _starts(table: TimelineTable) -> np.ndarray:
    """When each glidein met its site: the node's start (where validation fails), else, for a
    glidein that never ran, the Factory's submission."""
    g = table.g
    return np.where(np.isfinite(g["node_start"]), g["node_start"], g["submit"])


def outage_windows(table: TimelineTable) -> list:
    """Outage windows per site (the module docstring's rule), earliest first."""
    g, names = table.g, table.names
    start = _starts(table)
    known = np.isfinite(start)
    if not known.any():
        return []
    t0 = math.floor(start[known].min() / BUCKET_S) * BUCKET_S
    bucket = ((start[known] - t0) // BUCKET_S).astype(np.int64)
    n_buckets = int(bucket.max()) + 1
    site = g["site"][known].astype(np.int64)
    failed = g["domain"][known] != 0
    key = site * n_buckets + bucket
    size = len(names["site"]) * n_buckets
    total = np.bincount(key, minlength=size).reshape(len(names["site"]), n_buckets)
    bad = np.bincount(key[failed], minlength=size).reshape(len(names["site"]), n_buckets)
    rows = np.flatnonzero(known)
    out = []
    for s in np.flatnonzero(total.sum(axis=1)):
        enough = total[s] >= MIN_GLIDEINS
        if not enough.any():
            continue
        rate = np.where(enough, bad[s] / np.maximum(total[s], 1), 0.0)
        baseline = float(np.median(rate[enough]))
        high = enough & (rate >= max(baseline + MIN_EXCESS, FACTOR * baseline))
        usual = float(bad[s].sum() / total[s].sum())
        for first, last in _runs(high):
            if last - first + 1 < MIN_BUCKETS:
                continue
            if binomial_tail(int(total[s, first:last + 1].sum()), int(bad[s, first:last + 1].sum()), usual) > MAX_P:
                continue
            lo, hi = t0 + first * BUCKET_S, t0 + (last + 1) * BUCKET_S
            inside = rows[(site == s) & (bucket >= first) & (bucket <= last)]
            hit = inside[g["domain"][inside] != 0]
            out.append({
                "site": names["site"][s], "start": lo, "end": hi,
                "glideins": int(len(inside)), "failed": int(len(hit)),
                "failure_rate": round(len(hit) / len(inside), 4) if len(inside) else 0.0,
                "baseline_rate": round(baseline, 4),
                "error_type": _dominant(g["ftype"][hit], names.get("ftype", [""])),
                "domain": _dominant(g["domain"][hit], names.get("domain", [""])),
                "examples": [table.trace_ids[i] for i in hit[:EXAMPLES]] if table.trace_ids else [],
            })
    return sorted(out, key=lambda o: (o["start"], o["site"]))


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


def _dominant(codes, labels) -> str:
    if not len(codes):
        return ""
    return labels[int(np.bincount(codes).argmax())]


def top_messages(table: TimelineTable, *, top: int = 10) -> list:
    """The most frequent failure messages once normalised: message, count, domain, examples.
    Each distinct message is normalised once (interned codes), not once per glidein."""
    g, names = table.g, table.names
    messages = names.get("message", [""])
    failed_rows = np.flatnonzero(g["message"] != 0) if len(table) else np.zeros(0, int)
    if not len(failed_rows):
        return []
    groups: list = []                 # normalised messages
    index: dict = {}                  # normalised message -> its group
    code_to_group = np.zeros(len(messages), dtype=np.int64)
    for code, text in enumerate(messages[1:], start=1):
        group = index.setdefault(normalise(text), len(groups))
        if group == len(groups):
            groups.append(normalise(text))
        code_to_group[code] = group
    grp = code_to_group[g["message"][failed_rows]]
    counts = np.bincount(grp, minlength=len(groups))
    out = []
    for group in np.argsort(-counts, kind="stable")[:top]:
        if not counts[group]:
            break
        rows = failed_rows[grp == group]
        out.append({"message": groups[group], "count": int(counts[group]),
                    "domain": _dominant(g["domain"][rows], names.get("domain", [""])),
                    "examples": [table.trace_ids[i] for i in rows[:EXAMPLES]] if table.trace_ids else []})
    return out
