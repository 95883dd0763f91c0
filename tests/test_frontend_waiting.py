"""job.waiting: why a user's idle jobs wait, from the Frontend's own decision, in the user's
own trace (frontend_hooks/waiting.py, docs/why-waiting.md).

The element stand-in (tests/support/frontend_standin.py) runs the real element's code paths:
its schedd query through glideinFrontendLib.getCondorQ (job ads written as ``condor_q -l``
does, parsed with classad2), its group glidein query, countMatch with the group's match
expression, and per entry compute_glidein_min_idle ... build_resource_classad; spans go
through the real OTel SDK into an InMemorySpanExporter.
"""

import pickle
import shutil

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

pytest.importorskip("opentelemetry.instrumentation.instrumentor")
pytest.importorskip("classad2")

import frontend_hooks.instrumentor as instrumentor_module
from frontend_hooks import GlideinFrontendInstrumentor
from frontend_hooks import conventions as fc
from frontend_hooks import waiting
from glidein_tracing.core import conventions as gc
from glidein_tracing.core import waiting_reasons
from tests.support import frontend_standin as standin
from tests.support import frontend_standin_interface as interface
from tests.support import frontend_standin_lib as lib
from tests.support import waiting_world as ww


def _instrument(sampler=None, **kwargs):
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=sampler) if sampler else TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = GlideinFrontendInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()
    instrumentor_module.FAILURES.clear()
    instrumentor.instrument(tracer_provider=provider, element_module=standin, interface_module=interface,
                            lib_module=lib, watch_main=False, **kwargs)
    return instrumentor, exporter


@pytest.fixture
def exporter():
    instrumentor, exporter = _instrument()
    yield exporter
    instrumentor.uninstrument()
    assert not instrumentor_module.FAILURES


def cycle(tmp_path, world):
    element = standin.glideinFrontendElement(1, str(tmp_path), "main", "run", world=world)
    assert element.main() == 0
    return element


def waiting_spans(exporter):
    spans = [s for s in exporter.get_finished_spans() if s.name == gc.STAGE_JOB_WAITING]
    exporter.clear()
    return spans


def by_trace(spans):
    return {format(s.context.trace_id, "032x"): s for s in spans}


def test_every_reason_is_told_in_the_users_own_trace(exporter, tmp_path):
    cycle(tmp_path, ww.world(tmp_path))
    spans = by_trace(waiting_spans(exporter))
    expected = {ww.trace_of(site): reason for site, (reason, _) in ww.SITES.items()}
    expected[ww.trace_of("NOWHERE")] = "no_matching_entry"
    assert {t: s.attributes[gc.JOB_WAITING_REASON] for t, s in spans.items()} == expected
    assert set(expected.values()) == {r.value for r in waiting_reasons.REASONS} - {"not_requested", "unknown"}
    for site in list(ww.SITES) + ["NOWHERE"]:
        span = spans[ww.trace_of(site)]
        # a child of the user's submission span, in their trace
        assert format(span.parent.span_id, "016x") == ww.traceparent(site).split("-")[2]
        assert span.attributes[gc.STAGE] == gc.STAGE_JOB_WAITING
        assert span.attributes[gc.JOB_WAITING_STATE] == "current"
        assert span.attributes[gc.JOB_WAITING_IDLE_JOBS] == (1 if site == "NOWHERE" else 2)
        assert span.attributes[fc.FRONTEND_GROUP] == "main"
        assert span.attributes[gc.JOB_WAITING_DETAIL]
    queued = spans[ww.trace_of("QUEUE")].attributes
    assert queued[gc.JOB_WAITING_QUEUED_GLIDEINS] == 5
    assert list(queued[gc.JOB_WAITING_REASON_ENTRIES]) == [ww.request_name("QUEUE")]
    assert list(spans[ww.trace_of("LIMIT")].attributes[gc.JOB_WAITING_LIMITS]) == ["IdleGlideinsPerEntry"]
    assert spans[ww.trace_of("BROKEN")].attributes[gc.JOB_WAITING_RUNNING_AT_SITE] == 4
    # #554: three idle glideins counted as capacity, none can run a 4000 MB job
    small = spans[ww.trace_of("SMALL")].attributes
    assert small[gc.JOB_WAITING_IDLE_GLIDEINS] == 3
    assert small[gc.JOB_WAITING_UNUSABLE_MEMORY] == 2 and small[gc.JOB_WAITING_UNUSABLE_RETIRING] == 1
    assert small[gc.JOB_WAITING_GLIDEIN_MEMORY] == 1500 and small[gc.JOB_WAITING_REQUEST_MEMORY] == 4000
    assert list(spans[ww.trace_of("NOWHERE")].attributes.get(gc.JOB_WAITING_ENTRIES, [])) == []


def test_links_lead_to_the_frontends_evidence(exporter, tmp_path):
    cycle(tmp_path, ww.world(tmp_path))
    finished = exporter.get_finished_spans()
    requests = {s.attributes[fc.REQUEST_NAME]: s for s in finished if s.name == fc.REQUEST_SPAN}
    (cycle_span,) = [s for s in finished if s.name == fc.CYCLE_SPAN]
    span = by_trace(waiting_spans(exporter))[ww.trace_of("QUEUE")]
    linked = {link.context.span_id for link in span.links}
    assert linked == {requests[ww.request_name("QUEUE")].context.span_id, cycle_span.context.span_id}
    assert cycle_span.attributes[fc.CYCLE_WAITING_SPANS] == 8


def test_a_job_without_traceparent_gets_no_span(exporter, tmp_path):
    jobs = [ww.job_ad(91, proc, "QUEUE") for proc in range(3)]
    cycle(tmp_path, ww.world(tmp_path, jobs=jobs))
    assert waiting_spans(exporter) == []


def test_the_attributes_come_from_the_frontends_own_job_query(tmp_path):
    for enabled in (True, False):
        instrumentor, exporter = _instrument(waiting=enabled)
        try:
            lib.QUERIES.clear()
            cycle(tmp_path / str(enabled), ww.world(tmp_path))
            asked = {name for name, _type in lib.QUERIES[0]}
            assert ("TraceParent" in asked) is enabled and ("RequestMemory" in asked) is enabled
            assert "DESIRED_Sites" in asked      # the group's own match attributes stay
            assert bool(waiting_spans(exporter)) is enabled
        finally:
            instrumentor.uninstrument()


def test_updated_when_the_reason_changes_not_every_cycle(exporter, tmp_path):
    world = ww.world(tmp_path)
    cycle(tmp_path, world)
    first = by_trace(waiting_spans(exporter))
    cycle(tmp_path, ww.world(tmp_path))
    assert waiting_spans(exporter) == []          # same reasons: nothing new
    # the queued glideins start and become an idle glidein that fits
    world = ww.world(tmp_path, slots=ww.world(tmp_path)["slots"] + [ww.slot("slot1@q1", "QUEUE", 8000)])
    saved = tmp_path / "history.before"
    shutil.copy(tmp_path / "group_main" / "history.pk", saved)
    cycle(tmp_path, world)
    changed = waiting_spans(exporter)
    assert sorted((s.attributes[gc.JOB_WAITING_REASON], s.attributes[gc.JOB_WAITING_STATE]) for s in changed) \
        == [("glidein_idle", "current"), ("site_queue", "ended")]
    ended = [s for s in changed if s.attributes[gc.JOB_WAITING_STATE] == "ended"][0]
    assert ended.start_time == first[ww.trace_of("QUEUE")].start_time   # the whole period
    assert ended.attributes[gc.JOB_WAITING_END] == "reason_changed"
    # the same cycle run again (a crash before the history was saved) sends the same span ids
    shutil.copy(saved, tmp_path / "group_main" / "history.pk")
    cycle(tmp_path, world)
    again = waiting_spans(exporter)
    assert {s.context.span_id for s in again if s.attributes[gc.JOB_WAITING_STATE] == "ended"} \
        == {ended.context.span_id}


def test_the_period_ends_when_the_jobs_start(exporter, tmp_path):
    cycle(tmp_path, ww.world(tmp_path))
    waiting_spans(exporter)
    running = [ww.job_ad(100 + list(ww.SITES).index("NEW"), proc, "NEW", ww.traceparent("NEW"), status=2)
               for proc in (0, 1)]
    others = [ww.job_ad(100 + n, p, site, ww.traceparent(site), memory=4000 if site == "SMALL" else 2000)
              for n, site in enumerate(ww.SITES) if site != "NEW" for p in (0, 1)]
    others.append(ww.job_ad(90, 0, "NOWHERE", ww.traceparent("NOWHERE")))
    element = cycle(tmp_path, ww.world(tmp_path, jobs=others + running))
    (span,) = waiting_spans(exporter)
    assert format(span.context.trace_id, "032x") == ww.trace_of("NEW")
    assert span.attributes[gc.JOB_WAITING_STATE] == "ended"
    assert span.attributes[gc.JOB_WAITING_END] == "no_idle_jobs"
    state = element.history_obj.get(waiting.HISTORY_KEY)
    assert len(state) == len(ww.SITES)            # only the submissions still idle are kept


def test_bounded_per_cycle_and_per_submission_a_day(exporter, tmp_path, monkeypatch):
    monkeypatch.setattr(waiting, "MAX_SUBMISSIONS_PER_CYCLE", 3)
    cycle(tmp_path, ww.world(tmp_path))
    assert len(waiting_spans(exporter)) == 3
    cycle(tmp_path, ww.world(tmp_path))
    assert len(waiting_spans(exporter)) == 3      # the others' turn
    monkeypatch.setattr(waiting, "MAX_SUBMISSIONS_PER_CYCLE", 100)
    monkeypatch.setattr(waiting, "MAX_SPANS_PER_SUBMISSION_DAY", 2)
    cycle(tmp_path, ww.world(tmp_path))
    assert len(waiting_spans(exporter)) == 2
    # QUEUE flips reason back and forth: its second span of the day is its last
    sent = []
    for extra in ([ww.slot("slot1@q1", "QUEUE", 8000)], [], [ww.slot("slot1@q1", "QUEUE", 8000)]):
        world = ww.world(tmp_path, slots=ww.world(tmp_path)["slots"] + extra)
        cycle(tmp_path, world)
        sent += [s for s in waiting_spans(exporter) if format(s.context.trace_id, "032x") == ww.trace_of("QUEUE")]
    assert len(sent) == 1 and sent[0].attributes[gc.JOB_WAITING_LAST_TODAY] is True


def test_the_history_holds_plain_data(exporter, tmp_path):
    cycle(tmp_path, ww.world(tmp_path))
    with open(tmp_path / "group_main" / "history.pk", "rb") as handle:
        state = pickle.load(handle)[waiting.HISTORY_KEY]
    assert {entry["reason"] for entry in state.values()} >= {"site_queue", "no_matching_entry"}


def test_an_idle_glidein_unfit_by_time_left_or_disk_counts_as_unusable():
    entry = waiting.Entry("E@g@f", {}, requested=0, idle_counted=2, slots=[
        waiting.Slot(memory=8000, cpus=8, disk=10 ** 7, retiring=False, time_left=3600),
        waiting.Slot(memory=8000, cpus=8, disk=10, retiring=False, time_left=None)])
    job = {"RequestMemory": 2000, "RequestCpus": 1, "RequestDisk": 1000, "JOB_EXPECTED_MAX_LIFETIME": 7200}
    assert waiting.entry_reason(entry, job) == ("unusable_idle_glideins", {"time": 1, "disk": 1})
    # the lifetime and disk are used only when the group's query has them
    assert waiting.entry_reason(entry, {"RequestMemory": 2000})[0] == "glidein_idle"


def test_the_reasons_do_not_need_the_frontends_own_spans_recorded(tmp_path):
    """An operator who samples the Frontend's traces out (their roots) still gives users
    their job.waiting spans, which follow the user's sampling decision (their parent)."""
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased
    instrumentor, exporter = _instrument(sampler=ParentBased(ALWAYS_OFF))
    try:
        cycle(tmp_path, ww.world(tmp_path))
    finally:
        instrumentor.uninstrument()
    finished = exporter.get_finished_spans()
    assert {s.name for s in finished} == {gc.STAGE_JOB_WAITING}
    reasons = {format(s.context.trace_id, "032x"): s.attributes[gc.JOB_WAITING_REASON] for s in finished}
    assert reasons[ww.trace_of("QUEUE")] == "site_queue" and reasons[ww.trace_of("LIMIT")] == "limit"
    assert reasons[ww.trace_of("DOWN")] == "downtime"
