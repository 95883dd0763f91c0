"""Waiting for what a test expects to happen, never for how long it takes: CI runs at load 10
and more on 2 cores, so a test polls for the event and only a bound far beyond any load stops a
hang."""

from __future__ import annotations

import time

HANG_S = 120.0   # beyond any load: reaching it means the awaited thing never happens


def wait_until(condition, bound_s: float = HANG_S, step_s: float = 0.05) -> bool:
    """Whether ``condition()`` became true before ``bound_s`` passed."""
    deadline = time.monotonic() + bound_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(step_s)
    return True
