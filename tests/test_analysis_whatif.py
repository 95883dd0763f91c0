"""The what-if replay in SQL: it reproduces the recorded waste with the current settings, it
equals a plain-Python replay of every glidein for other settings, and its rules hold on
hand-made glideins."""

import pytest

from glidein_tracing.analysis import whatif
from glidein_tracing.analysis.dataset import open_dataset
from glidein_tracing.analysis.whatif import Settings

from tests.support.analysis_helpers import glidein_row, replay_one, write_rows, write_synth_table

CURRENT = Settings(1200.0, 400.0, 21600.0)


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    directory = tmp_path_factory.mktemp("whatif")
    write_synth_table(directory, glideins=1500, seed=21, period_s=3 * 86400, kill_rate=0.05)
    return directory


def _reference(data, current, candidate) -> dict:
    """Sum of replay_one over every glidein, read row by row."""
    con = data.con
    jobs = {}
    for trace, s, e, failed, cores in con.execute(
            "SELECT j.trace_id, epoch(j.started_at) - epoch(g.condor_start_at), epoch(j.ended_at) - "
            "epoch(g.condor_start_at), j.failure_domain IS NOT NULL, g.cpus FROM jobs j JOIN glideins g USING (trace_id) "
            "WHERE g.condor_s IS NOT NULL").fetchall():
        jobs.setdefault(trace, []).append((round(s, 3), round(e, 3), failed))
    total = {"idle": 0.0, "no_job": 0.0, "bad": 0.0, "lost_jobs": 0, "cut": 0}
    for trace, L, reason, cores in con.execute(
            "SELECT trace_id, condor_s, shutdown_reason, cpus FROM glideins WHERE condor_s IS NOT NULL").fetchall():
        one = replay_one(L, jobs.get(trace, []), reason in ("max_idle", "daemon_shutdown"), cores, current, candidate)
        for key in total:
            total[key] += one[key]
    return total


def test_replaying_the_current_settings_reproduces_the_recorded_waste_exactly(table):
    grid = whatif.evaluate_grid(open_dataset(table), CURRENT, [CURRENT])
    rep = grid["current_replay"]
    assert rep["exact"] and rep["lost_jobs"] == 0
    assert rep["replayed_idle_core_hours"] == pytest.approx(rep["recorded_idle_core_hours"], abs=1e-6)
    assert rep["replayed_no_job_core_hours"] == pytest.approx(rep["recorded_no_job_core_hours"], abs=1e-6)
    assert rep["recorded_no_job_core_hours"] > 0 and rep["recorded_idle_core_hours"] > 0


@pytest.mark.parametrize("candidate", [Settings(600, 200, 21600), Settings(1800, 120, 21600), Settings(300, 60, 14400),
                                       Settings(2400, 900, 28800), Settings(1200, 400, 7200)])
def test_sql_replay_equals_the_plain_python_reference(table, candidate):
    data = open_dataset(table)
    grid = whatif.evaluate_grid(data, CURRENT, [candidate])
    point = next(p for p in grid["candidates"] if p["settings"] == candidate.as_dict())
    want = _reference(data, CURRENT, candidate)
    assert point["idle_core_hours"] == pytest.approx(want["idle"] / 3600, abs=2e-3)
    assert point["no_job_core_hours"] == pytest.approx(want["no_job"] / 3600, abs=2e-3)
    assert point["lost_jobs"] == want["lost_jobs"] and point["glideins_cut_short"] == want["cut"]


def test_rules_on_single_glideins(tmp_path):
    rows = [glidein_row("a" * 32, condor=(0, 1260), jobs=(), reason="max_idle"),          # idled out at 1200 + 60
            glidein_row("b" * 32, condor=(0, 5000), jobs=((700, 4500, False),)),          # first job after 700 s
            glidein_row("c" * 32, condor=(0, 9000), jobs=((10, 1000, False), (1300, 8500, True)))]  # 300 s gap
    write_rows(tmp_path, "glideins", [r for r, _ in rows])
    write_rows(tmp_path, "jobs", [j for _, js in rows for j in js])
    data = open_dataset(tmp_path)
    grid = whatif.evaluate_grid(data, CURRENT, [Settings(600, 200, 21600)])
    point = next(p for p in grid["candidates"] if p["settings"]["max_idle"] == 600)
    # a: no job, shut down idle: 1260 - 1200 + 600 = 660 s. b: its first job (700 s wait) is lost; it
    # ends 600 s after the start plus its startd lag (its recorded tail 500 s - Max_Tail 400 s = 100 s).
    # c: its second job (300 s gap > 200) is lost; it ends 200 s + its lag (100 s) after job 1
    assert point["lost_jobs"] == 2 and point["glideins_cut_short"] == 2
    assert point["no_job_core_hours"] == pytest.approx((660 + 700) / 3600, abs=1e-3)
    assert point["idle_core_hours"] == pytest.approx((10 + 300) / 3600, abs=1e-3)


def test_stricter_settings_save_core_hours_and_lose_jobs_looser_cost_more(table):
    grid = whatif.evaluate_grid(open_dataset(table), CURRENT, [Settings(600, 200, 21600), Settings(2400, 900, 21600)])
    strict, loose = (next(p for p in grid["candidates"] if p["settings"]["max_idle"] == i) for i in (600, 2400))
    assert strict["saved_core_hours"] > 0 and strict["lost_jobs"] > 0
    assert loose["saved_core_hours"] < 0 and loose["lost_jobs"] == 0


def test_grid_pareto_front_and_recommendation(table):
    data = open_dataset(table)
    grid = whatif.evaluate_grid(data, CURRENT, whatif.candidate_grid(CURRENT), budget=0.01)
    assert len(grid["candidates"]) == 7 * 8
    front = grid["pareto_front"]
    assert [p["lost_jobs"] for p in front] == sorted(p["lost_jobs"] for p in front)
    for p in grid["candidates"]:       # nothing beats a front point on both axes
        assert not any(q["lost_jobs"] < p["lost_jobs"] and q["saved_core_hours"] > p["saved_core_hours"] + 1e-9
                       for q in front) or p not in front
    rec = grid["recommended"]
    assert rec["expected"]["lost_jobs"] <= rec["lost_jobs_allowed"] == int(0.01 * grid["total_jobs"])
    assert set(grid["by_entry"]) == {r[0] for r in data.con.execute("SELECT DISTINCT entry FROM glideins").fetchall()}


@pytest.mark.parametrize("chunk_glideins", [400, 150])
def test_grouping_by_day_groups_and_by_sorted_keys_gives_the_same_replay(table, monkeypatch, chunk_glideins):
    """The replay's results do not depend on how the days are grouped into passes, on a day
    too big for one pass being cut into shares of its glideins, nor on which way the bins are
    grouped (lookup table or sort, for large candidate lists)."""
    candidates = [Settings(600, 200, 14400), Settings(2400, 900, 28800), CURRENT]
    whole = whatif.evaluate_grid(open_dataset(table), CURRENT, candidates)
    monkeypatch.setattr(whatif, "CHUNK_GLIDEINS", chunk_glideins)
    monkeypatch.setattr(whatif, "SPLIT_GLIDEINS", chunk_glideins)
    monkeypatch.setattr(whatif, "DENSE_GROUPS", 0)
    data = open_dataset(table)
    passes = whatif.chunks(data.con, data.days())
    assert len(passes) > 2 and (chunk_glideins > 300 or any(p.parts > 1 for p in passes))
    assert sorted(d for p in passes for d in p.days if p.part == 0) == sorted(data.days())   # every day, once
    split = whatif.evaluate_grid(data, CURRENT, candidates)
    for a, b in zip(whole["candidates"], split["candidates"]):
        assert a["settings"] == b["settings"] and {k: v for k, v in a.items() if k != "settings"} == pytest.approx(
            {k: v for k, v in b.items() if k != "settings"}, abs=2e-3)
    assert whole["by_entry"] == split["by_entry"] and whole["current_replay"]["exact"]
