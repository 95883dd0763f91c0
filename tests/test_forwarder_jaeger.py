"""Exactly once, as an operator sees it in Jaeger: the forwarder killed mid-run and
restarted, and Jaeger down mid-run and back, leave every span in Jaeger once."""

import os
import subprocess
import sys
from collections import Counter

import pytest

from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from tests.support.factory_builders import (
    FACTORY, T0, identity, journal_text, returned_stderr, run_glidein, settings_for)

pytestmark = pytest.mark.jaeger


def forward(layout, state, endpoint, query, crash_at=None):
    env = dict(os.environ)
    if crash_at:
        env["GLIDEIN_TRACING_CRASH_AT"] = crash_at
    config = state.parent / "forwarder.yaml"
    config.write_text("batch_spans: 5   # several exports a pass: a crash can fall between them\n")
    return subprocess.run(
        [sys.executable, "-m", "glidein_tracing", "forward", str(layout.logs), "--factory", FACTORY,
         "--endpoint", endpoint, "--query", query, "--state", str(state), "--grace", "5",
         "--config", str(config), "--no-progress", "--timeout", "3"],
        env=env, capture_output=True, text=True, timeout=120)


def test_killed_forwarder_leaves_every_span_in_jaeger_once(tmp_path, jaeger, jaeger_query):
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_jaeger_instance", entry="JAEGER_ENTRY")
    log = CondorGLog(layout)
    for proc in range(4):
        run_glidein(log, layout, 910, proc, T0 + proc, returned_stderr(journal_text(layout, 910, proc, T0 + proc)))
    state = tmp_path / "ledger.sqlite"
    for point in ("after_export", "after_mark_sending"):
        assert forward(layout, state, jaeger.otlp_endpoint, jaeger.query_url, point).returncode == -9
    done = forward(layout, state, jaeger.otlp_endpoint, jaeger.query_url)
    assert done.returncode == 0, done.stderr
    for proc in range(4):
        trace = identity(layout, 910, proc).trace_id
        # root, setup, teardown, factory.submit, factory.queue
        found = jaeger_query.wait_for_trace(trace, min_spans=5, raw=True)
        counts = Counter(span["spanID"] for span in found["spans"])
        assert len(counts) == 5 and set(counts.values()) == {1}, counts


def test_jaeger_down_then_back_loses_nothing(tmp_path, jaeger_binary):
    from tests.support import jaeger_harness
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_outage_instance", entry="OUTAGE_ENTRY")
    log = CondorGLog(layout)
    for proc in range(3):
        run_glidein(log, layout, 920, proc, T0, returned_stderr(journal_text(layout, 920, proc, T0)))
    state = tmp_path / "ledger.sqlite"
    with jaeger_harness.JaegerProcess(jaeger_binary, log_dir=tmp_path) as own:
        endpoint, query = own.otlp_endpoint, own.query_url
    # Jaeger is down now: the pass fails, nothing is marked sent
    assert forward(layout, state, endpoint, query).returncode == 1
    with jaeger_harness.JaegerProcess(jaeger_binary, log_dir=tmp_path) as back:
        assert forward(layout, state, back.otlp_endpoint, back.query_url).returncode == 0
        client = back.query()
        for proc in range(3):
            found = client.wait_for_trace(identity(layout, 920, proc).trace_id, min_spans=5, raw=True)
            counts = Counter(span["spanID"] for span in found["spans"])
            assert len(counts) == 5 and set(counts.values()) == {1}


def test_a_running_glideins_queue_span_is_in_jaeger_before_it_ends(tmp_path, jaeger, jaeger_query):
    """Issue 14: found by the trace id `glidein-tracing trace-id` gives, and by its entry tag."""
    import json
    import time

    from glidein_tracing.core import ids
    from glidein_tracing.exporters.otlp import make_otlp_exporter
    from glidein_tracing.factory.build import build_forwarder
    from glidein_tracing.factory.ledger import Ledger
    from tests.support.factory_builders import SCHEDD

    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_jaeger_instance", entry="JAEGER_INFLIGHT")
    log = CondorGLog(layout)
    now = time.time()
    log.submit(920, 0, when=now - 7200)
    log.grid_submit(920, 0, when=now - 7190)
    log.execute(920, 0, when=now - 60)                    # running; it has not ended
    stats = build_forwarder(settings_for(layout, schedd=SCHEDD), exporter=make_otlp_exporter(jaeger.otlp_endpoint,
                            10), ledger=Ledger(tmp_path / "l.sqlite")).run_once()
    assert stats.early_spans_sent == 2 and stats.glideins_done == 0
    trace_id = subprocess.run(
        [sys.executable, "-m", "glidein_tracing", "trace-id", "--factory", FACTORY, "--name", layout.instance,
         "--entry", layout.entry, "--schedd", SCHEDD, "--cluster", "920", "--proc", "0"],
        capture_output=True, text=True, check=True).stdout.strip()
    assert trace_id == identity(layout, 920, 0).trace_id
    queue = ids.span_id(trace_id, "factory.queue")
    trace = jaeger_query.wait_for_trace(trace_id, [queue])
    span = {s["spanID"]: s for s in trace["spans"]}[queue]
    assert span["operationName"] == "factory.queue" and span["duration"] >= 7100 * 10**6
    # an operator's search by the entry finds it too
    status, found = jaeger_query.get("/api/traces", {
        "service": "glidein", "tags": json.dumps({"glidein.entry": "JAEGER_INFLIGHT"}),
        "start": int((now - 86400) * 1e6), "end": int((now + 60) * 1e6), "limit": 20})
    assert status == 200 and trace_id in {t["traceID"] for t in found["data"]}
