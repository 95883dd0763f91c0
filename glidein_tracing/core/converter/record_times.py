"""GlideinWMS's per-script records on one sub-second timeline, in the order they were written.

A record's ``tStart``/``tEnd`` name the second an event happened in (1 s resolution: the
event lies in [T, T+1)). Most scripts last under a second, so many records share a second:
drawn as written they would be zero-length spans that a viewer sorts by start time alone,
in no stable order. So each record event is placed inside its own second by its position:
the n-th event of second T (counted from 0; one script's end and the next one's start in
the same second are one event) at ``T + (1 - 0.99**n)`` s (10 ms steps, shrinking so that
any number of events fits), measured from the glidein's own start instead of T when that
start falls inside T. Every placed time stays inside the second its record names, every
script lasts more than zero, and the order is the records' order.

A placement depends only on the events before it: the node's live export (part of the
records) and the Factory's conversion (all of them) place each script at the same times.
"""

from __future__ import annotations

import math

STEP = 0.99   # the n-th event of a second is placed 1 - STEP**n s into it


class Placement:
    """Places record events, in execution order, one second at a time."""

    def __init__(self, floor: float | None = None):
        self.floor = floor          # the glidein's measured start: no record event before it
        self.second: float | None = None
        self.count = 0              # events placed in ``self.second`` so far
        self.last: float | None = None

    def place(self, recorded: float) -> float:
        """The placed time of the next event, recorded as ``recorded`` (whole seconds)."""
        second = float(math.floor(recorded))
        if self.second is not None and second <= self.second:
            second = self.second     # same second (or a clock stepping back): next position in it
            self.count += 1
        else:
            self.second, self.count = second, 0
        base = second
        if self.floor is not None and second <= self.floor < second + 1:
            base = self.floor
        self.last = base + (second + 1 - base) * (1 - STEP ** self.count)
        return self.last


def place_records(spans, floor: float | None = None) -> list[tuple[float, float]]:
    """(start, end) for records given as (recorded start, recorded end) in execution order.
    A record that starts in the second the previous one ended in starts where it ended."""
    placement = Placement(floor)
    out = []
    previous_end = None
    for start, end in spans:
        if previous_end is not None and math.floor(start) <= math.floor(previous_end):
            placed_start = placement.last
        else:
            placed_start = placement.place(start)
        placed_end = placement.place(max(end, start))
        out.append((placed_start, placed_end))
        previous_end = max(end, start)
    return out
