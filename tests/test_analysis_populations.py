"""analyze --compare: two populations of glideins, each measure with its difference and
interval; a planted efficiency difference between GlideinOverloadEnabled true and false is
found, and none is reported where none was planted."""

import json
from pathlib import Path

import pytest

from glidein_tracing.analysis.dataset import open_dataset
from glidein_tracing.analysis.populations import SelectionError, compare_populations
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


@pytest.fixture(scope="module")
def small_table(tmp_path_factory):
    directory = tmp_path_factory.mktemp("attacks")
    write_synth_table(directory, glideins=300, seed=3, entries=2, period_s=86400)
    return directory


@pytest.mark.parametrize("attack", [
    "true) UNION SELECT 1; COPY (SELECT 1) TO '{out}' --",            # a second statement writing a file
    "true); COPY (SELECT 1) TO '{out}'; SELECT (1",
    "(SELECT COUNT(*) FROM read_csv('/etc/passwd')) > 0",               # reading a file
    "(SELECT content FROM read_text('/etc/hostname')) = 'x'",          # a file's text in an error message
    "(SELECT COUNT(*) FROM glob('/etc/*')) > 0",                        # listing a directory
    "true /* a comment */", "/* ) */ true", "true) OR (true"])
def test_a_compare_predicate_is_one_expression_over_the_dataset_alone(small_table, tmp_path, capsys, attack):
    """Issue 42: --compare ran any SQL: a COPY ... TO wrote a file, read_csv('/etc/passwd')
    ran, read_text leaked a file through an error. One line naming the refusal, exit 2,
    nothing written, nothing of another file in the output."""
    out = tmp_path / "written.csv"
    assert main(["analyze", str(small_table), "--quiet", "--compare", attack.format(out=out), "cpus > 0"]) == 2
    captured = capsys.readouterr()
    assert not out.exists() and "root:" not in captured.err + captured.out
    assert Path("/etc/hostname").read_text().strip() not in captured.err + captured.out
    assert captured.err.count("\n") == 1 and "--compare" in captured.err


def test_a_predicate_over_its_own_dataset_still_runs_and_the_lock_holds(small_table):
    data = open_dataset(small_table)
    columns = data.columns("glideins")
    result = compare_populations(data.con, columns, "cpus >= (SELECT AVG(cpus) FROM glideins)", "cpus < 1000")
    assert result["populations"]["b"]["glideins"] > 0
    with pytest.raises(Exception, match="locked"):
        data.con.execute("SET enable_external_access=true")


def test_a_predicate_running_past_its_time_limit_is_stopped(small_table):
    data = open_dataset(small_table)
    slow = "(SELECT SUM(i * i) FROM range(1000000000000) t(i)) > 0"     # ran past a minute
    with pytest.raises(SelectionError, match="took more than 0.5 s"):
        compare_populations(data.con, data.columns("glideins"), slow, "cpus > 0", time_limit_s=0.5)
    assert data.con.execute("SELECT COUNT(*) FROM glideins").fetchone()[0] == 300     # the connection goes on
