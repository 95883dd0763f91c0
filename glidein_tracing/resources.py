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
PREFIX = "glidein.resource."
CPU_USER, CPU_SYSTEM = PREFIX + "cpu_user_s", PREFIX + "cpu_system_s"
MAX_RSS, DISK_FREE, LOAD1, WINDOW = (PREFIX + "max_rss_bytes", PREFIX + "disk_free_bytes",
                                     PREFIX + "load1", PREFIX + "window_s")


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
        self._columns: dict | None = None

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
        self._columns = None
        self._times.insert(index, time)
        self._samples.insert(index, Sample(time=time, **values))

    def __len__(self):
        return len(self._samples)

    def _build_columns(self) -> dict:
        """Per attribute, the last value known at each sample (samples need not carry every
        field), and for memory the next reading at or after each sample."""
        columns = {}
        for attr in ("utime", "stime", "disk_free", "load1"):
            known, column = None, []
            for sample in self._samples:
                value = getattr(sample, attr)
                known = value if value is not None else known
                column.append(known)
            columns[attr] = column
        rss = [s.rss for s in self._samples]
        following, column = None, [None] * len(rss)
        for index in range(len(rss) - 1, -1, -1):
            following = rss[index] if rss[index] is not None else following
            column[index] = following
        # readings as numbers, -1 where a sample has none (RSS is never negative): a window's
        # largest is then one C-level max() over a slice
        columns["rss"] = [-1.0 if value is None else value for value in rss]
        columns["next_rss"] = column
        return columns

    def window(self, start: float, end: float, origin: float | None = None) -> dict:
        """Usage over [start, end] as ``glidein.resource.*`` attributes: CPU difference between
        the bracketing samples, the largest RSS seen inside them, disk free and load at the
        end. ``origin`` is when the measured process started (its counters were zero then),
        used when no sample precedes start. The dict is shared between windows with the same
        bracketing samples (short stages often fall between the same two): read it, do not
        change it."""
        times = self._times
        if not times or start is None or end is None:
            return {}
        if self._columns is None:
            self._columns = self._build_columns()
        before = bisect.bisect_right(times, start) - 1
        after = bisect.bisect_left(times, end)
        if after >= len(times):
            after = len(times) - 1
        if 0 <= before <= after:
            key = (before, after)                      # the result depends on the samples only
        elif origin is not None and origin <= start:
            key = ("origin", origin, after)
        else:
            key = ("start", start, after)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._cache[key] = self._window(start, before, after, origin)
        return cached

    def _window(self, start: float, before: int, after: int, origin: float | None) -> dict:
        columns, times = self._columns, self._times
        last_index = len(times) - 1
        out = {}
        if before >= 0:
            before_time = times[before]
            before_user, before_system = columns["utime"][before], columns["stime"][before]
        elif origin is not None and origin <= start:
            before_time, before_user, before_system = origin, 0.0, 0.0
        else:
            before_time = before_user = before_system = None
        after_time = times[after]
        if before_time is not None and after_time >= before_time:
            after_user, after_system = columns["utime"][after], columns["stime"][after]
            if after_user is not None and before_user is not None:
                out[CPU_USER] = round(max(0.0, after_user - before_user), 6)
            if after_system is not None and before_system is not None:
                out[CPU_SYSTEM] = round(max(0.0, after_system - before_system), 6)
            out[WINDOW] = round(after_time - before_time, 6)
            first = bisect.bisect_left(times, before_time)
        else:
            first = bisect.bisect_left(times, start)
        stop = bisect.bisect_right(times, after_time, first)
        largest = max(columns["rss"][first:stop], default=-1.0)
        if largest >= 0:
            out[MAX_RSS] = int(largest)
        elif stop <= last_index and columns["next_rss"][stop] is not None:
            out[MAX_RSS] = int(columns["next_rss"][stop])  # no reading in the window: the next one
        disk, load = columns["disk_free"][after], columns["load1"][after]
        if disk is not None:
            out[DISK_FREE] = int(disk)
        if load is not None:
            out[LOAD1] = load
        return out
