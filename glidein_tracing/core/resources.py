"""Per-stage resource usage from the journal's readings of the glidein's process tree.

Every reading (the `r.*` fields of a stage boundary line and the sampler's `sample` lines)
is of the same thing: glidein_startup.sh and all its live descendants, CPU cumulative
(including what they reaped). A stage is given only what was measured inside it: the CPU
between its first and last reading, the largest memory and the last disk and load seen
there. ``window_s`` is how far apart those readings were (at most the stage's duration); a
stage with no reading inside it gets nothing, not the figures of a wider sample window.
"""

from __future__ import annotations

import bisect

from . import conventions as c

FIELDS = {"r.utime": "utime", "r.stime": "stime", "r.rss": "rss",
          "r.disk_free": "disk_free", "r.load1": "load1"}
CPU_USER, CPU_SYSTEM = c.GLIDEIN_RESOURCE_CPU_USER_S, c.GLIDEIN_RESOURCE_CPU_SYSTEM_S
MAX_RSS, DISK_FREE = c.GLIDEIN_RESOURCE_MAX_RSS_BYTES, c.GLIDEIN_RESOURCE_DISK_FREE_BYTES
LOAD1, WINDOW = c.GLIDEIN_RESOURCE_LOAD1, c.GLIDEIN_RESOURCE_WINDOW_S


class ResourceTimeline:
    """The readings of one glidein, in time order."""

    def __init__(self):
        self._times: list[float] = []
        self._readings: list[dict] = []

    def add(self, time: float, fields: dict) -> None:
        values = {}
        for name, attr in FIELDS.items():
            if name in fields:
                try:
                    values[attr] = float(fields[name])
                except ValueError:
                    continue
        if not values:
            return
        index = bisect.bisect_right(self._times, time)
        self._times.insert(index, time)
        self._readings.insert(index, values)

    def __len__(self):
        return len(self._times)

    def over(self, start: float, end: float) -> dict:
        """What the readings inside [start, end] say, as ``glidein.resource.*`` attributes:
        CPU used between the first and last of them that have CPU (with ``window_s``, their
        distance), the largest RSS among them, disk free and load1 at the last that has
        each. Empty when no reading lies inside."""
        if start is None or end is None:
            return {}
        first = bisect.bisect_left(self._times, start)
        stop = bisect.bisect_right(self._times, end)
        inside = self._readings[first:stop]
        if not inside:
            return {}
        times = self._times[first:stop]
        out = {}
        with_cpu = [i for i, r in enumerate(inside) if "utime" in r or "stime" in r]
        if len(with_cpu) >= 2:
            a, b = inside[with_cpu[0]], inside[with_cpu[-1]]
            for attr, name in ((CPU_USER, "utime"), (CPU_SYSTEM, "stime")):
                if name in a and name in b:
                    out[attr] = round(max(0.0, b[name] - a[name]), 6)
            out[WINDOW] = round(times[with_cpu[-1]] - times[with_cpu[0]], 6)
        rss = [r["rss"] for r in inside if "rss" in r]
        if rss:
            out[MAX_RSS] = int(max(rss))
        for attr, name in ((DISK_FREE, "disk_free"), (LOAD1, "load1")):
            last = next((r[name] for r in reversed(inside) if name in r), None)
            if last is not None:
                out[attr] = int(last) if attr == DISK_FREE else last
        return out
