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
"""

from __future__ import annotations

from .. import conventions as c
from .draft import ROOT, Draft

_FACTORY_ONLY = (c.FACTORY_STAGE_PREFIX, c.STAGE_POST_FAILURE_SLEEP)


def is_node_span(key: str, stage: str) -> bool:
    """Whether a span is dated by the node's clock (moved with the node's stages)."""
    return key != ROOT and not stage.startswith(_FACTORY_ONLY) and not key.startswith(_FACTORY_ONLY)


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
