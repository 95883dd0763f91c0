"""The forwarder's /metrics scraped by a real Prometheus (Debian's package): the outcome counts
and the waste per entry that PromQL reads back equal ``analyze --json``'s over the same table,
the demo's and a synthetic one; a scrape passes ``promtool check metrics``; the duration
buckets carry trace ids as exemplars."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from glidein_tracing.testing import synth, synth_table

PROMETHEUS, PROMTOOL = shutil.which("prometheus"), shutil.which("promtool")
REPO = Path(__file__).resolve().parent.parent
RULES = REPO / "factory_config" / "glidein-tracing-alerts.yaml"
DASHBOARD = REPO / "factory_config" / "glidein-tracing-grafana.json"
pytestmark = pytest.mark.skipif(
    PROMETHEUS is None and not os.environ.get("CI"),
    reason="Debian's prometheus package is not installed (tests/run.sh installs it when run as root)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, accept: str | None = None, timeout: float = 10) -> bytes:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return answer.read()


def wait_for(what: str, check, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            got = check()
            if got:
                return got
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def cli(*args, timeout=600):
    proc = subprocess.run([sys.executable, "-m", "glidein_tracing", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


class Forwarder:
    """``glidein-tracing forward --follow --metrics-listen 127.0.0.1:PORT``, stopped by SIGTERM."""

    def __init__(self, tmp: Path, *args):
        self.port = free_port()
        self.log_path = tmp / "forward.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([sys.executable, "-m", "glidein_tracing", "forward", "--follow", "--interval", "1",
                                      "--metrics-listen", f"127.0.0.1:{self.port}", *args],
                                     stdout=self.log, stderr=subprocess.STDOUT, cwd=REPO)
        self.url = f"http://127.0.0.1:{self.port}/metrics"
        wait_for("the forwarder's first pass", self.passed)

    def passed(self) -> bool:
        if self.proc.poll() is not None:
            self.log.close()
            raise AssertionError(f"the forwarder stopped: {(self.log_path).read_text()[-2000:]}")
        return b"glidein_tracing_forwarder_last_pass_timestamp_seconds" in get(self.url)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=60) == 0
        self.log.close()


class Prometheus:
    """A Prometheus server on 127.0.0.1 scraping ``target`` every second (exemplars stored)."""

    def __init__(self, tmp: Path, target: str):
        self.port = free_port()
        config = tmp / "prometheus.yml"
        config.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                          f"rule_files: ['{RULES}']\n"
                          f"scrape_configs:\n  - job_name: forwarder\n    static_configs:\n"
                          f"      - targets: ['{target}']\n")
        self.log = open(tmp / "prometheus.log", "w")
        self.proc = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp / 'tsdb'}",
                                      f"--web.listen-address=127.0.0.1:{self.port}",
                                      "--enable-feature=exemplar-storage"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.api = f"http://127.0.0.1:{self.port}/api/v1"
        wait_for("a scrape of the forwarder", lambda: self.query('up{job="forwarder"} == 1'))
        wait_for("the glidein series", lambda: self.query("glidein_tracing_glideins_total"))

    def query(self, promql: str) -> list:
        answer = json.loads(get(f"{self.api}/query?" + urllib.parse.urlencode({"query": promql})))
        assert answer["status"] == "success", answer
        return answer["data"]["result"]

    def by(self, promql: str, *labels) -> dict:
        return {tuple(r["metric"].get(name, "") for name in labels): float(r["value"][1]) for r in self.query(promql)}

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.log.close()


def documented_promql() -> list:
    """The PromQL expressions of docs/metrics.md's promql blocks (comments dropped)."""
    text = (REPO / "docs" / "metrics.md").read_text()
    out = []
    for block in text.split("```promql\n")[1:]:
        expression = []
        for line in block.split("```")[0].splitlines() + ["#"]:
            if line.startswith("#"):
                if expression:
                    out.append(" ".join(expression))
                expression = []
            else:
                expression.append(line.strip())
    assert out
    return out


def dashboard_promql() -> list:
    """The dashboard's panel queries as Grafana sends them (all factories and entries)."""
    doc = json.loads(DASHBOARD.read_text())
    return [target["expr"].replace("$factory", ".*").replace("$entry", ".*").replace("$__rate_interval", "5m")
            for panel in doc["panels"] for target in panel.get("targets", [])]


def check_against_analyze(tmp: Path, table: Path, *forward_args):
    report = json.loads(cli("analyze", str(table), "--json", "-", "--quiet"))["stats"]
    forwarder = Forwarder(tmp, *forward_args)
    try:
        scrape = get(forwarder.url)
        if PROMTOOL:
            checked = subprocess.run([PROMTOOL, "check", "metrics"], input=scrape, capture_output=True, timeout=60)
            assert checked.returncode == 0, checked.stdout + checked.stderr
        prometheus = Prometheus(tmp, f"127.0.0.1:{forwarder.port}")
        try:
            outcomes = prometheus.by("sum by (entry, outcome) (glidein_tracing_glideins_total)", "entry", "outcome")
            expected = {(entry, outcome): float(n) for entry, counts in report["outcomes"]["by_entry"].items()
                        for outcome, n in counts.items()}
            assert outcomes == expected
            assert sum(outcomes.values()) == report["glideins"] > 0
            waste = prometheus.by("sum by (entry, category) (glidein_tracing_waste_core_seconds_total) / 3600",
                                  "entry", "category")
            categories = ("validation", "idle", "no_job", "other", "badput", "goodput")
            by_entry = report["waste_core_hours"]["by_entry"]
            assert {entry for entry, _ in waste} == set(by_entry)
            for entry, rows in by_entry.items():
                for category in categories:     # analyze rounds each to 3 digits
                    assert waste[(entry, category)] == pytest.approx(rows[category], abs=2e-3), (entry, category)
            jobs = prometheus.by("sum(glidein_tracing_jobs_total)")
            assert jobs[()] == report["jobs"]
            failed = prometheus.by('sum(glidein_tracing_jobs_total{verdict!="ok"})')
            assert failed.get((), 0.0) == report["failed_jobs"]
            exemplars = json.loads(get(f"{prometheus.api}/query_exemplars?" + urllib.parse.urlencode(
                {"query": "glidein_tracing_glidein_validation_seconds_bucket", "start": 0,
                 "end": time.time() + 60})))["data"]
            traced = {e["labels"]["trace_id"] for series in exemplars for e in series["exemplars"]}
            assert traced and all(len(t) == 32 for t in traced)
            assert prometheus.by("glidein_tracing_forwarder_passes_total")
            for expression in documented_promql():       # docs/metrics.md's examples run as written
                assert prometheus.query(expression) is not None
            for expression in dashboard_promql():        # and the dashboard's panels, with its variables
                assert prometheus.query(expression) is not None, expression
            rules = json.loads(get(f"{prometheus.api}/rules"))["data"]["groups"]
            assert [r["name"] for g in rules for r in g["rules"]] and all(
                r["health"] in ("ok", "unknown") for g in rules for r in g["rules"]), rules
            wait_for("the rules' evaluation", lambda: all(r["health"] == "ok" for g in json.loads(
                get(f"{prometheus.api}/rules"))["data"]["groups"] for r in g["rules"]), timeout=30)
        finally:
            prometheus.stop()
    finally:
        forwarder.stop()
    return report


def test_prometheus_reads_the_demos_outcomes_and_waste_as_analyze_does(tmp_path):
    root = tmp_path / "demo"
    cli("demo", "--glideins", "5", "--store", str(tmp_path / "store"), "--keep", str(root))
    factory = root / "factory"
    # the demo's own Factory, resumed by a following forwarder: nothing is new, nothing sent again
    report = check_against_analyze(tmp_path, factory / "glidein-table", str(factory / "client_logs"),
                                   "--factory-config", str(factory / "glideinWMS.xml"),
                                   "--state", str(factory / "forwarder.sqlite"), "--store", str(tmp_path / "store"))
    assert report["glideins"] == 5


def test_prometheus_reads_a_synthetic_tables_outcomes_and_waste_as_analyze_does(tmp_path):
    table = tmp_path / "table"
    synth_table.write_table(synth.SynthConfig(glideins=3000, seed=7, period_s=3 * 86400), table)
    logs = tmp_path / "logs"
    (logs / "user_frontend" / "glidein_gfactory_instance" / "entry_ENTRY_Alpha_0").mkdir(parents=True)
    check_against_analyze(tmp_path, table, str(logs), "--factory", "synth_factory", "--schedd", "s@f",
                          "--table", str(table), "--state", str(tmp_path / "ledger.sqlite"),
                          "--store", str(tmp_path / "store"))
