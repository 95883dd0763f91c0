"""Forged receipts: span ids are computable, so anyone who reaches the collector can post spans
under a victim glidein's ids, and a journal can claim exports that never happened. The
forwarder counts a span as delivered only when the backend holds it as the forwarder would
send it (name, stage, start, end, digest): what differs is sent again, and a journal's word
alone drops nothing it can check."""

import collections
import os
import subprocess
import sys

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, TraceFlags

from glidein_tracing.core import ids
from glidein_tracing.exporters.otlp import make_otlp_exporter
from glidein_tracing.exporters.store import JsonLinesStoreExporter, read_store
from glidein_tracing.factory.build import build_forwarder
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.core.journal import format_line
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from tests.support.factory_builders import (
    FACTORY, SCHEDD, T0, identity, journal_text, returned_stderr, run_glidein, settings_for)
from tests.support.otlp_receiver import CountingCollector, collector  # noqa: F401 (fixture)

KEYS = ("glidein", "setup", "teardown", "factory.submit", "factory.queue")
STAGES = {"glidein": "glidein", "setup": "setup", "teardown": "teardown", "factory.submit": "factory.submit",
          "factory.queue": "factory.queue"}


def victim(tmp_path, cluster, extra=()):
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    run_glidein(CondorGLog(layout), layout, cluster, 0, T0,
                returned_stderr(journal_text(layout, cluster, 0, T0, extra=list(extra))))
    return layout, identity(layout, cluster, 0).trace_id


def export_record(state, trace, *keys):
    return format_line(T0 + 21, "export", "-", {"@state": state,
                                                "@spans": " ".join(ids.span_id(trace, k) for k in keys)})


def post_forgeries(endpoint, trace, keys):
    """What an attacker posts: spans under the victim's ids, names and stages, saying
    something else (other times, a marker)."""
    forged = []
    for key in keys:
        context = SpanContext(int(trace, 16), int(ids.span_id(trace, key), 16), is_remote=False,
                              trace_flags=TraceFlags(1))
        parent = None if key == "glidein" else SpanContext(int(trace, 16), int(ids.span_id(trace, "glidein"), 16),
                                                           is_remote=False, trace_flags=TraceFlags(1))
        forged.append(ReadableSpan(name=key, context=context, parent=parent, start_time=int((T0 + 5000) * 1e9),
                                   end_time=int((T0 + 5001) * 1e9),
                                   attributes={"glidein.stage": STAGES[key], "forged": True}))
    assert make_otlp_exporter(endpoint, 5).export(forged).name == "SUCCESS"


def assert_real_copies_last(trace, keys):
    """Each id of ``keys`` arrived once forged and once as the forwarder made it, real last."""
    counts = collections.Counter(CountingCollector.received)
    for key in keys:
        span_key = (trace, ids.span_id(trace, key))
        assert counts[span_key] == 2, (key, counts[span_key])
        _, last = CountingCollector.arrived[span_key]
        assert not any(kv.key == "forged" for kv in last.attributes), f"{key}: the forged copy stands"
        assert last.start_time_unix_nano < int((T0 + 5000) * 1e9)


def test_forged_spans_under_a_victims_ids_do_not_stop_a_cut_live_exports_spans(tmp_path, collector):
    # the node's export of setup and teardown was cut ("sending"); an attacker posted spans
    # under those ids and under the Factory's own stages
    layout, trace = victim(tmp_path, 900, [export_record("sending", trace_of(900), "setup", "teardown")])
    post_forgeries(collector, trace, KEYS)
    forwarder = build_forwarder(settings_for(layout, schedd=SCHEDD, grace=5, endpoint=collector, timeout=5,
                                             query=collector), ledger=Ledger(tmp_path / "l.sqlite"))
    stats = forwarder.run_once()
    assert stats.glideins_done == 1 and stats.spans_already_live == 0
    assert_real_copies_last(trace, KEYS)


def trace_of(cluster):
    layout = FactoryLayout(logs="/nonexistent", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    return identity(layout, cluster, 0).trace_id


def test_forged_spans_after_a_forwarder_crash_are_sent_over_factory_stages_included(tmp_path, collector):
    layout, trace = victim(tmp_path, 901)
    cmd = [sys.executable, "-m", "glidein_tracing", "forward", str(layout.logs), "--factory", FACTORY,
           "--schedd", SCHEDD, "--endpoint", collector, "--query", collector, "--state", str(tmp_path / "l.sqlite"),
           "--grace", "5", "--no-progress", "--timeout", "5"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    crashed = subprocess.run(cmd, env={**env, "GLIDEIN_TRACING_CRASH_AT": "after_mark_sending"},
                             capture_output=True, text=True, timeout=120)
    assert crashed.returncode == -9, crashed.stderr
    post_forgeries(collector, trace, KEYS)      # all five: the root and the Factory's stages too
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert_real_copies_last(trace, KEYS)
    # and once right, nothing more: a further pass sends nothing
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and len(CountingCollector.received) == 2 * len(KEYS)


def test_a_forged_sent_record_drops_nothing_the_backend_does_not_hold(tmp_path):
    """`export @state=sent` for the root and every node stage, none of them ever sent: with the
    store to ask, the forwarder sends them all."""
    trace = trace_of(902)
    layout, _ = victim(tmp_path, 902, [export_record("sent", trace, "glidein", "setup", "teardown",
                                                     "factory.queue")])
    store = tmp_path / "store"
    stats = build_forwarder(settings_for(layout, schedd=SCHEDD, grace=5), exporter=JsonLinesStoreExporter(store),
                            ledger=Ledger(tmp_path / "l.sqlite")).run_once()
    assert sorted(s["attributes"]["glidein.stage"] for s in read_store(store)[trace]) == sorted(STAGES.values())
    assert stats.spans_already_live == 0


def test_without_a_backend_a_sent_record_cannot_drop_the_root(tmp_path):
    """No backend to ask: node stages the journal says were sent are left out (else every
    live-exported span would arrive twice), but never the root, the glidein's whole trace."""
    trace = trace_of(903)
    layout, _ = victim(tmp_path, 903, [export_record("sent", trace, "glidein", "setup", "teardown")])
    store = tmp_path / "store"
    stats = build_forwarder(settings_for(layout, schedd=SCHEDD, grace=5), exporter=JsonLinesStoreExporter(store),
                            ledger=Ledger(tmp_path / "l.sqlite"), reconcile=None).run_once()
    stages = sorted(s["attributes"]["glidein.stage"] for s in read_store(store)[trace])
    assert stages == ["factory.queue", "factory.submit", "glidein"]
    assert stats.spans_already_live == 2 and stats.problems == {"resent_without_reconcile": 1}
