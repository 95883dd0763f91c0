"""The what-if replay: it reproduces the recorded waste with the current settings, it equals a
plain-Python replay of every glidein for other settings, its rules hold on hand-made
glideins, and it gives the same numbers from the glideins' job timelines (schema 2) as from
the jobs dataset of a table of schema 1, or of a mix of both."""

import pytest

from glidein_tracing.analysis import whatif
from glidein_tracing.analysis.dataset import open_dataset
from glidein_tracing.analysis.whatif import Settings

from tests.support.analysis_helpers import (as_schema_1, glidein_row, replay_one, timeline_mismatches, write_rows,
                                           write_synth_table)

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


@pytest.mark.parametrize("version", [2, 1])
def test_rules_on_single_glideins(tmp_path, version):
    """The same from the job timelines (schema 2) and from the jobs dataset (schema 1)."""
    rows = [glidein_row("a" * 32, condor=(0, 1260), jobs=(), reason="max_idle",   # idled out at 1200 + 60
                        version=version),
            glidein_row("b" * 32, condor=(0, 5000), jobs=((700, 4500, False),),   # first job after 700 s
                        version=version),
            glidein_row("c" * 32, condor=(0, 9000), jobs=((10, 1000, False), (1300, 8500, True)),  # 300 s gap
                        version=version)]
    write_rows(tmp_path, "glideins", [r for r, _ in rows], version=version)
    write_rows(tmp_path, "jobs", [j for _, js in rows for j in js], version=version)
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
    recs = grid["recommendations"]
    entries = {r[0]: r[1] for r in data.con.execute("SELECT entry, SUM(jobs) FROM glideins GROUP BY 1").fetchall()}
    for rec in recs["entries"]:
        assert rec["lost_jobs"] <= int(0.01 * entries[rec["entry"]]) and rec["changes"]


@pytest.mark.parametrize("chunk_glideins", [400, 150])
def test_grouping_by_day_groups_and_by_sorted_keys_gives_the_same_replay(table, monkeypatch, chunk_glideins):
    """The replay's results do not depend on how the days are grouped into passes, on a day
    too big for one pass being cut into shares of its glideins, on a pass being replayed in
    slices of its glideins, nor on which way the bins are grouped (lookup table or sort, for
    large candidate lists)."""
    candidates = [Settings(600, 200, 14400), Settings(2400, 900, 28800), CURRENT]
    whole = whatif.evaluate_grid(open_dataset(table), CURRENT, candidates)
    monkeypatch.setattr(whatif, "CHUNK_GLIDEINS", chunk_glideins)
    monkeypatch.setattr(whatif, "SPLIT_GLIDEINS", chunk_glideins)
    monkeypatch.setattr(whatif, "SLICE_GLIDEINS", chunk_glideins // 3)
    monkeypatch.setattr(whatif, "DENSE_GROUPS", 0)
    data = open_dataset(table)
    passes = whatif.chunks(data.con, data.days())
    assert len(passes) > 2 and (chunk_glideins > 300 or any(p.parts > 1 for p in passes))
    assert sorted(d for p in passes for d in p.days if p.part == 0) == sorted(data.days())   # every day, once
    split = whatif.evaluate_grid(data, CURRENT, candidates)
    for a, b in zip(whole["candidates"], split["candidates"]):
        assert a["settings"] == b["settings"] and {k: v for k, v in a.items() if k != "settings"} == pytest.approx(
            {k: v for k, v in b.items() if k != "settings"}, abs=2e-3)
    assert whole["recommendations"] == split["recommendations"] and whole["current_replay"]["exact"]


def test_the_synthetic_tables_timelines_are_its_jobs(table):
    data = open_dataset(table)
    assert timeline_mismatches(data.con) == []
    assert data.con.execute("SELECT count(*) FROM glideins WHERE jobs > 0").fetchone()[0] > 500


@pytest.fixture(scope="module")
def grid_of_table(table):
    return whatif.evaluate_grid(open_dataset(table), CURRENT, whatif.candidate_grid(CURRENT, retire=(14400, 28800)))


def test_a_table_of_schema_1_replays_from_its_jobs_to_the_same_numbers(table, grid_of_table, tmp_path):
    """Files without the job timeline (schema 1): the replay builds it from the jobs dataset and
    every number of the what-if is the same as from the timelines."""
    old = as_schema_1(table, tmp_path / "old")
    data = open_dataset(old)
    # the view gives the timeline columns no file has as NULL
    assert data.versions == [1] and data.con.execute("SELECT COUNT(job_started_at) FROM glideins").fetchone()[0] == 0
    assert whatif.evaluate_grid(data, CURRENT, whatif.candidate_grid(CURRENT, retire=(14400, 28800))) == grid_of_table


def test_a_table_mixing_schema_1_and_2_files_gives_the_same_numbers(table, grid_of_table, tmp_path):
    days = sorted(p.name.split("=", 1)[1] for p in (table / "glideins").iterdir())
    mixed = as_schema_1(table, tmp_path / "mixed", days=days[::2])
    data = open_dataset(mixed)
    assert data.versions == [1, 2]
    assert whatif.evaluate_grid(data, CURRENT, whatif.candidate_grid(CURRENT, retire=(14400, 28800))) == grid_of_table


def _four_jobs():
    return glidein_row("d" * 32, condor=(0, 20000), cores=4, reason="max_idle",
                       jobs=((100, 2000, False), (2500, 2600, True), (3500, 9000, False), (9100, 19500, True)))


def _one_glidein(tmp_path, **timeline):
    """A glidein of four jobs (two failed) written with its jobs, its timeline replaced by ``timeline``."""
    row, jobs = _four_jobs()
    row.update(timeline)
    write_rows(tmp_path, "glideins", [row])
    write_rows(tmp_path, "jobs", jobs)
    return whatif.evaluate_grid(open_dataset(tmp_path), CURRENT, whatif.candidate_grid(CURRENT))


def test_a_timeline_out_of_order_or_malformed_gives_the_numbers_of_the_jobs(tmp_path):
    """The replay does not trust the lists' order (it sorts a glidein whose starts go back),
    and lists of unequal lengths are rebuilt from the jobs dataset: never other numbers."""
    right = _one_glidein(tmp_path / "right")
    row, _ = _four_jobs()
    order = [2, 0, 3, 1]
    shuffled = {name: [row[name][i] for i in order] for name in whatif.TIMELINE}
    assert _one_glidein(tmp_path / "shuffled", **shuffled) == right
    assert _one_glidein(tmp_path / "short", job_failed=row["job_failed"][:3]) == right
    assert right["total_jobs"] == 4 and right["current_replay"]["recorded_badput_core_hours"] == pytest.approx(
        4 * (100 + 10400) / 3600, abs=1e-6)


def test_a_glidein_of_thousands_of_jobs_replays_like_the_reference(tmp_path):
    """A hostile glidein with 5,000 jobs (some of one start) beside an ordinary one."""
    many = tuple((10.0 * (i // 2), 10.0 * (i // 2) + 5 + i % 3, i % 7 == 0) for i in range(5000))
    rows = [glidein_row("e" * 32, condor=(0, 30000), jobs=many, reason="max_idle"),
            glidein_row("f" * 32, condor=(0, 5000), jobs=((700, 4500, False),))]
    write_rows(tmp_path, "glideins", [r for r, _ in rows])
    write_rows(tmp_path, "jobs", [j for _, js in rows for j in js])
    data = open_dataset(tmp_path)
    candidate = Settings(600, 3, 21600)
    point = next(p for p in whatif.evaluate_grid(data, CURRENT, [candidate])["candidates"]
                 if p["settings"] == candidate.as_dict())
    want = _reference(data, CURRENT, candidate)
    assert point["lost_jobs"] == want["lost_jobs"] > 0 and point["glideins_cut_short"] == want["cut"]
    assert point["idle_core_hours"] == pytest.approx(want["idle"] / 3600, abs=2e-3)


def test_a_day_whose_schema_1_and_2_files_compaction_merged_gives_the_same_numbers(tmp_path):
    """Compaction merges an upgraded forwarder's files with older ones into one file of schema
    2 whose older rows have no timeline: those are rebuilt from the jobs, the numbers stay."""
    from glidein_tracing.table import writer
    day = tmp_path / "glideins" / "date=2026-01-01"
    for index in range(10):
        version = 1 if index % 2 else 2
        begins = [100.0 * index + 900 * k for k in range(index)]
        row, jobs = glidein_row(f"{index:032x}", condor=(0, 9000), version=version, reason="max_idle",
                                jobs=tuple((b, b + 600, k == 1) for k, b in enumerate(begins)))
        write_rows(tmp_path, "glideins", [row], name=f"part-{index:02d}", version=version)
        write_rows(tmp_path, "jobs", jobs, name=f"part-{index:02d}", version=version)
    candidates = [Settings(600, 200, 21600), Settings(300, 120, 4000), CURRENT]
    before = whatif.evaluate_grid(open_dataset(tmp_path), CURRENT, candidates)
    assert writer.compact(day, "glideins") and len(list(day.glob("*.parquet"))) == 1
    data = open_dataset(tmp_path)
    assert data.versions == [2]
    assert data.con.execute("SELECT count(*) FROM glideins WHERE job_started_at IS NULL").fetchone()[0] == 5
    assert whatif.evaluate_grid(data, CURRENT, candidates) == before and before["total_jobs"] == 45
