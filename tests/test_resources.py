"""Per-stage resource windows: the figures a stage carries come from its bracketing samples."""

import pytest

from glidein_tracing.resources import CPU_USER, DISK_FREE, MAX_RSS, WINDOW, ResourceTimeline


def timeline():
    t = ResourceTimeline()
    t.add(100.0, {"r.utime": "1.0", "r.stime": "0.5", "r.rss": "1000", "r.disk_free": "900"})
    t.add(110.0, {"r.utime": "3.0", "r.stime": "0.7", "r.rss": "5000", "r.disk_free": "800"})
    t.add(120.0, {"r.utime": "7.5", "r.stime": "1.0", "r.rss": "2000"})   # disk not re-read
    return t


def test_stages_between_the_same_samples_share_figures_and_others_get_their_own():
    t = timeline()
    first, second = t.window(101.0, 102.0), t.window(103.5, 109.0)
    assert first == second == {CPU_USER: 2.0, "glidein.resource.cpu_system_s": pytest.approx(0.2),
                               WINDOW: 10.0, MAX_RSS: 5000, DISK_FREE: 800}
    later = t.window(111.0, 119.0)
    assert later[CPU_USER] == 4.5 and later[MAX_RSS] == 5000 and later[DISK_FREE] == 800
    spanning = t.window(105.0, 115.0)
    assert spanning[CPU_USER] == 6.5 and spanning[WINDOW] == 20.0


def test_before_the_first_sample_the_process_start_is_the_zero_point():
    t = timeline()
    assert t.window(95.0, 99.0, origin=90.0)[CPU_USER] == 1.0       # counters were 0 at 90
    assert CPU_USER not in t.window(95.0, 99.0)                      # no origin: unknown
    assert t.window(95.0, 99.0, origin=94.0)[WINDOW] == 6.0          # origin to first sample


def test_a_stage_ending_before_it_starts_gets_no_negative_usage():
    t = timeline()
    out = t.window(115.0, 105.0)   # clock skew between writers
    assert all(v >= 0 for v in out.values())


def test_memory_is_the_largest_reading_in_the_window_or_else_the_next_one():
    t = ResourceTimeline()
    t.add(100.0, {"r.utime": "1", "r.rss": "3000"})
    t.add(110.0, {"r.utime": "2"})                    # a sample without a memory reading
    t.add(120.0, {"r.utime": "3"})
    t.add(130.0, {"r.utime": "4", "r.rss": "7000"})
    assert t.window(101.0, 109.0)[MAX_RSS] == 3000    # the reading at the window's start
    assert t.window(111.0, 119.0)[MAX_RSS] == 7000    # none inside: the next reading
    assert t.window(95.0, 135.0, origin=90.0)[MAX_RSS] == 7000
