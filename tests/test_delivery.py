"""Every exporter says what one export delivered (exporters/result.py: ``Delivery``): the
traces (glideins) that went whole, in part or not at all, why, and whether it timed out. The
forwarder decides from it which glideins are done, stay maybe-sent or are retried."""

import socket
import threading
import time
from http.server import ThreadingHTTPServer

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from glidein_tracing.core.converter import convert
from glidein_tracing.exporters.otlp import BoundedExporter, make_otlp_exporter
from glidein_tracing.exporters.result import Delivery, deliver
from glidein_tracing.exporters.store import JsonLinesStoreExporter
from glidein_tracing.core.journal import format_line, parse_lines

from tests.support.journal_builders import root_lines
from tests.support.otlp_receiver import CountingCollector, collector  # noqa: F401 (fixture)

TRACE_A, TRACE_B = "a" * 32, "b" * 32


def glidein(trace_id: str):
    lines = root_lines(1000.0, trace_id) + [format_line(1003, "end", "glidein", {})]
    events, _ = parse_lines("".join(lines).encode())
    return convert(events, trace_id=trace_id)


def test_a_collector_that_takes_everything_delivers_every_trace(collector):
    spans = glidein(TRACE_A) + glidein(TRACE_B)
    delivery = deliver(make_otlp_exporter(collector, 5), spans)
    assert delivery == Delivery(delivered=frozenset({int(TRACE_A, 16), int(TRACE_B, 16)}))
    assert delivery.ok and delivery.result is SpanExportResult.SUCCESS
    assert len(CountingCollector.received) == len(spans)


def test_a_refusing_collector_delivers_nothing_and_says_so(collector):
    CountingCollector.up = False
    delivery = deliver(make_otlp_exporter(collector, 5), glidein(TRACE_A))
    assert not delivery.ok and not delivery.timed_out and delivery.reason
    assert delivery.undelivered == {int(TRACE_A, 16)} and not delivery.delivered and not delivery.partly


def test_an_export_cut_at_its_bound_is_a_timeout_any_span_may_have_arrived():
    # a listener that accepts and never answers; the SDK exporter's own deadline (3 s) is
    # longer than the bound (1 s), so the bound is what ends the export
    sink = socket.socket()
    sink.bind(("127.0.0.1", 0))
    sink.listen(8)
    try:
        inner = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{sink.getsockname()[1]}/v1/traces", timeout=3)
        delivery = deliver(BoundedExporter(inner, 1.0), glidein(TRACE_A))
    finally:
        sink.close()
    assert delivery.timed_out and not delivery.ok and "1 s" in delivery.reason
    assert delivery.undelivered == {int(TRACE_A, 16)}
    deadline = time.monotonic() + 10
    while any(t.name == "glidein-tracing-export" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.1)     # the SDK's deadline ends its thread: none outlives the test


def deliver_to(handler, spans, max_request_bytes: int) -> Delivery:
    """``deliver`` through the real OTLP exporter to a loopback collector served by ``handler``,
    stopped once the delivery returns."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        exporter = make_otlp_exporter(f"http://127.0.0.1:{server.server_port}", 10,
                                      max_request_bytes=max_request_bytes)
        return deliver(exporter, spans)
    finally:
        server.shutdown()
        server.server_close()


class RefusesOneSpan(CountingCollector):
    """Refuses (400) every request holding the span named ``setup`` of trace B."""

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
        if any(s.trace_id.hex() == TRACE_B and s.name == "setup" for s in spans):
            self.send_response(400)
            self.end_headers()
            return
        for span in spans:
            CountingCollector.received.append((span.trace_id.hex(), span.span_id.hex()))
        self.send_response(200)
        self.end_headers()


def test_a_split_batch_says_which_glidein_went_whole_and_which_in_part():
    a, b = glidein(TRACE_A), glidein(TRACE_B)
    limit = max(encode_spans([s]).ByteSize() for s in a + b) + 16   # about one span per request
    CountingCollector.received = []
    delivery = deliver_to(RefusesOneSpan, a + b, limit)
    assert delivery.delivered == {int(TRACE_A, 16)} and delivery.partly == {int(TRACE_B, 16)}
    assert not delivery.ok and "refused" in delivery.reason and not delivery.timed_out
    assert {t for t, _ in CountingCollector.received} == {TRACE_A, TRACE_B}


class RecordsSizes(CountingCollector):
    """Takes every request and records its body's size."""
    sizes: list = []

    def do_POST(self):
        RecordsSizes.sizes.append(int(self.headers["Content-Length"]))
        self.rfile.read(RecordsSizes.sizes[-1])
        self.send_response(200)
        self.end_headers()


def test_no_request_above_the_limit_reaches_the_collector():
    """Whatever the SDK (1.41, Python 3.9's, has no cap of its own): a batch above the limit
    goes in requests under it, and every glidein arrives whole."""
    a, b = glidein(TRACE_A), glidein(TRACE_B)
    limit = encode_spans(a).ByteSize() + 16      # one glidein per request
    RecordsSizes.sizes = []
    delivery = deliver_to(RecordsSizes, a + b, limit)
    assert delivery.ok and delivery.delivered == {int(TRACE_A, 16), int(TRACE_B, 16)}
    assert len(RecordsSizes.sizes) == 2 and max(RecordsSizes.sizes) <= limit, RecordsSizes.sizes


def test_the_store_delivers_or_says_why_not(tmp_path):
    exporter = JsonLinesStoreExporter(tmp_path / "store")
    assert deliver(exporter, glidein(TRACE_A)) == Delivery(delivered=frozenset({int(TRACE_A, 16)}))
    exporter.shutdown()
    refused = deliver(exporter, glidein(TRACE_B))
    assert refused.undelivered == {int(TRACE_B, 16)} and "shut down" in refused.reason
    assert exporter.export(glidein(TRACE_B)) is SpanExportResult.FAILURE     # the SDK's view of it


def test_any_sdk_exporter_is_asked_through_its_export():
    memory = InMemorySpanExporter()
    spans = glidein(TRACE_A)
    assert deliver(memory, spans) == Delivery(delivered=frozenset({int(TRACE_A, 16)}))
    assert len(memory.get_finished_spans()) == len(spans)
    memory.shutdown()
    assert deliver(memory, spans).undelivered == {int(TRACE_A, 16)}
