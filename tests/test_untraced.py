"""Glideins of entries that do not trace: their output comes back with no journal. They are
recorded from the Factory's view (activity log, GlideinWMS's reading of their stdout), marked
untraced, never failures, and tracing another entry changes none of their numbers."""

import dataclasses
import os
import re
import time

import pytest

from glidein_tracing.analysis.dataset import open_dataset
from glidein_tracing.analysis.html import render_html
from glidein_tracing.analysis.report import analyze, summary_text
from glidein_tracing.exporters.store import JsonLinesStoreExporter, read_store
from glidein_tracing.factory.build import build_forwarder
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.factory.settings import ForwarderSettings
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout
from glidein_tracing.table import gwms, reader

from tests.support.factory_builders import FACTORY, SCHEDD, identity, journal_text, returned_stderr, run_glidein
from tests.support.fixtures import fixture_path
from tests.support.table_helpers import factory_view

RUNS = ("success", "fail", "sigterm")
GWMS_COLUMNS = ("gwms_condor_started", "gwms_lasted_s", "gwms_validation_s", "gwms_condor_lasted_s",
                "gwms_jobs_nr", "gwms_jobs_lasted_s", "gwms_jobs_goodput_s", "gwms_jobs_terminated_s",
                "waste_validation_mill", "waste_idle_mill", "waste_nosuccess_mill", "waste_badput_mill")


def untraced_glidein(layout, log, cluster, proc, run, asked_to_trace=False):
    """A real recorded glidein (made without the plugin) returned to ``layout``'s entry, with
    the Condor-G events of its life: submitted 2 min before its own start, executing when it
    started, terminated with its exit code 2 s after its own end. ``asked_to_trace``: as if
    it had been given GLIDEIN_USE_TRACING (its PARAM_LIST names it). Returns the execute to
    terminated seconds (the Factory's own count of its life)."""
    stdout = fixture_path("glidein-run", run, "glidein_stdout.txt").read_text()
    if asked_to_trace:
        stdout = re.sub(r"^(PARAM_LIST \S+)$", r"\1,GLIDEIN_USE_TRACING", stdout, count=1, flags=re.M)
        assert "GLIDEIN_USE_TRACING" in stdout
    start = int(re.search(r"Starting glidein_startup\.sh at .*\((\d+)\)", stdout).group(1))
    end = int(re.search(r"=== Glidein ending .*\((\d+)\) with code", stdout).group(1))
    log.submit(cluster, proc, when=start - 120)
    log.grid_submit(cluster, proc, when=start - 110)
    log.execute(cluster, proc, when=start)
    layout.output(cluster, proc, "out").write_text(stdout)
    layout.output(cluster, proc, "err").write_text(fixture_path("glidein-run", run, "glidein_stderr.txt").read_text())
    old = time.time() - 3600
    for kind in ("out", "err"):
        os.utime(layout.output(cluster, proc, kind), (old, old))
    code = int(fixture_path("glidein-run", run, "glidein_exit_code.txt").read_text())
    log.terminated(cluster, proc, code, when=end + 2)
    return end + 2 - start


def forward(logs, tmp_path, **settings):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    store = tmp_path / "store"
    conf = ForwarderSettings(logs=(str(logs),), factory=FACTORY, schedd=SCHEDD, grace=5, table=str(tmp_path / "table"),
                             **settings)
    forwarder = build_forwarder(conf,
                                exporter=JsonLinesStoreExporter(store), ledger=ledger)
    stats = forwarder.run_once()
    assert stats.export_failures == 0
    rows, scan = reader.read_rows(tmp_path / "table", "glideins")
    assert not scan.problems
    return {r["trace_id"]: r for r in rows.to_pylist()}


def test_real_untraced_glideins_are_recorded_from_the_factorys_view_and_never_fail(tmp_path):
    layout = FactoryLayout(logs=tmp_path / "logs", entry="UNTRACED")
    log = CondorGLog(layout)
    factory_s = {run: untraced_glidein(layout, log, 500, proc, run) for proc, run in enumerate(RUNS)}
    rows = forward(layout.logs, tmp_path)
    traces = read_store(tmp_path / "store")
    for proc, run in enumerate(RUNS):
        trace_id = identity(layout, 500, proc).trace_id
        row = rows[trace_id]
        assert (row["traced"], row["failed"], row["outcome"]) == (False, False, "untraced"), run
        assert row["failure_domain"] is None and row["failure_stage"] is None
        assert row["trace_kept"] is True and row["queue_wait_s"] == 110
        # GlideinWMS's quantities: its formulas on what its Factory parser reads in the stdout
        stdout = fixture_path("glidein-run", run, "glidein_stdout.txt").read_text()
        factory_reading = dataclasses.replace(factory_view(stdout), factory_s=factory_s[run])
        expected = gwms.quantities(factory_reading)
        assert {k: row[k] for k in expected} == expected, run
        # the spans: the root and the Factory's stages, marked untraced, not in error
        spans = traces[trace_id]
        assert sorted(s["attributes"]["glidein.stage"] for s in spans) == ["factory.queue", "factory.submit",
                                                                          "glidein"]
        (root,) = [s for s in spans if s["attributes"]["glidein.stage"] == "glidein"]
        assert root["attributes"]["glidein.traced"] is False and root["status_code"] == 0
        assert root["attributes"]["glidein.outcome"] == "untraced" and root["name"] == "glidein UNTRACED untraced"
        assert "glidein.failure.domain" not in root["attributes"]
    # the banners by hand: success validated 7 s, HTCondor ran 5 s, no StarterLog (no job counted)
    ok = rows[identity(layout, 500, 0).trace_id]
    assert (ok["gwms_lasted_s"], ok["gwms_validation_s"], ok["gwms_condor_lasted_s"], ok["gwms_jobs_nr"]) == (13, 7, 5, 0)
    assert ok["waste_validation_mill"] == pytest.approx(1000 * 7 / 13) and ok["waste_idle_mill"] == 1000
    # the failed validation never started HTCondor (its 20 min sleep counts in Lasted); SIGTERM
    # cut HTCondor at 3 s, under GlideinWMS's 5 s: a total loss
    fail, term = (rows[identity(layout, 500, p).trace_id] for p in (1, 2))
    assert (fail["gwms_lasted_s"], fail["gwms_condor_started"], fail["waste_validation_mill"]) == (1203, False, 1000)
    assert (term["gwms_lasted_s"], term["gwms_condor_lasted_s"], term["waste_badput_mill"]) == (12, 3, 1000)


def test_failed_glideins_are_always_kept_but_untraced_ones_are_not_failed(tmp_path):
    layout = FactoryLayout(logs=tmp_path / "logs", entry="UNTRACED")
    log = CondorGLog(layout)
    untraced_glidein(layout, log, 510, 0, "fail")
    rows = forward(layout.logs, tmp_path, sampling_ratio=0.0)
    (row,) = rows.values()
    assert (row["traced"], row["failed"], row["trace_kept"]) == (False, False, False)
    assert not read_store(tmp_path / "store")


def test_a_glidein_asked_to_trace_that_returned_no_journal_is_a_failure_with_glideinwms_numbers(tmp_path):
    """Its entry traces, yet no journal came back (the node failed before our hooks ran, or
    they broke): a glidein failure, not an untraced glidein; its GlideinWMS quantities are
    still GlideinWMS's reading of its stdout."""
    layout = FactoryLayout(logs=tmp_path / "logs", entry="TRACED")
    factory_s = untraced_glidein(layout, CondorGLog(layout), 520, 0, "success", asked_to_trace=True)
    (row,) = forward(layout.logs, tmp_path).values()
    assert (row["traced"], row["failed"], row["outcome"], row["failure_domain"]) == \
        (True, True, "no_glidein_output", "glidein")
    stdout = fixture_path("glidein-run", "success", "glidein_stdout.txt").read_text()
    expected = gwms.quantities(dataclasses.replace(factory_view(stdout), factory_s=factory_s))
    assert {k: row[k] for k in expected} == expected and row["gwms_lasted_s"] == 13


def _tree(tmp_path, with_traced_entry: bool):
    """One untraced entry of the three real glideins; with ``with_traced_entry``, beside it a
    traced entry of two glideins that ran and one held and removed (a failure)."""
    logs = tmp_path / "logs"
    untraced = FactoryLayout(logs=logs, entry="UNTRACED")
    log = CondorGLog(untraced)
    for proc, run in enumerate(RUNS):
        untraced_glidein(untraced, log, 600, proc, run)
    if with_traced_entry:
        traced = FactoryLayout(logs=logs, entry="TRACED")
        log = CondorGLog(traced)
        start = 1795318000.0
        for proc in range(2):
            run_glidein(log, traced, 700, proc, start + proc,
                        returned_stderr(journal_text(traced, 700, proc, start + proc)))
        log.submit(700, 2, when=start - 120)
        log.held(700, 2, "Error connecting to schedd", code=0, when=start - 100)
        log.aborted(700, 2, when=start - 10)
    forward(logs, tmp_path)
    return analyze(open_dataset(tmp_path / "table"))


def test_tracing_one_entry_changes_no_number_of_an_untraced_entry(tmp_path):
    both = _tree(tmp_path / "both", with_traced_entry=True)
    alone = _tree(tmp_path / "alone", with_traced_entry=False)
    untraced = [e for e in both["entries"] if e["entry"] == "UNTRACED"]
    assert untraced == [e for e in alone["entries"] if e["entry"] == "UNTRACED"] and len(untraced) == 1
    assert (untraced[0]["glideins"], untraced[0]["traced"], untraced[0]["untraced"]) == (3, 0, 3)
    (traced,) = [e for e in both["entries"] if e["entry"] == "TRACED"]
    assert (traced["traced"], traced["untraced"]) == (3, 0)
    # failure statistics are the traced glideins': the removed one of three, none of the untraced
    assert (both["failures"]["failed_glideins"], both["failures"]["glideins"]) == (1, 3)
    assert list(both["failures"]["by_entry"]) == ["TRACED"]
    assert (alone["failures"]["failed_glideins"], alone["failures"]["glideins"]) == (0, 0)
    assert both["stats"]["outcomes"]["by_entry"]["UNTRACED"] == alone["stats"]["outcomes"]["by_entry"]["UNTRACED"] \
        == {"untraced": 3}
    text = summary_text(both)
    assert re.search(r"UNTRACED .* 3 +0 +3$", text, re.M) and "1 of 3 traced glideins" in text
    page = render_html(both)
    assert "<th>glideins</th><th>traced</th><th>untraced</th>" in page


def test_a_forwarder_given_the_traced_entry_alone_reads_no_other(tmp_path):
    logs = tmp_path / "logs"
    untraced, traced = FactoryLayout(logs=logs, entry="UNTRACED"), FactoryLayout(logs=logs, entry="TRACED")
    untraced_glidein(untraced, CondorGLog(untraced), 800, 0, "success")
    run_glidein(CondorGLog(traced), traced, 801, 0, 1795318000.0,
                returned_stderr(journal_text(traced, 801, 0, 1795318000.0)))
    rows = forward(traced.entry_dir, tmp_path)
    assert [(r["entry"], r["traced"]) for r in rows.values()] == [("TRACED", True)]
