"""Synthetic traces with KNOWN settings: the analysis must recover what the generator did."""

import math

import numpy as np
import pytest

from glidein_tracing.analysis import stats, synth
from glidein_tracing.analysis.sources import ReadReport, load_table
from glidein_tracing.analysis.timeline import GLIDEIN_FLOAT_COLUMNS, TimelineTable, timeline_from_spans

from tests.support.analysis_helpers import write_synth_store


@pytest.fixture(scope="module")
def known_store(tmp_path_factory):
    directory = tmp_path_factory.mktemp("synth-known")
    cfg = write_synth_store(directory, glideins=3000, seed=11, max_idle=900.0, max_tail=250.0,
                            retire=14400.0, kill_rate=0.03)
    return directory, cfg


def test_same_seed_same_traces_other_seed_other_traces():
    a = [t.trace_id for t in synth.generate_timelines(synth.SynthConfig(glideins=50, seed=3))]
    b = [t.jobs for t in synth.generate_timelines(synth.SynthConfig(glideins=50, seed=3))]
    c = [t.jobs for t in synth.generate_timelines(synth.SynthConfig(glideins=50, seed=4))]
    assert len(set(a)) == 50
    assert b == [t.jobs for t in synth.generate_timelines(synth.SynthConfig(glideins=50, seed=3))]
    assert b != c


def test_spans_round_trip_to_the_same_timeline():
    for glidein in synth.generate(synth.SynthConfig(glideins=300, seed=5, kill_rate=0.1,
                                                    validation_failure_rate=0.1)):
        want = glidein.timeline
        got = timeline_from_spans(want.trace_id, synth.glidein_spans(glidein))
        assert (got.entry, got.site, got.cores, got.outcome, got.shutdown_reason, got.problems) == (
            want.entry, want.site, want.cores, want.outcome, want.shutdown_reason, 0)
        for name in GLIDEIN_FLOAT_COLUMNS:
            x, y = getattr(want, name), getattr(got, name)
            assert (math.isnan(x) and math.isnan(y)) or abs(x - y) < 1e-3, name
        assert [j[2:] for j in got.jobs] == [j[2:] for j in want.jobs]
        assert [v[0] for v in got.validations] == [v[0] for v in want.validations]


def test_idle_shutdowns_cluster_at_the_configured_max_idle_and_tails_at_max_tail(known_store):
    directory, cfg = known_store
    table = load_table(store=directory)
    assert len(table) == cfg.glideins
    inferred = stats.compute_stats(table)["inferred_settings"]
    assert inferred["max_idle"]["estimate_s"] == pytest.approx(cfg.max_idle, abs=10)
    assert inferred["max_tail"]["estimate_s"] == pytest.approx(cfg.max_tail, abs=10)
    d = stats.Derived(table)
    reasons = table.names["reason"]
    no_job = d.iv.has_condor & ~d.has_jobs & (table.g["reason"] == reasons.index("max_idle"))
    idle = d.iv.L[no_job]
    # every timeout shutdown lies in [knob, knob + the startd's notice lag]
    assert idle.min() >= cfg.max_idle - 0.01 and idle.max() <= cfg.max_idle + cfg.shutdown_lag_s + 0.01
    # no job starts after retire + spread
    assert d.iv.rel_s.max() <= cfg.retire + cfg.retire_spread


def test_the_analysis_counts_what_the_generator_made(known_store):
    directory, cfg = known_store
    made = TimelineTable.from_timelines(synth.generate_timelines(cfg))
    read = load_table(store=directory)
    a, b = stats.compute_stats(made), stats.compute_stats(read)
    assert a["jobs"] == b["jobs"] and a["failed_jobs"] == b["failed_jobs"]
    assert a["outcomes"] == b["outcomes"] and a["shutdown_reasons"] == b["shutdown_reasons"]
    for key, value in a["waste_core_hours"]["overall"].items():
        assert b["waste_core_hours"]["overall"][key] == pytest.approx(value, rel=1e-6, abs=1e-3), key
    assert [s["script"] for s in a["validation_scripts"]] == [s["script"] for s in b["validation_scripts"]]


def test_recorded_idle_equals_the_idle_spans_the_trace_carries():
    """Stats derive idle from job intervals; the converter-style idle spans must agree."""
    cfg = synth.SynthConfig(glideins=400, seed=9, kill_rate=0.1)
    glideins = list(synth.generate(cfg))
    table = TimelineTable.from_timelines(g.timeline for g in glideins)
    d = stats.Derived(table)
    for row, glidein in enumerate(glideins):
        spans = synth.glidein_spans(glidein)
        kinds = {}
        for s in spans:
            if s["attributes"]["glidein.stage"] == "idle":
                kind = s["attributes"]["glidein.idle.kind"]
                kinds[kind] = kinds.get(kind, 0.0) + (s["end_ns"] - s["start_ns"]) / 1e9
        assert d.idle_before[row] == pytest.approx(kinds.get("before_first_job", 0.0), abs=0.01)
        assert d.idle_between[row] == pytest.approx(kinds.get("between_jobs", 0.0), abs=0.01)
        assert d.tail[row] == pytest.approx(kinds.get("tail", 0.0), abs=0.01)
        assert d.no_job[row] == pytest.approx(kinds.get("no_job", 0.0), abs=0.01)


def test_validation_scripts_that_dominate_and_fail_are_named():
    cfg = synth.SynthConfig(glideins=3000, seed=2, validation_failure_rate=0.1)
    result = stats.compute_stats(TimelineTable.from_timelines(synth.generate_timelines(cfg)))
    scripts = result["validation_scripts"]
    # by the generator's medians, validate_node (40 s) and cvmfs (25 s) take most of the time
    assert [s["script"] for s in scripts[:2]] == ["client/validate_node.sh", "main/cvmfs_setup.sh"]
    assert sum(s["share_of_validation_time"] for s in scripts) == pytest.approx(1.0, abs=1e-3)
    by_failures = max(scripts, key=lambda s: s["failures"])
    assert by_failures["script"] == "main/cvmfs_setup.sh"          # the largest failure weight
    assert set(by_failures["error_types"]) <= {"Network", "WN_Resource"}
    assert result["validation_failed_glideins"] == sum(s["failures"] for s in scripts)
    # a failed glidein keeps the slot ~20 min: its whole life is validation waste
    assert result["waste_core_hours"]["overall"]["validation"] > 0


def test_percentiles_per_entry_and_site_match_numpy():
    cfg = synth.SynthConfig(glideins=2000, seed=8)
    table = TimelineTable.from_timelines(synth.generate_timelines(cfg))
    result = stats.compute_stats(table)
    entry = table.names["entry"][0]
    values = table.g["queue_s"][table.g["entry"] == 0]
    row = result["metrics"]["by_entry"][entry]["queue_wait_s"]
    assert row["count"] == len(values)
    for q in (50, 90, 99):
        assert row[f"p{q}"] == pytest.approx(np.percentile(values, q), abs=1e-3)
    assert set(result["metrics"]["by_site"]) == set(table.names["site"])
    jobs = result["metrics"]["overall"]["jobs_per_glidein"]
    assert jobs["count"] == int(stats.Derived(table).iv.has_condor.sum())
