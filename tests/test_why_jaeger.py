"""glidein-tracing why reading the job.waiting spans from a real Jaeger: the Frontend's cycle
exported with the real OTLP/HTTP exporter, read back through Jaeger's query API."""

import datetime
import json
import time

import pytest

pytest.importorskip("opentelemetry.instrumentation.instrumentor")
pytest.importorskip("classad2")

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from glidein_tracing.cli.main import main
from glidein_tracing.core import conventions as gc
from glidein_tracing.table import writer
from tests.support import jaeger_harness
from tests.support import waiting_world as ww
from tests.support.frontend_cycles import cycle, instrumented

pytestmark = pytest.mark.jaeger


def test_why_reads_the_reasons_from_jaeger(jaeger_binary, tmp_path, capsys):
    jaeger = jaeger_harness.JaegerProcess(jaeger_binary, log_dir=tmp_path / "jaeger")
    try:
        jaeger.start()
    except jaeger_harness.JaegerUnavailable as exc:
        jaeger_harness.unavailable(str(exc))
    try:
        instrumentor, memory = instrumented()
        try:
            cycle(tmp_path, ww.world(tmp_path))
        finally:
            instrumentor.uninstrument()
        spans = memory.get_finished_spans()
        exporter = OTLPSpanExporter(endpoint=jaeger.otlp_endpoint + "/v1/traces")
        exporter.export(spans)
        exporter.shutdown()
        waiting_span = [s for s in spans if s.name == gc.STAGE_JOB_WAITING
                        and format(s.context.trace_id, "032x") == ww.trace_of("SMALL")][0]
        jaeger.query().wait_for_trace(ww.trace_of("SMALL"), [format(waiting_span.context.span_id, "016x")])
        today = time.strftime("%Y-%m-%d", time.gmtime())
        ended = datetime.datetime.utcfromtimestamp(time.time() - 600)
        writer.write_days(tmp_path / "table", "glideins",
                          {today: [{"entry": "SMALL_CE", "outcome": "ok", "ended_at": ended}] * 2}, "t1")
        assert main(["why", ww.trace_of("SMALL"), "--jaeger", jaeger.query_url, "--json",
                     "--table", str(tmp_path / "table")]) == 0
        (job,) = json.loads(capsys.readouterr().out)["jobs"]
        assert job["reason"] == "unusable_idle_glideins"
        assert job["facts"]["fit"]["memory_mb"]["fits"] is False
        assert job["evidence"][0]["span_id"] == format(waiting_span.context.span_id, "016x")
        # Jaeger hands the array attributes back as JSON strings: lists again, so the table's
        # evidence at the entry is there
        assert job["facts"]["reason_entries"] == [ww.request_name("SMALL")] and job["facts"]["sites"] == ["SMALL"]
        assert any(e["what"] == f"glideins at {ww.request_name('SMALL')} in the last 2 days: ok 2" for e in job["evidence"])
    finally:
        jaeger.stop()
