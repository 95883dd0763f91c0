"""The failures section of `analyze`: failed glideins and jobs by domain and error type with
the core-hours each cost, outage windows per site, the top failure messages grouped, and trace
ids linked to Jaeger in the HTML report."""

import json

import pytest

from glidein_tracing.analysis import failures, report, synth
from glidein_tracing.analysis.sources import load_table
from glidein_tracing.analysis.timeline import TimelineTable
from glidein_tracing.cli.main import main
from glidein_tracing.exporters.store import read_store

DAY, HOUR = 86400.0, 3600.0
START = synth.SynthConfig().start
OUTAGES = (synth.Outage("SITE_Bravo", START + 2 * DAY, START + 2 * DAY + 5 * HOUR, "Network"),
           synth.Outage("SITE_Alpha", START + 4 * DAY + 7 * HOUR, START + 4 * DAY + 10 * HOUR, "WN_Resource", 0.6))


def table_of(**kwargs) -> TimelineTable:
    return TimelineTable.from_timelines(synth.generate_timelines(synth.SynthConfig(**kwargs)))


def test_injected_outages_are_found_with_their_start_end_and_cause():
    found = failures.outage_windows(table_of(glideins=20000, seed=5, sites=4, outages=OUTAGES))
    assert [o["site"] for o in found] == ["SITE_Bravo", "SITE_Alpha"]
    for window, outage in zip(found, OUTAGES):
        assert abs(window["start"] - outage.start) <= HOUR and abs(window["end"] - outage.end) <= HOUR
        assert window["error_type"] == outage.error_type and window["domain"] == "site"
        assert window["failure_rate"] > 3 * window["baseline_rate"] and len(window["examples"]) == 3


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_seeded_run_without_outages_reports_none(seed):
    assert failures.outage_windows(table_of(glideins=30000, seed=seed, sites=6)) == []


def test_domains_add_up_to_the_failed_totals():
    section = failures.failures_section(table_of(glideins=5000, seed=9, outages=OUTAGES))
    assert section["failed_glideins"] > 0 and section["failed_jobs"] > 0
    assert sum(section["glideins_by_domain"].values()) == section["failed_glideins"]
    assert sum(c for _, _, c in section["glideins_by_domain_and_type"]) == section["failed_glideins"]
    assert sum(s["failed"] for s in section["by_site"].values()) == section["failed_glideins"]
    assert sum(sum(s["by_domain"].values()) for s in section["by_entry"].values()) == section["failed_glideins"]
    assert sum(section["jobs_by_domain"].values()) == section["failed_jobs"]
    assert set(section["jobs_by_domain"]) <= {"user_code", "preempted"}   # a killed glidein's job: preempted
    assert set(section["glidein_core_hours_by_domain"]) == set(section["glideins_by_domain"])


def test_messages_that_differ_only_in_numbers_hosts_and_paths_are_one_group():
    assert failures.normalise("cannot reach cvmfs-stratum3.example.org:8000 after 12 tries (timeout 30 s)") == \
        failures.normalise("cannot reach cvmfs-stratum71.example.org:8000 after 4 tries (timeout 5 s)")
    assert failures.normalise("not enough disk in /scratch/job_1: 5 MB free") == \
        failures.normalise("not enough disk in /scratch/job_2377: 901 MB free")
    assert failures.normalise("proxy expired") != failures.normalise("disk full")
    table = table_of(glideins=5000, seed=9)
    top = failures.top_messages(table)
    disk = next(m for m in top if m["message"].startswith("not enough disk"))
    raw = [t for t in synth.generate_timelines(synth.SynthConfig(glideins=5000, seed=9))
           if t.failure[2].startswith("not enough disk")]
    assert disk["count"] == len(raw) > 1 and len({t.failure[2] for t in raw}) > 1   # many texts, one group
    assert set(disk["examples"]) <= {t.trace_id for t in raw}


def test_the_store_path_gives_the_same_failures_as_the_generator(tmp_path):
    """Through the spans: the attributes the converter writes carry the same failure facts."""
    cfg = dict(glideins=3000, seed=4, sites=4, outages=OUTAGES)
    synth.write_store(synth.SynthConfig(**cfg), tmp_path)
    direct = failures.failures_section(table_of(**cfg))
    for fast in (True, False):
        stored = failures.failures_section(load_table(store=tmp_path, workers=1, fast=fast))
        for key in ("failed_glideins", "failed_jobs", "glideins_by_domain", "jobs_by_domain",
                    "glideins_by_domain_and_type", "outages"):
            assert stored[key] == direct[key], key
        assert [(m["message"], m["count"]) for m in stored["top_messages"]] == \
            [(m["message"], m["count"]) for m in direct["top_messages"]]


def test_the_report_lists_failures_and_links_trace_ids_to_jaeger(tmp_path, capsys):
    synth.write_store(synth.SynthConfig(glideins=4000, seed=5, sites=4, outages=OUTAGES[:1]), tmp_path / "store")
    out_json, out_html = tmp_path / "a.json", tmp_path / "a.html"
    assert main(["analyze", "--store", str(tmp_path / "store"), "--json", str(out_json), "--html", str(out_html),
                 "--jaeger-ui", "http://127.0.0.1:16686/"]) == 0
    text = capsys.readouterr().out
    assert "failures:" in text and "outage windows (" in text and "SITE_Bravo: " in text
    doc = json.loads(out_json.read_text())["failures"]
    (outage,) = doc["outages"]
    page = out_html.read_text()
    for trace_id in outage["examples"] + doc["top_messages"][0]["examples"]:
        assert f'href="http://127.0.0.1:16686/trace/{trace_id}"' in page


def test_a_hostile_failure_message_is_escaped_in_the_html():
    table = table_of(glideins=400, seed=3)
    doc = report.analyze(table)
    doc["failures"]["top_messages"] = [{"message": "<script>alert(1)</script>", "count": 1, "domain": "site",
                                        "examples": ['"><img src=x onerror=alert(1)>']}]
    page = report.render_html(doc, table, jaeger_ui="http://j.example.org/")
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert "<img src=x" not in page


def test_the_real_failed_glidein_reaches_the_report_with_its_domain_and_type(tmp_path):
    """The failing fixture glidein, forwarded with the real converter, counted by analyze."""
    from test_post_failure_sleep import forwarded
    stages, spans, _ = forwarded(tmp_path, "fail", 22 + 1200)
    root = stages["glidein"]["attributes"]
    section = failures.failures_section(load_table(store=tmp_path / "store", workers=1))
    assert section["glideins_by_domain"] == {root["glidein.failure.domain"]: 1}
    assert [tuple(p) for p in section["glideins_by_domain_and_type"]] == \
        [(root["glidein.failure.domain"], root["error.type"], 1)]
    assert section["top_messages"][0]["examples"] == [stages["glidein"]["trace_id"]]
