"""Live export of a glidein's stages as they end (glidein_tracing.node.live and core.export_record, docs/hooks.md).

What may go out while the glidein runs, and that it is the very span the returned journal
gives later; the real `glidein-tracing export --ended` sending each stage once over repeated
runs; and, on simulated glideins with the real hooks, setup and jobs reaching the collector
while the glidein runs, every span arriving once in all (node, then the Factory forwarder),
and a hung collector delaying no job and losing nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections import Counter

import pytest

from glidein_tracing.core import export_record, ids
from glidein_tracing.node import live
from glidein_tracing.core.converter import convert
from glidein_tracing.factory.delivery import jaeger_span_ids
from glidein_tracing.core.journal import format_line, parse_lines, read_journal
from glidein_tracing.simulator import Job, Scenario

from tests.support.live_export_support import hung_endpoint
from tests.support.otlp_receiver import CountingCollector, collector  # noqa: F401 (fixture)
from tests.support.synthetic_glidein import USER_TRACE, USER_TRACEPARENT, Glidein, hexid
from test_live_and_forward import forward_once, run_through_factory

T0 = 1795318000.0
SETUP_AND_VALIDATIONS = {"setup", "main/check_proxy.sh", "entry/check_cvmfs.sh", "client/vo_setup.sh",
                         "client_group/gpu_probe.sh"}


def job_lines(g: Glidein, start, end, job_id, *, links=(), **end_fields):
    """A job as the wrapper (start) and the job-exit hook (end, unless ``end`` is None) write it."""
    key = f"job/submit.example.org#{job_id}#1795300000"
    fields = {"@name": "job", "@stage": "job", "@parent": "condor", "job.global_id": key[4:],
              "job.slot": "slot1_1", "job.qdate:i": str(int(T0))}
    if links:
        fields["job.user_traceparent"] = links[0]
    g.add(start, "start", key, fields, links)
    if end is not None:
        g.add(end, "end", key, {"@status": "OK", "job.exit_code:i": "0", "job.exit_by": "exit",
                                "r.utime": "12.5", **end_fields})
    return key


def running_glidein() -> tuple[Glidein, dict]:
    """A glidein in its condor phase, as the sampler leaves it after closing setup: jobs that
    ended normally, by eviction and by SIGTERM, and one still running."""
    g = Glidein("live_rule", T0)
    g.start_root()
    g.setup_ok(end=60.0)
    g.add(60.0, "start", "condor", {"@name": "condor", "@stage": "condor.start", "@parent": "glidein"})
    keys = {
        "done": job_lines(g, 70, 400, "1.0", links=(USER_TRACEPARENT,)),
        "failed": job_lines(g, 71, 300, "2.0", **{"@status": "ERROR", "@error.type": "job.exit_code",
                                                  "job.exit_code:i": "3"}),
        "evicted": job_lines(g, 72, 500, "3.0", **{"@status": "ERROR", "@error.type": "job.evict",
                                                   "job.exit_by": "evict"}),
        "sigterm": job_lines(g, 73, 600, "4.0", **{"@status": "ERROR", "@error.type": "job.signal",
                                                   "job.exit_signal:i": "15"}),
        "running": job_lines(g, 700, None, "5.0"),
    }
    g.add(650, "sample", "-", {"r.utime": "30.0", "r.stime": "3.0", "r.rss": "90000000", "r.load1": "2.0"})
    return g, keys


def test_only_stages_that_cannot_change_go_while_the_glidein_runs():
    g, keys = running_glidein()
    early = live.ended_stages(g.spans(), g.events())
    names = {s.name for s in early if s.attributes["glidein.stage"] in ("setup", "validation")}
    assert names == SETUP_AND_VALIDATIONS
    jobs = {s.context.span_id for s in early if s.attributes["glidein.stage"] == "job"
            and format(s.context.trace_id, "032x") == g.trace_id}
    assert jobs == {int(g.sid(keys["done"]), 16), int(g.sid(keys["failed"]), 16)}
    (user,) = [s for s in early if format(s.context.trace_id, "032x") == USER_TRACE]
    assert user.name == "job on glidein"          # job.wait waits for the Factory's queue time
    assert not [s for s in early if s.attributes["glidein.stage"] in ("glidein", "condor.start", "idle",
                                                                       "job.wait")]


def test_nothing_goes_before_setup_has_ended():
    g = Glidein("live_early", T0)
    g.start_root()
    g.setup_ok(end=60.0)
    before_end = len(g.lines) - 1            # the journal up to the line that ends setup
    assert live.ended_stages(g.spans(upto=before_end), g.events(upto=before_end)) == []
    assert {s.name for s in live.ended_stages(g.spans(), g.events())} == SETUP_AND_VALIDATIONS


def test_a_stage_sent_early_is_the_span_the_returned_journal_gives():
    """The exported span and the one the Factory would make from the whole journal are the
    same span: ids, parent, times, status, attributes, events and links."""
    g, keys = running_glidein()
    early = live.ended_stages(g.spans(), g.events())
    # the glidein goes on and ends: the last job, the condor phase, teardown
    g.add(900, "end", keys["running"], {"@status": "OK", "job.exit_code:i": "0", "job.exit_by": "exit"})
    g.add(1000, "end", "condor", {"@status": "OK", "glidein.shutdown.reason": "max_idle"})
    g.record(60, 1000, "condor_startup.sh")
    g.teardown(1000, 1010)
    final = {(s.context.trace_id, s.context.span_id): s for s in g.spans()}
    for span in early:
        later = final[(span.context.trace_id, span.context.span_id)]
        assert (span.name, span.parent, span.start_time, span.end_time) == \
               (later.name, later.parent, later.start_time, later.end_time), span.name
        assert (span.status.status_code, span.status.description) == \
               (later.status.status_code, later.status.description), span.name
        assert dict(span.attributes) == dict(later.attributes), span.name
        assert [(e.name, dict(e.attributes), e.timestamp) for e in span.events] == \
               [(e.name, dict(e.attributes), e.timestamp) for e in later.events], span.name
        assert [(link.context, dict(link.attributes)) for link in span.links] == \
               [(link.context, dict(link.attributes)) for link in later.links], span.name


def export_ended(journal, endpoint):
    return subprocess.run([sys.executable, "-m", "glidein_tracing", "export", "--journal", str(journal),
                           "--ended", "--timeout", "10"], cwd=journal.parent, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "GLIDEIN_TRACING_ENDPOINT": endpoint})


def test_repeated_exports_send_each_stage_once_and_record_it(tmp_path, collector):
    """The real CLI as the sampler runs it, again and again while the glidein goes on."""
    g = Glidein("live_cli", T0)
    g.start_root()
    g.setup_ok(end=60.0)
    g.add(60.0, "start", "condor", {"@name": "condor", "@stage": "condor.start", "@parent": "glidein"})
    first_job = job_lines(g, 70, 400, "1.0")
    journal = tmp_path / "journal.gtj"
    journal.write_text("".join(g.lines))
    assert export_ended(journal, collector).returncode == 0
    first = set(CountingCollector.received)
    assert {CountingCollector.arrived[k][1].name for k in first} == SETUP_AND_VALIDATIONS | {"job"}
    assert export_ended(journal, collector).returncode == 0          # nothing new: nothing sent
    assert set(CountingCollector.received) == first
    with journal.open("a") as out:                                 # another job ends
        out.write(format_line(T0 + 410, "start", "job/submit.example.org#2.0#1795300000",
                              {"@name": "job", "@stage": "job", "@parent": "condor"}))
        out.write(format_line(T0 + 500, "end", "job/submit.example.org#2.0#1795300000",
                              {"@status": "OK", "job.exit_by": "exit"}))
    assert export_ended(journal, collector).returncode == 0
    received = CountingCollector.received
    assert len(received) == len(set(received)) == len(first) + 1, "a span went twice"
    events, report = read_journal(journal)
    assert report.skipped_total == 0
    record = export_record.node_exports(events, convert(events))
    assert set(record.states.values()) == {export_record.SENT}
    assert set(record.states) == {s for _, s in received}
    assert g.sid(first_job) in record.states


def simulated_stages(result):
    """Span name and id of every node stage the returned journal describes, and its events."""
    events, report = parse_lines(result.journal_from_stderr())
    assert report.skipped_total == 0, report.summary()
    return events


def test_setup_and_jobs_arrive_while_the_glidein_runs_and_every_span_once(tmp_path, collector):
    scenario = Scenario(jobs=[Job(duration_s=2.5, traceparent=USER_TRACEPARENT), Job(duration_s=2.5),
                              Job(duration_s=2.5), Job(duration_s=2.5)],
                        knobs={"GLIDEIN_TRACING_EXPORT_MODE": "both", "GLIDEIN_TRACING_ENDPOINT": collector,
                               "GLIDEIN_TRACING_PYTHON": sys.executable, "GLIDEIN_TRACING_SAMPLE_PERIOD": "1"})
    layout, result = run_through_factory(tmp_path, scenario)
    assert result.exit_code == 0 and not result.leftovers
    events = simulated_stages(result)
    trace = events[0].fields["@trace_id"]
    condor_end = max(e.time for e in events if e.op == "end" and e.key == "condor")
    jobs = sorted((e.time, e.key) for e in events if e.op == "start" and e.key.startswith("job/"))
    # the sampler closed setup and started condor; cleanup did not start it again
    assert len([e for e in events if e.op == "start" and e.key == "condor"]) == 1
    # while the glidein ran: setup with every validation span, and the first job
    early = {key for key, (when, _) in CountingCollector.arrived.items() if when < condor_end}
    early_names = {CountingCollector.arrived[k][1].name for k in early if k[0] == trace}
    records = {e.key for e in events if e.op == "record" and e.key != "condor_startup.sh"}
    assert {"setup"} | records <= early_names
    assert (trace, ids.span_id(trace, jobs[0][1])) in early
    assert (USER_TRACEPARENT.split("-")[1], ids.span_id(USER_TRACEPARENT.split("-")[1],
                                                        f"glidein/{trace}/{jobs[0][1]}")) in early
    # then the Factory forwarder: everything else, and nothing twice
    node_sent = set(CountingCollector.received)
    stats = forward_once(tmp_path, layout, scenario, collector)
    assert stats.export_failures == 0 and stats.spans_already_live == len(node_sent)
    received = CountingCollector.received
    assert len(received) == len(set(received)), "a span arrived twice"
    assert {(trace, ids.span_id(trace, key)) for key in ("glidein", "factory.submit", "factory.queue")} \
        <= set(received) - node_sent
    assert {(trace, ids.span_id(trace, key)) for _, key in jobs} <= set(received)


def test_a_hung_collector_delays_no_job_and_loses_nothing(tmp_path, collector):
    """Every export meets a collector that never answers: the glidein ends as without tracing
    (exit code 0, every job run and ended, nothing of ours left behind), no export is
    recorded sent, the journal goes home whole, and the Factory sends every span once. (How
    long jobs wait between each other: bench/bench_live_stages.py, part 4.)"""
    bound = 2
    with hung_endpoint() as endpoint:
        scenario = Scenario(jobs=[Job(duration_s=4.0, idle_before_s=0.2) for _ in range(5)], knobs={
            "GLIDEIN_TRACING_EXPORT_MODE": "live", "GLIDEIN_TRACING_ENDPOINT": endpoint,
            "GLIDEIN_TRACING_EXPORT_TIMEOUT": str(bound), "GLIDEIN_TRACING_PYTHON": sys.executable,
            "GLIDEIN_TRACING_SAMPLE_PERIOD": "1"})
        layout, result = run_through_factory(tmp_path, scenario)
    assert result.exit_code == 0 and not result.leftovers
    events = simulated_stages(result)
    assert any(e.op == "end" and e.key == "glidein" for e in events)
    jobs = {e.key for e in events if e.op == "start" and e.key.startswith("job/")}
    assert len(jobs) == 5 and jobs == {e.key for e in events if e.op == "end" and e.key.startswith("job/")}
    record = export_record.node_exports(events, convert(events))
    assert record.states and export_record.SENT not in record.states.values()
    notes = [e.fields.get("@msg", "") for e in events if e.op == "note"]
    assert [n for n in notes if n.startswith("live export to")], notes   # at least cleanup's
    stats = forward_once(tmp_path, layout, scenario, collector, reconcile=jaeger_span_ids(collector))
    assert stats.export_failures == 0 and stats.spans_already_live == 0
    received = CountingCollector.received
    assert len(received) == len(set(received))
    made = {(format(s.context.trace_id, "032x"), format(s.context.span_id, "016x")) for s in convert(events)}
    assert len(made) > 10 and made <= set(received), "a span of the journal did not arrive"


@pytest.mark.jaeger
def test_a_running_glideins_setup_is_in_jaeger_and_the_whole_trace_lands_once(tmp_path, jaeger, jaeger_query):
    """As an operator sees it: while a glidein (real hooks, live export to the real Jaeger)
    still runs its jobs, its setup span is found by the trace id `glidein-tracing trace-id`
    prints; once the Factory forwarder has run (reconciling with Jaeger), every span of the
    trace is in Jaeger once."""
    scenario = Scenario(name="gwms_live_jaeger", jobs=[Job(duration_s=2.5) for _ in range(4)],
                        knobs={"GLIDEIN_TRACING_EXPORT_MODE": "both",
                               "GLIDEIN_TRACING_ENDPOINT": jaeger.otlp_endpoint,
                               "GLIDEIN_TRACING_PYTHON": sys.executable,
                               "GLIDEIN_TRACING_SAMPLE_PERIOD": "1"})
    trace = subprocess.run([sys.executable, "-m", "glidein_tracing", "trace-id", "--factory", scenario.factory,
                            "--name", scenario.name, "--entry", scenario.entry, "--schedd", scenario.schedd,
                            "--cluster", str(scenario.cluster), "--proc", str(scenario.proc)],
                           capture_output=True, text=True, check=True).stdout.strip()
    outcome = {}
    glidein = threading.Thread(target=lambda: outcome.update(run=run_through_factory(tmp_path, scenario)))
    glidein.start()
    try:
        found = jaeger_query.wait_for_trace(trace, [ids.span_id(trace, "setup")], timeout=60)
        running = glidein.is_alive()
    finally:
        glidein.join(120)
    assert running, "the setup span reached Jaeger only after the glidein had ended"
    assert {s["operationName"] for s in found["spans"]} >= {"setup"}
    layout, result = outcome["run"]
    assert result.exit_code == 0
    stats = forward_once(tmp_path, layout, scenario, jaeger.otlp_endpoint,
                         reconcile=jaeger_span_ids(jaeger.query_url))
    assert stats.export_failures == 0 and stats.spans_already_live > 0
    expected = {format(s.context.span_id, "016x") for s in convert(simulated_stages(result))
                if format(s.context.trace_id, "032x") == trace}
    expected |= {ids.span_id(trace, key) for key in ("factory.submit", "factory.queue")}
    whole = jaeger_query.wait_for_trace(trace, expected, raw=True, timeout=60)
    counts = Counter(span["spanID"] for span in whole["spans"])
    assert set(counts) == expected and set(counts.values()) == {1}, counts
