"""Our grouped OTLP encoding must say exactly what the SDK's own encoder says."""

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from glidein_tracing.converter import convert
from glidein_tracing.exporters.otlp_proto import encode_request
from glidein_tracing.journal import format_line, parse_lines

from journal_builders import root_lines


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


def by_span_id(request):
    out = {}
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                out[span.span_id] = (rs.resource, ss.scope, span)
    return out


def test_grouped_encoding_equals_the_sdk_encoding():
    spans = sample_spans()
    ours, sdk = by_span_id(encode_request(spans)), by_span_id(encode_spans(spans))
    assert ours.keys() == sdk.keys() and len(ours) == len(spans)
    for span_id, (resource, scope, span) in sdk.items():
        o_resource, o_scope, o_span = ours[span_id]
        assert o_resource == resource
        assert o_scope == scope
        assert o_span == span, span.name


def test_one_resource_block_per_glidein():
    spans = sample_spans()
    request = encode_request(spans + sample_spans())
    user_view = sum(1 for s in spans if s.attributes.get("glidein.user_view"))
    assert user_view == 1
    assert len(request.resource_spans) == 2  # one per convert() call (each glidein's resource)


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


def test_wire_encoding_equals_the_sdk_for_every_value_type_and_span_shape():
    spans = hand_made_spans()
    ours, sdk = by_span_id(encode_request(spans)), by_span_id(encode_spans(spans))
    assert ours.keys() == sdk.keys() and len(ours) == 3
    for span_id, (resource, scope, span) in sdk.items():
        assert ours[span_id] == (resource, scope, span), span.name


def test_ints_beyond_int64_travel_as_text_instead_of_failing_the_batch():
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import SpanContext

    span = ReadableSpan(name="x", context=SpanContext(1, 2, is_remote=False),
                        resource=Resource({}), attributes={"huge": 2**70, "low": -2**63})
    (_, _, encoded), = by_span_id(encode_request([span])).values()
    values = {kv.key: kv.value for kv in encoded.attributes}
    assert values["huge"].string_value == str(2**70)
    assert values["low"].int_value == -2**63
