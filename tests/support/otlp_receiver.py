"""A loopback OTLP/HTTP receiver (protobuf or JSON) for tests: counts every span id it receives (and keeps each
span with when it arrived), and answers a Jaeger-like /api/traces/{id} so the forwarder can
reconcile. ``up`` switches it between answering and refusing (503), to play a collector outage;
``query_answer`` (status, body) replaces every query's answer, to play a query endpoint down
or hostile;
``answer_after_s`` keeps it from answering an export it took for so long, to play an export
that timed out after the spans arrived."""

import base64
import json
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


class CountingCollector(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver that counts span ids, with a Jaeger-like query endpoint so the
    forwarder can reconcile; `up` switches it between answering and refusing."""
    received: list = []
    arrived: dict = {}      # (trace id, span id) hex -> (epoch seconds, the OTLP span) of its last arrival
    headers_seen: list = []
    paths_seen: list = []
    resources_seen: list = []   # each resource's attributes, {key: string value}
    up = True
    answer_after_s = 0.0
    query_answer = None     # (HTTP status, body bytes) for every query, or None: the spans held

    def do_POST(self):
        CountingCollector.headers_seen.append({k.lower(): v for k, v in self.headers.items()})
        CountingCollector.paths_seen.append(self.path)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if not CountingCollector.up:
            self.send_response(503)
            self.end_headers()
            return
        if self.headers.get("Content-Type", "").startswith("application/json"):
            request = as_protobuf(json.loads(body))
        else:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
        for rs in request.resource_spans:
            CountingCollector.resources_seen.append(
                {kv.key: kv.value.string_value for kv in rs.resource.attributes})
            for ss in rs.scope_spans:
                for span in ss.spans:
                    key = (span.trace_id.hex(), span.span_id.hex())
                    CountingCollector.received.append(key)
                    CountingCollector.arrived[key] = (time.time(), span)
        time.sleep(CountingCollector.answer_after_s)
        self.send_response(200)
        self.end_headers()

    def do_GET(self):
        """Jaeger's /api/traces/{id}: the trace's spans (the last copy of each) in its v1 JSON."""
        if CountingCollector.query_answer is not None:
            status, body = CountingCollector.query_answer
            self.send_response(status)
            self.end_headers()
            self.wfile.write(body)
            return
        trace = self.path.rsplit("/", 1)[-1]
        spans = [jaeger_span(t, s, otlp) for (t, s), (_, otlp) in list(CountingCollector.arrived.items())
                 if t == trace]
        body = json.dumps({"data": [{"traceID": trace, "spans": spans, "processes": {}}] if spans else []}).encode()
        self.send_response(200 if spans else 404)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def as_protobuf(request: dict) -> ExportTraceServiceRequest:
    """An OTLP JSON request parsed with protobuf's own JSON rules, which take ids as base64
    where OTLP/JSON writes them in hex."""
    def base64_ids(node: dict):
        for name in ("traceId", "spanId", "parentSpanId"):
            if node.get(name):
                node[name] = base64.b64encode(bytes.fromhex(node[name])).decode()

    for resource_spans in request.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                base64_ids(span)
                for link in span.get("links", []):
                    base64_ids(link)
    return json_format.ParseDict(request, ExportTraceServiceRequest())


def _tag(kv) -> dict:
    value = kv.value
    kind = value.WhichOneof("value")
    types = {"string_value": "string", "int_value": "int64", "double_value": "float64", "bool_value": "bool"}
    return {"key": kv.key, "type": types.get(kind, "string"),
            "value": getattr(value, kind) if kind in types else str(getattr(value, kind or "string_value"))}


def jaeger_span(trace: str, span_id: str, span) -> dict:
    """One OTLP span as Jaeger's v1 query JSON shows it (times in microseconds)."""
    references = [{"refType": "CHILD_OF", "traceID": trace, "spanID": span.parent_span_id.hex()}] \
        if span.parent_span_id else []
    start_us = span.start_time_unix_nano // 1000
    return {"traceID": trace, "spanID": span_id, "operationName": span.name, "references": references,
            "startTime": start_us, "duration": span.end_time_unix_nano // 1000 - start_us,
            "tags": [_tag(kv) for kv in span.attributes], "logs": []}


@contextmanager
def counting_collector():
    """A fresh CountingCollector on a loopback port, for the block: yields its base URL."""
    CountingCollector.received = []
    CountingCollector.arrived = {}
    CountingCollector.headers_seen = []
    CountingCollector.paths_seen = []
    CountingCollector.resources_seen = []
    CountingCollector.up = True
    CountingCollector.answer_after_s = 0.0
    CountingCollector.query_answer = None
    server = ThreadingHTTPServer(("127.0.0.1", 0), CountingCollector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def collector():
    with counting_collector() as url:
        yield url


