"""The failures section of `analyze` over the glidein table: failed glideins and jobs by domain
and error type with the core-hours each cost, outage windows per site, the top failure
messages grouped, the compare view, and trace ids linked to Jaeger in the HTML report."""

import json

import duckdb
import pytest

from glidein_tracing.analysis import compare, failures, report
from glidein_tracing.table import failed_groups
from glidein_tracing.analysis.dataset import open_dataset
from glidein_tracing.analysis.html import render_html
from glidein_tracing.analysis.stats import compute_stats
from glidein_tracing.testing.synth import Outage, SynthConfig
from glidein_tracing.cli.main import main

from tests.support.analysis_helpers import glidein_row, trace_id, write_rows, write_synth_table

DAY, HOUR = 86400.0, 3600.0
START = SynthConfig().start
OUTAGES = (Outage("SITE_Bravo", START + 2 * DAY, START + 2 * DAY + 5 * HOUR, "Network"),
           Outage("SITE_Alpha", START + 4 * DAY + 7 * HOUR, START + 4 * DAY + 10 * HOUR, "WN_Resource", 0.6))


def dataset_of(tmp_path_factory, **kwargs):
    directory = tmp_path_factory.mktemp("failures")
    write_synth_table(directory, **kwargs)
    return open_dataset(directory)


@pytest.fixture(scope="module")
def with_outages(tmp_path_factory):
    return dataset_of(tmp_path_factory, glideins=20000, seed=5, sites=4, outages=OUTAGES)


def test_injected_outages_are_found_with_their_start_end_and_cause(with_outages):
    found = failures.outage_windows(with_outages)
    assert [o["site"] for o in found] == ["SITE_Bravo", "SITE_Alpha"]
    for window, outage in zip(found, OUTAGES):
        assert abs(window["start"] - outage.start) <= HOUR and abs(window["end"] - outage.end) <= HOUR
        assert window["error_type"] == outage.error_type and window["domain"] == "site"
        assert window["failure_rate"] > 3 * window["baseline_rate"] and len(window["examples"]) == 3


@pytest.mark.parametrize("seed", [1, 2])
def test_a_seeded_run_without_outages_reports_none(tmp_path_factory, seed):
    assert failures.outage_windows(dataset_of(tmp_path_factory, glideins=30000, seed=seed, sites=6)) == []


def test_domains_add_up_to_the_failed_totals(with_outages):
    section = failures.failures_section(with_outages)
    assert section["failed_glideins"] > 0 and section["failed_jobs"] > 0
    assert sum(section["glideins_by_domain"].values()) == section["failed_glideins"]
    assert sum(c for _, _, c in section["glideins_by_domain_and_type"]) == section["failed_glideins"]
    assert sum(s["failed"] for s in section["by_site"].values()) == section["failed_glideins"]
    assert sum(sum(s["by_domain"].values()) for s in section["by_entry"].values()) == section["failed_glideins"]
    assert sum(section["jobs_by_domain"].values()) == section["failed_jobs"]
    assert set(section["jobs_by_domain"]) <= {"user_code", "preempted"}   # a killed glidein's job: preempted
    assert set(section["glidein_core_hours_by_domain"]) == set(section["glideins_by_domain"])


def test_messages_that_differ_only_in_numbers_hosts_and_paths_are_one_group(with_outages):
    con = with_outages.con
    norm = lambda text: con.execute(f"SELECT {failed_groups.normalised_sql('?')}", [text]).fetchone()[0]  # noqa: E731
    assert norm("cannot reach cvmfs-stratum3.example.org:8000 after 12 tries (timeout 30 s)") == \
        norm("cannot reach cvmfs-stratum71.example.org:8000 after 4 tries (timeout 5 s)")
    assert norm("not enough disk in /scratch/job_1: 5 MB free") == norm("not enough disk in /scratch/job_2377: 901 MB free")
    assert norm("proxy expired") != norm("disk full")
    assert norm(" job\t\tfailed  on\n\rnode  \f 7 ") == "job failed on node <n>"     # whitespace runs: one space
    disk = next(m for m in failures.top_messages(with_outages) if m["message"].startswith("not enough disk"))
    raw = con.execute("SELECT trace_id, failure_message FROM glideins WHERE failure_message LIKE 'not enough disk%'"
                      ).fetchall()
    assert disk["count"] == len(raw) > 1 and len({m for _, m in raw}) > 1     # many texts, one group
    assert set(disk["examples"]) <= {t for t, _ in raw}


def test_compare_puts_the_outage_site_first_for_failed_glideins(tmp_path_factory):
    outage = Outage("SITE_Charlie", START, START + 3 * DAY, "Network", 0.5)
    data = dataset_of(tmp_path_factory, glideins=8000, seed=8, sites=4, period_s=3 * DAY, outages=(outage,))
    section = compare.compare_section(data, compute_stats(data.con)["metrics"]["overall"])
    sites = next(d for d in section["failed"]["dimensions"] if d["dimension"] == "site")
    assert sites["values"][0]["value"] == "SITE_Charlie" and sites["values"][0]["lift"] > 2
    assert {"failed", "slow_setup", "slow_first_job"} <= set(section)
    dims = {d["dimension"] for s in section.values() for d in s["dimensions"]}
    assert {"entry", "site", "hour_of_day"} <= dims


def test_compare_counts_the_glideins_whichever_section_read_them_first(tmp_path_factory):
    """compare's counts come from the dataset's one read of all glideins, which the failures
    section shares (glidein_counts.py): the glideins' own counts, whether the failures section
    read them first (without compare's selections declared) or not."""
    directory = tmp_path_factory.mktemp("compare-order")
    write_synth_table(directory, glideins=6000, seed=3, sites=4, outages=OUTAGES[:1])
    alone, after_failures = open_dataset(directory), open_dataset(directory)
    overall = compute_stats(alone.con)["metrics"]["overall"]
    failures.failures_section(after_failures)
    section = compare.compare_section(alone, overall)
    assert compare.compare_section(after_failures, overall) == section
    of_row = {"entry": "entry", "site": "site", "cpu_model": "cpu_model", "os": "os_description",
              "hour_of_day": "CAST(hour(COALESCE(node_start_at, submitted_at)) AS VARCHAR)"}
    checked = 0
    for selection in section.values():
        cond = selection["condition"]
        for dimension in selection["dimensions"]:
            for value in dimension["values"]:
                expected = alone.con.execute(
                    f"SELECT COUNT(*) FILTER (WHERE ({cond}) IS TRUE), COUNT(*) FILTER (WHERE ({cond}) IS NOT TRUE) "
                    f"FROM glideins WHERE COALESCE(CAST({of_row[dimension['dimension']]} AS VARCHAR), '(unknown)') = ?",
                    [value["value"]]).fetchone()
                assert (value["selected"], value["rest"]) == expected
                checked += 1
    assert checked >= 10 and {"site", "hour_of_day"} <= {d["dimension"] for d in section["failed"]["dimensions"]}


def test_a_tie_between_domains_or_types_reads_the_same_every_run(tmp_path):
    """A message whose failed glideins are split evenly between domains shows the first domain
    by name, and equal counts of (domain, type) come in name order: the report is the same from
    run to run."""
    rows = []
    for i, (domain, kind, text) in enumerate([("site", "Network", "disk /a/1 full"), ("site", "Network", "disk /b/2 full"),
                                              ("glidein", "Config", "disk /c/3 full"), ("glidein", "Config", "disk /d full"),
                                              ("vo", "Network", "proxy expired")]):
        row, _ = glidein_row(trace_id(i), failure_domain=domain, failure_type=kind, failure_message=text)
        rows.append(row)
    write_rows(tmp_path, "glideins", rows)
    section = failures.failures_section(open_dataset(tmp_path))
    assert section["top_messages"][0] == {"message": "disk <path> full", "count": 4, "domain": "glidein",
                                          "examples": [trace_id(0), trace_id(1), trace_id(2)]}
    assert section["glideins_by_domain_and_type"] == [["glidein", "Config", 2], ["site", "Network", 2],
                                                      ["vo", "Network", 1]]


def test_the_report_lists_failures_and_links_trace_ids_to_jaeger(tmp_path, capsys):
    write_synth_table(tmp_path / "table", glideins=4000, seed=5, sites=4, outages=OUTAGES[:1])
    out_json, out_html = tmp_path / "a.json", tmp_path / "a.html"
    assert main(["analyze", str(tmp_path / "table"), "--json", str(out_json), "--html", str(out_html),
                 "--jaeger-ui", "http://127.0.0.1:16686/"]) == 0
    text = capsys.readouterr().out
    assert "failures:" in text and "outage SITE_Bravo: " in text
    doc = json.loads(out_json.read_text())["failures"]
    (outage,) = doc["outages"]
    page = out_html.read_text()
    for trace_id in outage["examples"] + doc["top_messages"][0]["examples"]:
        assert f"href='http://127.0.0.1:16686/trace/{trace_id}'" in page


def test_a_hostile_failure_message_is_escaped_in_the_html(with_outages):
    doc = report.analyze(with_outages)
    doc["failures"]["top_messages"] = [{"message": "<script>alert(1)</script>", "count": 1, "domain": "site",
                                        "examples": ["'><img src=x onerror=alert(1)>"]}]
    page = render_html(doc, jaeger_ui="http://j.example.org/")
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert "<img src=x" not in page


def test_the_job_total_is_every_job_of_the_glideins_analysed(tmp_path):
    """"N of M jobs" counts every job row of the glideins analysed (the whole table, or one
    entry's), failed or not, whether or not a service's windows counted the jobs per hour."""
    write_synth_table(tmp_path, glideins=3000, seed=4, sites=3)
    whole = open_dataset(tmp_path)
    entry = whole.con.execute("SELECT min(entry) FROM glideins").fetchone()[0]
    files = f"read_parquet('{tmp_path}/jobs/**/*.parquet')"
    for data, where in ((whole, ""), (open_dataset(tmp_path, entries=[entry]), f"WHERE entry = '{entry}'")):
        rows = duckdb.execute(f"SELECT COUNT(*), COUNT(failure_domain) FROM {files} {where}").fetchone()
        section = failures.failures_section(data)
        assert (section["jobs"], section["failed_jobs"]) == rows and 0 < rows[1] < rows[0]
    assert failures.failures_section(whole)["jobs"] > section["jobs"]
