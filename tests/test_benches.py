"""Every benchmark in bench/ runs in its quick mode (bench/quick.py) and prints its figures, so a
benchmark that breaks fails the suite rather than the next person who measures. No figure's
value is asserted: a quick run is too small for them to mean anything, and CI runs loaded.

The benchmarks mostly wait (on simulated jobs, export bounds, subprocesses), so the selected
ones start together, each in its own process, and each test waits for its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support.fixtures import GLIDEIN_RUN, GWMS_FRONTEND

REPO = Path(__file__).resolve().parents[1]

# benchmark: a line its quick run prints once it has measured (the last part it runs)
FIGURES = {
    "bench_analysis": "whole analysis",
    "bench_downtimes": "rows, ",
    "bench_forwarder": "ratio (forwarder / naive spans per CPU second)",
    "bench_frontend_startup": "group process CPU measured",
    "bench_frontend_waiting": "job query result, pickled",
    "bench_hostile": "stdout reader, only newlines",
    "bench_inflight": "latency max",
    "bench_install": "heavy libraries: none",
    "bench_journal": "journal section, 1 h, 2 jobs",
    "bench_live_export": "| Python never answers | shell watchdog |",
    "bench_live_stages": "| live export, collector never answers |",
    "bench_log_tail": "64 MB before it",
    "bench_metrics": "a scrape that finds no new file",
    "bench_phase": "| tail on, 50 lines |",
    "bench_quiet_pass": "x2 outputs: quiet pass",
    "bench_retention": "pass CPU median",
    "bench_rules": "rules (RuleSet.classify)",
    "bench_serve": "requests in",
    "bench_stage": "# ours / otel-cli, fresh:",
    "bench_store": "show --list, a page of 100",
    "bench_table": "backfill from the store, ",
    "bench_why_ads": "why against the floor:",
    "bench_why_estimate": "coverage of the 80 % interval:",
}
NEEDS_JAEGER = {"bench_inflight"}    # started by its test once the session's Jaeger build is had
TIMEOUT_S = 900


def test_every_benchmark_has_a_smoke_run():
    assert sorted(FIGURES) == sorted(p.stem for p in (REPO / "bench").glob("bench_*.py"))


class Run:
    """One benchmark's quick run in its own process, its output in a temporary file."""

    def __init__(self, name: str, env: dict | None = None):
        self.name = name
        self.out = tempfile.TemporaryFile("w+")
        self.process = subprocess.Popen([sys.executable, "-m", f"bench.{name}", "--quick"], cwd=REPO,
                                        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
                                        stdin=subprocess.DEVNULL, stdout=self.out, stderr=subprocess.STDOUT)

    def result(self) -> tuple[int, str]:
        try:
            code = self.process.wait(TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self.out.seek(0)
        text = self.out.read()
        self.out.close()
        return code, text


@pytest.fixture(scope="module")
def started(request):
    """The selected benchmarks (but those needing Jaeger), started at once."""
    selected = {item.callspec.params["name"] for item in request.session.items
                if item.module is request.module and hasattr(item, "callspec")}
    runs = {name: Run(name) for name in sorted(selected - NEEDS_JAEGER)}
    yield runs
    for run in runs.values():
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait()


def _go_or_cached_otel_cli() -> bool:
    from bench.bench_stage import CACHE, GO
    return (CACHE / "otel-cli").exists() or bool(shutil.which(GO))


@pytest.mark.parametrize("name", sorted(set(FIGURES) - NEEDS_JAEGER))
def test_benchmark_runs(name, started):
    if name == "bench_stage" and not _go_or_cached_otel_cli():
        pytest.skip("bench_stage measures otel-cli, built with Go: no Go here and no cached build")
    if name in ("bench_frontend_startup", "bench_frontend_waiting") and not GWMS_FRONTEND.exists():
        pytest.skip(f"{name} runs GlideinWMS's Frontend configuration: {GWMS_FRONTEND} is absent")
    if name in ("bench_live_export", "bench_live_stages") and not GLIDEIN_RUN.exists():
        pytest.skip(f"{name} runs a recorded glidein's configuration: {GLIDEIN_RUN} is absent")
    code, text = started[name].result()
    assert code == 0, f"{name} --quick exited {code}:\n{text[-3000:]}"
    assert FIGURES[name] in text, f"{name} --quick printed no figures:\n{text[-3000:]}"


@pytest.mark.jaeger
@pytest.mark.parametrize("name", sorted(NEEDS_JAEGER))
def test_benchmark_with_jaeger_runs(name, jaeger_binary):
    code, text = Run(name, {"GLIDEIN_TRACING_JAEGER_BIN": str(jaeger_binary)}).result()
    assert code == 0, f"{name} --quick exited {code}:\n{text[-3000:]}"
    assert FIGURES[name] in text, f"{name} --quick printed no figures:\n{text[-3000:]}"
