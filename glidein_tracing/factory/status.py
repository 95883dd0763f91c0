"""What the Factory's glideins are doing now, from the forwarder's ledger (read only).

Every glidein the forwarder has seen submitted and not yet ended is, by its Condor-G events,
``queued`` (submitted, waiting in Condor-G or at the site), ``held`` (held by Condor-G, not
released) or ``running`` (the site started it). Its age is the time since it entered that
state. Nothing here reads the activity logs itself: the ledger is as fresh as the
forwarder's last pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ledger import OPEN, Ledger
from ..core import conventions as c

STATES = ("queued", "held", "running")


@dataclass(frozen=True)
class GlideinNow:
    entry: str
    state: str
    since: float          # when it entered the state (epoch seconds)
    cluster: int
    proc: int
    trace_id: str | None  # None: no schedd known for its entry, so no trace id that can exist
    hold_reason: str = ""


def state_of(events) -> tuple[str, float, str] | None:
    """(state, since, hold reason) of one glidein from its Factory events (journal Events), or
    None when it has not been submitted as far as the events tell."""
    opened: dict = {}
    reasons: dict = {}
    submitted = None
    running_since = None
    for event in events:
        if event.op == "start":
            opened[event.key] = event.time
            reasons[event.key] = str(event.fields.get(c.FACTORY_HOLD_REASON, ""))
            if event.key == "glidein":
                submitted = event.time
        elif event.op == "end":
            opened.pop(event.key, None)
            if event.key.startswith(c.STAGE_FACTORY_QUEUE) and c.FACTORY_EXECUTE_HOST in event.fields:
                running_since = event.time
    held = [(t, key) for key, t in opened.items() if key.startswith(c.STAGE_FACTORY_HELD)]
    if held:
        since, key = max(held)
        return "held", since, reasons.get(key, "")
    if running_since is not None:
        return "running", running_since, ""
    if submitted is not None:
        return "queued", submitted, ""
    return None


def glideins_now(ledger: Ledger, identity_of) -> list[GlideinNow]:
    """Every open glidein's state; ``identity_of(row)`` gives its GlideinIdentity, or None when
    its trace id cannot be computed (no schedd known for its entry)."""
    out = []
    for gkey in ledger.with_status(OPEN):
        row = ledger.glidein(gkey)
        found = state_of(ledger.factory_events(gkey))
        if row is None or found is None:
            continue
        state, since, reason = found
        glidein = identity_of(row)
        out.append(GlideinNow(row["entry"], state, since, int(row["cluster"]), int(row["proc"]),
                              glidein.trace_id if glidein is not None else None, reason))
    return out


def summary(glideins: list[GlideinNow], now: float, oldest: int = 3) -> dict:
    """{entry: {state: {count, age_p50_s, age_p90_s, age_max_s, oldest: [{age_s, trace_id, ...}]}}}"""
    out: dict = {}
    by_group: dict = {}
    for glidein in glideins:
        by_group.setdefault((glidein.entry, glidein.state), []).append(glidein)
    for (entry, state), group in sorted(by_group.items()):
        group = sorted(group, key=lambda g: g.since)           # oldest first
        ages = sorted(now - g.since for g in group)
        out.setdefault(entry, {})[state] = {
            "count": len(group),
            "age_p50_s": round(_percentile(ages, 0.5), 1),
            "age_p90_s": round(_percentile(ages, 0.9), 1),
            "age_max_s": round(ages[-1], 1),
            "oldest": [{"age_s": round(now - g.since, 1), "trace_id": g.trace_id, "glidein": f"{g.cluster}.{g.proc}",
                        **({"hold_reason": g.hold_reason} if state == "held" else {})} for g in group[:oldest]],
        }
    return out


def _percentile(values: list, q: float) -> float:
    """The q-quantile of sorted ``values`` (linear between ranks)."""
    position = q * (len(values) - 1)
    low = int(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


def crossed(summary_: dict, limits: dict) -> list[str]:
    """What is older than its limit (``limits``: state or "*" -> seconds), one line each."""
    out = []
    for entry, states in summary_.items():
        for state, row in states.items():
            limit = limits.get(state, limits.get("*"))
            if limit is not None and row["age_max_s"] > limit:
                over = sum(1 for o in row["oldest"] if o["age_s"] > limit)
                first = row["oldest"][0]
                trace = f"trace {first['trace_id']}" if first["trace_id"] else "no trace id (no schedd known)"
                out.append(f"{entry}: {state} glidein {first['glidein']} for {age_text(row['age_max_s'])} "
                           f"(limit {age_text(limit)}; {over}+ over), {trace}")
    return out


def age_text(seconds: float) -> str:
    """An age as the status table writes it (and its alerts): 45s, 12m, 3.5h, 2.1d."""
    if seconds >= 86400:
        return f"{seconds / 86400:.1f}d"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 60:.0f}m" if seconds >= 60 else f"{seconds:.0f}s"
