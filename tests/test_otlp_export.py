"""OTLP/HTTP export: honours the OTel variables and never blocks past its bound."""

import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export import SpanExportResult

from glidein_tracing.core.converter import convert
from glidein_tracing.exporters.otlp import make_otlp_exporter, traces_url
from glidein_tracing.core.journal import format_line, parse_lines

from tests.support.journal_builders import root_lines


def sample_spans():
    lines = root_lines(1000.0) + [format_line(1003, "end", "glidein", {})]
    events, _ = parse_lines("".join(lines).encode())
    return convert(events)


class Receiver(BaseHTTPRequestHandler):
    received = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        Receiver.received.append((self.path, dict(self.headers), request))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args):
        pass


def serve():
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_exports_protobuf_to_the_traces_path():
    Receiver.received.clear()
    server = serve()
    try:
        exporter = make_otlp_exporter(f"http://127.0.0.1:{server.server_port}", 5)
        assert exporter.export(sample_spans()) == SpanExportResult.SUCCESS
    finally:
        server.shutdown()
    (path, _, request), = Receiver.received
    assert path == "/v1/traces"
    names = [s.name for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert any(n.split()[0] == "glidein" for n in names) and "setup" in names


def test_standard_otel_variables_are_honoured(monkeypatch):
    Receiver.received.clear()
    server = serve()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-scope=glideins")
        assert make_otlp_exporter(None, 5).export(sample_spans()) == SpanExportResult.SUCCESS
    finally:
        server.shutdown()
    (_, headers, _), = Receiver.received
    assert headers.get("x-scope") == "glideins"


def test_unresponsive_collector_costs_at_most_the_bound():
    # a listener that accepts and never answers: the worst case for a glidein
    sink = socket.socket()
    sink.bind(("127.0.0.1", 0))
    sink.listen(16)
    try:
        exporter = make_otlp_exporter(f"http://127.0.0.1:{sink.getsockname()[1]}", 1.5)
        began = time.monotonic()
        result = exporter.export(sample_spans())
        elapsed = time.monotonic() - began
    finally:
        sink.close()
    assert result == SpanExportResult.FAILURE
    assert elapsed < 1.5 + 0.5


def test_sdk_disabled_exports_nothing(tmp_path):
    journal = tmp_path / "j.gtj"
    journal.write_text("".join(root_lines(1000.0)))
    store = tmp_path / "store"
    env = {"OTEL_SDK_DISABLED": "true", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "glidein_tracing", "export", "--journal", str(journal),
                           "--store", str(store)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and "OTEL_SDK_DISABLED" in proc.stderr
    assert not list(store.glob("*.jsonl"))


def test_traces_url():
    assert traces_url("http://h:4318") == "http://h:4318/v1/traces"
    assert traces_url("http://h:4318/v1/traces") == "http://h:4318/v1/traces"
