"""Per-stage resource usage from the journal's cumulative resource samples.

Hooks and the background sampler record cumulative counters of the glidein's process tree
(CPU seconds, resident bytes, disk free, load). A stage's usage is the difference between
the samples that bracket it, so its resolution is the sampling period: the width of that
window is reported with it (``window_s``) rather than hidden.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

FIELDS = {"r.utime": "utime", "r.stime": "stime", "r.rss": "rss",
          "r.disk_free": "disk_free", "r.load1": "load1"}


@dataclass
class Sample:
    time: float
    utime: float | None = None
    stime: float | None = None
    rss: float | None = None
    disk_free: float | None = None
    load1: float | None = None


class ResourceTimeline:
    def __init__(self):
        self._samples: list[Sample] = []
        self._times: list[float] = []
        self._cache: dict = {}

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
        self._cache.clear()
        self._times.insert(index, time)
        self._samples.insert(index, Sample(time=time, **values))

    def __len__(self):
        return len(self._samples)

    def window(self, start: float, end: float, origin: float | None = None) -> dict:
        """Usage over [start, end]: CPU difference between the bracketing samples, the largest
        RSS seen inside them, disk free and load at the end. ``origin`` is when the measured
        process started (its counters were zero then), used when no sample precedes start."""
        if not self._samples or start is None or end is None:
            return {}
        key = (start, end, origin)
        if key not in self._cache:  # spans of one-second records often share a window
            self._cache[key] = self._window(start, end, origin)
        return dict(self._cache[key])

    def _window(self, start: float, end: float, origin: float | None) -> dict:
        before_index = bisect.bisect_right(self._times, start) - 1
        after_index = bisect.bisect_left(self._times, end)
        after = self._samples[min(after_index, len(self._samples) - 1)]
        if before_index >= 0:
            before = self._samples[before_index]
        elif origin is not None and origin <= start:
            before = Sample(time=origin, utime=0.0, stime=0.0)
        else:
            before = None
        out = {}
        if before is not None and after.time >= before.time:
            for attr, name in (("utime", "cpu_user_s"), ("stime", "cpu_system_s")):
                b, a = getattr(before, attr), getattr(after, attr)
                if a is not None and b is not None:
                    out[name] = round(max(0.0, a - b), 6)
            out["window_s"] = round(max(0.0, after.time - before.time), 6)
            low = before.time
        else:
            low = start
        first = bisect.bisect_left(self._times, low)
        last = bisect.bisect_right(self._times, after.time)
        rss = [s.rss for s in self._samples[first:last] if s.rss is not None]
        if not rss:  # no memory reading in the window (e.g. before the first full sample)
            rss = [s.rss for s in self._samples[last:] if s.rss is not None][:1]
        if rss:
            out["max_rss_bytes"] = int(max(rss))
        for attr, name in (("disk_free", "disk_free_bytes"), ("load1", "load1")):
            value = _last_known(self._samples, after_index, attr)
            if value is not None:
                out[name] = int(value) if name == "disk_free_bytes" else value
        return out


def _last_known(samples, index, attr):
    """The value of attr at samples[index], or the nearest earlier sample that has it."""
    index = min(index, len(samples) - 1)
    while index >= 0:
        value = getattr(samples[index], attr)
        if value is not None:
            return value
        index -= 1
    return None
