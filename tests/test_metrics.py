"""The forwarder's metrics without Prometheus: the data-loss margin from the ledger, the table
read per day and once per finished day, counters kept across a restart, the listener's setting."""

from __future__ import annotations

import shutil
import socket
import time
import urllib.request

import pytest

from glidein_tracing.core.errors import ConfigError
from glidein_tracing.factory import settings
from glidein_tracing.factory.factory_xml import default_log_retention
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.factory.metrics import ForwarderCollector, MetricsServer, TableCounts, record_pass
from glidein_tracing.factory.stats import ForwardStats
from glidein_tracing.testing import synth, synth_table


def samples(collector) -> dict:
    """{(metric sample name, labels...): value} of one collection."""
    return {(s.name, *sorted(s.labels.items())): s.value for family in collector.collect() for s in family.samples}


def one(values: dict, name: str) -> float:
    (value,) = [v for k, v in values.items() if k[0] == name]
    return value


def test_the_data_loss_margin_is_job_logs_min_days_less_the_oldest_unread_outputs_age(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    now = time.time()
    for proc, ended_days_ago, read in ((0, 1.5, False), (1, 0.2, False), (2, 5.0, True)):
        gkey = f"/entry|100.{proc}"
        ledger.upsert_glidein(gkey, "/entry", "inst", "E", 100, proc)
        ledger.mark_ended(gkey, now - ended_days_ago * 86400)
        if read:                             # forwarded: its output no longer matters
            ledger.mark_done(gkey, 3)
    ledger.close()
    retention = default_log_retention()
    retention["job_logs"]["min_days"] = 2.0
    values = samples(ForwarderCollector("fac", None, tmp_path / "ledger.sqlite", retention))
    age = one(values, "glidein_tracing_forwarder_oldest_unread_output_age_seconds")
    assert age == pytest.approx(1.5 * 86400, abs=60)
    assert one(values, "glidein_tracing_forwarder_data_loss_margin_seconds") == pytest.approx(0.5 * 86400, abs=60)


def test_pass_tallies_live_in_the_ledger_so_a_restart_keeps_them(tmp_path):
    path = tmp_path / "ledger.sqlite"
    for spans in (7, 5):                     # two processes, one pass each
        ledger = Ledger(path)
        stats = ForwardStats(spans_sent=spans, early_spans_sent=1, export_failures=1, quarantined=1,
                             table_rows=3)
        stats.problem("classifier_disabled", 2)
        ledger.bump("classifier_disabled", 2)
        record_pass(ledger, stats, 1000.0, 1002.5)
        ledger.close()
    values = samples(ForwarderCollector("fac", None, path, default_log_retention()))
    assert one(values, "glidein_tracing_forwarder_passes_total") == 2
    assert one(values, "glidein_tracing_forwarder_spans_sent_total") == 14
    assert one(values, "glidein_tracing_forwarder_export_failures_total") == 2
    assert one(values, "glidein_tracing_forwarder_glideins_quarantined_total") == 2
    assert one(values, "glidein_tracing_forwarder_table_rows_total") == 6
    assert one(values, "glidein_tracing_forwarder_last_pass_timestamp_seconds") == 1002.5
    assert one(values, "glidein_tracing_forwarder_last_pass_duration_seconds") == 2.5
    assert one(values, "glidein_tracing_forwarder_classifiers_disabled") == 2
    problem = ("glidein_tracing_forwarder_problems_total", ("factory", "fac"), ("kind", "classifier_disabled"))
    assert values[problem] == 4


def refreshed(counts):
    with counts.lock:
        return counts.refresh()


def counted(counts) -> dict:
    """{(entry, outcome): glideins} of a TableCounts' total."""
    out = {}
    for key, values in counts.total.glideins.items():
        if values[0]:
            out[(key[1], key[6])] = out.get((key[1], key[6]), 0) + values[0]
    return out


def test_each_file_is_read_once_and_the_total_follows_files_added_and_removed(tmp_path):
    table = tmp_path / "table"
    synth_table.write_table(synth.SynthConfig(glideins=600, seed=3, period_s=3 * 86400), table)
    counts = TableCounts(table)
    refreshed(counts)
    whole = counted(counts)
    assert sum(whole.values()) == 600
    first = {key: pair[1] for key, pair in counts.files.items()}
    assert len(first) >= 6                                                  # glidein and job files of 3+ days
    refreshed(counts)
    assert all(counts.files[key][1] is kept for key, kept in first.items())    # nothing read again
    (day_dir, *_) = sorted((table / "glideins").glob("date=*"))
    (moved,) = list(day_dir.glob("*.parquet"))
    aside = tmp_path / moved.name
    moved.rename(aside)                                                     # a file gone: its rows too
    refreshed(counts)
    partial = counted(counts)
    assert 0 < sum(partial.values()) < 600
    assert all(counts.files[key][1] is kept for key, kept in first.items() if key[1] != moved)
    aside.rename(moved)                                                     # back: the same total as at first
    refreshed(counts)
    assert counted(counts) == whole
    assert sum(v[1] for v in counts.total.histograms.values()) > 0


def test_a_bad_listen_address_is_refused_in_one_line():
    assert settings.check("metrics_listen", "127.0.0.1:9101") is None
    assert settings.check("metrics_listen", "[::1]:9101") is None
    for bad in ("9101", "host:", "host:http", "host:70000", ":9101"):
        assert "must be HOST:PORT" in settings.check("metrics_listen", bad), bad


def test_a_port_in_use_is_one_clear_error(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"metrics_listen: cannot listen on 127.0.0.1:{port}"):
            MetricsServer(ForwarderCollector("fac", None, tmp_path / "l.sqlite", default_log_retention()),
                          ("127.0.0.1", port))


def test_the_listener_serves_openmetrics_with_exemplars_when_asked(tmp_path):
    table = tmp_path / "table"
    synth_table.write_table(synth.SynthConfig(glideins=300, seed=4, period_s=86400), table)
    Ledger(tmp_path / "l.sqlite").close()
    server = MetricsServer(ForwarderCollector("fac", table, tmp_path / "l.sqlite", default_log_retention()),
                           ("127.0.0.1", 0))
    try:
        url = f"http://127.0.0.1:{server.port}/metrics"
        text = urllib.request.urlopen(url, timeout=30).read().decode()
        asked = urllib.request.Request(url, headers={"Accept": "application/openmetrics-text; version=1.0.0"})
        with urllib.request.urlopen(asked, timeout=30) as answer:
            assert answer.headers["Content-Type"].startswith("application/openmetrics-text")
            open_metrics = answer.read().decode()
    finally:
        server.stop()
    assert "# {trace_id=" not in text and "glidein_tracing_glideins_total{" in text
    assert '# {trace_id="' in open_metrics and open_metrics.rstrip().endswith("# EOF")


def test_the_frontend_label_is_the_client_name_less_its_group(tmp_path):
    """GlideinWMS names a Frontend group's client <frontend>.<group> (the Factory's
    glidefactoryclient ads show it, e.g. FE_H6.main): the frontend label strips the group."""
    from tests.support.analysis_helpers import write_rows
    rows = [{"schema_version": 2, "trace_id": f"{i:032x}", "factory": "F", "entry": "E", "site": "S", "client": client,
             "client_group": group, "outcome": "ok", "node_start_at": 1_767_225_600.0, "ended_at": 1_767_229_200.0,
             "setup_s": 60.0} for i, (client, group) in
            enumerate((("FE_H6.main", "main"), ("FE_H6.overflow", "overflow"), ("standalone", "main"),
                       ("x.main", None)))]
    write_rows(tmp_path / "table", "glideins", rows)
    values = samples(ForwarderCollector("F", tmp_path / "table", tmp_path / "absent.sqlite", default_log_retention()))
    found = {(dict(k[1:])["frontend"], dict(k[1:])["client"]) for k in values
             if k[0] == "glidein_tracing_glideins_total"}
    assert found == {("FE_H6", "FE_H6.main"), ("FE_H6", "FE_H6.overflow"), ("standalone", "standalone"),
                     ("x.main", "x.main")}
