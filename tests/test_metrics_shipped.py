"""What ships beside the forwarder's metrics (factory_config/): the Prometheus alert rules pass
``promtool check rules`` and fire, in promtool's own rule engine, when what they watch goes
wrong and not before; every Grafana panel's PromQL names only metrics the forwarder exports;
the Grafana data source links the exemplars' label to Jaeger."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from glidein_tracing.factory.factory_xml import default_log_retention
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.factory.metrics import ForwarderCollector, record_pass
from glidein_tracing.factory.stats import ForwardStats
from glidein_tracing.testing import synth, synth_table

REPO = Path(__file__).resolve().parent.parent
RULES = REPO / "factory_config" / "glidein-tracing-alerts.yaml"
DASHBOARD = REPO / "factory_config" / "glidein-tracing-grafana.json"
DATASOURCE = REPO / "factory_config" / "grafana-datasource.yaml"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None and not os.environ.get("CI"),
                                    reason="promtool (Debian's prometheus package) is not installed")


def promtool(*args, cwd=None):
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


@needs_promtool
def test_the_alert_rules_pass_promtool():
    checked = promtool("check", "rules", str(RULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    names = [rule["alert"] for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]
    assert names == ["GlideinTracingDataLossMargin", "GlideinTracingNoPass", "GlideinTracingEntryValidationFailures",
                     "GlideinTracingExportFailures"]


def firing(alert: str, labels: dict, at: str, summary: str, description: str) -> dict:
    """The alert, firing at ``at`` with these labels and this text (as its receiver gets it)."""
    return {"eval_time": at, "alertname": alert, "exp_alerts": [
        {"exp_labels": labels, "exp_annotations": {"summary": summary, "description": description}}]}


def quiet(alert: str, at: str) -> dict:
    return {"eval_time": at, "alertname": alert, "exp_alerts": []}


@needs_promtool
def test_each_alert_fires_when_what_it_watches_goes_wrong_and_not_before(tmp_path):
    """promtool's rule tests (Prometheus's own engine over series given minute by minute)."""
    f = 'factory="F"'
    series = [
        # the margin falls an hour a minute from two days: under a day after 24 min, firing 5 min later
        (f"glidein_tracing_forwarder_data_loss_margin_seconds{{{f}}}", "172800-3600x60"),
        # a pass a minute (its end time is the clock), then none after 10 min
        (f"glidein_tracing_forwarder_last_pass_timestamp_seconds{{{f}}}", "0+60x10 _x50"),
        # entry E: a third of its glideins fail validation; entry G: none
        (f'glidein_tracing_glideins_total{{{f}, entry="E", outcome="validation_failed"}}', "0+1x120"),
        (f'glidein_tracing_glideins_total{{{f}, entry="E", outcome="ok"}}', "0+2x120"),
        (f'glidein_tracing_glideins_total{{{f}, entry="G", outcome="ok"}}', "0+3x120"),
        # exports fail from minute 30 on
        (f"glidein_tracing_forwarder_export_failures_total{{{f}}}", "0x30 1+1x60"),
    ]
    tests = {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [{"series": name, "values": values} for name, values in series],
        "alert_rule_test": [
            quiet("GlideinTracingDataLossMargin", "26m"),
            firing("GlideinTracingDataLossMargin", {"factory": "F", "severity": "critical"}, "31m",
                   "glidein_tracing on F: outputs are read less than a day before GlideinWMS may delete them",
                   "The oldest glidein output not yet forwarded is 17h 0m 0s from the age at which GlideinWMS may "
                   "delete it (job_logs min_days). Is the forwarder stuck, or the collector down? (glidein-tracing "
                   "status)"),
            quiet("GlideinTracingNoPass", "15m"),
            firing("GlideinTracingNoPass", {"factory": "F", "severity": "critical"}, "23m",
                   "glidein_tracing: no forwarder pass for over 10 minutes",
                   "Check the glidein-tracing-forwarder service and its log "
                   "(journalctl -u glidein-tracing-forwarder)."),
            quiet("GlideinTracingEntryValidationFailures", "10m"),
            firing("GlideinTracingEntryValidationFailures", {"factory": "F", "entry": "E", "severity": "warning"},
                   "60m", "Entry E: 33.33% of its glideins failed validation in the last hour",
                   "glidein-tracing analyze TABLE --entry E names the failing scripts and their error types."),
            quiet("GlideinTracingExportFailures", "35m"),
            firing("GlideinTracingExportFailures", {"factory": "F", "severity": "warning"}, "45m",
                   "glidein_tracing on F: span exports failing",
                   "15 failed exports in 30 minutes. Is the collector (Jaeger) reachable? The forwarder's log names "
                   "the error."),
        ]}]}
    path = tmp_path / "alerts-test.yaml"
    path.write_text(yaml.safe_dump(tests))
    done = promtool("test", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr


def exported_names(tmp_path) -> set:
    """The metric names one collection of the forwarder's collector yields (samples' names:
    ``_total``, ``_bucket``, ``_sum``, ``_count`` included), over a table and a ledger after a pass."""
    table = tmp_path / "table"
    synth_table.write_table(synth.SynthConfig(glideins=200, seed=2, period_s=86400), table)
    ledger = Ledger(tmp_path / "ledger.sqlite")
    record_pass(ledger, ForwardStats(), 1.0, 2.0)
    ledger.bump("no_trace")
    ledger.close()
    collector = ForwarderCollector("F", table, tmp_path / "ledger.sqlite", default_log_retention(), tmp_path)
    return {sample.name for family in collector.collect() for sample in family.samples}


def dashboard_expressions() -> list:
    doc = json.loads(DASHBOARD.read_text())
    panels = [p for p in doc["panels"] if p["type"] != "row"]
    assert panels and all(p["targets"] for p in panels)
    return [target["expr"] for p in panels for target in p["targets"]]


def test_every_dashboard_panel_reads_metrics_the_forwarder_exports(tmp_path):
    exported = exported_names(tmp_path)
    named = set()
    for expr in dashboard_expressions():
        found = set(re.findall(r"\bglidein_tracing_[a-z_]+", expr))
        assert found, expr
        named |= found
    assert named <= exported, sorted(named - exported)
    doc = json.loads(DASHBOARD.read_text())
    heatmaps = [p for p in doc["panels"] if p["type"] == "heatmap"]
    assert len(heatmaps) == 4 and all(t.get("exemplar") for p in heatmaps for t in p["targets"])
    grid = [p["gridPos"] for p in doc["panels"]]        # no panel drawn over another
    assert not [(a, b) for i, a in enumerate(grid) for b in grid[i + 1:] if a["x"] < b["x"] + b["w"]
                and b["x"] < a["x"] + a["w"] and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]]
    variables = {v["name"]: v for v in doc["templating"]["list"]}
    for name in ("factory", "entry"):
        assert set(re.findall(r"\bglidein_tracing_[a-z_]+", variables[name]["definition"])) <= exported


def test_the_data_source_links_the_exemplars_trace_id_to_jaeger(tmp_path):
    (source,) = yaml.safe_load(DATASOURCE.read_text())["datasources"]
    (link,) = source["jsonData"]["exemplarTraceIdDestinations"]
    table = tmp_path / "table"
    synth_table.write_table(synth.SynthConfig(glideins=100, seed=2, period_s=86400), table)
    collector = ForwarderCollector("F", table, tmp_path / "absent.sqlite", default_log_retention())
    labels = {name for family in collector.collect() for s in family.samples if s.exemplar
              for name in s.exemplar.labels}
    assert labels == {link["name"]} and "/trace/${__value.raw}" in link["url"]
