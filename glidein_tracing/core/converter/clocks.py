"""One timeline for the Factory's view and the node's: the node's stages follow the execute event.

The Factory dates a glidein's execute event (the end of ``factory.queue``) by its own clock,
when its activity log learned of the start; the node dates its stages by the node's clock.
A node stage that starts before that event shows the glidein at work while the Factory says
it still waited: the two clocks disagree, or the Factory learned of the start late. The node's
stages (every span but the root, the Factory's and what the converter derives from the
Factory's end) are then moved later by the difference, and the root says by how much:
``glidein.clock.node_early_s`` (how far before the execute event the node's first stage
started, as recorded) and ``glidein.clock.shift_s`` (how far its stages were moved).

Not when the node exported spans live: those are in the backend as the node dated them, and
a moved copy would be a second content under the same span ids. Then only
``glidein.clock.node_early_s`` says how far the two disagree.

The readings of the resource timeline and the notes keep the node's clock (build.py reads
them with the shift); the user jobs' phases move with their jobs.

The node cannot move the Factory's clock: at the Factory, ``within_life`` first leaves out
every node line claiming a time (its own, or a record's ``@tstart``/``@tend``) outside the
glidein's life as the Factory measured it (its first execute event to its terminate event),
widened by the disagreement two clocks may have: the glidein's lifetime, at least
``CLOCK_MARGIN_S`` + ``NODE_CLOCK_SKEW_S`` (a node whose clock is an hour off is still
reconciled, not emptied). So no shift exceeds that, and one forged line cannot date a
glidein 27 years away.
"""

from __future__ import annotations

import time

from .. import conventions as c
from .draft import ROOT, Draft
from .fields import parse_iso

CLOCK_MARGIN_S = 600.0   # the least disagreement tolerated: a grid manager polls the site for minutes
NODE_CLOCK_SKEW_S = 3600.0   # how far a worker node's clock may be off (no NTP in a VM, a site's drift)
UNMEASURED_LIFE_S = 30 * 86400.0   # the life taken for a glidein no activity log names (its output alone)

_FACTORY_ONLY = (c.FACTORY_STAGE_PREFIX, c.STAGE_POST_FAILURE_SLEEP)


def is_node_span(key: str, stage: str) -> bool:
    """Whether a span is dated by the node's clock (moved with the node's stages)."""
    return key != ROOT and not stage.startswith(_FACTORY_ONLY) and not key.startswith(_FACTORY_ONLY)


def life_bounds(factory_events, ended_at: float | None, now: float | None = None) -> tuple[float, float]:
    """The node times the Factory accepts for a glidein: from its first execute event (else its
    submission; else, no activity log naming it, ``UNMEASURED_LIFE_S`` before its end) to its
    terminate event (else its output's time, else now), each widened by the glidein's
    lifetime, at least ``CLOCK_MARGIN_S`` + ``NODE_CLOCK_SKEW_S``. Only what the Factory
    measured goes in."""
    now = time.time() if now is None else now
    executes = [e.time for e in factory_events if e.op == "end" and e.key.startswith(c.STAGE_FACTORY_QUEUE)]
    first = min(executes) if executes else min((e.time for e in factory_events), default=None)
    last = min(ended_at, now) if ended_at else now
    if first is None:
        first = last - UNMEASURED_LIFE_S
    first = min(first, last)
    margin = max(CLOCK_MARGIN_S + NODE_CLOCK_SKEW_S, last - first)
    return first - margin, last + margin


def within_life(events, bounds: tuple[float, float]) -> tuple[list, int]:
    """The node's events whose claimed times lie within ``bounds`` (life_bounds), and how many
    were left out: a line's own time, and a record's ``@tstart`` and ``@tend``."""
    low, high = bounds
    kept, outside = [], 0
    for event in events:
        times = [event.time]
        if event.op == "record":
            times += [t for t in (parse_iso(event.fields.get("@tstart", "")),
                                  parse_iso(event.fields.get("@tend", ""))) if t is not None]
        if all(low <= t <= high for t in times):
            kept.append(event)
        else:
            outside += 1
    return kept, outside


def reconcile(draft: Draft) -> None:
    """Move the node's stages after the Factory's execute event when they start before it."""
    executed = [s.end for k, s in draft.spans.items()
                if k.startswith(c.STAGE_FACTORY_QUEUE) and s.end is not None and not s.closed_by_converter]
    node = [s for k, s in draft.spans.items() if is_node_span(k, s.stage) and s.start is not None]
    if not executed or not node:
        return
    early = max(executed) - min(s.start for s in node)
    if early <= 0:
        return
    root = draft.root
    root.attrs[c.GLIDEIN_CLOCK_NODE_EARLY_S] = round(early, 6)
    if draft.exported_live:
        return
    root.attrs[c.GLIDEIN_CLOCK_SHIFT_S] = round(early, 6)
    draft.node_shift = early
    draft.phases.shift(early)
    for span in node:
        span.start += early
        if span.end is not None:
            span.end += early
    ends = [s.end for s in node if s.end is not None]
    if ends and (root.end is None or max(ends) > root.end):
        root.end = max(ends)    # the root covers every stage
