"""What an operator meets in a real Jaeger: the demo's glideins drawn as they ran, told apart
in the search list, found by the searches docs/jaeger.md documents (Finding glideins)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from glidein_tracing.core import sections
from glidein_tracing.core.journal import parse_lines
from tests.support import jaeger_harness
from tests.support.critical_path import NoCriticalPath, critical_path
from tests.support.jaeger_harness import v1_parent, v1_process, v1_tags

pytestmark = pytest.mark.jaeger


@pytest.fixture(scope="module")
def demo_in_jaeger(jaeger_binary, tmp_path_factory):
    """A Jaeger of its own (the searches count traces) holding the demo's five glideins, the
    demo's Factory files (their journals: the records' order) and its listing."""
    jaeger = jaeger_harness.JaegerProcess(jaeger_binary, log_dir=tmp_path_factory.mktemp("jaeger"))
    try:
        jaeger.start()
    except jaeger_harness.JaegerUnavailable as exc:
        jaeger_harness.unavailable(str(exc))
    keep = tmp_path_factory.mktemp("demo")
    try:
        proc = subprocess.run([sys.executable, "-m", "glidein_tracing", "demo", "--glideins", "5",
                               "--endpoint", jaeger.otlp_endpoint, "--jaeger-ui", jaeger.query_url,
                               "--keep", str(keep)],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        listed = [line.split() for line in proc.stdout.splitlines() if line.startswith("  ")]
        labels = {f[0]: " ".join(f[1:]).split(" -> ")[0] for f in listed if len(f[0]) == 32}
        # the hint names the Jaeger it was given, whatever its port
        assert f"open them in Jaeger: {jaeger.query_url}/trace/{next(iter(labels))}" in proc.stdout
        query = jaeger.query()
        traces = {t: query.wait_for_trace(t, min_spans=8) for t in labels}
        yield jaeger, query, labels, traces, keep
    finally:
        jaeger.stop()


def search(query, service="glidein", **tags) -> set:
    """Trace ids a Jaeger search (the UI's Tags field) finds."""
    status, body = query.get("/api/traces", {"service": service, "limit": 100, "lookback": "1h",
                                             "tags": json.dumps(tags)})
    assert status == 200, body
    return {t["traceID"] for t in body["data"]}


def root_of(trace):
    (root,) = [s for s in trace["spans"] if v1_parent(s) is None]
    return root


def record_order(keep: Path) -> dict:
    """Each returned glidein's per-script record ids in the order GlideinWMS wrote them."""
    out = {}
    for err in keep.glob("factory/**/job.*.err"):
        for section in sections.journal_sections(err.read_text(errors="replace")):
            events, _ = parse_lines(section.data)
            trace = next(e.fields["@trace_id"] for e in events if e.key == "glidein" and "@trace_id" in e.fields)
            out[trace] = [e.key for e in events if e.op == "record" and e.key != "condor_startup.sh"]
    return out


def test_every_glidein_is_drawn_as_it_ran(demo_in_jaeger):
    """No span that the UI flags, scripts in record order, children within their parents,
    no link to a span that is never sent."""
    _, query, labels, traces, keep = demo_in_jaeger
    order = record_order(keep)
    assert set(order) == set(traces)
    for trace_id, trace in traces.items():
        spans = {s["spanID"]: s for s in trace["spans"]}
        for span in spans.values():
            assert span["duration"] > 0, f"{labels[trace_id]}: {span['operationName']} does not last"
            parent = spans.get(v1_parent(span)) if v1_parent(span) else None
            if parent is not None:
                assert parent["startTime"] <= span["startTime"], span["operationName"]
                assert span["startTime"] + span["duration"] <= parent["startTime"] + parent["duration"], \
                    f"{labels[trace_id]}: {span['operationName']} ends after {parent['operationName']}"
            for ref in span["references"]:
                if ref["refType"] == "FOLLOWS_FROM":     # a link: its span was sent
                    linked = query.trace_v1(ref["traceID"])
                    assert linked and ref["spanID"] in {s["spanID"] for s in linked["spans"]}, \
                        f"{labels[trace_id]}: {span['operationName']} links to a span never sent"
        scripts = sorted((s for s in spans.values() if v1_tags(s)["glidein.stage"] == "validation"),
                         key=lambda s: s["startTime"])       # the order Jaeger draws them in
        assert [s["operationName"] for s in scripts] == order[trace_id]
        queue = [s for s in spans.values() if v1_tags(s)["glidein.stage"] == "factory.queue"]
        node_start = min(s["startTime"] for s in spans.values() if v1_tags(s)["glidein.stage"] == "setup")
        assert node_start >= max(q["startTime"] + q["duration"] for q in queue)   # after the execute event


def test_the_search_list_tells_glideins_apart(demo_in_jaeger):
    """Jaeger's list shows each trace as `service: root span name`."""
    _, query, labels, traces, _ = demo_in_jaeger
    names = {}
    for trace_id, trace in traces.items():
        root = root_of(trace)
        tags = v1_tags(root)
        assert v1_process(trace, root)["serviceName"] == "glidein"
        assert root["operationName"] == f"glidein DEMO_ENTRY {tags['glidein.outcome']}"
        names[labels[trace_id]] = root["operationName"]
    assert names["validation failure"] == "glidein DEMO_ENTRY validation_failed"
    # the operations Jaeger lists for the service stay few: one per entry and outcome
    status, body = query.get("/api/services/glidein/operations")
    assert status == 200
    assert {"glidein DEMO_ENTRY ok", "glidein DEMO_ENTRY validation_failed"} <= set(body["data"])


def stage_of(span) -> str:
    return v1_tags(span)["glidein.stage"]


def test_every_glidein_gets_a_critical_path_through_htcondor_and_its_jobs(demo_in_jaeger):
    """The critical path as the UI the pinned Jaeger serves computes it (jaeger-ui v1.76, its
    rules in tests/support/critical_path.py), on the traces as Jaeger returns them: every
    glidein gets one, from submission through setup's scripts to teardown, and through
    HTCondor and a job where its glidein ran jobs."""
    _, _, labels, traces, _ = demo_in_jaeger
    for trace_id, trace in traces.items():
        spans = {s["spanID"]: s for s in trace["spans"]}
        on_path = {stage_of(spans[sid]) for sid, _start, _end in critical_path(trace)}
        label = labels[trace_id]
        assert {"factory.submit", "factory.queue", "validation", "teardown"} <= on_path, (label, on_path)
        if label == "validation failure":
            assert "post_failure_sleep" in on_path, on_path
        elif label == "no job until GLIDEIN_Max_Idle":
            assert "idle" in on_path, on_path
        else:
            assert {"condor.start", "job"} <= on_path, (label, on_path)
    # and the rule that used to drop it all: a root whose first reference leads out of the trace
    trace = next(iter(traces.values()))
    root = root_of(trace)
    linked = dict(trace, spans=[dict(s, references=[{"refType": "FOLLOWS_FROM", "traceID": "0" * 32,
                                                     "spanID": "1" * 16}]) if s is root else s
                                for s in trace["spans"]])
    with pytest.raises(NoCriticalPath):
        critical_path(linked)


def found(query, expected: set, service="glidein", **tags) -> set:
    """A documented search: it finds exactly ``expected``, which is never empty (a search that
    finds nothing would pass a comparison of two empty sets)."""
    assert expected, f"nothing to find for {tags}: the demo no longer makes it"
    got = search(query, service, **tags)
    assert got == expected, (tags, got, expected)
    return got


def test_the_documented_searches_find_what_they_say(demo_in_jaeger):
    _, query, labels, traces, _ = demo_in_jaeger
    by_label = {label: t for t, label in labels.items()}
    glideins = set(traces)
    # failed glideins: one tag. Jaeger v2.13 drops an `error=true` filter (the query's text
    # is read as a boolean) and stores no `otel.status_code` attribute: the docs say so
    found(query, {by_label["validation failure"]}, **{"glidein.failed": "true"})
    assert search(query, **{"error": "true"}) >= glideins                 # every trace, as documented
    assert search(query, **{"otel.status_code": "ERROR"}) == set()
    found(query, {by_label["validation failure"]}, **{"glidein.outcome": "validation_failed"})
    found(query, {by_label["validation failure"]}, **{"glidein.failure.domain": "site"})
    # a Frontend request's glideins: by the trace id of the Frontend cycle that asked for them
    # (the service also holds the later cycle and the job.waiting spans in the users' traces)
    (frontend,) = search(query, service="gwms-frontend", **{"glidein.stage": "frontend.request"})
    found(query, glideins, **{"glidein.request_trace_id": frontend})
    # one glidein by its Factory job id; without the stage, the users' traces of its jobs too
    trace_id = by_label["several jobs"]
    tags = v1_tags(root_of(traces[trace_id]))
    job_id = {"glidein.cluster": str(tags["glidein.cluster"]), "glidein.proc": str(tags["glidein.proc"])}
    found(query, {trace_id}, **job_id, **{"glidein.stage": "glidein"})
    found(query, {trace_id} | user_traces_of(traces[trace_id]), **job_id)
    # a user's jobs: the glideins that ran them, and the user's own traces (their job's view)
    ran_jobs = {t for t, label in labels.items() if label not in ("validation failure", "no job until GLIDEIN_Max_Idle")}
    users = set().union(*(user_traces_of(traces[t]) for t in ran_jobs))
    found(query, users, **{"job.owner": "fakeuser", "glidein.user_view": "true"})
    found(query, ran_jobs | users, **{"job.owner": "fakeuser"})
    # the glideins whose HTCondor got no job
    found(query, {by_label["no job until GLIDEIN_Max_Idle"]}, **{"glidein.idle.kind": "no_job"})


def user_traces_of(trace) -> set:
    """The users' own traces a glidein's jobs link to."""
    return {ref["traceID"] for s in trace["spans"] if stage_of(s) == "job"
            for ref in s["references"] if ref["refType"] == "FOLLOWS_FROM"}
