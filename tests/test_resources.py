"""Per-stage resources: a stage carries only what the readings inside it measured."""

import pytest

from glidein_tracing.core.resources import (CPU_SYSTEM, CPU_USER, DISK_FREE, DISK_FREE_MIN, LOAD1,
                                       LOAD1_MAX, MAX_RSS, MAX_RSS_SOURCE, RSS_SAMPLED, WINDOW,
                                       ResourceTimeline)


def timeline():
    t = ResourceTimeline()
    t.add(100.0, {"r.utime": "0", "r.stime": "0"})                         # the zero at start
    t.add(110.0, {"r.utime": "3.0", "r.stime": "0.7", "r.rss": "5000", "r.disk_free": "800"})
    t.add(140.0, {"r.utime": "7.5", "r.stime": "1.0", "r.rss": "2000", "r.load1": "0.5"})
    return t


def test_cpu_is_measured_between_the_first_and_last_reading_inside_the_stage():
    out = timeline().over(100.0, 140.0)
    assert out == {CPU_USER: 7.5, CPU_SYSTEM: 1.0, WINDOW: 40.0, RSS_SAMPLED: 5000,
                   DISK_FREE: 800, DISK_FREE_MIN: 800, LOAD1: 0.5, LOAD1_MAX: 0.5}
    assert MAX_RSS not in out     # readings alone are no peak: named for what they are
    part = timeline().over(105.0, 150.0)          # only part of the stage was measured
    assert part[CPU_USER] == 4.5 and part[CPU_SYSTEM] == pytest.approx(0.3)
    assert part[WINDOW] == 30.0                   # and it says how much


def test_a_short_stage_between_two_samples_gets_nothing_of_the_wider_window():
    # the real case: a 0 ms validation script inside a 30 s sample window
    assert timeline().over(120.0, 120.0) == {}
    assert timeline().over(111.0, 139.0) == {}


def test_one_reading_inside_gives_memory_disk_and_load_but_no_cpu():
    out = timeline().over(135.0, 145.0)
    assert out == {RSS_SAMPLED: 2000, LOAD1: 0.5, LOAD1_MAX: 0.5}
    assert CPU_USER not in timeline().over(105.0, 115.0)


def test_cpu_never_negative_when_a_counter_goes_down():
    t = ResourceTimeline()
    t.add(10.0, {"r.utime": "5"})
    t.add(20.0, {"r.utime": "4"})                 # a reaped child left the tree unaccounted
    assert t.over(0.0, 30.0)[CPU_USER] == 0.0


def test_unparsable_readings_are_ignored():
    t = ResourceTimeline()
    t.add(10.0, {"r.utime": "x", "r.rss": "oops"})
    assert len(t) == 0 and t.over(0.0, 30.0) == {}


def folded(t0, t1, **extra):
    """A folded `sample` line's fields as the sampler writes them (docs/journal.md)."""
    fields = {"r.utime": "9.0", "r.stime": "2.0", "r.rss": "4000", "r.disk_free": "700",
              "r.load1": "1.00", "r.hwm": "6000", "a.n:i": "20", "a.t0": str(t0),
              "a.utime0": "1.0", "a.stime0": "0.5"}
    fields.update(extra)
    return t1, fields


def test_a_folded_run_gives_the_same_figures_as_its_raw_readings():
    t = ResourceTimeline()
    t.add(*folded(100.0, 700.0, **{"a.rss_max": "9000", "a.disk_free_min": "300",
                                   "a.load1_max": "3.50", "a.hwm_max": "12000"}))
    out = t.over(90.0, 710.0)
    # CPU between the run's first and last reading, the extremes of the readings in between
    assert out[CPU_USER] == 8.0 and out[CPU_SYSTEM] == 1.5 and out[WINDOW] == 600.0
    assert out[RSS_SAMPLED] == 9000 and out[DISK_FREE_MIN] == 300 and out[LOAD1_MAX] == 3.5
    assert out[DISK_FREE] == 700 and out[LOAD1] == 1.0                 # the last reading
    assert (out[MAX_RSS], out[MAX_RSS_SOURCE]) == (12000, "proc.vmhwm")
    # a stage holding only part of the run gets its end readings, never its extremes
    part = t.over(650.0, 710.0)
    assert part[RSS_SAMPLED] == 4000 and part[DISK_FREE_MIN] == 700 and CPU_USER not in part


def test_an_extreme_equal_to_the_last_reading_may_be_left_out():
    t = ResourceTimeline()
    t.add(*folded(100.0, 700.0))
    out = t.over(0.0, 800.0)
    assert out[RSS_SAMPLED] == 4000 and out[DISK_FREE_MIN] == 700 and out[MAX_RSS] == 6000


def test_cgroup_peak_counts_for_a_stage_only_when_it_rose_there():
    t = ResourceTimeline()
    t.add(10.0, {"r.rss": "100", "r.mpeak": "5000", "r.hwm": "300"})
    t.add(20.0, {"r.rss": "100", "r.mpeak": "5000", "r.hwm": "200"})     # no new peak
    t.add(30.0, {"r.rss": "100", "r.mpeak": "8000", "r.hwm": "400"})     # a new peak
    assert (t.over(0, 15)[MAX_RSS], t.over(0, 15)[MAX_RSS_SOURCE]) == (5000, "cgroup.memory.peak")
    assert (t.over(25, 35)[MAX_RSS], t.over(25, 35)[MAX_RSS_SOURCE]) == (8000, "cgroup.memory.peak")
    # the peak did not move in [15, 25]: the stage's own peak is not known; the VmHWM sum is
    assert (t.over(15, 25)[MAX_RSS], t.over(15, 25)[MAX_RSS_SOURCE]) == (200, "proc.vmhwm")
    assert t.over(0, 40)[MAX_RSS] == 8000                              # the whole glidein


def test_hostile_folded_fields_are_ignored():
    t = ResourceTimeline()
    t.add(*folded(900.0, 700.0))                     # a run that ends before it starts
    t.add(50.0, {"r.rss": "nan", "a.t0": "inf", "a.rss_max": "x"})
    assert t.over(0.0, 1000.0)[RSS_SAMPLED] == 4000 and len(t) == 1


def test_the_roots_peak_is_at_least_every_stages_a_job_that_ran_between_readings_included():
    """The tree's readings (setup's, teardown's) never saw the job: it ran between them. Its
    peak, HTCondor's (ResidentSetSize, KiB), is the glidein's peak too; a phase's likewise."""
    from glidein_tracing.core.converter import convert
    from glidein_tracing.core.journal import format_line, parse_lines
    from tests.support.journal_builders import root_lines
    mib = 1024 * 1024
    lines = root_lines(1000.0) + [  # a reading in setup: 14 MiB
        format_line(1001, "sample", "-", {"r.rss": str(14 * mib), "r.hwm": str(14 * mib)}),
        format_line(1010, "end", "setup", {"@status": "OK"}),
        format_line(1010, "start", "condor", {"@stage": "condor.start", "@name": "condor"}),
        format_line(1011, "start", "job/s#1.0#9", {"@stage": "job", "@name": "job", "@parent": "condor"}),
        format_line(1019, "end", "job/s#1.0#9", {"job.exit_by": "exit", "job.exit_code:i": "0",
                                                 "job.rss_bytes:i": str(28 * mib)}),
        format_line(1030, "end", "condor", {}),
        format_line(1031, "start", "teardown", {"@name": "teardown", "@stage": "teardown",
                                                "r.rss": str(9 * mib), "r.hwm": str(10 * mib)}),
        format_line(1032, "end", "teardown", {}), format_line(1032, "end", "glidein", {})]
    spans = convert(*parse_lines("".join(lines).encode()))
    by_stage = {s.attributes["glidein.stage"]: s.attributes for s in spans}
    assert by_stage["setup"][MAX_RSS] == 14 * mib and by_stage["job"][MAX_RSS] == 28 * mib
    assert by_stage["glidein"][MAX_RSS] == 28 * mib
    assert by_stage["glidein"][MAX_RSS_SOURCE] == "job.ResidentSetSize"
    assert by_stage["glidein"]["glidein.resource.max_rss_kind"] == "lower_bound"   # HTCondor's samples
    # without the job the root keeps its own readings' peak and source
    spans = convert(*parse_lines("".join(line for line in lines if "job/" not in line).encode()))
    root = next(s for s in spans if s.attributes["glidein.stage"] == "glidein").attributes
    assert (root[MAX_RSS], root[MAX_RSS_SOURCE]) == (14 * mib, "proc.vmhwm")
    assert root["glidein.resource.max_rss_kind"] == "estimate"


def test_the_roots_peak_names_the_kernel_file_the_setup_hook_found():
    """A cgroup v1 host's peak is memory.max_usage_in_bytes: the root's start line names it, and
    the root's figure is that exact peak, kept over a job's larger sampled figure."""
    from glidein_tracing.core.converter import convert
    from glidein_tracing.core.journal import format_line, parse_lines
    from tests.support.journal_builders import root_lines
    mib = 1024 * 1024
    lines = root_lines(1000.0)
    lines[0] = lines[0].rstrip("\n") + "\t@memory_peak=memory.max_usage_in_bytes\n"
    lines += [format_line(1001, "sample", "-", {"r.rss": str(14 * mib), "r.mpeak": str(30 * mib)}),
              format_line(1010, "end", "setup", {"@status": "OK"}),
              format_line(1031, "start", "teardown", {"@name": "teardown", "@stage": "teardown",
                                                      "r.rss": str(9 * mib), "r.mpeak": str(40 * mib)}),
              format_line(1032, "end", "teardown", {}), format_line(1032, "end", "glidein", {})]
    spans = convert(*parse_lines("".join(lines).encode()))
    root = next(s for s in spans if s.attributes["glidein.stage"] == "glidein").attributes
    assert (root[MAX_RSS], root[MAX_RSS_SOURCE], root["glidein.resource.max_rss_kind"]) \
        == (40 * mib, "cgroup.memory.max_usage_in_bytes", "exact")
    assert "@memory_peak" not in root and not any(k.startswith("@") for k in root)
