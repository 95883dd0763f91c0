"""SpanData (the forwarder's spans): the same spans as the SDK's, whichever form is encoded or
exported, and any SDK exporter still gets SDK spans."""

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from glidein_tracing.converter import convert, convert_to_span_data
from glidein_tracing.exporters.otlp_proto import encode_request_bytes
from glidein_tracing.factory.forwarder import Forwarder
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout
from glidein_tracing.span_data import SpanData, export_span_data, from_readable, to_readable

from factory_builders import FACTORY, identity, journal_text, returned_stderr, run_glidein
from test_otlp_proto import hand_made_spans, sample_journal, sample_spans


def _same_span(a: ReadableSpan, b: ReadableSpan):
    assert (a.name, a.kind, a.start_time, a.end_time) == (b.name, b.kind, b.start_time, b.end_time)
    assert a.context == b.context and a.context.trace_state == b.context.trace_state
    if a.parent is None:
        assert b.parent is None
    else:
        # OTLP carries a parent's span id and whether it is remote; its trace is the span's own
        assert (a.parent.span_id, a.parent.is_remote, a.parent.trace_flags) == \
            (b.parent.span_id, b.parent.is_remote, b.parent.trace_flags)
        assert a.parent.trace_id == a.context.trace_id
    assert dict(a.attributes) == dict(b.attributes)
    assert (a.status.status_code, a.status.description) == (b.status.status_code, b.status.description)
    assert [(e.name, e.timestamp, dict(e.attributes)) for e in a.events] == \
        [(e.name, e.timestamp, dict(e.attributes)) for e in b.events]
    assert [(link.context, dict(link.attributes or {})) for link in a.links] == \
        [(link.context, dict(link.attributes or {})) for link in b.links]
    assert a.resource == b.resource and a.instrumentation_scope == b.instrumentation_scope


def test_span_data_and_sdk_spans_of_a_glidein_encode_to_the_same_bytes():
    data = convert_to_span_data(*sample_journal())
    readable = convert(*sample_journal())
    assert all(type(span) is SpanData for span in data)
    assert [s.name for s in data] == [s.name for s in readable]
    assert any(s.parent_remote for s in data), "the job's span in its user's trace has a remote parent"
    assert encode_request_bytes(data) == encode_request_bytes(readable)
    for ours, sdk in zip(data, readable):
        _same_span(to_readable(ours), sdk)


def test_sdk_spans_survive_a_trip_through_span_data():
    for span in hand_made_spans() + sample_spans():   # remote parents, trace state, kinds, value types
        _same_span(to_readable(from_readable(span)), span)


def test_an_exporter_that_only_takes_sdk_spans_gets_sdk_spans():
    exporter = InMemorySpanExporter()
    data = convert_to_span_data(*sample_journal())
    assert export_span_data(exporter, data) == SpanExportResult.SUCCESS
    got = exporter.get_finished_spans()
    assert all(isinstance(span, ReadableSpan) for span in got)
    assert [(s.context.trace_id, s.context.span_id) for s in got] == [(s.trace_id, s.span_id) for s in data]


def test_the_forwarder_works_with_any_sdk_exporter(tmp_path):
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    run_glidein(CondorGLog(layout), layout, 100, 0, 1_767_000_000.0,
                returned_stderr(journal_text(layout, 100, 0, 1_767_000_000.0)))
    exporter = InMemorySpanExporter()
    stats = Forwarder([layout.logs], exporter, Ledger(tmp_path / "l.sqlite"), FACTORY, grace_s=5).run_once()
    spans = exporter.get_finished_spans()
    assert stats.glideins_done == 1 and stats.spans_sent == len(spans) > 3
    assert {format(s.context.trace_id, "032x") for s in spans} == {identity(layout, 100, 0).trace_id}
    assert {s.attributes["glidein.stage"] for s in spans} >= {"glidein", "factory.submit", "factory.queue",
                                                              "setup", "teardown"}
