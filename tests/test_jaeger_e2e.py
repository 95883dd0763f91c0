"""End to end through a real Jaeger v2: synthetic glidein journals -> converter -> OTLP/HTTP
exporter -> Jaeger -> its query API (v1 JSON and v3 OTLP JSON). Assertions are by span id
(deterministic: glidein_tracing.core.ids), not only by name.
"""

from __future__ import annotations

import time

import pytest

from tests.support import jaeger_harness as jh
from glidein_tracing.core import ids
from tests.support.synthetic_glidein import (SERVICE, USER_SPAN, USER_TRACE, USER_TRACEPARENT, Glidein,
                               export, full_glidein, hexid, in_trace, parent_hexid,
                               unique_name)

pytestmark = pytest.mark.jaeger


# -- (a) one trace, parent tree, tags, resource as process tags ------------------------------

def test_a_glidein_arrives_as_one_trace_with_its_tree_tags_and_process(jaeger, jaeger_query):
    g = full_glidein("a")
    spans = g.spans()
    export(jaeger, spans)
    expected = {hexid(s): s for s in in_trace(spans, g.trace_id)}
    assert len(expected) == len(spans) - 1  # and one "job on glidein" in the user's trace
    trace = jaeger_query.wait_for_trace(g.trace_id, expected, min_spans=len(expected))

    assert trace["traceID"] == g.trace_id
    got = jh.v1_spans_by_id(trace)
    assert len(trace["spans"]) == len(got) == len(expected), "a span id appears twice"
    assert set(got) == set(expected)

    # The parent tree, by id: every span's CHILD_OF is the converter's parent.
    for sid, span in expected.items():
        assert jh.v1_parent(got[sid]) == parent_hexid(span), span.name
        assert all(t == g.trace_id for t, _ in jh.v1_references(got[sid], "CHILD_OF"))
    root, setup, condor = g.sid("glidein"), g.sid("setup"), g.sid("condor")
    assert jh.v1_parent(got[root]) is None
    assert jh.v1_parent(got[setup]) == root
    assert jh.v1_parent(got[condor]) == root
    assert jh.v1_parent(got[g.sid("teardown")]) == root
    for rid in ("main/check_proxy.sh", "entry/check_cvmfs.sh", "client/vo_setup.sh",
                "client_group/gpu_probe.sh"):
        vspan = got[g.sid("validation/" + rid)]
        assert vspan["operationName"] == rid
        assert jh.v1_parent(vspan) == setup
        tags = jh.v1_tags(vspan)
        assert tags["glidein.stage"] == "validation"
        assert tags["glidein.script.id"] == rid
        assert tags["glidein.script.list"] == rid.split("/")[0]
    assert jh.v1_tags(got[g.sid("validation/main/check_proxy.sh")])[
        "glidein.script.metric.proxy_lifetime"] == "86000"
    job_keys = [k for k in (f"job/submit.example.org#{j}#1795300000" for j in ("1001.0", "1002.0"))]
    for key in job_keys:
        assert jh.v1_parent(got[g.sid(key)]) == condor
        assert jh.v1_tags(got[g.sid(key)])["glidein.stage"] == "job"
    idle = [s for s in trace["spans"] if jh.v1_tags(s)["glidein.stage"] == "idle"]
    assert {jh.v1_tags(s)["glidein.idle.kind"] for s in idle} == {
        "before_first_job", "between_jobs", "tail"}
    assert all(jh.v1_parent(s) == condor for s in idle)

    # glidein.stage on every span, and the stage of each known key.
    stages = {sid: jh.v1_tags(s)["glidein.stage"] for sid, s in got.items()}
    assert stages[root] == "glidein" and stages[setup] == "setup"
    assert stages[condor] == "condor.start" and stages[g.sid("teardown")] == "teardown"

    # glidein.* attributes (typed) on the root.
    root_tags = jh.v1_tags(got[root])
    assert root_tags["glidein.factory"] == g.identity.factory
    assert root_tags["glidein.name"] == g.identity.name
    assert root_tags["glidein.entry"] == g.identity.entry
    assert root_tags["glidein.cluster"] == 4711
    assert root_tags["glidein.site"] == "TEST_SITE_E2E"
    assert root_tags["glidein.outcome"] == "ok"
    assert jh.v1_tags(got[condor])["condor.exit_code"] == 99
    assert isinstance(jh.v1_tags(got[setup])["glidein.resource.cpu_user_s"], float)

    # Resource attributes are the process; service.name is its serviceName.
    for span in trace["spans"]:
        process = jh.v1_process(trace, span)
        assert process["serviceName"] == SERVICE
        ptags = jh.v1_tags(process)
        assert ptags["host.name"] == "wn042.site.example.org"
        assert ptags["host.cpu.logical_count"] == 8
        assert ptags["glidein.factory"] == g.identity.factory
        assert ptags["glidein.name"] == g.identity.name
        assert ptags["glidein.site"] == "TEST_SITE_E2E"
        assert "service.name" not in ptags
    assert SERVICE in jaeger_query.services()

    # The v3 view agrees on ids and parents.
    v3 = jaeger_query.wait_for_trace(g.trace_id, expected, api="v3")
    v3_by_id = {s["spanId"]: s for s in jh.v3_spans(v3)}
    assert set(v3_by_id) == set(expected)
    for sid, span in expected.items():
        assert v3_by_id[sid]["traceId"] == g.trace_id
        assert (v3_by_id[sid].get("parentSpanId") or None) == parent_hexid(span)
        assert jh.v3_attrs(v3_by_id[sid]["_resource"])["service.name"] == SERVICE


# -- (b) the user's trace as a link -----------------------------------------------------------

def test_b_job_link_to_the_user_trace_is_follows_from_and_a_v3_link(jaeger, jaeger_query):
    g = full_glidein("b")
    spans = g.spans()
    export(jaeger, spans)
    job_key = "job/submit.example.org#1001.0#1795300000"
    other_job = "job/submit.example.org#1002.0#1795300000"
    job = g.sid(job_key)
    trace = jaeger_query.wait_for_trace(g.trace_id, [job],
                                        min_spans=len(in_trace(spans, g.trace_id)))
    got = jh.v1_spans_by_id(trace)

    assert jh.v1_references(got[job], "FOLLOWS_FROM") == [(USER_TRACE, USER_SPAN)]
    assert jh.v1_references(got[job], "CHILD_OF") == [(g.trace_id, g.sid("condor"))]
    assert jh.v1_tags(got[job])["job.user_traceparent"] == USER_TRACEPARENT
    assert jh.v1_references(got[g.sid(other_job)], "FOLLOWS_FROM") == []
    others = [s for sid, s in got.items() if sid != job]
    assert not any(jh.v1_references(s, "FOLLOWS_FROM") for s in others)

    v3 = jaeger_query.wait_for_trace(g.trace_id, [job], api="v3")
    v3_job = {s["spanId"]: s for s in jh.v3_spans(v3)}[job]
    links = v3_job.get("links") or []
    assert [(link["traceId"], link["spanId"]) for link in links] == [(USER_TRACE, USER_SPAN)]
    assert jh.v3_attrs(links[0]) == {"glidein.link.kind": "user_job",
                                     "traceparent": USER_TRACEPARENT}

    # The user's view: in the user's own trace, a "job on glidein" span under their span,
    # linking back to the glidein's job span.
    mirror = ids.span_id(USER_TRACE, f"glidein/{g.trace_id}/{job_key}")
    user_trace = jaeger_query.wait_for_trace(USER_TRACE, [mirror])
    mine = jh.v1_spans_by_id(user_trace)[mirror]
    assert mine["operationName"] == "job on glidein"
    assert jh.v1_references(mine, "CHILD_OF") == [(USER_TRACE, USER_SPAN)]
    assert jh.v1_references(mine, "FOLLOWS_FROM") == [(g.trace_id, job)]
    assert jh.v1_tags(mine)["glidein.trace_id"] == g.trace_id
    assert jh.v1_tags(mine)["glidein.site"] == "TEST_SITE_E2E"
    (start, duration) = (got[job]["startTime"], got[job]["duration"])
    assert (mine["startTime"], mine["duration"]) == (start, duration)
    user_v3 = jaeger_query.wait_for_trace(USER_TRACE, [mirror], api="v3")
    back = {s["spanId"]: s for s in jh.v3_spans(user_v3)}[mirror]["links"]
    assert [(link["traceId"], link["spanId"]) for link in back] == [(g.trace_id, job)]
    assert jh.v3_attrs(back[0])["glidein.link.kind"] == "glidein_job"
    # No other glidein span strays into the user's trace.
    strays = [s for s in user_trace["spans"]
              if jh.v1_tags(s).get("glidein.trace_id") == g.trace_id and s["spanID"] != mirror]
    assert strays == []


# -- (c) exported in two parts ----------------------------------------------------------------

def test_c_two_exports_at_different_times_merge_without_duplicate_span_ids(jaeger, jaeger_query):
    g = full_glidein("c")
    # Part one: the journal as it stood at the end of setup, exported then (the stages that
    # were finished by then). Part two, later: the whole journal, early stages included.
    setup_end = next(i for i, line in enumerate(g.lines)
                     if "\tend\tsetup\t" in line) + 1
    early = [s for s in g.spans(upto=setup_end)
             if not (s.attributes or {}).get("glidein.closed_by")]
    early_ids = {hexid(s) for s in early}
    assert g.sid("setup") in early_ids and g.sid("validation/main/check_proxy.sh") in early_ids
    assert g.sid("glidein") not in early_ids  # the root was still open
    export(jaeger, early)
    jaeger_query.wait_for_trace(g.trace_id, early_ids, min_spans=len(early_ids))

    time.sleep(1.0)
    sent_later = g.spans()
    export(jaeger, sent_later)
    everything = in_trace(sent_later, g.trace_id)
    expected = {hexid(s) for s in everything}
    assert early_ids < expected
    # What makes the merge clean: a finished stage converts to the very same span from the
    # early journal and from the whole one (Jaeger drops exact duplicates at query time).
    late = {hexid(s): s for s in everything}
    for span in early:
        twin = late[hexid(span)]
        assert (span.name, span.start_time, span.end_time, parent_hexid(span)) == \
            (twin.name, twin.start_time, twin.end_time, parent_hexid(twin))
        assert dict(span.attributes) == dict(twin.attributes), span.name
        assert dict(span.resource.attributes) == dict(twin.resource.attributes), span.name
        assert span.status.status_code == twin.status.status_code
    trace = jaeger_query.wait_for_trace(g.trace_id, expected, min_spans=len(expected))
    seen = [s["spanID"] for s in trace["spans"]]
    assert sorted(seen) == sorted(expected), "duplicate or missing span ids after the merge"
    got = jh.v1_spans_by_id(trace)
    for span in everything:
        assert jh.v1_parent(got[hexid(span)]) == parent_hexid(span)
    v3 = jaeger_query.wait_for_trace(g.trace_id, expected, api="v3")
    assert sorted(s["spanId"] for s in jh.v3_spans(v3)) == sorted(expected)
    # Memory storage appends the second copy; the query's DeduplicateSpans adjuster drops
    # exact duplicates. (Seen with Jaeger v2.13 memory storage: a /api/v3 read adjusts the
    # stored trace in place, so after one a raw read shows one copy; before it, two.) A
    # reader sees each span id once.
    raw = jaeger_query.trace_v1(g.trace_id, raw=True)
    assert sorted(set(s["spanID"] for s in raw["spans"])) == sorted(expected)


# -- (d) a 30-hour lifecycle ------------------------------------------------------------------

def test_d_a_back_dated_30_hour_lifecycle_keeps_exact_durations(jaeger, jaeger_query):
    hours = 3600.0
    t0 = float(int(time.time())) - 31 * hours + 0.125  # exact in binary and in the journal
    g = Glidein(unique_name("d"), t0)
    g.start_root()
    g.setup_ok(end=90.0)
    job = (600.0, 600.0 + 28 * hours + 0.25, "2001.0", ())
    g.condor_with_jobs(start=90.0, end=29.5 * hours, jobs=[job])
    g.teardown(29.5 * hours, 30 * hours + 0.5)
    spans = g.spans()
    export(jaeger, spans)
    expected = {hexid(s): s for s in in_trace(spans, g.trace_id)}
    trace = jaeger_query.wait_for_trace(g.trace_id, expected, min_spans=len(expected))
    got = jh.v1_spans_by_id(trace)
    for sid, span in expected.items():
        assert got[sid]["startTime"] == span.start_time // 1000, span.name
        assert got[sid]["duration"] == (span.end_time - span.start_time) // 1000, span.name
    # Against the journal's own times (microseconds), within the 1 us that float seconds
    # can lose (exactness: test_d_journal_microseconds_reach_jaeger_exactly).
    root = got[g.sid("glidein")]
    assert abs(root["startTime"] - round(t0 * 1e6)) <= 1
    assert abs(root["duration"] - int((30 * hours + 0.5) * 1e6)) <= 1
    job_span = got[g.sid("job/submit.example.org#2001.0#1795300000")]
    assert abs(job_span["duration"] - int((28 * hours + 0.25) * 1e6)) <= 1
    assert abs(job_span["startTime"] - round((t0 + 600.0) * 1e6)) <= 1
    assert root["duration"] > 30 * hours * 1e6 > job_span["duration"]

    v3 = jaeger_query.wait_for_trace(g.trace_id, expected, api="v3")
    v3_root = {s["spanId"]: s for s in jh.v3_spans(v3)}[g.sid("glidein")]
    assert int(v3_root["startTimeUnixNano"]) == expected[g.sid("glidein")].start_time
    assert int(v3_root["endTimeUnixNano"]) == expected[g.sid("glidein")].end_time
    assert abs(int(v3_root["endTimeUnixNano"]) - int(v3_root["startTimeUnixNano"])
               - int((30 * hours + 0.5) * 1e9)) < 1000


def test_d_journal_microseconds_reach_jaeger_exactly(jaeger, jaeger_query):
    t0 = float(int(time.time())) - 3600 + 0.125
    g = Glidein(unique_name("d2"), t0)
    g.start_root()
    g.add(10.25, "end", "glidein", {})
    spans = g.spans()
    export(jaeger, spans)
    trace = jaeger_query.wait_for_trace(g.trace_id, [g.sid("glidein")])
    root = jh.v1_spans_by_id(trace)[g.sid("glidein")]
    assert (root["startTime"], root["duration"]) == (round(t0 * 1e6), 10_250_000)


# -- (e) a failed validation ------------------------------------------------------------------

def test_e_failed_validation_carries_error_status(jaeger, jaeger_query):
    g = Glidein(unique_name("e"), time.time() - 3600)
    g.start_root()
    g.add(1, "start", "setup", {"@name": "setup", "@stage": "setup"})
    g.record(2, 5, "main/check_proxy.sh")
    detail = "Squid proxy unreachable: cvmfs mount failed"
    g.record(5, 9, "entry/check_cvmfs.sh", "ERROR", failure="WN_Resource", detail=detail,
             metrics={"failure": "WN_Resource"})
    g.add(9, "end", "setup", {"@status": "ERROR", "@error.type": "WN_Resource"})
    g.teardown(1209.0, 1210.0, outcome="validation_failed", exit_code=1)
    spans = g.spans()
    export(jaeger, spans)
    failed = g.sid("validation/entry/check_cvmfs.sh")
    ok = g.sid("validation/main/check_proxy.sh")
    trace = jaeger_query.wait_for_trace(g.trace_id, [failed, ok],
                                        min_spans=len(in_trace(spans, g.trace_id)))
    got = jh.v1_spans_by_id(trace)

    tags = jh.v1_tags(got[failed])
    assert tags["error"] is True
    assert tags["otel.status_code"] == "ERROR"
    assert detail in tags["otel.status_description"]
    assert tags["error.type"] == "WN_Resource"
    assert tags["glidein.script.detail"] == detail
    ok_tags = jh.v1_tags(got[ok])
    assert "error" not in ok_tags and ok_tags.get("otel.status_code") == "OK"
    for key in ("setup", "glidein"):  # the failure is the setup's and the glidein's too
        assert jh.v1_tags(got[g.sid(key)])["error"] is True, key
    assert jh.v1_tags(got[g.sid("glidein")])["glidein.outcome"] == "validation_failed"

    v3 = jaeger_query.wait_for_trace(g.trace_id, [failed, ok], api="v3")
    v3_by_id = {s["spanId"]: s for s in jh.v3_spans(v3)}
    assert v3_by_id[failed]["status"]["code"] == 2
    assert detail in v3_by_id[failed]["status"].get("message", "")
    assert v3_by_id[ok]["status"].get("code") == 1
    assert v3_by_id[g.sid("glidein")]["status"]["code"] == 2
