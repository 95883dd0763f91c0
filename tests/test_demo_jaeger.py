"""`glidein-tracing demo --endpoint` into a real Jaeger: what an operator sees there."""

import subprocess
import sys

import pytest

from tests.support.jaeger_harness import v1_parent, v1_process, v1_tags

pytestmark = pytest.mark.jaeger


def test_demo_glideins_arrive_in_jaeger_whole(jaeger, jaeger_query):
    proc = subprocess.run([sys.executable, "-m", "glidein_tracing", "demo", "--glideins", "5",
                           "--endpoint", jaeger.otlp_endpoint], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Exporter already shutdown" not in proc.stderr
    listed = [line.split() for line in proc.stdout.splitlines() if line.startswith("  ")]
    # "  TRACE  label[  -> glidein failure: DOMAIN (evidence)]"
    traces = {fields[0]: " ".join(fields[1:]).split(" -> ")[0] for fields in listed if len(fields[0]) == 32}
    assert len(traces) == 5
    wanted = {"glidein", "gwms-frontend", "jobsub_lite"}
    assert wanted <= set(jaeger_query.wait_for_services(wanted))
    for trace_id, label in traces.items():
        trace = jaeger_query.wait_for_trace(trace_id, min_spans=8)
        spans = {s["spanID"]: s for s in trace["spans"]}
        roots = [s for s in spans.values() if v1_parent(s) is None]
        assert len(roots) == 1, label
        for span in spans.values():
            parent = v1_parent(span)
            assert parent is None or parent in spans, f"{label}: broken tree at {span['operationName']}"
            assert "glidein.stage" in v1_tags(span)
        root = roots[0]
        process = v1_process(trace, root)
        assert process["serviceName"] == "glidein"
        ptags = v1_tags(process)
        assert ptags["glidein.entry"] == "DEMO_ENTRY" and ptags["host.name"]
        stages = {v1_tags(s)["glidein.stage"] for s in spans.values()}
        assert {"glidein", "factory.submit", "factory.queue", "setup", "validation", "teardown"} <= stages
        if label == "validation failure":
            failed = [s for s in spans.values() if v1_tags(s).get("error") is True
                      and v1_tags(s)["glidein.stage"] == "validation"]
            assert [v1_tags(s)["error.type"] for s in failed] == ["WN_Resource"]
            assert v1_tags(root)["glidein.failure.domain"] == "site"
            # the failed script's log tail is a span log (event) in Jaeger
            logs = [{f["key"]: f["value"] for f in log["fields"]} for log in failed[0]["logs"]]
            tails = [log for log in logs if log.get("event") == "glidein.log_tail"]
            assert any("check_wn_drainstate.sh: ERROR" in log["log.lines"] for log in tails)
        else:
            assert {"condor.start", "idle"} <= stages
