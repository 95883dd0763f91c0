"""The Factory forwarder: activity log + returned journals -> spans, exactly once."""

import os
import subprocess
import sys
import time

import pytest

from glidein_tracing.core import ids
from glidein_tracing.exporters.store import JsonLinesStoreExporter, iter_store, read_store
from glidein_tracing.factory.build import build_forwarder
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.core.converter import convert
from glidein_tracing.core.journal import format_line, parse_lines
from glidein_tracing.core.sections import encode_section, JOURNAL_SECTION
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from tests.support.fixtures import fixture_path
from tests.support.otlp_receiver import CountingCollector, collector  # noqa: F401 (fixture)
from tests.support.factory_builders import (
    FACTORY, SCHEDD, T0, identity, journal_text, returned_stderr, run_glidein, forwarder_arguments, settings_for)
from tests.support.journal_builders import iso_epoch, parse_otr_records

@pytest.fixture
def factory(tmp_path):
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    return layout, CondorGLog(layout)


def make_forwarder(layout, store_dir, ledger_path, **kwargs):
    conf, others = forwarder_arguments(layout, kwargs, grace=5)
    return build_forwarder(conf, exporter=JsonLinesStoreExporter(store_dir), ledger=Ledger(ledger_path), **others)


def by_stage(spans, stage):
    return [s for s in spans if s["attributes"]["glidein.stage"] == stage]


def test_whole_lifecycle_from_submission_and_factory_only_glideins(factory, tmp_path):
    layout, log = factory
    records = parse_otr_records(fixture_path("glidein-run", "success", "otr_outlist.list").read_text())
    t0 = iso_epoch(records[0]["tstart"]) - 1     # the real records lie inside this glidein's setup
    run_glidein(log, layout, 100, 0, t0, returned_stderr(journal_text(layout, 100, 0, t0, records)))
    # a glidein held at the CE and removed: only the Factory saw it
    log.submit(100, 1, when=t0 - 120)
    log.held(100, 1, "Error connecting to schedd ce.example.org", code=0, when=t0 - 100)
    log.aborted(100, 1, when=t0 - 10)
    forwarder = make_forwarder(layout, tmp_path / "store", tmp_path / "ledger.sqlite",
                               entry_schedds={layout.entry: SCHEDD})
    stats = forwarder.run_once()
    assert stats.glideins_done == 2 and stats.export_failures == 0
    traces = read_store(tmp_path / "store")
    ran = traces[identity(layout, 100, 0).trace_id]
    (root,) = by_stage(ran, "glidein")
    assert root["start_ns"] == int((t0 - 120) * 1e9)          # the root starts at submission
    (queue,) = by_stage(ran, "factory.queue")
    assert (queue["end_ns"] - queue["start_ns"]) / 1e9 == pytest.approx(110)
    assert len(by_stage(ran, "validation")) == len([r for r in records if r["id"] != "condor_startup.sh"])
    assert root["attributes"]["factory.return_value"] == 0
    assert root["links"] == [], "no link to a span that is never sent"
    # the removed glidein never ran: its schedd (in its trace id) is the Factory's configured one
    held = traces[identity(layout, 100, 1).trace_id]
    (root1,) = by_stage(held, "glidein")
    assert root1["attributes"]["glidein.outcome"] == "never_ran"
    (hold,) = by_stage(held, "factory.held")
    assert hold["attributes"]["factory.hold_reason"].startswith("Error connecting")
    assert hold["status_code"] == 2


def test_second_pass_and_new_events_send_only_what_is_new(factory, tmp_path):
    layout, log = factory
    run_glidein(log, layout, 200, 0, T0, returned_stderr(journal_text(layout, 200, 0, T0)))
    forwarder = make_forwarder(layout, tmp_path / "store", tmp_path / "ledger.sqlite")
    first = forwarder.run_once()
    assert first.glideins_done == 1
    assert forwarder.run_once().spans_sent == 0
    run_glidein(log, layout, 201, 0, T0 + 500, returned_stderr(journal_text(layout, 201, 0, T0 + 500)))
    # a new forwarder process (restart) resumes from the ledger
    again = make_forwarder(layout, tmp_path / "store", tmp_path / "ledger.sqlite")
    third = again.run_once()
    assert third.glideins_done == 1 and third.log_events == 4
    ids_ = [s["span_id"] for s in iter_store(tmp_path / "store")]
    assert len(ids_) == len(set(ids_))


def test_spans_sent_live_by_the_node_are_not_sent_again(factory, tmp_path):
    layout, log = factory
    trace = identity(layout, 300, 0).trace_id
    mark = [_export_record(T0 + 22, "sent", ids.span_id(trace, "setup"), ids.span_id(trace, "teardown"))]
    journal = journal_text(layout, 300, 0, T0, extra=mark)
    run_glidein(log, layout, 300, 0, T0, returned_stderr(journal))
    # the node sent setup and teardown live (its conversion of the same journal)
    node_spans = [s for s in convert(parse_lines(journal.encode())[0]) if s.parent is not None]
    JsonLinesStoreExporter(tmp_path / "store").export(node_spans)
    forwarder = make_forwarder(layout, tmp_path / "store", tmp_path / "ledger.sqlite")
    stats = forwarder.run_once()
    spans = read_store(tmp_path / "store")[identity(layout, 300, 0).trace_id]
    stages = sorted(s["attributes"]["glidein.stage"] for s in spans)
    assert stages == ["factory.queue", "factory.submit", "glidein", "setup", "teardown"]   # each once
    assert stats.spans_already_live == 2  # setup and teardown went live from the node


def _export_record(when, state, *span_ids):
    """A journal line of the node's export record (glidein_tracing.core.export_record)."""
    return format_line(when, "export", "-", {"@state": state, "@spans": " ".join(span_ids)})


def test_node_export_record_sent_left_out_sending_reconciled_forged_ignored(factory, tmp_path):
    """The node's per-stage export record: a span it sent is left out; spans of an export that
    failed or was cut ("sending") are looked up in the backend and only the missing one is sent;
    a forged "sent" for the Factory's own stage changes nothing."""
    layout, log = factory
    trace = identity(layout, 301, 0).trace_id
    setup, teardown, queue = (ids.span_id(trace, key) for key in ("setup", "teardown", "factory.queue"))
    journal = journal_text(layout, 301, 0, T0, extra=[
        _export_record(T0 + 20, "sending", setup),
        _export_record(T0 + 20.5, "sending", teardown),
        _export_record(T0 + 21, "sent", queue)])          # forged: the node never sends it
    run_glidein(log, layout, 301, 0, T0, returned_stderr(journal))
    store = tmp_path / "store"
    # the export of setup was cut after the collector took it: the backend holds it
    node_spans = convert(parse_lines(journal.encode())[0])
    JsonLinesStoreExporter(store).export([s for s in node_spans if format(s.context.span_id, "016x") == setup])
    stats = make_forwarder(layout, store, tmp_path / "ledger.sqlite").run_once()
    spans = read_store(store)[trace]
    stages = sorted(s["attributes"]["glidein.stage"] for s in spans)
    assert stages == ["factory.queue", "factory.submit", "glidein", "setup", "teardown"]
    assert stats.spans_already_live == 1 and not stats.problems


def test_node_export_record_without_a_backend_to_ask_resends(factory, tmp_path):
    """With no backend to ask (no --query), a span whose export is in doubt is sent again
    (at least once, never lost), and the pass says so."""
    layout, log = factory
    trace = identity(layout, 302, 0).trace_id
    setup, teardown = ids.span_id(trace, "setup"), ids.span_id(trace, "teardown")
    journal = journal_text(layout, 302, 0, T0, extra=[
        _export_record(T0 + 20, "sending", setup, teardown), _export_record(T0 + 20.1, "sent", setup)])
    run_glidein(log, layout, 302, 0, T0, returned_stderr(journal))
    forwarder = build_forwarder(settings_for(layout, grace=5), exporter=JsonLinesStoreExporter(tmp_path / "store"),
                                ledger=Ledger(tmp_path / "ledger.sqlite"), reconcile=None)
    stats = forwarder.run_once()
    stages = sorted(s["attributes"]["glidein.stage"] for s in read_store(tmp_path / "store")[trace])
    assert stages == ["factory.queue", "factory.submit", "glidein", "teardown"]
    assert stats.spans_already_live == 1 and stats.problems == {"resent_without_reconcile": 1}


def test_hostile_outputs_are_skipped_with_counts_and_the_rest_goes_on(factory, tmp_path):
    layout, log = factory
    good = returned_stderr(journal_text(layout, 400, 0, T0))
    run_glidein(log, layout, 400, 0, T0, good)
    forged = returned_stderr(journal_text(layout, 999, 7, T0))       # claims another glidein
    run_glidein(log, layout, 400, 1, T0, forged)
    whole = returned_stderr(journal_text(layout, 400, 2, T0))
    run_glidein(log, layout, 400, 2, T0, whole[: len(whole) - 40])     # cut mid-section
    bomb = encode_section(JOURNAL_SECTION, b"gtj1\t1\tnote\t-\n" + b"\0" * (4 * 1024 * 1024))
    run_glidein(log, layout, 400, 3, T0, bomb)
    forwarder = make_forwarder(layout, tmp_path / "store", tmp_path / "ledger.sqlite",
                               max_section_bytes=1024 * 1024, schedd=SCHEDD)
    stats = forwarder.run_once()
    assert stats.problems["forged_identity"] == 1
    assert stats.problems.get("damaged_section", 0) + stats.problems.get("truncated_section", 0) >= 2
    traces = read_store(tmp_path / "store")
    assert identity(layout, 400, 0).trace_id in traces
    forged_trace = traces[identity(layout, 400, 1).trace_id]     # Factory view only
    assert not by_stage(forged_trace, "setup")
    assert ids.GlideinIdentity(FACTORY, layout.instance, layout.entry, SCHEDD, "999", "7").trace_id not in traces
    assert stats.glideins_done == 4


def test_secrets_in_a_journal_never_reach_the_store(factory, tmp_path):
    layout, log = factory
    secret_jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJnbGlkZWluIn0.c2lnbmF0dXJl"
    extra = [format_line(T0 + 1, "attr", "glidein", {
        "glidein.idtoken": "abc123", "site.note": f"token={secret_jwt}",
        "custom.proxy": "-----BEGIN RSA PRIVATE KEY----- MIIE", "glidein.site_password": "hunter2"})]
    run_glidein(log, layout, 500, 0, T0, returned_stderr(journal_text(layout, 500, 0, T0, extra=extra)))
    make_forwarder(layout, tmp_path / "store", tmp_path / "ledger.sqlite").run_once()
    stored = "".join(p.read_text() for p in (tmp_path / "store").glob("*.jsonl"))
    for secret in (secret_jwt, "abc123", "BEGIN RSA", "hunter2"):
        assert secret not in stored
    assert "REDACTED" in stored


def forward_cli(layout, tmp_path, endpoint, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    config = tmp_path / "forwarder.yaml"
    config.write_text("batch_spans: 5   # several exports a pass: a crash can fall between them\n")
    return subprocess.run(
        [sys.executable, "-m", "glidein_tracing", "forward", str(layout.logs), "--factory", FACTORY,
         "--schedd", SCHEDD, "--endpoint", endpoint, "--query", endpoint, "--state", str(tmp_path / "ledger.sqlite"),
         "--grace", "5", "--config", str(config), "--no-progress", "--timeout", "3"],
        env=env, capture_output=True, text=True, timeout=120)


def test_killed_forwarder_restarts_without_loss_or_repeats(factory, tmp_path, collector):
    layout, log = factory
    for proc in range(4):
        run_glidein(log, layout, 600, proc, T0 + proc, returned_stderr(journal_text(layout, 600, proc, T0 + proc)))
    for point in ("after_export", "after_mark_sending"):
        crashed = forward_cli(layout, tmp_path, collector, {"GLIDEIN_TRACING_CRASH_AT": point})
        assert crashed.returncode == -9, crashed.stderr
    finished = forward_cli(layout, tmp_path, collector)
    assert finished.returncode == 0, finished.stderr
    assert forward_cli(layout, tmp_path, collector).returncode == 0
    received = CountingCollector.received
    assert len(received) == len(set(received)), "a span arrived twice"
    traces = {t for t, _ in received}
    expected = {identity(layout, 600, p).trace_id for p in range(4)}
    assert traces == expected
    per_trace = {t: sum(1 for x, _ in received if x == t) for t in traces}
    # root, setup, teardown, factory.submit, factory.queue: every one arrived
    assert all(count == 5 for count in per_trace.values()), per_trace


def test_collector_down_then_back_loses_nothing(factory, tmp_path, collector):
    layout, log = factory
    for proc in range(3):
        run_glidein(log, layout, 700, proc, T0, returned_stderr(journal_text(layout, 700, proc, T0)))
    CountingCollector.up = False
    down = forward_cli(layout, tmp_path, collector)
    assert down.returncode == 1 and CountingCollector.received == []
    CountingCollector.up = True
    assert forward_cli(layout, tmp_path, collector).returncode == 0
    received = CountingCollector.received
    assert len(received) == len(set(received))
    assert {t for t, _ in received} == {identity(layout, 700, p).trace_id for p in range(3)}


def test_a_glidein_seen_across_passes_keeps_its_open_stages(factory, tmp_path):
    layout, log = factory
    log.submit(800, 0, when=T0 - 300)
    log.grid_submit(800, 0, when=T0 - 290)
    forwarder = make_forwarder(layout, tmp_path / "store", tmp_path / "ledger.sqlite")
    assert forwarder.run_once().glideins_done == 0          # still waiting at the site
    log.execute(800, 0, when=T0)
    layout.output(800, 0, "err").write_text(returned_stderr(journal_text(layout, 800, 0, T0)))
    os.utime(layout.output(800, 0, "err"), (T0, T0))
    log.terminated(800, 0, 0, when=T0 + 30)
    again = make_forwarder(layout, tmp_path / "store", tmp_path / "ledger.sqlite")
    assert again.run_once().glideins_done == 1
    spans = read_store(tmp_path / "store")[identity(layout, 800, 0).trace_id]
    (submit,) = by_stage(spans, "factory.submit")
    (queue,) = by_stage(spans, "factory.queue")
    assert (submit["end_ns"] - submit["start_ns"]) / 1e9 == pytest.approx(10)
    assert (queue["end_ns"] - queue["start_ns"]) / 1e9 == pytest.approx(290)


def test_the_forwarder_works_with_any_sdk_exporter(tmp_path):
    """The forwarder's spans are the SDK's own: any SpanExporter takes them."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    run_glidein(CondorGLog(layout), layout, 100, 0, T0, returned_stderr(journal_text(layout, 100, 0, T0)))
    exporter = InMemorySpanExporter()
    stats = build_forwarder(settings_for(layout, schedd=SCHEDD, grace=5), exporter=exporter,
                            ledger=Ledger(tmp_path / "l.sqlite")).run_once()
    spans = exporter.get_finished_spans()
    assert stats.glideins_done == 1 and stats.spans_sent == len(spans) > 3
    assert {format(s.context.trace_id, "032x") for s in spans} == {identity(layout, 100, 0).trace_id}
    assert {s.attributes["glidein.stage"] for s in spans} >= {"glidein", "factory.submit", "factory.queue",
                                                              "setup", "teardown"}


def test_factory_stages_of_a_running_glidein_go_out_before_it_ends_and_only_once(factory, tmp_path, collector):
    """Issue 14: a glidein waiting at a site is in the backend meanwhile; nothing twice later."""
    layout, log = factory
    log.submit(700, 0, when=T0 - 7200)
    log.grid_submit(700, 0, when=T0 - 7190)          # factory.submit ends; waiting at the site
    log.submit(700, 1, when=T0 - 3600)
    log.grid_submit(700, 1, when=T0 - 3590)
    log.execute(700, 1, when=T0)                      # factory.queue ends: it runs
    trace0, trace1 = (identity(layout, 700, p).trace_id for p in (0, 1))

    def forwarder():
        return build_forwarder(settings_for(layout, schedd=SCHEDD, grace=5, endpoint=collector, timeout=5,
                                            query=collector), ledger=Ledger(tmp_path / "ledger.sqlite"))

    stats = forwarder().run_once()
    got = {(t, s) for t, s in CountingCollector.received}
    assert stats.early_spans_sent == len(got) == 3 and stats.glideins_done == 0
    assert {s for t, s in got if t == trace0} == {ids.span_id(trace0, "factory.submit")}
    assert {s for t, s in got if t == trace1} == {ids.span_id(trace1, "factory.submit"),
                                                  ids.span_id(trace1, "factory.queue")}
    assert forwarder().run_once().early_spans_sent == 0        # nothing new: nothing sent
    # the glidein ends and its output returns: the rest of its trace, without the early spans
    (layout.output(700, 1, "err")).write_text(returned_stderr(journal_text(layout, 700, 1, T0 + 5)))
    old = time.time() - 3600
    os.utime(layout.output(700, 1, "err"), (old, old))
    log.terminated(700, 1, when=T0 + 30)
    stats = forwarder().run_once()
    assert stats.glideins_done == 1
    running = Ledger(tmp_path / "ledger.sqlite").db.execute("SELECT DISTINCT gkey FROM early_spans").fetchall()
    assert [gkey.endswith("|700.0") for (gkey,) in running] == [True]    # the done one's ids are gone
    received = CountingCollector.received
    assert len(received) == len(set(received)), "a span arrived twice"
    stages = {s for t, s in received if t == trace1}
    assert ids.span_id(trace1, "glidein") in stages and ids.span_id(trace1, "setup") in stages


@pytest.mark.parametrize("point", ["after_early_mark", "after_early_export"])
def test_a_forwarder_killed_around_an_early_export_sends_each_span_once(factory, tmp_path, collector, point):
    layout, log = factory
    for proc in range(3):
        log.submit(710, proc, when=T0 - 600)
        log.grid_submit(710, proc, when=T0 - 590)
        log.execute(710, proc, when=T0)
    crashed = forward_cli(layout, tmp_path, collector, {"GLIDEIN_TRACING_CRASH_AT": point})
    assert crashed.returncode == -9, crashed.stderr
    for proc in range(3):
        layout.output(710, proc, "err").write_text(returned_stderr(journal_text(layout, 710, proc, T0 + 5)))
        old = time.time() - 3600
        os.utime(layout.output(710, proc, "err"), (old, old))
        log.terminated(710, proc, when=T0 + 30)
    finished = forward_cli(layout, tmp_path, collector)
    assert finished.returncode == 0, finished.stderr
    received = CountingCollector.received
    assert len(received) == len(set(received)), "a span arrived twice"
    for proc in range(3):
        trace = identity(layout, 710, proc).trace_id
        assert {ids.span_id(trace, k) for k in ("factory.submit", "factory.queue", "glidein", "setup")} <= \
            {s for t, s in received if t == trace}


def test_early_exports_come_in_batches_of_at_most_batch_spans(factory, tmp_path, collector):
    from glidein_tracing.exporters.otlp import make_otlp_exporter
    layout, log = factory
    for proc in range(4):
        log.submit(720, proc, when=T0 - 600)
        log.grid_submit(720, proc, when=T0 - 590)
        log.execute(720, proc, when=T0)                      # 2 ended Factory stages each
    stats = build_forwarder(settings_for(layout, schedd=SCHEDD, grace=5, batch_spans=3),
                            exporter=make_otlp_exporter(collector, 5), ledger=Ledger(tmp_path / "l.sqlite")).run_once()
    assert stats.early_spans_sent == 8 == len(set(CountingCollector.received)) == len(CountingCollector.received)
    # whole glideins, sent once at least batch_spans are pending: two requests of 4, not one of 8
    assert len(CountingCollector.headers_seen) == 2


def test_events_of_glideins_never_seen_submitted_are_taken_once(factory, tmp_path):
    """A rotated activity log starts mid-life: an execute or a hold with no submit before it."""
    layout, log = factory
    log.execute(730, 0, when=T0)
    log.held(730, 1, "Error connecting to schedd ce.example.org", when=T0)
    log.released(730, 1, when=T0 + 10)
    forwarder = make_forwarder(layout, tmp_path / "store", tmp_path / "ledger.sqlite", entry_schedds={layout.entry: SCHEDD})
    assert forwarder.run_once().early_spans_sent == 2
    assert forwarder.run_once().early_spans_sent == 0
    traces = read_store(tmp_path / "store")
    assert [s["name"] for s in traces[identity(layout, 730, 1).trace_id]] == ["factory.held"]
    (queue,) = traces[identity(layout, 730, 0).trace_id]
    # its start is unknown: it lasts the least Jaeger shows, and says so
    assert queue["name"] == "factory.queue" and queue["end_ns"] - queue["start_ns"] == 1000
    assert queue["attributes"]["glidein.time.placed"] == "min_duration"


def test_an_activity_log_cut_mid_event_loses_and_repeats_nothing(factory, tmp_path):
    """The Factory's schedd is writing an event when the forwarder reads: the cut event is
    read whole on the next pass, and every span goes once."""
    layout, log = factory
    log.submit(740, 0, when=T0 - 120)
    log.grid_submit(740, 0, when=T0 - 110)
    log.execute(740, 0, when=T0)
    path = layout.activity_log
    data = path.read_bytes()
    path.write_bytes(data[:-30])                       # the execute event half written
    forwarder = make_forwarder(layout, tmp_path / "store", tmp_path / "ledger.sqlite",
                               entry_schedds={layout.entry: SCHEDD})
    assert forwarder.run_once().early_spans_sent == 1   # factory.submit; the queue is still open
    with path.open("ab") as out:
        out.write(data[-30:])
    layout.output(740, 0, "out").write_text("<glidein/>\n")
    layout.output(740, 0, "err").write_text(returned_stderr(journal_text(layout, 740, 0, T0)))
    old = time.time() - 3600
    os.utime(layout.output(740, 0, "err"), (old, old))
    log.terminated(740, 0, 0, when=T0 + 30)
    stats = forwarder.run_once()
    assert stats.glideins_done == 1 and stats.export_failures == 0
    spans = read_store(tmp_path / "store")[identity(layout, 740, 0).trace_id]
    assert sorted(s["attributes"]["glidein.stage"] for s in spans) == \
        ["factory.queue", "factory.submit", "glidein", "setup", "teardown"]
    (queue,) = by_stage(spans, "factory.queue")
    assert (queue["end_ns"] - queue["start_ns"]) / 1e9 == pytest.approx(110)


def test_events_out_of_order_are_taken_as_they_come(factory, tmp_path):
    """A log whose events are not in the order of a glidein's life: a grid submit logged after
    the execute is taken, a hold after the termination is ignored and counted (it would put a
    stage outside the glidein's life); every span once."""
    layout, log = factory
    log.submit(750, 0, when=T0 - 120)
    log.execute(750, 0, when=T0)
    log.grid_submit(750, 0, when=T0 - 110)
    layout.output(750, 0, "out").write_text("<glidein/>\n")
    layout.output(750, 0, "err").write_text(returned_stderr(journal_text(layout, 750, 0, T0)))
    old = time.time() - 3600
    os.utime(layout.output(750, 0, "err"), (old, old))
    log.terminated(750, 0, 0, when=T0 + 30)
    log.held(750, 0, "late hold", when=T0 + 40)
    forwarder = make_forwarder(layout, tmp_path / "store", tmp_path / "ledger.sqlite",
                               entry_schedds={layout.entry: SCHEDD})
    first = forwarder.run_once()
    second = forwarder.run_once()
    assert first.glideins_done == 1 and second.spans_sent == 0 and second.early_spans_sent == 0
    assert first.problems == {"activity_events_after_end": 1}        # the late hold, counted
    ids_ = [(s["trace_id"], s["span_id"]) for s in iter_store(tmp_path / "store")]
    assert len(ids_) == len(set(ids_))
    spans = read_store(tmp_path / "store")[identity(layout, 750, 0).trace_id]
    assert sorted(s["attributes"]["glidein.stage"] for s in spans) == \
        ["factory.queue", "factory.submit", "glidein", "setup", "teardown"]
    (queue,) = by_stage(spans, "factory.queue")        # from the submission to the execute
    assert (queue["start_ns"], queue["end_ns"]) == (int((T0 - 120) * 1e9), int(T0 * 1e9))


def test_follow_logs_each_pass_that_did_something_and_stays_quiet_when_idle(factory, tmp_path, caplog):
    import logging
    layout, log = factory
    run_glidein(log, layout, 800, 0, T0, returned_stderr(journal_text(layout, 800, 0, T0)))
    forwarder = make_forwarder(layout, tmp_path / "store", tmp_path / "ledger.sqlite")
    passes = []
    with caplog.at_level(logging.INFO, logger="glidein_tracing.forward"):
        forwarder.follow(0.01, stop=lambda: passes.append(1) or len(passes) > 4)
    summaries = [r.getMessage() for r in caplog.records if "log events read" in r.getMessage()]
    assert len(summaries) == 1 and "1 glideins forwarded" in summaries[0]     # 4 passes, 3 idle
