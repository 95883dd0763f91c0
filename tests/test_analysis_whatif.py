"""What-if replay: current settings reproduce the recording; the model's rules hold."""

import random

import numpy as np
import pytest

from glidein_tracing.analysis import stats, synth, whatif
from glidein_tracing.analysis.timeline import GlideinTimeline, TimelineTable
from glidein_tracing.analysis.whatif import Replayer, Settings, replay_one

CURRENT = Settings(1200.0, 400.0, 21600.0)


@pytest.fixture(scope="module")
def recorded():
    cfg = synth.SynthConfig(glideins=6000, seed=21, kill_rate=0.05, validation_failure_rate=0.05)
    timelines = list(synth.generate_timelines(cfg))
    return timelines, TimelineTable.from_timelines(timelines)


def test_replaying_the_current_settings_reproduces_the_recorded_waste_exactly(recorded):
    _, table = recorded
    d = stats.Derived(table)
    r = Replayer(table, CURRENT, d).run(CURRENT)
    assert int(r.lost_jobs.sum()) == 0
    np.testing.assert_allclose(r.idle_before, d.idle_before, atol=1e-9)
    np.testing.assert_allclose(r.idle_between, d.idle_between, atol=1e-9)
    np.testing.assert_allclose(r.tail, d.tail, atol=1e-9)
    np.testing.assert_allclose(r.no_job, d.no_job, atol=1e-9)
    np.testing.assert_allclose(r.badput_core_s, d.badput_core_s, atol=1e-6)  # prefix sums: rounding only
    recorded_waste = stats.compute_stats(table, d)["waste_core_hours"]["overall"]
    grid = whatif.evaluate_grid(table, CURRENT, [CURRENT], derived=d)
    check = grid["current_replay"]
    assert check["exact"]
    assert check["replayed_idle_core_hours"] == pytest.approx(recorded_waste["idle"], abs=1e-3)
    assert check["replayed_no_job_core_hours"] == pytest.approx(recorded_waste["no_job"], abs=1e-3)
    (point,) = grid["candidates"]
    assert point["saved_core_hours"] == 0 and point["lost_jobs"] == 0


def test_reproduction_also_holds_for_settings_the_recording_violates():
    """A glidein whose recorded idle exceeds the 'current' knob (e.g. the knob was changed
    mid-way, or is wrong) must still replay to itself."""
    timelines = list(synth.generate_timelines(synth.SynthConfig(glideins=1500, seed=4, max_idle=1800,
                                                                 max_tail=900)))
    table = TimelineTable.from_timelines(timelines)
    claimed = Settings(600.0, 120.0, 7200.0)
    d = stats.Derived(table)
    r = Replayer(table, claimed, d).run(claimed)
    assert int(r.lost_jobs.sum()) == 0
    np.testing.assert_allclose(r.tail + r.no_job, d.tail + d.no_job, atol=1e-9)


@pytest.mark.parametrize("candidate", [
    Settings(600, 120, 14400), Settings(3600, 1200, 28800), Settings(300, 60, 21600),
    Settings(1200, 200, 10000), Settings(900, 400, 21600), Settings(1200, 400, 3600),
])
def test_vectorized_replay_equals_the_plain_python_reference(recorded, candidate):
    timelines, table = recorded
    r = Replayer(table, CURRENT).run(candidate)
    for row in random.Random(1).sample(range(len(timelines)), 1500):
        ref = replay_one(timelines[row], CURRENT, candidate)
        got = {"idle_before": r.idle_before[row], "idle_between": r.idle_between[row], "tail": r.tail[row],
               "no_job": r.no_job[row], "lost_jobs": r.lost_jobs[row], "badput_core_s": r.badput_core_s[row],
               "lost_core_s": r.lost_core_s[row]}
        for key, value in got.items():
            assert value == pytest.approx(ref[key], abs=0.01), (row, key)


def tl(jobs, condor=(0.0, 2000.0), reason="daemon_shutdown", cores=1.0):
    return GlideinTimeline(trace_id="t", entry="E", site="S", cores=cores, outcome="ok", shutdown_reason=reason,
                           node_start=-60.0, node_end=condor[1] + 5, setup_s=60.0, condor_start=condor[0],
                           condor_end=condor[1], jobs=tuple((s, e, 0, False, cores) for s, e in jobs))


def test_rules_on_single_glideins():
    # first job after 1000 s: lost with Max_Idle 600, the glidein ends at 600 (+ its lag: 0 here)
    g = tl([(1000, 1500)], condor=(0, 1900))           # tail 400 = Max_Tail: ended on its own
    r = replay_one(g, CURRENT, Settings(600, 400, 21600))
    assert r["lost_jobs"] == 1 and r["no_job"] == pytest.approx(600) and r["tail"] == 0
    # a 500 s gap between jobs: later jobs lost with Max_Tail 300; the tail is then 300
    g = tl([(10, 100), (600, 700), (720, 800)], condor=(0, 1200))
    r = replay_one(g, CURRENT, Settings(1200, 300, 21600))
    assert r["lost_jobs"] == 2 and r["tail"] == pytest.approx(300) and r["idle_between"] == 0
    # the tail is cut to Max_Tail, and grows with a longer one when it ended on its own
    assert replay_one(g, CURRENT, Settings(1200, 200, 21600))["tail"] == pytest.approx(200)
    assert replay_one(g, CURRENT, Settings(1200, 600, 21600))["tail"] == pytest.approx(600)
    # ... but not when the site killed it: then only cuts apply
    killed = tl([(10, 100)], condor=(0, 350), reason="sigterm")
    assert replay_one(killed, CURRENT, Settings(1200, 600, 21600))["tail"] == pytest.approx(250)
    assert replay_one(killed, CURRENT, Settings(1200, 100, 21600))["tail"] == pytest.approx(100)
    # retire: a job starting after the retire time is lost, an idle glidein stops at retire
    g = tl([(10, 5000), (5100, 9000)], condor=(0, 9400))
    r = replay_one(g, CURRENT, Settings(1200, 400, 5050))
    assert r["lost_jobs"] == 1 and r["tail"] == pytest.approx(50)


def test_stricter_settings_save_core_hours_and_lose_jobs_looser_cost_more(recorded):
    _, table = recorded
    replayer = Replayer(table, CURRENT)
    base = replayer.run(CURRENT).waste_core_hours()
    strict = replayer.run(Settings(300, 60, 21600))
    loose = replayer.run(Settings(3600, 1200, 21600))
    strict_w, loose_w = strict.waste_core_hours(), loose.waste_core_hours()
    total = lambda w: float((w["idle"] + w["no_job"]).sum())  # noqa: E731
    assert total(strict_w) < total(base) < total(loose_w)
    assert strict.lost_jobs.sum() > 0 and loose.lost_jobs.sum() == 0
    # monotone in each knob
    previous = None
    for tail in (60, 120, 200, 300, 400, 600):
        lost = int(replayer.run(Settings(1200, tail, 21600)).lost_jobs.sum())
        assert previous is None or lost <= previous
        previous = lost


def test_grid_pareto_front_and_recommendation(recorded):
    _, table = recorded
    grid = whatif.evaluate_grid(table, CURRENT, whatif.candidate_grid(CURRENT, retire=[14400, 21600]))
    points = grid["candidates"]
    assert len(points) == len(whatif.candidate_grid(CURRENT, retire=[14400, 21600]))
    front = grid["pareto_front"]
    for p in front:   # nothing on the front is dominated
        assert not any(q["lost_jobs"] <= p["lost_jobs"] and q["saved_core_hours"] > p["saved_core_hours"] + 1e-9
                       for q in points)
    rec = grid["recommended"]
    assert rec["expected"]["lost_jobs"] <= rec["lost_jobs_allowed"]
    allowed = [p for p in points if p["lost_jobs"] <= rec["lost_jobs_allowed"]]
    assert rec["expected"]["net_saved_core_hours"] == max(p["net_saved_core_hours"] for p in allowed)
    generous = whatif.evaluate_grid(table, CURRENT, whatif.candidate_grid(CURRENT), budget=0.2)
    assert generous["recommended"]["expected"]["saved_core_hours"] > 0
    assert set(grid["by_entry"]) == set(table.names["entry"])


def test_empty_table_replays_to_nothing():
    table = TimelineTable.empty()
    grid = whatif.evaluate_grid(table, CURRENT, whatif.candidate_grid(CURRENT))
    assert grid["current_replay"]["exact"] and grid["total_jobs"] == 0
    assert all(p["lost_jobs"] == 0 for p in grid["candidates"])


def test_grid_with_threads_is_the_grid_without(recorded):
    table = recorded[1]
    candidates = whatif.candidate_grid(CURRENT, retire=(14400.0, 21600.0))
    serial = whatif.evaluate_grid(table, CURRENT, candidates, threads=1)
    assert whatif.evaluate_grid(table, CURRENT, candidates, threads=3) == serial


def test_grid_totals_equal_the_sums_of_the_per_glidein_replay(recorded):
    _, table = recorded
    d = stats.Derived(table)
    replayer = Replayer(table, CURRENT, d)
    entry, ne = table.g["entry"], len(table.names["entry"])
    candidates = whatif.candidate_grid(CURRENT, retire=(14400.0, 21600.0, 28800.0))
    assert len(candidates) > 100
    cut_any = 0
    for s in candidates:
        r, t = replayer.run(s), replayer.totals(s)
        w = r.waste_core_hours()
        assert t.idle_core_hours == pytest.approx(float(w["idle"].sum()), rel=1e-9, abs=1e-9)
        assert t.no_job_core_hours == pytest.approx(float(w["no_job"].sum()), rel=1e-9, abs=1e-9)
        assert t.badput_core_hours == pytest.approx(float(w["badput"].sum()), rel=1e-9, abs=1e-9)
        assert t.lost_jobs == int(r.lost_jobs.sum())
        assert t.lost_core_s == pytest.approx(float(r.lost_core_s.sum()), rel=1e-9, abs=1e-9)
        assert t.glideins_cut_short == int((r.lost_jobs > 0).sum())
        idle = w["idle"] + w["no_job"]
        np.testing.assert_allclose(t.idle_by_entry, np.bincount(entry, weights=idle, minlength=ne),
                                   rtol=1e-9, atol=1e-9)
        np.testing.assert_array_equal(t.lost_by_entry, np.bincount(entry, weights=r.lost_jobs, minlength=ne))
        np.testing.assert_array_equal(t.cut_by_entry, np.bincount(entry[r.lost_jobs > 0], minlength=ne))
        cut_any += t.glideins_cut_short > 0
    assert cut_any > 10      # the candidates do cut glideins short: the corrections are exercised
