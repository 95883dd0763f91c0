"""Hostile glidein output (issue 11): one glidein must never stop, exhaust or forge the
Factory's forwarder. Every case runs a hostile glidein beside well-formed ones and checks
that each well-formed one is exported exactly once and the hostile one is counted."""

import os
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from glidein_tracing.core import ids
from glidein_tracing.exporters.otlp import make_otlp_exporter
from glidein_tracing.exporters.store import JsonLinesStoreExporter, iter_store, read_store
from glidein_tracing.factory import ledger as ledger_mod
from glidein_tracing.factory.delivery import MAX_ATTEMPTS
from glidein_tracing.factory.build import build_forwarder
from glidein_tracing.factory.stats import ForwardStats
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.core.journal import format_line
from glidein_tracing.core.sections import JOURNAL_SECTION, encode_section
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout
from glidein_tracing.viewers.tree import render

from tests.support.factory_builders import (
    FACTORY, SCHEDD, T0, identity, journal_text, returned_stderr, run_glidein, settings_for)
from tests.support.otlp_receiver import CountingCollector, collector  # noqa: F401 (fixture)
from tests.support.waiting import wait_until

GOOD_SPANS = 5  # root, setup, teardown, factory.submit, factory.queue


@pytest.fixture
def factory(tmp_path):
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    return layout, CondorGLog(layout)


def store_forwarder(layout, tmp_path, roots=None):
    store = tmp_path / "store"
    conf = settings_for(layout, logs=tuple(map(str, roots or [layout.logs])), grace=5, schedd=SCHEDD)
    return build_forwarder(conf, exporter=JsonLinesStoreExporter(store), ledger=Ledger(tmp_path / "ledger.sqlite"))


def good_glideins(layout, log, cluster, count):
    for proc in range(count):
        run_glidein(log, layout, cluster, proc, T0 + proc, returned_stderr(journal_text(layout, cluster, proc, T0 + proc)))
    return [identity(layout, cluster, proc).trace_id for proc in range(count)]


def assert_once_in_store(store, traces, spans_each=GOOD_SPANS):
    counts = Counter((s["trace_id"], s["span_id"]) for s in iter_store(store))
    assert all(n == 1 for n in counts.values()), "a span was stored twice"
    for trace in traces:
        assert sum(1 for t, _ in counts if t == trace) == spans_each, trace


def root_of(spans):
    (root,) = [s for s in spans if s["attributes"]["glidein.stage"] == "glidein"]
    return root


def note_lines(count, start, width=20):
    return [format_line(start + 1, "note", "-", {"@msg": f"{i:0{width}d}"}) for i in range(count)]


# -- 1. isolation: one glidein's failing request does not stop the others ------------------
@pytest.mark.jaeger
def test_oversized_requests_are_split_and_a_glidein_failing_alone_is_quarantined(factory, tmp_path, jaeger,
                                                                                jaeger_query):
    layout, log = factory
    good = good_glideins(layout, log, 1100, 3)
    # a large glidein: 400 spans of ~1 KiB, several requests at a 64 KiB limit
    steps = []
    for i in range(400):
        steps += [format_line(T0 + 2, "start", f"step/{i}", {"@name": "step", "@stage": "setup", "@parent": "setup",
                                                              "custom.text": "x" * 900}),
                  format_line(T0 + 3, "end", f"step/{i}", {})]
    run_glidein(log, layout, 1100, 3, T0, returned_stderr(journal_text(layout, 1100, 3, T0, extra=steps)))
    # a hostile glidein: one span that alone is larger than any request may be
    fat = [format_line(T0 + 1, "attr", "glidein", {f"custom.a{i}.{j}": "y" * 900 for j in range(4)})
           for i in range(30)]
    run_glidein(log, layout, 1100, 4, T0, returned_stderr(journal_text(layout, 1100, 4, T0, extra=fat)))
    ledger = Ledger(tmp_path / "ledger.sqlite")
    forwarder = build_forwarder(settings_for(layout, grace=5, schedd=SCHEDD, batch_spans=2000,
                                             endpoint=jaeger.otlp_endpoint, timeout=10, max_request_bytes=64 * 1024,
                                             query=jaeger.query_url), ledger=ledger)
    first = forwarder.run_once()
    assert first.glideins_done == 4 and first.quarantined == 0   # everyone else flowed at once
    hostile = identity(layout, 1100, 4).trace_id
    jaeger_query.wait_for_trace(hostile, min_spans=GOOD_SPANS - 1)   # all but its oversized root
    hostile_key = ledger_mod.glidein_key(str(layout.entry_dir.resolve()), 1100, 4)
    passes = 0
    while ledger.glidein(hostile_key)["status"] != ledger_mod.QUARANTINED and passes <= MAX_ATTEMPTS:
        stats = forwarder.run_once()
        passes += 1
        assert stats.glideins_done == 0
    assert stats.quarantined == 1 and passes == MAX_ATTEMPTS
    assert "refused" in ledger.quarantined()[hostile_key]
    assert forwarder.run_once().export_failures == 0             # quarantined: not retried
    expected = [(t, GOOD_SPANS) for t in good] + [(identity(layout, 1100, 3).trace_id, GOOD_SPANS + 400),
                                                  (hostile, GOOD_SPANS - 1)]
    for trace, count in expected:
        found = jaeger_query.wait_for_trace(trace, min_spans=count, raw=True)
        counts = Counter(span["spanID"] for span in found["spans"])
        assert len(counts) == count and set(counts.values()) == {1}, trace
    with ledger.transaction():
        assert ledger.release_quarantined() == 1                 # --retry-quarantined
    assert ledger.glidein(hostile_key)["status"] == ledger_mod.ENDED


def test_a_collector_refusing_everything_blames_no_glidein(factory, tmp_path, collector):
    layout, log = factory
    good = good_glideins(layout, log, 1150, 4)
    ledger = Ledger(tmp_path / "ledger.sqlite")
    forwarder = build_forwarder(settings_for(layout, grace=5, schedd=SCHEDD, batch_spans=5, endpoint=collector,
                                             timeout=3, query=collector), ledger=ledger)
    CountingCollector.up = False
    for _ in range(2):
        stats = forwarder.run_once()
        assert stats.quarantined == 0 and stats.glideins_done == 0
    # a refused export puts its glideins back to "ended"; one that timed out (a loaded machine:
    # the refusal came late) leaves them "sending", reconciled before any resend: nobody blamed
    rows = [ledger.glidein(key) for status in (ledger_mod.ENDED, ledger_mod.SENDING)
            for key in ledger.with_status(status)]
    assert len(rows) == 4 and all(row["attempts"] == 0 for row in rows)
    CountingCollector.up = True
    assert forwarder.run_once().glideins_done == 4
    counts = Counter(CountingCollector.received)
    assert set(counts.values()) == {1} and {t for t, _ in counts} == set(good)


# -- 2. bounded by construction -----------------------------------------------------------
def test_many_bomb_sections_in_one_small_stderr_are_cut_and_counted(factory, tmp_path):
    layout, log = factory
    good = good_glideins(layout, log, 1200, 2)
    bombs = "".join(encode_section(JOURNAL_SECTION, b"gtj1\n" + b"\0" * (40 * 1024 * 1024)) for _ in range(8))
    assert len(bombs) < 2 * 1024 * 1024          # 8 sections of 40 MiB each, under 2 MB on disk
    run_glidein(log, layout, 1200, 2, T0, bombs)
    stats = store_forwarder(layout, tmp_path).run_once()
    assert stats.glideins_done == 3
    assert stats.problems["truncated_section"] == 8
    traces = read_store(tmp_path / "store")
    root = root_of(traces[identity(layout, 1200, 2).trace_id])    # the Factory's view of it
    assert root["attributes"]["glidein_tracing.input.cut_sections"] == 8
    assert_once_in_store(tmp_path / "store", good)


def test_journal_lines_spans_and_attributes_are_capped_and_counted(factory, tmp_path):
    layout, log = factory
    good = good_glideins(layout, log, 1300, 2)
    notes = note_lines(120_000, T0)                                        # past the line cap
    many_attrs = [format_line(T0 + 1, "attr", "glidein", {f"custom.k{i}.{j}": "v" for j in range(200)})
                  for i in range(40)]                                      # 8,000 on one span
    run_glidein(log, layout, 1300, 2, T0, returned_stderr(journal_text(layout, 1300, 2, T0, extra=many_attrs + notes)))
    stats = store_forwarder(layout, tmp_path).run_once()
    assert stats.glideins_done == 3 and stats.problems["journal_lines_cut"] == 1
    root = root_of(read_store(tmp_path / "store")[identity(layout, 1300, 2).trace_id])
    attrs = root["attributes"]
    assert attrs["glidein_tracing.input.cut_lines"] > 0
    assert attrs["glidein_tracing.dropped_attributes"] >= 8_000 - 128
    assert attrs["glidein_tracing.dropped_events"] > 0
    assert len(root["events"]) == 128 and len(attrs) < 128 + 40
    assert_once_in_store(tmp_path / "store", good)


def test_an_export_record_naming_a_million_spans_hides_nothing(factory, tmp_path):
    """A journal whose live-export record claims 1.2M span ids "sent" (none of them the
    glidein's) and forges "sent" for the Factory's queue span: only the glidein's own ids are
    kept, the Factory's stage is not hidden, and every span arrives once."""
    layout, log = factory
    good = good_glideins(layout, log, 2200, 2)
    noise = [format_line(T0 + 21, "export", "-", {"@state": "sent", "@spans": " ".join(
        f"{n * 60 + i:016x}" for i in range(60))}) for n in range(20_000)]
    queue = ids.span_id(identity(layout, 2200, 2).trace_id, "factory.queue")
    forged = [format_line(T0 + 21, "export", "-", {"@state": "sent", "@spans": queue})]
    run_glidein(log, layout, 2200, 2, T0, returned_stderr(journal_text(layout, 2200, 2, T0, extra=noise + forged)))
    stats = store_forwarder(layout, tmp_path).run_once()
    assert stats.glideins_done == 3 and stats.spans_already_live == 0
    assert_once_in_store(tmp_path / "store", good + [identity(layout, 2200, 2).trace_id])


def test_deep_parent_chain_is_capped_and_show_renders_any_depth(factory, tmp_path):
    layout, log = factory
    good = good_glideins(layout, log, 1400, 1)
    depth = 3000
    chain = [format_line(T0 + 2, "start", f"c/{i}", {"@name": "c", "@stage": "setup",
                                                       "@parent": f"c/{i - 1}" if i else "setup"})
             for i in range(depth)]
    journal = journal_text(layout, 1400, 1, T0, extra=chain).replace(
        "\tstart\tglidein\t", "\tstart\tglidein\t@max_spans=5000\t", 1)
    run_glidein(log, layout, 1400, 1, T0, returned_stderr(journal))
    assert store_forwarder(layout, tmp_path).run_once().glideins_done == 2
    spans = read_store(tmp_path / "store")[identity(layout, 1400, 1).trace_id]
    assert len(spans) == depth + GOOD_SPANS
    text = render(spans)                       # deeper than Python's recursion limit
    assert len(text.splitlines()) == len(spans) + 1
    assert f"<depth {depth + 1}>" in text      # setup is at depth 1, c/0 at 2...
    assert_once_in_store(tmp_path / "store", good)


# -- 3. identity comes from the Factory ---------------------------------------------------
def test_forged_trace_id_or_schedd_never_reaches_another_glidein(factory, tmp_path):
    layout, log = factory
    good = good_glideins(layout, log, 1500, 1)
    victim = identity(layout, 1500, 0).trace_id
    forged_trace = journal_text(layout, 1500, 1, T0).replace(identity(layout, 1500, 1).trace_id, victim)
    run_glidein(log, layout, 1500, 1, T0, returned_stderr(forged_trace))
    forged_schedd = journal_text(layout, 1500, 2, T0).replace(SCHEDD, "evil@attacker.example.org")
    run_glidein(log, layout, 1500, 2, T0, returned_stderr(forged_schedd))
    stats = store_forwarder(layout, tmp_path).run_once()
    assert stats.problems["forged_identity"] == 2 and stats.glideins_done == 3
    traces = read_store(tmp_path / "store")
    # each forger gets only the Factory's view, in its own trace
    for proc in (1, 2):
        own = traces[identity(layout, 1500, proc).trace_id]
        assert {s["attributes"]["glidein.stage"] for s in own} == {"glidein", "factory.submit", "factory.queue"}
    assert not [t for t in traces if "evil" in t]
    assert_once_in_store(tmp_path / "store", good)


def test_without_a_configured_schedd_one_journal_does_not_set_its_siblings_trace(factory, tmp_path):
    layout, log = factory
    evil = "evil@attacker.example.org"
    claimed = ids.GlideinIdentity(FACTORY, layout.instance, layout.entry, evil, "1600", "0").trace_id
    forged = journal_text(layout, 1600, 0, T0).replace(SCHEDD, evil).replace(
        identity(layout, 1600, 0).trace_id, claimed)                 # consistent with itself
    run_glidein(log, layout, 1600, 0, T0, returned_stderr(forged))
    log.submit(1600, 1, when=T0 - 120)          # a sibling that never ran
    log.aborted(1600, 1, when=T0 - 10)
    store = tmp_path / "store"
    forwarder = build_forwarder(settings_for(layout, grace=5), exporter=JsonLinesStoreExporter(store),
                                ledger=Ledger(tmp_path / "l.sqlite"))
    stats = forwarder.run_once()
    assert stats.glideins_done == 2 and stats.problems["unknown_schedd"] == 1
    traces = read_store(store)
    assert claimed in traces                      # the journal's claim names its own trace only
    sibling = ids.GlideinIdentity(FACTORY, layout.instance, layout.entry, "", "1600", "1").trace_id
    assert sibling in traces and len(traces) == 2


# -- 4. exactly once, whatever the path or the failure ------------------------------------
def test_one_tree_through_relative_absolute_and_symlinked_paths_is_sent_once(factory, tmp_path, monkeypatch):
    layout, log = factory
    good = good_glideins(layout, log, 1700, 3)
    link = tmp_path / "alias"
    link.symlink_to(layout.logs)
    monkeypatch.chdir(tmp_path)
    sent = [store_forwarder(layout, tmp_path, roots=[root]).run_once().spans_sent
            for root in (os.path.relpath(layout.logs), layout.logs, link, "alias")]
    assert sent == [3 * GOOD_SPANS, 0, 0, 0]
    assert_once_in_store(tmp_path / "store", good)


class HungCollector(BaseHTTPRequestHandler):
    """Takes the request (its spans do arrive) and never answers."""
    release = threading.Event()

    def do_POST(self):
        request = ExportTraceServiceRequest()
        request.ParseFromString(self.rfile.read(int(self.headers["Content-Length"])))
        for span in (span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans):
            key = (span.trace_id.hex(), span.span_id.hex())
            CountingCollector.received.append(key)
            CountingCollector.arrived[key] = (time.time(), span)   # held: the query API shows it
        HungCollector.release.wait(30)

    def log_message(self, *args):
        pass


@pytest.fixture
def hung_collector():
    HungCollector.release.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), HungCollector)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    HungCollector.release.set()
    server.shutdown()


def export_threads():
    return [t for t in threading.enumerate() if t.name == "glidein-tracing-export" and t.is_alive()]


def test_a_timed_out_export_is_reconciled_before_any_resend_and_its_thread_ends(factory, tmp_path, collector,
                                                                               hung_collector):
    layout, log = factory
    good = good_glideins(layout, log, 1800, 3)
    ledger = Ledger(tmp_path / "ledger.sqlite")
    hung = make_otlp_exporter(hung_collector, 1.0)
    forwarder = build_forwarder(settings_for(layout, grace=5, schedd=SCHEDD, query=collector), exporter=hung,
                                ledger=ledger)
    stats = forwarder.run_once()
    assert hung.timed_out and stats.problems["export_timed_out"] == 1 and stats.glideins_done == 0
    assert len(ledger.with_status(ledger_mod.SENDING)) == 3     # maybe sent: not back to "ended"
    # the export thread ends (its own timeout ends its request), and the hung collector did
    # get the spans; how soon depends on the machine's load: the bound only stops a hang
    assert wait_until(lambda: not export_threads()), "the export thread outlived its timeout"
    assert wait_until(lambda: len(CountingCollector.received) >= 3 * GOOD_SPANS)
    assert len(CountingCollector.received) == 3 * GOOD_SPANS
    forwarder = build_forwarder(settings_for(layout, grace=5, schedd=SCHEDD, endpoint=collector, timeout=5.0,
                                             query=collector), ledger=ledger)
    again = forwarder.run_once()
    assert "resent_without_reconcile" not in again.problems
    assert again.glideins_done == 3 and again.spans_sent == 0
    counts = Counter(CountingCollector.received)
    assert set(counts.values()) == {1} and {t for t, _ in counts} == set(good)


@pytest.mark.parametrize("answer", [(500, b"internal error"), (200, b"[" * 200_000)], ids=["http_500", "nested"])
def test_a_batch_that_may_have_arrived_waits_while_the_query_endpoint_cannot_tell(factory, tmp_path, collector,
                                                                               hung_collector, answer):
    """Issue 42: with the query endpoint down (HTTP 500), all 920 spans of a crashed batch were
    sent again; an answer nested 200,000 deep crashed every pass with a RecursionError. The
    batch waits, counted, and goes once the endpoint answers again: every span once."""
    layout, log = factory
    good = good_glideins(layout, log, 1850, 3)
    ledger = Ledger(tmp_path / "ledger.sqlite")
    hung = make_otlp_exporter(hung_collector, 1.0)
    build_forwarder(settings_for(layout, grace=5, schedd=SCHEDD, query=collector), exporter=hung,
                    ledger=ledger).run_once()
    assert len(ledger.with_status(ledger_mod.SENDING)) == 3 and len(CountingCollector.received) == 3 * GOOD_SPANS
    forwarder = build_forwarder(settings_for(layout, grace=5, schedd=SCHEDD, endpoint=collector, timeout=5.0,
                                             query=collector), ledger=ledger)
    CountingCollector.query_answer = answer
    waiting = forwarder.run_once()
    assert waiting.problems["reconcile_unavailable"] == 3 and "resent_without_reconcile" not in waiting.problems
    assert waiting.spans_sent == 0 and len(ledger.with_status(ledger_mod.SENDING)) == 3
    assert len(CountingCollector.received) == 3 * GOOD_SPANS        # nothing sent again
    CountingCollector.query_answer = None
    again = forwarder.run_once()
    assert again.glideins_done == 3 and again.spans_sent == 0
    counts = Counter(CountingCollector.received)
    assert set(counts.values()) == {1} and {t for t, _ in counts} == set(good)


def test_a_jaeger_answer_too_large_is_refused_not_read_whole(collector):
    from glidein_tracing.exporters import jaeger_query
    CountingCollector.query_answer = (200, b'{"data": [' + b" " * 2048 + b"]}")
    assert jaeger_query.trace_spans(collector, "ab" * 16) == []
    with pytest.raises(ValueError, match="larger than 1024 bytes"):
        jaeger_query.get_json(f"{collector}/api/traces/{'ab' * 16}", 5.0, max_bytes=1024)


# -- 5. killed glideins say so -------------------------------------------------------------
def test_killed_and_removed_glideins_get_an_error_root_with_the_reason(factory, tmp_path):
    layout, log = factory
    good = good_glideins(layout, log, 1900, 1)
    cases = {1: ("killed", "signal 9"), 2: ("killed", "return value 137"), 3: ("removed", "removed")}
    for proc in cases:
        log.submit(1900, proc, when=T0 - 120)
        log.grid_submit(1900, proc, when=T0 - 110)
        log.execute(1900, proc, when=T0)
    log.terminated(1900, 1, when=T0 + 30, signal=9)
    log.terminated(1900, 2, 137, when=T0 + 30)
    log.aborted(1900, 3, when=T0 + 30)
    assert store_forwarder(layout, tmp_path).run_once().glideins_done == 4
    traces = read_store(tmp_path / "store")
    for proc, (outcome, reason) in cases.items():
        root = root_of(traces[identity(layout, 1900, proc).trace_id])
        assert root["status_code"] == 2 and root["attributes"]["glidein.outcome"] == outcome
        assert reason in root["status_message"]
    ok_root = root_of(traces[good[0]])
    assert ok_root["status_code"] != 2 and ok_root["attributes"]["glidein.outcome"] == "ok"
    assert_once_in_store(tmp_path / "store", good)


# -- 6. secrets inside free text -----------------------------------------------------------
def test_secrets_in_details_descriptions_and_notes_never_reach_the_store(factory, tmp_path):
    layout, log = factory
    good = good_glideins(layout, log, 2000, 1)
    secrets = ("hunter2", "wJalrXUtnFEMI/K7MDENG", "AKIAIOSFODNN7EXAMPLE", "PASSW0RD", "s3cr3tT0k")
    extra = [format_line(T0 + 1, "attr", "glidein", {"site.cmdline": "setup.sh --password=hunter2 --verbose"}),
             format_line(T0 + 2, "note", "-", {"@msg": "live export to http://user:PASSW0RD@collector:4318 failed"}),
             format_line(T0 + 3, "start", "check", {"@name": "check", "@stage": "setup"}),
             format_line(T0 + 4, "end", "check", {
                 "@status": "ERROR", "@error.type": "validation",
                 "@error.detail": "env AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG id AKIAIOSFODNN7EXAMPLE "
                                  "--token s3cr3tT0k"})]
    run_glidein(log, layout, 2000, 1, T0, returned_stderr(journal_text(layout, 2000, 1, T0, extra=extra)))
    assert store_forwarder(layout, tmp_path).run_once().glideins_done == 2
    stored = "".join(p.read_text() for p in (tmp_path / "store").glob("*.jsonl"))
    for secret in secrets:
        assert secret not in stored
    spans = read_store(tmp_path / "store")[identity(layout, 2000, 1).trace_id]
    root = root_of(spans)
    assert root["attributes"]["site.cmdline"] == "setup.sh --password=REDACTED --verbose"
    assert root["events"][0]["attributes"]["message"] == \
        "live export to http://user:REDACTED@collector:4318 failed"
    (check,) = [s for s in spans if s["name"] == "check"]
    assert check["status_message"].startswith("env AWS_SECRET_ACCESS_KEY=REDACTED")
    assert_once_in_store(tmp_path / "store", good)


# -- 8. a cut section keeps what was readable ------------------------------------------------
def test_a_section_cut_short_yields_every_complete_line_before_the_cut(factory, tmp_path):
    layout, log = factory
    good = good_glideins(layout, log, 2100, 1)
    notes = note_lines(100, T0, width=400)
    whole = returned_stderr(journal_text(layout, 2100, 1, T0, extra=notes))
    run_glidein(log, layout, 2100, 1, T0, whole[: int(len(whole) * 0.9)])
    stats = store_forwarder(layout, tmp_path).run_once()
    assert stats.glideins_done == 2 and stats.problems["damaged_section"] == 1
    spans = read_store(tmp_path / "store")[identity(layout, 2100, 1).trace_id]
    root = root_of(spans)
    assert {"setup", "teardown"} <= {s["attributes"]["glidein.stage"] for s in spans}
    messages = [int(e["attributes"]["message"]) for e in root["events"]]
    assert messages == list(range(len(messages))) and 50 <= len(messages) < 100  # the lines before the cut
    assert root["attributes"]["glidein_tracing.input.cut_sections"] == 1
    assert root["attributes"]["glidein_tracing.input.cut_bytes"] > 0
    assert_once_in_store(tmp_path / "store", good)


def test_the_forward_command_takes_each_entrys_schedd_from_glideinwms_xml(factory, tmp_path):
    import subprocess
    import sys
    layout, log = factory
    good = good_glideins(layout, log, 2200, 1)
    forged = journal_text(layout, 2200, 1, T0).replace(SCHEDD, "evil@attacker.example.org")
    run_glidein(log, layout, 2200, 1, T0, returned_stderr(forged))
    log.submit(2200, 2, when=T0 - 120)                 # never ran: its trace id needs the schedd
    log.aborted(2200, 2, when=T0 - 10)
    xml = tmp_path / "glideinWMS.xml"
    xml.write_text(f'<glidein><entries><entry name="{layout.entry}" schedd_name="{SCHEDD}"/></entries></glidein>')
    run = subprocess.run([sys.executable, "-m", "glidein_tracing", "forward", str(layout.logs), "--factory", FACTORY,
                          "--factory-config", str(xml), "--store", str(tmp_path / "store"), "--grace", "5",
                          "--no-progress"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "forged_identity=1" in run.stderr and "3 glideins forwarded" in run.stderr
    traces = read_store(tmp_path / "store")
    assert {identity(layout, 2200, p).trace_id for p in (1, 2)} <= set(traces)
    assert_once_in_store(tmp_path / "store", good)


def test_a_journal_asking_for_more_spans_gets_the_forwarders_ceiling(factory, tmp_path):
    from glidein_tracing.factory import assembly
    layout, log = factory
    good = good_glideins(layout, log, 2300, 1)
    many = [format_line(T0 + 2, "start", f"s/{i}", {"@name": "s", "@stage": "setup"})
            for i in range(assembly.MAX_SPANS + 500)]
    journal = journal_text(layout, 2300, 1, T0, extra=many).replace(
        "\tstart\tglidein\t", "\tstart\tglidein\t@max_spans=100000000\t", 1)
    run_glidein(log, layout, 2300, 1, T0, returned_stderr(journal))
    assert store_forwarder(layout, tmp_path).run_once().glideins_done == 2
    spans = read_store(tmp_path / "store")[identity(layout, 2300, 1).trace_id]
    assert len(spans) == assembly.MAX_SPANS
    assert root_of(spans)["attributes"]["glidein_tracing.dropped_spans"] == 500 + GOOD_SPANS
    assert_once_in_store(tmp_path / "store", good)


def test_only_the_tail_of_a_huge_stderr_is_read_and_the_journal_at_its_end_is_found(factory, tmp_path,
                                                                                      monkeypatch):
    from glidein_tracing.factory import returned
    monkeypatch.setattr(returned, "MAX_STDERR_BYTES", 256 * 1024)
    layout, log = factory
    good = good_glideins(layout, log, 2400, 1)
    noise = "condor log line\n" * 100_000                       # 1.6 MB of logs before the journal
    run_glidein(log, layout, 2400, 1, T0, returned_stderr(journal_text(layout, 2400, 1, T0), noise=noise))
    assert store_forwarder(layout, tmp_path).run_once().glideins_done == 2
    spans = read_store(tmp_path / "store")[identity(layout, 2400, 1).trace_id]
    assert {"setup", "teardown"} <= {s["attributes"]["glidein.stage"] for s in spans}
    assert root_of(spans)["attributes"]["glidein_tracing.input.cut_bytes"] > len(noise) - 256 * 1024
    assert_once_in_store(tmp_path / "store", good)


def test_retry_quarantined_sends_a_quarantined_glidein_once_more(factory, tmp_path):
    import subprocess
    import sys
    layout, log = factory
    good = good_glideins(layout, log, 2500, 2)
    store_forwarder(layout, tmp_path).scan(ForwardStats())     # the ledger knows both glideins
    ledger = Ledger(tmp_path / "ledger.sqlite")
    key = ledger_mod.glidein_key(str(layout.entry_dir.resolve()), 2500, 1)
    with ledger.transaction():
        ledger.quarantine(key, "export refused for this glidein alone in 3 passes")
    command = [sys.executable, "-m", "glidein_tracing", "forward", str(layout.logs), "--factory", FACTORY,
               "--schedd", SCHEDD, "--store", str(tmp_path / "store"), "--state", str(tmp_path / "ledger.sqlite"),
               "--grace", "5", "--no-progress"]
    first = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert "1 glideins forwarded" in first.stderr, first.stderr
    again = subprocess.run(command + ["--retry-quarantined"], capture_output=True, text=True, timeout=120)
    assert "1 quarantined glideins released" in again.stderr and "1 glideins forwarded" in again.stderr
    assert_once_in_store(tmp_path / "store", good)
