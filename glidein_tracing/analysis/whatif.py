"""What-if replay: each recorded glidein under other GLIDEIN_Max_Idle, Max_Tail and retire times.

The model (docs/analysis.md, "What-if"), per glidein, on its condor phase (times relative to
its start; ``gap`` = idle time before a job, measured from when the previous jobs finished):

- first job: lost when ``min(gap, I0) > I`` (it would have come after the glidein shut
  down idle: "lost" = it needed another glidein); the glidein then ends ``I`` (+ its lag)
  after the phase started;
- any later job: lost when ``min(gap, T0) > T`` (HTCondor's tail rule: idle since the last
  job ended longer than Max_Tail -> shutdown); the glidein ends ``T`` (+ lag) after the last
  kept job; all jobs after a lost one are lost too;
- retire: a job starting after the retire time is lost: ``min(start, R0) > R``; an idle
  glidein stops at the retire time;
- no job lost: the idle after the last job (or the whole phase with no job) is recomputed:
  if the glidein stopped on its own timeout (reason ``max_idle``/``daemon_shutdown`` and the
  idle reached the current threshold), the idle becomes ``recorded + (new - current)``
  (a longer threshold costs more); otherwise (killed, retired) it is only ever cut:
  ``min(recorded, new + overshoot)``;
- the ``min(.., current)`` and ``overshoot`` terms anchor the model on the recording: with
  the current settings nothing is lost and every idle interval is exactly the recorded one,
  so the replay of the current settings reproduces the recorded waste (a test checks it).

It never invents jobs: with a looser setting it can show the extra idle cost, not the jobs a
longer-lived glidein might have caught. ``lag``: how late the startd noticed the timeout in
the recording (its polling), carried over to new thresholds.

``Replayer`` is vectorized over all glideins (per candidate O(glideins), per distinct Max_Tail
or retire value one O(jobs) pass); ``replay_one`` is the plain-Python reference of the same
model for one timeline (tests and the bench's naive baseline).
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import asdict, dataclass

import numpy as np

from .stats import OWN_TIMEOUT_REASONS, Derived
from .timeline import GlideinTimeline, TimelineTable

OWN_RULE_EPS_S = 1.0      # a recorded idle this close under the threshold still counts as "hit it"
LAG_CAP_S = 300.0         # longest startd notice delay carried over to new thresholds
DEFAULT_MAX_IDLE = (300, 600, 900, 1200, 1800, 2400, 3600)
DEFAULT_MAX_TAIL = (60, 120, 200, 300, 400, 600, 900, 1200)
DEFAULT_LOST_BUDGET = 0.001   # recommended settings may lose at most this share of jobs


@dataclass(frozen=True)
class Settings:
    max_idle: float = 1200.0
    max_tail: float = 400.0
    retire: float = 21600.0

    def as_dict(self) -> dict:
        return {k: float(v) for k, v in asdict(self).items()}


@dataclass
class ReplayResult:
    """Per glidein (arrays): idle seconds by kind, core-seconds of jobs, lost jobs."""

    settings: Settings
    idle_before: np.ndarray
    idle_between: np.ndarray
    tail: np.ndarray
    no_job: np.ndarray
    badput_core_s: np.ndarray
    goodput_core_s: np.ndarray
    lost_jobs: np.ndarray
    lost_core_s: np.ndarray
    cores: np.ndarray

    def waste_core_hours(self) -> dict:
        c, h = self.cores, 1 / 3600.0
        idle = (self.idle_before + self.idle_between + self.tail) * c * h
        return {"idle_before_first_job": self.idle_before * c * h, "idle_between_jobs": self.idle_between * c * h,
                "idle_tail": self.tail * c * h, "idle": idle, "no_job": self.no_job * c * h,
                "badput": self.badput_core_s * h, "goodput": self.goodput_core_s * h}


@dataclass
class CandidateTotals:
    """A candidate's aggregates (core-hours, jobs; and per entry), as the grid reports them."""

    settings: Settings
    idle_core_hours: float          # before the first job, between jobs, tail
    no_job_core_hours: float
    badput_core_hours: float
    lost_jobs: int
    lost_core_s: float
    glideins_cut_short: int
    idle_by_entry: np.ndarray       # idle + no_job core-hours per entry
    lost_by_entry: np.ndarray
    cut_by_entry: np.ndarray


def _segmented_cummax_ms(values_ms: np.ndarray, segment: np.ndarray) -> np.ndarray:
    if not len(values_ms):
        return values_ms
    low = int(values_ms.min())
    shifted = values_ms - low
    big = int(shifted.max()) + 1
    return np.maximum.accumulate(segment * big + shifted) - segment * big + low


class Replayer:
    """Replay every glidein of a table under candidate settings (see the module doc)."""

    def __init__(self, table: TimelineTable, current: Settings, derived: Derived | None = None):
        d = self.derived = derived or Derived(table)
        iv = d.iv
        self.table, self.current = table, current
        self.n = n = len(table)
        self.cores = d.cores
        self.jg = jg = iv.glidein
        self.off = iv.offsets[:-1]
        self.n_jobs = iv.n_jobs
        self.has_jobs = iv.n_jobs > 0
        self.has_condor = iv.has_condor
        self.L, self.cend, self.tail_rec = iv.L, iv.cend, iv.tail
        reasons = table.names["reason"]
        own_codes = [reasons.index(r) for r in OWN_TIMEOUT_REASONS if r in reasons]
        self.own = np.isin(table.g["reason"], own_codes)
        thr0 = np.where(self.has_jobs, current.max_tail, current.max_idle)
        self.lag = np.where(self.own, np.clip(self.tail_rec - thr0, 0, LAG_CAP_S), 0.0)
        ms = lambda x: np.round(np.asarray(x) * 1000.0).astype(np.int64)  # noqa: E731
        first = iv.first
        self.need_idle_ms = np.full(n, -1, dtype=np.int64)
        self.need_idle_ms[self.has_jobs] = ms(np.minimum(iv.gap[first], current.max_idle))
        need_tail = np.where(first, 0, ms(np.minimum(iv.gap, current.max_tail)))
        self.tail_prefix_ms = _segmented_cummax_ms(need_tail, jg)
        self.need_retire_ms = ms(np.minimum(iv.rel_s, current.retire))
        self.cursor = iv.cursor
        failed = table.jobs["failed"]
        cum = lambda x: np.concatenate(([0.0], np.cumsum(x, dtype=np.float64)))  # noqa: E731
        self.cs_before = cum(np.where(first, iv.gap, 0.0))
        self.cs_between = cum(np.where(first, 0.0, iv.gap))
        self.cs_bad = cum(np.where(failed, d.job_core_s, 0.0))
        self.cs_good = cum(np.where(failed, 0.0, d.job_core_s))
        self.cs_jobs = self.cs_bad + self.cs_good
        # what does not depend on the candidate
        self.thr0 = np.where(self.has_jobs, current.max_tail, current.max_idle)
        self.ruled = self.own & (self.tail_rec >= self.thr0 - OWN_RULE_EPS_S)
        self.overshoot = np.maximum(self.tail_rec - self.thr0, 0.0)
        self.retire_overshoot = np.maximum(self.L - current.retire, 0.0)
        self.end_all = self.off + self.n_jobs
        # every job kept (most glideins under most candidates): the recorded values, computed
        # once; a candidate recomputes only the glideins it cuts short
        off, end = self.off, self.end_all
        self.all_before = self.cs_before[end] - self.cs_before[off]
        self.all_between = self.cs_between[end] - self.cs_between[off]
        self.all_bad = self.cs_bad[end] - self.cs_bad[off]
        self.all_good = self.cs_good[end] - self.cs_good[off]
        self.tail_minus_thr0 = self.tail_rec - self.thr0
        self.no_condor = ~self.has_condor
        self._count_tail: dict = {}
        self._count_retire: dict = {}
        self._tails: dict = {}    # (I, T) -> uncapped new tail (a few, most recent)
        self._caps: dict = {}     # R -> retire cap of the new tail
        self._lock = threading.Lock()
        # the grid's totals when every job is kept, overall and per entry
        self.entry, self.n_entries = table.g["entry"], len(table.names["entry"])
        before_between_c = (self.all_before + self.all_between) * self.cores
        self.all_before_between_c = float(before_between_c.sum())
        self.all_bad_total = float(self.all_bad.sum())
        self.all_before_between_by_entry = np.bincount(self.entry, weights=before_between_c,
                                                       minlength=self.n_entries)
        self.no_jobs = (~self.has_jobs).astype(np.float64)

    def _leading(self, cache: dict, key: float, values_ms: np.ndarray) -> np.ndarray:
        counts = cache.get(key)
        if counts is None:
            ok = values_ms <= round(key * 1000.0)
            counts = np.bincount(self.jg, weights=ok, minlength=self.n).astype(np.int64)
            cache[key] = counts
        return counts

    def _uncapped_tail(self, I: float, T: float) -> np.ndarray:
        """The new idle after the last job before the retire cap; depends on (I, T) only, and
        the grid's candidates come in runs of equal (I, T): the last few are kept."""
        tail = self._tails.get((I, T))
        if tail is None:
            thr = np.where(self.has_jobs, T, I)
            ruled_tail = self.tail_minus_thr0 + thr
            np.maximum(ruled_tail, 0.0, out=ruled_tail)
            other_tail = thr + self.overshoot
            np.minimum(other_tail, self.tail_rec, out=other_tail)
            tail = np.where(self.ruled, ruled_tail, other_tail)
            with self._lock:   # candidates are replayed in threads
                while len(self._tails) >= 8:
                    self._tails.pop(next(iter(self._tails)))
                self._tails[(I, T)] = tail
        return tail

    def _retire_cap(self, R: float) -> np.ndarray:
        cap = self._caps.get(R)
        if cap is None:
            cap = np.maximum(self.cend, R + self.retire_overshoot)
            cap -= self.cend
            self._caps[R] = cap
        return cap

    def _replay(self, s: Settings):
        """The model's core: jobs kept per glidein, the new idle after the last kept job (or of
        the whole phase), the glideins cut short and their last kept job's index."""
        I, T, R = float(s.max_idle), float(s.max_tail), float(s.retire)
        lost_first = self.need_idle_ms > round(I * 1000.0)
        count_tail = self._leading(self._count_tail, T, self.tail_prefix_ms)
        count_retire = self._leading(self._count_retire, R, self.need_retire_ms)
        kept = np.minimum(count_tail, count_retire)
        kept[lost_first] = 0

        # glideins that lose no job: the idle after the last job (or with no job) changes
        new_tail = np.minimum(self._uncapped_tail(I, T), self._retire_cap(R))

        # glideins cut short (usually few): they end after their last kept job
        cut = np.nonzero(kept < self.n_jobs)[0]
        last = self.off[cut] + kept[cut]
        if len(cut):
            k = kept[cut]
            cursor_p = self.cursor[last]
            idle_fired = lost_first[cut] | (count_tail[cut] == k)
            retire_fired = count_retire[cut] == k
            limit = np.where(k == 0, I, T) + self.lag[cut]
            end = np.minimum(np.where(idle_fired, cursor_p + limit, np.inf),
                             np.where(retire_fired, np.maximum(cursor_p, R), np.inf))
            new_tail[cut] = np.maximum(end - cursor_p, 0.0)
        new_tail[self.no_condor] = 0.0
        return kept, new_tail, cut, last

    def run(self, s: Settings) -> ReplayResult:
        """Per glidein arrays under ``s`` (the reference the aggregates are tested against)."""
        kept, new_tail, cut, last = self._replay(s)
        idle_before, idle_between = self.all_before.copy(), self.all_between.copy()
        badput, goodput = self.all_bad.copy(), self.all_good.copy()
        lost_core = np.zeros(self.n)
        if len(cut):
            off = self.off[cut]
            idle_before[cut] = self.cs_before[last] - self.cs_before[off]
            idle_between[cut] = self.cs_between[last] - self.cs_between[off]
            badput[cut] = self.cs_bad[last] - self.cs_bad[off]
            goodput[cut] = self.cs_good[last] - self.cs_good[off]
            lost_core[cut] = self.cs_jobs[self.end_all[cut]] - self.cs_jobs[last]
        any_kept = kept > 0
        tail = np.where(any_kept, new_tail, 0.0)
        new_tail[any_kept] = 0.0
        return ReplayResult(
            settings=s, idle_before=idle_before, idle_between=idle_between, tail=tail,
            no_job=new_tail, badput_core_s=badput, goodput_core_s=goodput,
            lost_jobs=self.n_jobs - kept, lost_core_s=lost_core, cores=self.cores)

    def totals(self, s: Settings) -> CandidateTotals:
        """What the grid reports of ``s``, without per-glidein arrays: the all-kept values are
        summed once (per entry too) and only the glideins cut short are corrected."""
        kept, new_tail, cut, last = self._replay(s)
        c, entry, n_entries = self.cores, self.entry, self.n_entries
        bb_c, bad, bb_entry = self.all_before_between_c, self.all_bad_total, self.all_before_between_by_entry
        tail_c = new_tail * c
        tail_total = float(tail_c.sum())
        no_job_c = float(tail_c @ self.no_jobs)     # glideins with no job at all
        idle_entry = bb_entry + np.bincount(entry, weights=tail_c, minlength=n_entries)
        lost = np.zeros(0)
        lost_core = 0.0
        if len(cut):
            off, k = self.off[cut], kept[cut]
            delta_bb = (self.cs_before[last] - self.cs_before[off] + self.cs_between[last]
                        - self.cs_between[off] - self.all_before[cut] - self.all_between[cut]) * c[cut]
            bb_c = bb_c + float(delta_bb.sum())
            idle_entry = idle_entry + np.bincount(entry[cut], weights=delta_bb, minlength=n_entries)
            bad = bad + float((self.cs_bad[last] - self.cs_bad[off] - self.all_bad[cut]).sum())
            no_job_c += float(tail_c[cut][k == 0].sum())   # every job lost: the phase had none
            lost = (self.n_jobs[cut] - k).astype(np.float64)
            lost_core = float((self.cs_jobs[self.end_all[cut]] - self.cs_jobs[last]).sum())
        h = 1 / 3600.0
        entry_cut = entry[cut]
        return CandidateTotals(
            settings=s, idle_core_hours=(bb_c + tail_total - no_job_c) * h, no_job_core_hours=no_job_c * h,
            badput_core_hours=bad * h, lost_jobs=int(lost.sum()), lost_core_s=lost_core,
            glideins_cut_short=len(cut), idle_by_entry=idle_entry * h,
            lost_by_entry=np.bincount(entry_cut, weights=lost, minlength=n_entries),
            cut_by_entry=np.bincount(entry_cut, minlength=n_entries))


def replay_one(tl: GlideinTimeline, current: Settings, candidate: Settings) -> dict:
    """Plain-Python reference of the replay for one timeline (seconds, and core-seconds)."""
    zero = {"idle_before": 0.0, "idle_between": 0.0, "tail": 0.0, "no_job": 0.0, "badput_core_s": 0.0,
            "goodput_core_s": 0.0, "lost_jobs": 0, "lost_core_s": 0.0}
    jobs = tl.jobs
    has_condor = not (math.isnan(tl.condor_start) or math.isnan(tl.condor_end))
    if not has_condor and not jobs:
        return zero
    cs = tl.condor_start if has_condor else min(j[0] for j in jobs)
    ce = tl.condor_end if has_condor else max(j[1] for j in jobs)
    L = max(0.0, ce - cs)
    rel = []
    for start, end, _code, failed, cores in jobs:
        s = min(max(start - cs, 0.0), L)
        e = min(max(end - cs, s), L)
        rel.append((s, e, failed, cores))
    cursor, gaps = 0.0, []
    for s, e, _, _ in rel:
        gaps.append((max(0.0, s - cursor), cursor))
        cursor = max(cursor, e)
    cend, tail_rec = cursor, L - cursor
    I0, T0, R0 = current.max_idle, current.max_tail, current.retire
    I, T, R = candidate.max_idle, candidate.max_tail, candidate.retire
    own = tl.shutdown_reason in OWN_TIMEOUT_REASONS
    thr0 = T0 if jobs else I0
    lag = min(max(tail_rec - thr0, 0.0), LAG_CAP_S) if own else 0.0
    out = dict(zero)
    new_tail = None
    kept = 0
    for index, ((s, e, failed, cores), (gap, cur)) in enumerate(zip(rel, gaps)):
        first = index == 0
        idle_lost = (min(gap, I0) > I) if first else (min(gap, T0) > T)
        retire_lost = min(s, R0) > R
        if idle_lost or retire_lost:
            end = math.inf
            if idle_lost:
                end = cur + (I if first else T) + lag
            if retire_lost:
                end = min(end, max(cur, R))
            new_tail = max(end - cur, 0.0)
            break
        kept += 1
        out["idle_before" if first else "idle_between"] += gap
        out["badput_core_s" if failed else "goodput_core_s"] += (e - s) * cores
    for s, e, failed, cores in rel[kept:]:
        out["lost_jobs"] += 1
        out["lost_core_s"] += (e - s) * cores
    if new_tail is None:
        thr0, thr = (T0, T) if jobs else (I0, I)
        if own and tail_rec >= thr0 - OWN_RULE_EPS_S:
            new_tail = max(tail_rec + (thr - thr0), 0.0)
        else:
            new_tail = min(tail_rec, thr + max(tail_rec - thr0, 0.0))
        cap_end = max(cend, R + max(L - R0, 0.0))
        new_tail = min(new_tail, cap_end - cend)
    out["tail" if kept else "no_job"] = new_tail
    return out


# -- grid, Pareto front, recommendation ---------------------------------------------------------

def candidate_grid(current: Settings, max_idle=None, max_tail=None, retire=None) -> list[Settings]:
    idles = sorted(set(float(x) for x in (max_idle or DEFAULT_MAX_IDLE)) | {float(current.max_idle)})
    tails = sorted(set(float(x) for x in (max_tail or DEFAULT_MAX_TAIL)) | {float(current.max_tail)})
    retires = sorted(set(float(x) for x in (retire or ())) | {float(current.retire)})
    return [Settings(i, t, r) for i in idles for t in tails for r in retires]


def pareto_front(points: list[dict]) -> list[dict]:
    """Candidates no other beats on both jobs lost (fewer) and core-hours saved (more)."""
    ordered = sorted(points, key=lambda p: (p["lost_jobs"], -p["saved_core_hours"]))
    front, best = [], -math.inf
    for point in ordered:
        if point["saved_core_hours"] > best + 1e-9:
            front.append(point)
            best = point["saved_core_hours"]
    return front


def _distance(s: dict, current: Settings) -> float:
    return (abs(math.log(max(s["max_idle"], 1) / max(current.max_idle, 1)))
            + abs(math.log(max(s["max_tail"], 1) / max(current.max_tail, 1)))
            + abs(math.log(max(s["retire"], 1) / max(current.retire, 1))))


def recommend(points: list[dict], current: Settings, total_jobs: int, budget: float) -> dict:
    """The candidate saving the most core-hours net of replacement glideins while losing at
    most ``budget`` of the jobs; ties go to the one closest to the current settings."""
    allowed = max(0, math.floor(budget * total_jobs))
    ok = [p for p in points if p["lost_jobs"] <= allowed]
    if not ok:
        ok = [p for p in points if p["settings"] == current.as_dict()] or points[:1]
    best = max(ok, key=lambda p: (round(p["net_saved_core_hours"], 6), -_distance(p["settings"], current)))
    return {"settings": best["settings"], "lost_jobs_allowed": allowed, "expected": best}


def default_threads() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def evaluate_grid(table: TimelineTable, current: Settings, candidates: list[Settings], *,
                  derived: Derived | None = None, budget: float = DEFAULT_LOST_BUDGET,
                  per_entry: bool = True, threads: int | None = None) -> dict:
    """Replay every candidate; totals, the Pareto front, recommended settings (overall and
    per entry) and the check that the current settings reproduce the recorded waste.
    ``threads`` (default min(4, CPUs)) replay candidates concurrently: the same result."""
    d = derived or Derived(table)
    candidates = list(candidates)
    if current not in candidates:
        candidates.append(current)
    replayer = Replayer(table, current, d)
    recorded = d.waste_core_hours()
    rec_idle = recorded["idle"] + recorded["no_job"]
    rec_total = float(rec_idle.sum())
    total_jobs = int(len(table.jobs["start"]))
    entry = table.g["entry"]
    entries = table.names["entry"]
    ne = len(entries)
    # what one replacement glidein costs before it runs its first job (setup + first wait)
    c = d.cores
    startup = (np.nan_to_num(table.g["setup_s"]) + d.idle_before) * c / 3600.0
    replacement_ch = float(np.median(startup[d.has_jobs])) if d.has_jobs.any() else 0.0
    rec_entry_idle = np.bincount(entry, weights=rec_idle, minlength=ne)

    def evaluate(s: Settings):
        r = replayer.totals(s)
        idle_total = r.idle_core_hours + r.no_job_core_hours
        point = {
            "settings": s.as_dict(),
            "waste_core_hours": round(idle_total, 3),
            "idle_core_hours": round(r.idle_core_hours, 3),
            "no_job_core_hours": round(r.no_job_core_hours, 3),
            "saved_core_hours": round(rec_total - idle_total, 3) + 0.0,
            "lost_jobs": r.lost_jobs,
            "lost_job_share": round(r.lost_jobs / total_jobs, 6) if total_jobs else 0.0,
            "glideins_cut_short": r.glideins_cut_short,
            "lost_job_core_hours": round(r.lost_core_s / 3600.0, 3),
            "replacement_core_hours": round(r.glideins_cut_short * replacement_ch, 3),
        }
        point["net_saved_core_hours"] = round(point["saved_core_hours"] - point["replacement_core_hours"], 3)
        entry_row = (r.idle_by_entry, r.lost_by_entry, r.cut_by_entry) if per_entry else None
        reproduction = None
        if s == current:
            reproduction = {
                "recorded_idle_core_hours": round(float(recorded["idle"].sum()), 6),
                "replayed_idle_core_hours": round(r.idle_core_hours, 6),
                "recorded_no_job_core_hours": round(float(recorded["no_job"].sum()), 6),
                "replayed_no_job_core_hours": round(r.no_job_core_hours, 6),
                "recorded_badput_core_hours": round(float(recorded["badput"].sum()), 6),
                "replayed_badput_core_hours": round(r.badput_core_hours, 6),
                "lost_jobs": r.lost_jobs,
            }
            reproduction["exact"] = bool(
                abs(reproduction["recorded_idle_core_hours"] - reproduction["replayed_idle_core_hours"]) < 1e-3
                and abs(reproduction["recorded_no_job_core_hours"] - reproduction["replayed_no_job_core_hours"]) < 1e-3
                and reproduction["lost_jobs"] == 0)
        return point, entry_row, reproduction

    # candidates are independent and numpy releases the GIL in the large array operations:
    # threads share the replayer (no copies); results are taken in candidate order
    threads = min(default_threads() if threads is None else max(1, threads), len(candidates))
    if threads > 1:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=threads) as pool:
            results = list(pool.map(evaluate, candidates))
    else:
        results = [evaluate(s) for s in candidates]
    points = [point for point, _, _ in results]
    entry_rows = [row for _, row, _ in results if row is not None]
    reproduction = next(rep for _, _, rep in results if rep is not None)
    out = {"current": current.as_dict(), "recorded_waste_core_hours": round(rec_total, 3),
           "total_jobs": total_jobs, "lost_budget": budget,
           "replacement_core_hours_per_glidein": round(replacement_ch, 4),
           "candidates": points, "pareto_front": pareto_front(points),
           "recommended": recommend(points, current, total_jobs, budget),
           "current_replay": reproduction}
    if per_entry and entry_rows:
        per = {}
        jobs_per_entry = np.bincount(entry[table.jobs["glidein"]], minlength=ne) if total_jobs else np.zeros(ne)
        glideins_per_entry = np.bincount(entry, minlength=ne)
        for e in range(ne):
            if not glideins_per_entry[e]:
                continue
            rows = []
            for s, (idle_e, lost_e, affected_e) in zip(candidates, entry_rows):
                saved = float(rec_entry_idle[e] - idle_e[e])
                rows.append({"settings": s.as_dict(), "saved_core_hours": round(saved, 3),
                             "lost_jobs": int(lost_e[e]),
                             "replacement_core_hours": round(float(affected_e[e]) * replacement_ch, 3),
                             "net_saved_core_hours": round(saved - float(affected_e[e]) * replacement_ch, 3)})
            best = recommend(rows, current, int(jobs_per_entry[e]), budget)
            per[entries[e]] = {"glideins": int(glideins_per_entry[e]), "jobs": int(jobs_per_entry[e]),
                               "recorded_waste_core_hours": round(float(rec_entry_idle[e]), 3),
                               "recommended": best["settings"],
                               "saved_core_hours": best["expected"]["saved_core_hours"],
                               "net_saved_core_hours": best["expected"]["net_saved_core_hours"],
                               "lost_jobs": best["expected"]["lost_jobs"]}
        out["by_entry"] = per
    return out
