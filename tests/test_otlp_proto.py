"""Our grouped OTLP encoding must say exactly what the SDK's own encoder says."""

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from glidein_tracing.converter import convert
from glidein_tracing.exporters.otlp_proto import encode_request
from glidein_tracing.journal import format_line, parse_lines

from journal_builders import root_lines


def sample_spans():
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
    events, report = parse_lines("".join(lines).encode())
    return convert(events, report)


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
