"""Crash points: named places where a test may kill the process (SIGKILL) to prove that a
restart neither loses nor repeats anything (the forwarder's exports, the table's files)."""

from __future__ import annotations

import os


def crash_point(name: str):
    """Test hook: GLIDEIN_TRACING_CRASH_AT=<name> kills the process right there (SIGKILL),
    so tests can prove a restart neither loses nor repeats spans."""
    if os.environ.get("GLIDEIN_TRACING_CRASH_AT") == name:
        os.kill(os.getpid(), 9)
