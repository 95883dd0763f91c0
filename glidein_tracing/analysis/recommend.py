"""Recommendations: which lifetime knob to change, at which entry (or Frontend group), to what,
and what it saves per month, from the what-if replay's totals per cell (whatif.py: entry,
Frontend client and group, half of the period).

Per entry (and per Frontend group, over the entries it used), among the candidates that lose
at most the lost-jobs budget of its jobs, the one saving the most core-hours net of the
replacement glideins it needs. It is recommended only when its saving beats its uncertainty:
the period is cut in two halves of equal length and the candidate replayed on each; the
estimate is the mean of the two halves' monthly savings and the uncertainty half their
difference, so a change is kept only when it saves on both halves (the noise check). The
settings an entry ran with are the ones the table records for it; an entry whose recorded
settings differ from the ones the replay assumed is named, not recommended. The Factory-wide
figure is the sum of the per-entry recommendations.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.knobs import attr_line, frontend_attr_line

MONTH_DAYS = 30.0
# (Settings field, GlideinWMS attribute, the table's column of the value it ran with)
KNOB_ATTRS = (("max_idle", "GLIDEIN_Max_Idle"), ("max_tail", "GLIDEIN_Max_Tail"), ("retire", "GLIDEIN_Retire_Time"))
RULE = ("per entry and Frontend group: the candidate saving the most core-hours net of replacement glideins among "
        "those losing at most the lost-jobs budget of its jobs, kept only when it saves on both halves of the period "
        "(estimate: mean of the halves' monthly savings; uncertainty: half their difference)")


def _distance(s: dict, current: dict) -> float:
    return sum(abs(math.log(max(s[k], 1) / max(current[k], 1))) for k, _ in KNOB_ATTRS)


def _most_common(values: dict, units: list, knob: str):
    """The value of ``knob`` most of the unit's glideins ran with (None: not recorded)."""
    counts: dict = {}
    for key in units:
        for value, n in values[key][knob].items():
            counts[value] = counts.get(value, 0) + n
    return max(counts, key=lambda v: (counts[v], -v)) if counts else None


class _Unit:
    """The sums of one entry or Frontend group over its cells, per half and per candidate."""

    def __init__(self, mask: np.ndarray, late: np.ndarray, per_cell: list, rec: dict, replacement: float):
        halves = (mask & ~late, mask & late)
        self.jobs = int(round(rec["jobs_by_entry"][mask].sum()))
        self.glideins = int(round(rec["glideins_by_entry"][mask].sum()))
        self.net = np.array([[(rec["waste_by_entry"][m].sum() - t["waste_by_entry"][m].sum()) / 3600.0
                              - t["cut_by_entry"][m].sum() * replacement for m in halves] for t in per_cell])
        self.saved = np.array([(rec["waste_by_entry"][mask].sum() - t["waste_by_entry"][mask].sum()) / 3600.0
                               for t in per_cell])
        self.lost = np.array([int(round(t["lost_by_entry"][mask].sum())) for t in per_cell])
        self.cut = np.array([int(round(t["cut_by_entry"][mask].sum())) for t in per_cell])
        self.affected = np.array([int(round(t["affected_by_entry"][mask].sum())) for t in per_cell])


def _choose(unit: _Unit, candidates: list, current: dict, budget: float):
    """(recommended index or None, best index within the budget ignoring the noise check or None)."""
    allowed = math.floor(budget * unit.jobs)
    within = [k for k, s in enumerate(candidates) if s.as_dict() != current and unit.lost[k] <= allowed]
    rank = lambda k: (round(unit.net[k].sum(), 6), -_distance(candidates[k].as_dict(), current))  # noqa: E731
    best = max(within, key=rank, default=None)
    kept = [k for k in within if unit.net[k].min() > 0]
    chosen = max(kept, key=rank, default=None)
    return chosen, best if best is not None and unit.net[best].sum() > 0 else None


def _figures(unit: _Unit, k: int, candidate, days: float, replacement: float) -> dict:
    per_month = MONTH_DAYS / days
    halves = unit.net[k] * 2 * per_month            # each half lasts days / 2
    return {"settings": candidate.as_dict(),
            "net_core_hours_per_month": round(float(halves.mean()), 1),
            "uncertainty_core_hours_per_month": round(float(abs(halves[0] - halves[1]) / 2), 1),
            "halves_net_core_hours_per_month": [round(float(x), 1) for x in halves],
            "net_core_hours": round(float(unit.net[k].sum()), 3), "saved_core_hours": round(float(unit.saved[k]), 3),
            "replacement_core_hours": round(float(unit.cut[k] * replacement), 3),
            "lost_jobs": int(unit.lost[k]), "jobs": unit.jobs,
            "lost_job_share": round(unit.lost[k] / unit.jobs, 6) if unit.jobs else 0.0,
            "glideins_affected": int(unit.affected[k]), "glideins_cut_short": int(unit.cut[k]),
            "glideins": unit.glideins, "days": round(days, 2)}


def _changes(settings: dict, current: dict, line) -> list:
    return [{"knob": attr, "current_s": current[knob], "proposed_s": settings[knob],
             "attr": line(attr, f"{settings[knob]:.0f}", "int")}
            for knob, attr in KNOB_ATTRS if settings[knob] != current[knob]]


def recommendations(keys: list, cells, candidates: list, per_cell: list, rec: dict, current_settings,
                    budget: float, replacement: float) -> dict:
    """The recommendations of the what-if document. ``keys``: (entry, client, group, late) of
    the cells, aligned with the per-cell arrays of ``per_cell`` (one dict per candidate, from
    whatif.Grid.totals) and of ``rec`` (Grid.recorded); ``cells``: whatif.Cells."""
    current = current_settings.as_dict()
    days = cells.days
    late = np.array([k[3] for k in keys], bool)
    out = {"rule": RULE, "month_days": MONTH_DAYS, "days": round(days, 2), "lost_budget": budget,
           "entries": [], "groups": [], "not_recommended": []}

    def unit_recs(kind: str, label, members, line) -> list:
        found = []
        for name in sorted({label(k) for k in keys}, key=lambda n: tuple("" if x is None else str(x) for x in n)):
            mask = np.array([label(k) == name for k in keys], bool)
            unit = _Unit(mask, late, per_cell, rec, replacement)
            ident = dict(zip(("entry",) if kind == "entry" else ("client", "group"), name))
            recorded = {knob: _most_common(cells.values, [v for v in cells.values if members(v) == name], knob)
                        for knob, _ in KNOB_ATTRS}
            differs = {k: v for k, v in recorded.items() if v is not None and abs(v - current[k]) > 0.5}
            chosen, best = _choose(unit, candidates, current, budget)
            if differs:
                out["not_recommended"].append({"kind": kind, **ident, "reason": "ran with " + ", ".join(
                    f"{dict(KNOB_ATTRS)[k]} {v:.0f}" for k, v in differs.items()) + " (the replay assumed the "
                    "Factory's most common values): analyse it alone with --entry/--group and --current-*"})
                continue
            if chosen is not None:
                found.append({**ident, "changes": _changes(candidates[chosen].as_dict(), current, line),
                              **_figures(unit, chosen, candidates[chosen], days, replacement)})
            elif best is not None:
                figures = _figures(unit, best, candidates[best], days, replacement)
                out["not_recommended"].append({"kind": kind, **ident, "reason": "saves less than its uncertainty (not on "
                                               "both halves of the period)",
                                               "changes": _changes(candidates[best].as_dict(), current, line), **figures})
        return sorted(found, key=lambda r: -r["net_core_hours_per_month"])
    out["entries"] = unit_recs("entry", lambda k: (k[0],), lambda v: (v[0],), attr_line)
    out["groups"] = unit_recs("group", lambda k: (k[1], k[2]), lambda v: (v[1], v[2]), frontend_attr_line)
    entries = out["entries"]
    out["factory"] = {"entries": len(entries),
                      "net_core_hours_per_month": round(sum(r["net_core_hours_per_month"] for r in entries), 1),
                      "uncertainty_core_hours_per_month": round(math.sqrt(sum(
                          r["uncertainty_core_hours_per_month"] ** 2 for r in entries)), 1),
                      "lost_jobs": sum(r["lost_jobs"] for r in entries),
                      "glideins_affected": sum(r["glideins_affected"] for r in entries),
                      "jobs": int(round(rec["jobs_by_entry"].sum())), "glideins": int(round(rec["glideins_by_entry"].sum()))}
    return out
