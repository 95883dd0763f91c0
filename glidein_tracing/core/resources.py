"""Per-stage resource usage from the journal's readings of the glidein's process tree.

Every reading (the `r.*` fields of a stage boundary line and the sampler's `sample` lines)
is of the same thing: glidein_startup.sh and all its live descendants, CPU cumulative
(including what they reaped). A stage is given only what was measured inside it: the CPU
between its first and last reading, the largest memory and the last disk and load seen
there. ``window_s`` is how far apart those readings were (at most the stage's duration); a
stage with no reading inside it gets nothing, not the figures of a wider sample window.

The sampler folds its readings (docs/journal.md, Folded samples): one `sample` line per run
of readings is the run's last reading plus ``a.*`` fields: the first reading's time and CPU
(a reading of its own here) and the extremes in between, which count for a stage that holds
the whole run. A journal of one `sample` line per reading reads the same way.

Memory: ``max_rss_bytes`` is a peak only where the kernel kept one (``max_rss_source``):
cgroup v2 ``memory.peak`` or v1 ``memory.max_usage_in_bytes`` (``r.mpeak``, the root's
``@memory_peak`` says which; cumulative: a stage's peak is known when it rose inside the stage) or the processes' own peaks (``r.hwm``, the sum of VmHWM of the tree's
live processes, largest inside the stage). ``max_rss_kind`` says what the figure is: the
kernel's exact peak (cgroup), or an estimate (the VmHWM sum). The largest of the readings
themselves is ``rss_max_sampled_bytes``: a lower bound, named for what it is.
"""

from __future__ import annotations

import bisect
import math

from . import conventions as c

FIELDS = {"r.utime": "utime", "r.stime": "stime", "r.rss": "rss", "r.disk_free": "disk_free",
          "r.load1": "load1", "r.hwm": "hwm", "r.mpeak": "mpeak"}
# a folded run's extremes: field -> (reading, keep the larger (max) or the smaller (min))
RUN_FIELDS = {"a.rss_max": ("rss", max), "a.hwm_max": ("hwm", max),
              "a.disk_free_min": ("disk_free", min), "a.load1_max": ("load1", max)}
CPU_USER, CPU_SYSTEM = c.GLIDEIN_RESOURCE_CPU_USER_S, c.GLIDEIN_RESOURCE_CPU_SYSTEM_S
MAX_RSS, MAX_RSS_SOURCE = c.GLIDEIN_RESOURCE_MAX_RSS_BYTES, c.GLIDEIN_RESOURCE_MAX_RSS_SOURCE
MAX_RSS_KIND = c.GLIDEIN_RESOURCE_MAX_RSS_KIND
RSS_SAMPLED = c.GLIDEIN_RESOURCE_RSS_MAX_SAMPLED_BYTES
DISK_FREE, DISK_FREE_MIN = c.GLIDEIN_RESOURCE_DISK_FREE_BYTES, c.GLIDEIN_RESOURCE_DISK_FREE_MIN_BYTES
LOAD1, LOAD1_MAX = c.GLIDEIN_RESOURCE_LOAD1, c.GLIDEIN_RESOURCE_LOAD1_MAX
WINDOW = c.GLIDEIN_RESOURCE_WINDOW_S
SOURCE_CGROUP, SOURCE_HWM, SOURCE_JOB_AD = "cgroup.memory.peak", "proc.vmhwm", "job.ResidentSetSize"
SOURCE_CGROUP_V1, SOURCE_PHASE = "cgroup.memory.max_usage_in_bytes", "phase.samples"
# the kernel's peak file the setup hook found (the root's `@memory_peak`) -> its source
CGROUP_SOURCES = {"memory.peak": SOURCE_CGROUP, "memory.max_usage_in_bytes": SOURCE_CGROUP_V1}
# what each source's figure is: the kernel's own high-water mark of everything the span holds
# (exact); a value the memory really reached at one instant (a lower bound of the peak); or
# each live process's own peak summed (an estimate: peaks of different instants add up, and
# a process that ended between two readings is not counted)
KIND_EXACT, KIND_LOWER_BOUND, KIND_ESTIMATE = "exact", "lower_bound", "estimate"
KIND_OF_SOURCE = {SOURCE_CGROUP: KIND_EXACT, SOURCE_CGROUP_V1: KIND_EXACT, SOURCE_HWM: KIND_ESTIMATE,
                  SOURCE_JOB_AD: KIND_LOWER_BOUND, SOURCE_PHASE: KIND_LOWER_BOUND}
NODE_FIGURES = (DISK_FREE, DISK_FREE_MIN, LOAD1, LOAD1_MAX)   # the node's, also on a job


def _numbers(fields: dict, names: dict) -> dict:
    """The finite numbers among ``fields``' ``names`` (field -> our name)."""
    out = {}
    for name, attr in names.items():
        try:
            value = float(fields[name])
        except (KeyError, TypeError, ValueError):
            continue
        if math.isfinite(value):
            out[attr] = value
    return out


class ResourceTimeline:
    """The readings of one glidein, in time order, and the runs the sampler folded."""

    def __init__(self):
        self._times: list[float] = []
        self._readings: list[dict] = []
        self._run_starts: list[float] = []                  # folded runs, by first reading
        self._runs: list[tuple[float, dict]] = []           # (last reading, extremes)
        self._mpeak_until: list | None = None               # last memory.peak at each index
        self.cgroup_source = SOURCE_CGROUP                   # which kernel file r.mpeak read

    def add(self, time: float, fields: dict) -> None:
        values = _numbers(fields, FIELDS)
        if values:
            self._insert(time, values)
        first = _numbers(fields, {"a.t0": "t0", "a.utime0": "utime", "a.stime0": "stime"})
        t0 = first.pop("t0", None)
        if t0 is None or not t0 <= time:
            return
        if first:
            self._insert(t0, first)
        extremes = {}
        for name, (attr, keep) in RUN_FIELDS.items():
            value = _numbers(fields, {name: attr}).get(attr)
            candidates = [v for v in (value, values.get(attr)) if v is not None]
            if candidates:
                extremes[attr] = keep(candidates)
        index = bisect.bisect_right(self._run_starts, t0)
        self._run_starts.insert(index, t0)
        self._runs.insert(index, (time, extremes))

    def _insert(self, time: float, values: dict) -> None:
        index = bisect.bisect_right(self._times, time)
        self._times.insert(index, time)
        self._readings.insert(index, values)
        self._mpeak_until = None

    def __len__(self):
        return len(self._times)

    def over(self, start: float, end: float) -> dict:
        """What the readings inside [start, end] say, as ``glidein.resource.*`` attributes:
        CPU used between the first and last of them that have CPU (with ``window_s``, their
        distance), memory (``_memory``), disk free and load1 at the last that has each and
        their extremes, with those of the folded runs that lie wholly inside. Empty when no
        reading lies inside."""
        if start is None or end is None:
            return {}
        first = bisect.bisect_left(self._times, start)
        stop = bisect.bisect_right(self._times, end)
        inside = self._readings[first:stop]
        if not inside:
            return {}
        times = self._times[first:stop]
        runs = [extremes for t1, extremes in self._runs[bisect.bisect_left(self._run_starts, start):
                                                         bisect.bisect_right(self._run_starts, end)]
                if t1 <= end]
        out = {}
        with_cpu = [i for i, r in enumerate(inside) if "utime" in r or "stime" in r]
        if len(with_cpu) >= 2:
            a, b = inside[with_cpu[0]], inside[with_cpu[-1]]
            for attr, name in ((CPU_USER, "utime"), (CPU_SYSTEM, "stime")):
                if name in a and name in b:
                    out[attr] = round(max(0.0, b[name] - a[name]), 6)
            out[WINDOW] = round(times[with_cpu[-1]] - times[with_cpu[0]], 6)
        out.update(self._memory(inside, runs, first))
        for attr, extreme, name, keep in ((DISK_FREE, DISK_FREE_MIN, "disk_free", min),
                                          (LOAD1, LOAD1_MAX, "load1", max)):
            seen = [r[name] for r in inside + runs if name in r]
            if not seen:
                continue
            last = next((r[name] for r in reversed(inside) if name in r), None)
            kind = int if name == "disk_free" else float
            if last is not None:
                out[attr] = kind(last)
            out[extreme] = kind(keep(seen))
        return out

    def _memory(self, inside: list, runs: list, first: int) -> dict:
        """The largest reading (``rss_max_sampled_bytes``) and, where the kernel kept one, the
        stage's peak with its source: cgroup memory.peak when it rose inside the stage (above
        its value at the last reading before), else the largest sum of the live processes'
        VmHWM."""
        out = {}
        rss = [r["rss"] for r in inside + runs if "rss" in r]
        if rss:
            out[RSS_SAMPLED] = int(max(rss))
        peak = next((r["mpeak"] for r in reversed(inside) if "mpeak" in r), None)
        before = self._mpeak_before(first) if peak is not None else None
        if peak is not None and (before is None or peak > before):
            out.update(peak_attributes(int(peak), self.cgroup_source))
            return out
        hwm = [r["hwm"] for r in inside + runs if "hwm" in r]
        if hwm:
            out.update(peak_attributes(int(max(hwm)), SOURCE_HWM))
        return out

    def _mpeak_before(self, index: int):
        """memory.peak at the last reading before ``index`` that has one (None: none)."""
        if self._mpeak_until is None:
            last, self._mpeak_until = None, []
            for reading in self._readings:
                last = reading.get("mpeak", last)
                self._mpeak_until.append(last)
        return self._mpeak_until[index - 1] if index > 0 else None


def job_figures(inside: dict, end_fields: dict, job_rss_bytes) -> dict:
    """A job's ``glidein.resource.*``: CPU and memory from its own ClassAd (the tree's readings
    cover every job and daemon of the glidein: ``RemoteUserCpu``/``RemoteSysCpu`` on its end
    line, ``ResidentSetSize``, HTCondor's peak), disk and load from the readings inside it."""
    out = {k: v for k, v in inside.items() if k in NODE_FIGURES}
    for field_name, attr in (("r.utime", CPU_USER), ("r.stime", CPU_SYSTEM)):
        try:
            out[attr] = float(end_fields[field_name])
        except (KeyError, ValueError):
            pass
    if job_rss_bytes is not None:
        out.update(peak_attributes(int(job_rss_bytes), SOURCE_JOB_AD))
    return out


def peak_attributes(value: int, source: str) -> dict:
    """A memory figure with what it is: ``max_rss_bytes``, its source and its kind."""
    return {MAX_RSS: value, MAX_RSS_SOURCE: source, MAX_RSS_KIND: KIND_OF_SOURCE[source]}
