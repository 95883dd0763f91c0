"""Windows and Frontends: --since/--until keep the glideins that ended in the period (and their
jobs), --client/--group a Frontend's, --window gives analyze_entries' recent periods, and the
per Frontend client and group section counts every glidein once."""

import json
import re

import pytest

from glidein_tracing.analysis.dataset import open_dataset
from glidein_tracing.cli.main import main

from tests.support.analysis_helpers import write_synth_table

DAY = 86400


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    directory = tmp_path_factory.mktemp("windows")
    write_synth_table(directory, glideins=3000, seed=41, entries=4, period_s=4 * DAY)
    return directory


def _doc(table, tmp_path, *args) -> dict:
    out = tmp_path / "w.json"
    assert main(["analyze", str(table), "--quiet", "--json", str(out), *args]) == 0
    return json.loads(out.read_text())


def test_since_and_until_keep_the_glideins_that_ended_in_the_period(table, tmp_path):
    con = open_dataset(table).con
    want = con.execute("SELECT COUNT(*), SUM(jobs) FROM glideins WHERE ended_at >= TIMESTAMP '2026-01-02 06:00' "
                       "AND ended_at < TIMESTAMP '2026-01-03 18:00'").fetchone()
    assert 0 < want[0] < 3000
    doc = _doc(table, tmp_path, "--since", "2026-01-02T06:00", "--until", "2026-01-03 18:00", "--whatif")
    assert (doc["stats"]["glideins"], doc["stats"]["jobs"]) == want      # the jobs of those glideins, no other
    assert doc["whatif"]["total_jobs"] <= want[1] and doc["whatif"]["current_replay"]["exact"]
    assert doc["source"]["filters"]["since"] == 1767333600.0


def test_client_and_group_filters_and_their_refusal(table, tmp_path, capsys):
    con = open_dataset(table).con
    want = con.execute("SELECT COUNT(*) FROM glideins WHERE client_group = 'overflow'").fetchone()[0]
    assert 0 < want < 3000
    doc = _doc(table, tmp_path, "--group", "overflow", "--client", "synth_frontend")
    assert doc["stats"]["glideins"] == want
    assert [(f["client"], f["group"]) for f in doc["frontends"]] == [("synth_frontend", "overflow")]
    assert main(["analyze", str(table), "--group", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no glidein of group nope" in err and "main, overflow" in err
    assert main(["analyze", str(table), "--since", "2027-01-01"]) == 2
    # the table's span in the same words as the period asked for (minutes, UTC)
    assert re.search(r"\(its glideins ended from \d{4}-\d\d-\d\d \d\d:\d\d to \d{4}-\d\d-\d\d \d\d:\d\d UTC\)$",
                     capsys.readouterr().err.strip())
    assert main(["analyze", str(table), "--since", "2026-01-03", "--until", "2026-01-02"]) == 2
    with pytest.raises(SystemExit):
        main(["analyze", str(table), "--since", "yesterday"])


def test_windows_are_analyze_entries_recent_periods(table, tmp_path):
    doc = _doc(table, tmp_path, "--window", "2h,24h,168h", "--until", "2026-01-04")
    con = open_dataset(table).con
    periods = doc["windows"]["periods"]
    assert [p["hours"] for p in periods] == [2, 24, 168] and doc["windows"]["end"] == 1767484800.0
    for p in periods:
        want = con.execute("SELECT COUNT(*) FROM glideins WHERE gwms_lasted_s IS NOT NULL AND ended_at >= "
                           "make_timestamp(?) AND ended_at < make_timestamp(?)",
                           [int(p["start"] * 1e6), int(p["end"] * 1e6)]).fetchone()[0]
        assert (p["total"]["glideins"] if p["total"] else 0) == want
        assert sum(e["glideins"] for e in p["entries"]) == want
    assert periods[0]["total"]["glideins"] < periods[1]["total"]["glideins"] < periods[2]["total"]["glideins"]


def test_the_frontend_section_counts_each_glidein_once(table, tmp_path):
    doc = _doc(table, tmp_path)
    rows = doc["frontends"]
    groups = [r for r in rows if r["group"] is not None]
    (whole,) = [r for r in rows if r["group"] is None]          # the client, over its two groups
    assert {r["group"] for r in groups} == {"main", "overflow"}
    assert sum(r["glideins"] for r in groups) == whole["glideins"] == doc["stats"]["glideins"]
    assert sum(r["jobs"] for r in groups) == whole["jobs"] == doc["stats"]["jobs"]
    for r in rows:
        assert r["efficiency_pct"] == pytest.approx(100 - r["gwms_badp"])
        assert 0 <= r["failed_pct"] <= 100 and r["gwms_glideins"] <= r["glideins"]


def test_the_reports_trend_compares_full_days_not_the_periods_edges():
    """The first day of a table holds only the glideins that ended early (short ones), the last
    only the longest: the summary's trend leaves such days out and takes the median day."""
    from glidein_tracing.analysis.html import trend_ends

    def day(n, glideins, efficiency):
        return {"day": f"2026-01-{n:02d}", "glideins": glideins, "efficiency_pct": efficiency,
                "waste_pct": 100.0 - efficiency}
    trend = [day(1, 30, 50.0)] + [day(n, 1000, 80.0 + (n > 5) * 10 + n % 2) for n in range(2, 10)] + \
        [day(10, 4, 99.7)]
    (first, last), n = trend_ends(trend)
    assert n == 4 and (first["from"], first["to"], last["from"], last["to"]) == \
        ("2026-01-02", "2026-01-05", "2026-01-06", "2026-01-09")
    assert (first["efficiency_pct"], last["efficiency_pct"]) == (80.5, 90.5)
    assert trend_ends(trend[:4]) is None          # three full days: no trend to tell


def test_a_period_with_no_glidein_in_a_table_without_end_times(tmp_path, capsys):
    """Glideins without ended_at (rows a writer left without it): the refusal says so, not
    "ended from None to None"."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    write_synth_table(tmp_path, glideins=40, seed=3, entries=2, period_s=DAY)
    for path in (tmp_path / "glideins").rglob("*.parquet"):
        table = pq.read_table(path)
        column = table.schema.get_field_index("ended_at")
        table = table.set_column(column, "ended_at", pa.nulls(len(table), table.schema.field(column).type))
        pq.write_table(table, path)
    assert main(["analyze", str(tmp_path), "--since", "2027-01-01"]) == 2
    err = capsys.readouterr().err
    assert "(none of its 40 glideins has an end time)" in err and "None" not in err
