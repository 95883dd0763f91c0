"""analyze --compare: two populations of glideins, each measure with its difference and
interval; a planted efficiency difference between GlideinOverloadEnabled true and false is
found, and none is reported where none was planted."""

import json

import pytest

from glidein_tracing.analysis.dataset import open_dataset
from glidein_tracing.analysis.populations import compare_populations
from glidein_tracing.cli.main import main

from tests.support.analysis_helpers import write_synth_table


@pytest.fixture(scope="module", params=[0.3, 0.0], ids=["planted", "none"])
def table(request, tmp_path_factory):
    directory = tmp_path_factory.mktemp("overload")
    write_synth_table(directory, glideins=8000, seed=17, entries=4, period_s=3 * 86400,
                      overload_job_failure=request.param)
    return directory, request.param


def test_the_overload_view_finds_a_planted_difference_and_only_then(table, tmp_path):
    directory, planted = table
    out = tmp_path / "c.json"
    assert main(["analyze", str(directory), "--quiet", "--compare", "overload", "--json", str(out)]) == 0
    p = json.loads(out.read_text())["populations"]
    a, b = p["populations"]["a"], p["populations"]["b"]
    con = open_dataset(directory).con
    assert (a["glideins"], b["glideins"]) == con.execute(
        "SELECT COUNT(*) FILTER (WHERE overload_enabled), COUNT(*) FILTER (WHERE NOT overload_enabled) "
        "FROM glideins").fetchone()
    efficiency = p["differences"]["efficiency"]
    assert efficiency["low"] < efficiency["difference"] < efficiency["high"]
    if planted:
        assert "efficiency" in p["significant"] and efficiency["high"] < 0     # overloaded: less goodput
    else:
        assert p["significant"] == []


def test_selections_by_column_or_predicate_agree_with_sql(table, tmp_path, capsys):
    directory, _ = table
    data = open_dataset(directory)
    columns = data.columns("glideins")
    by_column = compare_populations(data.con, columns, "client_group=main", "client_group=overflow")
    by_sql = compare_populations(data.con, columns, "client_group = 'main'", "client_group <> 'main'")
    assert by_column["populations"] == by_sql["populations"]
    want = data.con.execute("SELECT AVG(CASE WHEN failed THEN 1.0 ELSE 0 END), "
                            "AVG(jobs) FILTER (WHERE condor_s IS NOT NULL) FROM glideins WHERE client_group = 'main'"
                            ).fetchone()
    assert by_column["populations"]["a"]["failed"] == pytest.approx(want[0], abs=1e-6)
    assert by_column["populations"]["a"]["jobs"] == pytest.approx(want[1], abs=1e-6)
    assert main(["analyze", str(directory), "--compare", "overload_enabled=true", "overload_enabled=false"]) == 0
    text = capsys.readouterr().out
    assert "compare A: overload_enabled=true" in text and "efficiency (goodput / lifetime)" in text
    for bad in (["nope=1", "entry=x"], ["cpus >>= 8", "cpus < 8"], ["entry=NOPE", "cpus > 0"], ["a", "b", "c"]):
        assert main(["analyze", str(directory), "--compare", *bad]) == 2
        err = capsys.readouterr().err
        assert "--compare" in err
        if bad[0] == "cpus >>= 8":     # an extension's function: named, nothing downloaded or loaded
            assert "is no predicate over a glidein row" in err and '">>="' in err and "install" not in err.lower()
