"""The what-if's recommendations: on a table with one entry given a long idle tail, that
entry's Max_Idle/Max_Tail comes first with the replay's own saving and a valid <attr> line;
a change whose saving has opposite signs on the two halves of the period is not recommended;
the Factory-wide figure is the sum of the entries'; the terminal prints them first."""

import xml.etree.ElementTree as ET

import pytest

from glidein_tracing.analysis import report, whatif
from glidein_tracing.analysis.dataset import open_dataset
from glidein_tracing.analysis.whatif import Settings
from glidein_tracing.factory.config import render_block
from glidein_tracing.testing.synth import SynthConfig, entry_profiles

from tests.support.analysis_helpers import BASE, glidein_row, trace_id, write_rows, write_synth_table

CURRENT = Settings(1200.0, 400.0, 21600.0)
PLANTED = dict(glideins=6000, seed=5, entries=4, sites=2, period_s=4 * 86400, idle_tail_entry=1)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    directory = tmp_path_factory.mktemp("planted-tail")
    write_synth_table(directory, **PLANTED)
    data = open_dataset(directory)
    return directory, whatif.evaluate_grid(data, CURRENT, whatif.candidate_grid(CURRENT))


def test_the_planted_tail_comes_first_with_the_replays_saving(planted):
    directory, grid = planted
    recs = grid["recommendations"]
    name = entry_profiles(SynthConfig(**PLANTED))[1].name
    top = recs["entries"][0]
    assert top["entry"] == name
    assert {c["knob"] for c in top["changes"]} & {"GLIDEIN_Max_Idle", "GLIDEIN_Max_Tail"}
    assert "GLIDEIN_Max_Tail" in {c["knob"] for c in top["changes"]}        # the tail is what was planted
    assert top["net_core_hours_per_month"] > top["uncertainty_core_hours_per_month"] > 0
    assert min(top["halves_net_core_hours_per_month"]) > 0
    assert top["lost_jobs"] <= int(0.001 * top["jobs"]) and top["glideins"] > top["glideins_affected"] > 0
    # the same candidate replayed on that entry alone saves the same, to the core-hour
    alone = whatif.evaluate_grid(open_dataset(directory, entries=[name]), CURRENT, [Settings(**top["settings"])])
    point = next(p for p in alone["candidates"] if p["settings"] == top["settings"])
    assert abs(point["saved_core_hours"] - top["saved_core_hours"]) < 1.0
    assert point["lost_jobs"] == top["lost_jobs"]
    # per month: the period's net saving scaled to 30 days, the mean of the halves
    assert top["net_core_hours_per_month"] == pytest.approx(top["net_core_hours"] * 30 / top["days"], rel=2e-3)


def test_the_attr_line_is_the_factory_configs_layout(planted):
    _, grid = planted
    ours = ET.fromstring(next(line.strip() for line in render_block().splitlines() if line.strip().startswith("<attr ")))
    for rec in grid["recommendations"]["entries"]:
        for change in rec["changes"]:
            attr = ET.fromstring(change["attr"])
            assert attr.tag == "attr" and list(attr.attrib) == list(ours.attrib)
            assert attr.get("name") == change["knob"] and attr.get("type") == "int"
            assert float(attr.get("value")) == change["proposed_s"] != change["current_s"]


def test_the_factory_figure_is_the_sum_of_the_entries(planted):
    _, grid = planted
    recs = grid["recommendations"]
    assert len(recs["entries"]) >= 2
    assert recs["factory"]["net_core_hours_per_month"] == pytest.approx(
        sum(r["net_core_hours_per_month"] for r in recs["entries"]), abs=0.2)
    assert recs["factory"]["lost_jobs"] == sum(r["lost_jobs"] for r in recs["entries"])
    nets = [r["net_core_hours_per_month"] for r in recs["entries"]]
    assert nets == sorted(nets, reverse=True)


def test_the_terminal_prints_the_recommendations_first(planted):
    _, grid = planted
    doc = {"whatif": grid}
    lines = report.recommendations_text(doc)
    assert lines[0].startswith("RECOMMENDATIONS")
    assert "net core-h/month" in lines[1] and "jobs lost" in lines[1] and "glideins affected" in lines[1]
    assert lines[2].split()[0] == grid["recommendations"]["entries"][0]["entry"]
    assert any("Factory-wide" in line for line in lines)
    # the lines to paste paste as printed: each an <attr> alone on its line (the entry in a
    # comment above it), and the text says to replace the entry's attr, not add a second
    pasted = [line.strip() for line in lines if "<attr name=" in line]
    assert pasted and all(ET.fromstring(line).tag == "attr" for line in pasted)
    assert any("replacing the attr of the same name the entry has" in line for line in lines)
    first = grid["recommendations"]["entries"][0]["entry"]
    assert f"<!-- entry {first} -->" in [line.strip() for line in lines]


def _noise_table(directory, second_half_cut: bool):
    """Entry E1: in the first half of the period, glideins that ran no job and stopped at
    Max_Idle (a shorter Max_Idle saves 600 s each); in the second half (2 days later), either
    the same, or glideins whose first job came after 900 s, which a Max_Idle of 600 s loses:
    each is cut short and needs a replacement costing more than the idle it saves."""
    rows, jobs = [], []
    for n in range(10):
        row, _ = glidein_row(trace_id(n), condor=(0.0, 1210.0), reason="max_idle", start=BASE + 60 * n,
                             idle_no_job_s=1210.0)
        rows.append(row)
    for n in range(6):
        start = BASE + 2 * 86400 + 60 * n
        if second_half_cut:
            row, job_rows = glidein_row(trace_id(100 + n), condor=(0.0, 2410.0), jobs=((900.0, 2000.0, False),),
                                        start=start, idle_before_first_job_s=900.0)
            jobs += job_rows
        else:
            row, _ = glidein_row(trace_id(100 + n), condor=(0.0, 1210.0), reason="max_idle", start=start,
                                 idle_no_job_s=1210.0)
        rows.append(row)
    write_rows(directory, "glideins", rows)
    write_rows(directory, "jobs", jobs)
    return open_dataset(directory)


@pytest.mark.parametrize("second_half_cut", [True, False])
def test_a_saving_of_opposite_signs_on_the_two_halves_is_not_recommended(tmp_path, second_half_cut):
    data = _noise_table(tmp_path, second_half_cut)
    grid = whatif.evaluate_grid(data, CURRENT, [Settings(600.0, 400.0, 21600.0)], budget=1.0)
    recs = grid["recommendations"]
    assert grid["current_replay"]["exact"]
    if not second_half_cut:      # saves on both halves: recommended
        (rec,) = recs["entries"]
        assert rec["entry"] == "E1" and rec["changes"][0]["proposed_s"] == 600.0
        assert rec["halves_net_core_hours_per_month"][0] > 0 and rec["halves_net_core_hours_per_month"][1] > 0
        return
    assert recs["entries"] == [] and recs["factory"]["net_core_hours_per_month"] == 0
    (left_out,) = [r for r in recs["not_recommended"] if r["kind"] == "entry"]
    first, second = left_out["halves_net_core_hours_per_month"]
    assert first > 0 > second and left_out["net_core_hours"] > 0      # saves overall, but not on both halves
    assert left_out["net_core_hours_per_month"] < left_out["uncertainty_core_hours_per_month"]
    assert "uncertainty" in left_out["reason"]
