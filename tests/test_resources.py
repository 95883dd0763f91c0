"""Per-stage resources: a stage carries only what the readings inside it measured."""

import pytest

from glidein_tracing.core.resources import (CPU_SYSTEM, CPU_USER, DISK_FREE, LOAD1, MAX_RSS, WINDOW,
                                       ResourceTimeline)


def timeline():
    t = ResourceTimeline()
    t.add(100.0, {"r.utime": "0", "r.stime": "0"})                         # the zero at start
    t.add(110.0, {"r.utime": "3.0", "r.stime": "0.7", "r.rss": "5000", "r.disk_free": "800"})
    t.add(140.0, {"r.utime": "7.5", "r.stime": "1.0", "r.rss": "2000", "r.load1": "0.5"})
    return t


def test_cpu_is_measured_between_the_first_and_last_reading_inside_the_stage():
    out = timeline().over(100.0, 140.0)
    assert out == {CPU_USER: 7.5, CPU_SYSTEM: 1.0, WINDOW: 40.0, MAX_RSS: 5000,
                   DISK_FREE: 800, LOAD1: 0.5}
    part = timeline().over(105.0, 150.0)          # only part of the stage was measured
    assert part[CPU_USER] == 4.5 and part[CPU_SYSTEM] == pytest.approx(0.3)
    assert part[WINDOW] == 30.0                   # and it says how much


def test_a_short_stage_between_two_samples_gets_nothing_of_the_wider_window():
    # the real case: a 0 ms validation script inside a 30 s sample window
    assert timeline().over(120.0, 120.0) == {}
    assert timeline().over(111.0, 139.0) == {}


def test_one_reading_inside_gives_memory_disk_and_load_but_no_cpu():
    out = timeline().over(135.0, 145.0)
    assert out == {MAX_RSS: 2000, LOAD1: 0.5}
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
