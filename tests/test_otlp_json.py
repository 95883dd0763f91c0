"""The store's OTLP JSON is the SDK encoder's message in the OTLP/JSON rendering (ids as hex),
and reads back (flatten_request) to what the converter made."""

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from glidein_tracing.core.converter import convert
from glidein_tracing.exporters.otlp_json import encode_request, flatten_request, request_from_span_dicts, span_dict
from glidein_tracing.core.journal import format_line, parse_lines

from tests.support.journal_builders import root_lines
from tests.support.otlp_receiver import as_protobuf


def sample_journal():
    """(events, report) of a glidein with a note, a job with its user's context and an error."""
    user = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    lines = root_lines(1000.0) + [
        format_line(1001, "note", "-", {"@msg": "GLIDEIN_TRACING_EXPORT_TIMEOUT='x' is not an integer"}),
        format_line(1010, "start", "condor", {"@stage": "condor.start", "@name": "condor"}),
        format_line(1012, "start", "job/a#1.0#1", {"@stage": "job", "@name": "job", "@parent": "condor",
                                                   "job.cluster_id:i": "1", "job.rss:f": "1.5",
                                                   "job.ok:b": "true"}, links=[user]),
        format_line(1020, "end", "job/a#1.0#1", {"@status": "ERROR", "@error.type": "job_failed",
                                                 "@error.detail": "exit code 3"}),
        format_line(1030, "end", "condor", {}),
        format_line(1031, "end", "glidein", {}),
    ]
    return parse_lines("".join(lines).encode())


def sample_spans():
    return convert(*sample_journal())


def hand_made_spans():
    """Corners the converter rarely produces: remote parents, trace state, every value type."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import Link, SpanContext, SpanKind, TraceFlags, TraceState
    from opentelemetry.trace.status import Status, StatusCode

    resource = Resource({"service.name": "glidein", "host.name": "wn1.example.org", "n": 3})
    remote = SpanContext(0x0af7651916cd43dd8448eb211c80319c, 0xb7ad6b7169203331, is_remote=True,
                         trace_flags=TraceFlags(1), trace_state=TraceState([("vendor", "x1")]))
    local = SpanContext(0x1234, 0x99, is_remote=False, trace_flags=TraceFlags(1))
    values = {"text": "héllo ✓", "empty": "", "yes": True, "no": False, "zero": 0, "neg": -5,
              "big": 2**62, "real": 1.5, "nought": 0.0, "raw": b"\x00\x01",
              "texts": ("a", "b"), "numbers": [1, 2], "mixed": [True, 2.5]}
    return [
        ReadableSpan(name="job on glidein", context=local, parent=remote, resource=resource,
                     attributes=values, kind=SpanKind.INTERNAL,
                     events=[Event("note", {"message": "m"}, timestamp=5), Event("bare", {}, timestamp=6)],
                     links=[Link(remote, {"traceparent": "00-x"}), Link(local)],
                     status=Status(StatusCode.ERROR, "exit code 3"), start_time=10, end_time=20,
                     instrumentation_scope=InstrumentationScope("glidein_tracing", "1.0")),
        ReadableSpan(name="server", context=SpanContext(0x1234, 0x98, is_remote=False,
                                                        trace_state=TraceState([("k", "v")])),
                     parent=local, resource=resource, kind=SpanKind.SERVER,
                     status=Status(StatusCode.OK), start_time=11, end_time=12),
        ReadableSpan(name="", context=SpanContext(0x1234, 0x97, is_remote=False), resource=resource,
                     start_time=0, end_time=0, instrumentation_scope=None),
    ]


def test_json_is_the_sdk_encoding_with_hex_ids():
    for spans in (sample_spans(), hand_made_spans()):
        request = encode_request(spans)
        first = request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
        assert len(first["traceId"]) == 32 and len(first["spanId"]) == 16
        int(first["traceId"], 16), int(first["spanId"], 16)      # hex, not base64
        assert as_protobuf(request) == encode_spans(spans)


def test_flatten_reads_back_what_the_converter_made():
    spans = sample_spans()
    flat = {s["span_id"]: s for s in flatten_request(encode_request(spans))}
    assert len(flat) == len(spans)
    for span in spans:
        got = flat[format(span.context.span_id, "016x")]
        assert got["trace_id"] == format(span.context.trace_id, "032x")
        assert got["parent_span_id"] == (format(span.parent.span_id, "016x") if span.parent else "")
        assert (got["name"], got["start_ns"], got["end_ns"]) == (span.name, span.start_time, span.end_time)
        assert got["status_code"] == span.status.status_code.value
        assert got["attributes"] == dict(span.attributes)
        assert got["resource"] == dict(span.resource.attributes)
        assert [e["name"] for e in got["events"]] == [e.name for e in span.events]
        assert [l["span_id"] for l in got["links"]] == [format(l.context.span_id, "016x") for l in span.links]


def test_every_value_type_reads_back():
    (job, server, bare) = [{s["name"]: s for s in flatten_request(encode_request(hand_made_spans()))}[n]
                           for n in ("job on glidein", "server", "")]
    attrs = job["attributes"]
    assert attrs["text"] == "héllo ✓" and attrs["yes"] is True and attrs["neg"] == -5
    assert attrs["big"] == 2**62 and attrs["real"] == 1.5 and attrs["numbers"] == [1, 2]
    assert attrs["texts"] == ["a", "b"] and attrs["mixed"] == [True, 2.5]
    assert job["parent_span_id"] == "b7ad6b7169203331" and job["status_message"] == "exit code 3"
    assert server["status_code"] == 1 and bare["start_ns"] == 0


def test_ints_beyond_int64_become_text_instead_of_failing_the_batch():
    """A journal (or a ClassAd) can hold any number; OTLP ints are int64."""
    lines = root_lines(1000.0) + [
        format_line(1001, "attr", "glidein", {"x.huge:i": str(2**70), "x.low:i": str(-2**63),
                                              "x.inf:i": "1e999"}),
        format_line(1003, "end", "glidein", {}),
    ]
    spans = convert(*parse_lines("".join(lines).encode()))
    root = spans[0]
    assert root.attributes["x.huge"] == str(2**70) and root.attributes["x.low"] == -2**63
    assert root.attributes["x.inf"] == "1e999"
    encode_spans(spans)   # the SDK encoder takes every span
    flat = {s["attributes"]["glidein.stage"]: s for s in flatten_request(encode_request(spans))}
    assert flat["glidein"]["attributes"]["x.huge"] == str(2**70)


def test_sdk_spans_written_from_span_dicts_read_back_as_the_sdk_encoding():
    """frontend_hooks sends SDK spans as span_dict -> request_from_span_dicts (no protobuf in
    the group process): what a receiver reads is what the SDK's encoding would have carried."""
    spans = sample_spans()
    resources: dict = {}
    dicts = [span_dict(span, resources.setdefault(id(span.resource), dict(span.resource.attributes)))
             for span in spans]
    request = request_from_span_dicts(dicts)
    assert len(request["resourceSpans"]) == len({id(span.resource) for span in spans})
    assert list(flatten_request(request)) == list(flatten_request(encode_request(spans)))
