"""Synthetic glidein tables with KNOWN settings: the analysis must recover what the generator did."""

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from glidein_tracing.analysis import histograms, stats
from glidein_tracing.testing import synth, synth_table
from glidein_tracing.analysis.dataset import open_dataset
from glidein_tracing.table import aggregates

from tests.support.analysis_helpers import glidein_row, write_rows, write_synth_table


@pytest.fixture(scope="module")
def known(tmp_path_factory):
    directory = tmp_path_factory.mktemp("synth-known")
    cfg = write_synth_table(directory, glideins=6000, seed=11, max_idle=900.0, max_tail=250.0, retire=14400.0,
                            kill_rate=0.03, period_s=3 * 86400)
    return directory, cfg


def test_same_seed_same_rows_other_seed_other_rows():
    a, ja = synth_table.generate_chunk(synth.SynthConfig(glideins=300, seed=3), 0, 300)
    b, jb = synth_table.generate_chunk(synth.SynthConfig(glideins=300, seed=3), 0, 300)
    c, _ = synth_table.generate_chunk(synth.SynthConfig(glideins=300, seed=4), 0, 300)
    assert list(a["trace_id"]) == list(b["trace_id"]) and len(set(a["trace_id"])) == 300
    assert np.array_equal(ja["wall_s"], jb["wall_s"]) and not np.array_equal(a["setup_s"], c["setup_s"])


def test_rows_follow_the_table_schema_one_job_row_per_job(known):
    directory, cfg = known
    glideins = ds.dataset(directory / "glideins", partitioning="hive").to_table()
    jobs = ds.dataset(directory / "jobs", partitioning="hive").to_table()
    assert glideins.num_rows == cfg.glideins and jobs.num_rows == int(np.sum(glideins["jobs"].to_numpy()))
    from glidein_tracing.table.schema import GLIDEINS
    assert [c.name for c in GLIDEINS] == [n for n in glideins.column_names if n != "date"]
    # a glidein's idle spans and jobs fill its condor phase exactly
    data = open_dataset(directory)
    worst = data.con.execute(
        "SELECT max(abs(COALESCE(idle_before_first_job_s, 0) + COALESCE(idle_between_jobs_s, 0) + COALESCE(idle_tail_s, 0)"
        " + COALESCE(idle_no_job_s, 0) + jobs_wall_s - condor_s)) FROM glideins WHERE condor_s IS NOT NULL").fetchone()[0]
    assert worst < 1e-6


def test_idle_shutdowns_cluster_at_the_configured_max_idle_and_tails_at_max_tail(known):
    directory, cfg = known
    con = open_dataset(directory).con
    seen = stats.compute_stats(con)["settings_in_force"]
    assert seen["max_idle"]["estimate_s"] == pytest.approx(cfg.max_idle, abs=10)
    assert seen["max_tail"]["estimate_s"] == pytest.approx(cfg.max_tail, abs=10)
    assert seen["recorded"] == {"max_idle": cfg.max_idle, "max_tail": cfg.max_tail, "retire": cfg.retire}
    low, high = con.execute("SELECT min(idle_no_job_s), max(idle_no_job_s) FROM glideins "
                            "WHERE shutdown_reason = 'max_idle'").fetchone()
    # every idle shutdown lies in [knob, knob + the startd's notice lag]
    assert low >= cfg.max_idle - 0.01 and high <= cfg.max_idle + cfg.shutdown_lag_s + 0.01
    latest = con.execute("SELECT max(epoch(j.started_at) - epoch(g.condor_start_at)) FROM jobs j "
                         "JOIN glideins g USING (trace_id)").fetchone()[0]
    assert latest <= cfg.retire + cfg.retire_spread


def test_percentiles_per_entry_and_site_match_numpy_within_the_bins_error(known):
    directory, _ = known
    con = open_dataset(directory).con
    doc = stats.compute_stats(con)["metrics"]
    bound = doc["max_relative_error"]
    assert not doc["exact"] and bound == pytest.approx(histograms.RELATIVE_ERROR, abs=1e-4) and bound < 0.0102
    rows = con.execute("SELECT entry, site, setup_s, queue_wait_s, CASE WHEN condor_s IS NOT NULL THEN jobs END, "
                       "epoch(ended_at) - epoch(node_start_at) FROM glideins").fetchall()
    for key, index in (("by_entry", 0), ("by_site", 1)):
        for group, metrics in doc[key].items():
            values = np.array([r[2] for r in rows if r[index] == group])
            assert metrics["setup_s"]["count"] == len(values)
            assert metrics["setup_s"]["mean"] == pytest.approx(values.mean(), abs=1e-3)
            for q in (50, 90, 99):
                assert metrics["setup_s"][f"p{q}"] == pytest.approx(np.percentile(values, q), rel=bound)
    for q in (50, 90, 99):
        assert doc["overall"]["queue_wait_s"][f"p{q}"] == pytest.approx(np.percentile([r[3] for r in rows], q), rel=bound)
        assert doc["overall"]["lifetime_s"][f"p{q}"] == pytest.approx(np.percentile([r[5] for r in rows], q), rel=bound)
        # whole numbers are kept exactly: jobs per glidein is exact
        assert doc["overall"]["jobs_per_glidein"][f"p{q}"] == np.percentile([r[4] for r in rows if r[4] is not None], q)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_histogram_percentiles_stay_within_the_bound_over_many_decades_zeros_and_negatives(seed):
    """The error bound holds for any shape: heavy tails over 12 decades, ties, zeros, negative values."""
    rng = np.random.default_rng(seed)
    values = np.concatenate([rng.lognormal(3, 4, 20000), np.zeros(500), -rng.lognormal(1, 2, 3000),
                             np.full(2000, 1200.0), rng.integers(0, 50, 5000).astype(float)])
    con = duckdb.connect()
    con.register("v", pa.table({"v": values, "g": rng.integers(0, 3, len(values))}))
    table = con.sql(f"SELECT g, histogram({aggregates.bin_sql('v')}) AS h FROM v GROUP BY g").to_arrow_table()
    maps = table["h"].combine_chunks()
    keys, counts = histograms.merged(maps.keys.to_numpy(), maps.items.to_numpy(), np.zeros(len(maps.keys)))[0]
    assert counts.sum() == len(values)
    qs = (0.001, 0.02, 0.25, 0.5, 0.9, 0.99, 0.999)
    for q, got in zip(qs, histograms.log_percentiles(keys, counts, qs)):
        want = np.percentile(values, 100 * q)
        assert abs(got - want) <= histograms.RELATIVE_ERROR * abs(want) + 1e-12, (q, got, want)


def test_waste_categories_add_up_to_the_glideins_life(known):
    directory, _ = known
    w = stats.compute_stats(open_dataset(directory).con)["waste_core_hours"]["overall"]
    parts = w["validation"] + w["idle"] + w["no_job"] + w["badput"] + w["goodput"] + w["other"]
    # the rest of the life is teardown, and the killed glideins' moments between stages
    assert parts <= w["lifetime"] + 1e-6 and parts > 0.97 * w["lifetime"]


def test_a_failed_validation_costs_the_whole_node_life_its_sleep_included(tmp_path):
    row, _ = glidein_row("f" * 32, cores=4, outcome="validation_failed", condor_s=None, condor_start_at=None,
                         setup_s=22.0, post_failure_sleep_s=1200.0, jobs=())
    row["ended_at"] = row["node_start_at"] + 22.0 + 1200.0 + 3.0     # teardown, then the ~20 min sleep
    write_rows(tmp_path, "glideins", [row])
    waste = stats.compute_stats(open_dataset(tmp_path).con)["waste_core_hours"]["overall"]
    assert waste["validation"] == pytest.approx(4 * (22 + 1200 + 3) / 3600, abs=1e-3)
    assert waste["no_job"] == waste["idle"] == waste["other"] == 0.0


def test_forged_values_neither_stop_nor_skew_the_statistics(tmp_path):
    """Values from the worker node are untrusted: infinities and NaN are left out of the
    distributions (counted nowhere), absurd and negative ones land in their own bins."""
    rows, jobs = [], []
    for index, setup in enumerate([60.0, 61.0, 62.0, float("inf"), float("nan"), -5.0, 1e300, 0.0]):
        row, job_rows = glidein_row(f"{index:032x}", setup_s=setup, jobs=((10, 500, False),))
        rows.append(row)
        jobs += job_rows
    write_rows(tmp_path, "glideins", rows)
    write_rows(tmp_path, "jobs", jobs)
    doc = stats.compute_stats(open_dataset(tmp_path).con)
    setup = doc["metrics"]["overall"]["setup_s"]
    assert doc["glideins"] == 8 and setup["count"] == 6
    finite = np.array([60.0, 61.0, 62.0, -5.0, 1e300, 0.0])
    assert setup["mean"] == pytest.approx(finite.mean(), rel=1e-9)
    assert setup["p50"] == pytest.approx(np.percentile(finite, 50), rel=histograms.RELATIVE_ERROR)
    assert doc["metrics"]["overall"]["job_runtime_s"]["p50"] == pytest.approx(490.0, rel=histograms.RELATIVE_ERROR)
