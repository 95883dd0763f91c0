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

pytest.importorskip("opentelemetry.instrumentation.instrumentor")
pytest.importorskip("classad2")

import frontend_hooks.instrumentor as instrumentor_module
from frontend_hooks import conventions as fc
from frontend_hooks import waiting
from glidein_tracing.core import conventions as gc
from glidein_tracing.core import waiting_reasons
from tests.support import frontend_standin as standin
from tests.support import frontend_standin_lib as lib
from tests.support import fixtures
from tests.support import waiting_world as ww
from tests.support.frontend_cycles import cycle
from tests.support.frontend_cycles import instrumented


@pytest.fixture
def exporter():
    instrumentor, exporter = instrumented()
    yield exporter
    instrumentor.uninstrument()
    assert not instrumentor_module.FAILURES


def waiting_spans(exporter):
    spans = [s for s in exporter.get_finished_spans() if s.name == gc.STAGE_JOB_WAITING]
    exporter.clear()
    return spans


def by_trace(spans):
    return {format(s.context.trace_id, "032x"): s for s in spans}


REASON_OF_SITE = dict({site: reason for site, (reason, _) in ww.SITES.items()}, NOWHERE="no_matching_entry")


def test_the_world_meets_every_reason():
    """Each Frontend reason has its test: below, per site of the world, and not_requested and
    unknown further down."""
    assert set(REASON_OF_SITE.values()) | {"not_requested", "unknown"} == \
        {reason.value for reason in waiting_reasons.REASONS}


@pytest.mark.parametrize("site", sorted(REASON_OF_SITE), ids=lambda site: REASON_OF_SITE[site])
def test_each_reason_is_told_in_the_users_own_trace(exporter, tmp_path, site):
    """On the group GlideinWMS configured (../shared/fixtures/gwms-frontend)."""
    cycle(tmp_path, ww.world(tmp_path))
    span = by_trace(waiting_spans(exporter))[ww.trace_of(site)]
    assert span.attributes[gc.JOB_WAITING_REASON] == REASON_OF_SITE[site]
    # a child of the user's submission span, in their trace
    assert format(span.parent.span_id, "016x") == ww.traceparent(site).split("-")[2]
    assert span.attributes[gc.STAGE] == gc.STAGE_JOB_WAITING
    assert span.attributes[gc.JOB_WAITING_STATE] == "current"
    assert span.attributes[gc.JOB_WAITING_IDLE_JOBS] == (1 if site == "NOWHERE" else 2)
    assert span.attributes[gc.JOB_OWNER] == "alice"
    assert span.attributes[fc.FRONTEND_GROUP] == "main"
    assert span.attributes[gc.JOB_WAITING_DETAIL]
    # the sites of the entries giving the reason, as the Factory's entry ads name them
    assert tuple(span.attributes.get(gc.JOB_WAITING_SITES, ())) == (() if site == "NOWHERE" else (site,))


def test_not_requested_when_the_cycle_removes_glideins(exporter, tmp_path):
    """A removal cycle (glideinFrontendElement's action removeIdle) requests nothing."""
    element = standin.glideinFrontendElement(1, str(tmp_path), "main", "removeIdle", world=ww.world(tmp_path))
    assert element.main() == 0
    reasons = {t: s.attributes[gc.JOB_WAITING_REASON] for t, s in by_trace(waiting_spans(exporter)).items()}
    assert reasons[ww.trace_of("NEW")] == "not_requested"
    assert reasons[ww.trace_of("QUEUE")] == "site_queue"      # its glideins still wait at the site


def test_jobs_matching_several_entries_get_the_most_hopeful_reason(exporter, tmp_path):
    """The documented rule: a submission whose jobs match several entries gets the most hopeful
    of their reasons (waiting_reasons.REASONS' order), here for every pair of the world's
    entries, each compared with the single-entry submissions of the same cycle."""
    sites = list(ww.SITES)
    pairs = [(a, b) for n, a in enumerate(sites) for b in sites[n + 1:]]
    names = sites + [f"{a},{b}" for a, b in pairs]
    assert len({ww.trace_of(name) for name in names}) == len(names)   # one trace each
    jobs = ww.world_jobs()
    for number, (a, b) in enumerate(pairs):
        memory = 4000 if "SMALL" in (a, b) else 2000
        jobs.append(ww.job_ad(500 + number, 0, f"{a},{b}", ww.traceparent(f"{a},{b}"), memory=memory))
    cycle(tmp_path, ww.world(tmp_path, jobs=jobs))
    reasons = {t: s.attributes[gc.JOB_WAITING_REASON] for t, s in by_trace(waiting_spans(exporter)).items()}
    for a, b in pairs:
        alone = sorted((reasons[ww.trace_of(a)], reasons[ww.trace_of(b)]), key=waiting_reasons.RANK.get)
        assert reasons[ww.trace_of(f"{a},{b}")] == alone[0], (a, b)


def test_every_reason_carries_its_evidence(exporter, tmp_path):
    cycle(tmp_path, ww.world(tmp_path))
    spans = by_trace(waiting_spans(exporter))
    queued = spans[ww.trace_of("QUEUE")].attributes
    assert queued[gc.JOB_WAITING_QUEUED_GLIDEINS] == 5
    assert list(queued[gc.JOB_WAITING_REASON_ENTRIES]) == [ww.request_name("QUEUE")]
    assert list(spans[ww.trace_of("LIMIT")].attributes[gc.JOB_WAITING_LIMITS]) == ["IdleGlideinsPerEntry"]
    assert spans[ww.trace_of("BROKEN")].attributes[gc.JOB_WAITING_RUNNING_AT_SITE] == 4
    # each reason's own sentence in the span (the evidence why prints), not its category's
    details = {site: spans[ww.trace_of(site)].attributes[gc.JOB_WAITING_DETAIL] for site in ww.SITES}
    assert len(set(details.values())) == len(details)
    assert details["DOWN"] == f"in downtime: {ww.request_name('DOWN')}"
    assert details["BROKEN"] == f"4 glideins run at BROKEN but none joined the pool, at {ww.request_name('BROKEN')}"
    assert details["QUEUE"] == f"5 glideins wait in the batch queue of QUEUE at {ww.request_name('QUEUE')}"
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
        instrumentor, exporter = instrumented(waiting=enabled)
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
    instrumentor, exporter = instrumented(sampler=ParentBased(ALWAYS_OFF))
    try:
        cycle(tmp_path, ww.world(tmp_path))
    finally:
        instrumentor.uninstrument()
    finished = exporter.get_finished_spans()
    assert {s.name for s in finished} == {gc.STAGE_JOB_WAITING}
    reasons = {format(s.context.trace_id, "032x"): s.attributes[gc.JOB_WAITING_REASON] for s in finished}
    assert reasons[ww.trace_of("QUEUE")] == "site_queue" and reasons[ww.trace_of("LIMIT")] == "limit"
    assert reasons[ww.trace_of("DOWN")] == "downtime"


# --- matching as the group matches (its configuration as GlideinWMS wrote it) ---------------
def _sites_world(tmp_path, sites, jobs):
    """A world of the given entries (site -> entry extras) and job ads only."""
    world = ww.world(tmp_path, jobs=jobs, slots=[])
    world["entries"] = [ww.entry(site, **extra) for site, extra in sites.items()]
    return world


def test_the_group_matches_with_the_multicore_clause_glideinwms_adds(exporter, tmp_path):
    """GlideinWMS's multicore policy adds getGlideinCpusNum(glidein) >= RequestCpus to every
    Frontend's expression: an 8-core job matches the entry of 8-core glideins, not the 4-core
    one, as the Frontend's own countMatch counts it in the same cycle."""
    sites = {"MC4": {"attrs": {"GLIDEIN_CPUS": "4"}},
             "MC8": {"attrs": {"GLIDEIN_CPUS": "auto", "GLIDEIN_ESTIMATED_CPUS": "8"}}}
    for site, extra in sites.items():
        extra["attrs"].update(ww.entry(site)["attrs"])
    both, four = ww.traceparent("BOTH"), ww.traceparent("FOUR")
    jobs = [ww.job_ad(200, proc, "MC4,MC8", both, RequestCpus=8) for proc in range(3)]
    jobs += [ww.job_ad(201, 0, "MC4", four, RequestCpus=8)]
    cycle(tmp_path, _sites_world(tmp_path, sites, jobs))
    finished = exporter.get_finished_spans()
    requests = {s.attributes[fc.REQUEST_NAME]: s.attributes for s in finished if s.name == fc.REQUEST_SPAN}
    assert requests[ww.request_name("MC8")][fc.MATCHING_IDLE_JOBS] == 3
    assert requests[ww.request_name("MC4")][fc.MATCHING_IDLE_JOBS] == 0
    spans = by_trace(waiting_spans(exporter))
    matched = spans[ww.trace_of("BOTH")].attributes
    assert matched[gc.JOB_WAITING_REASON] == "requested"
    assert list(matched[gc.JOB_WAITING_ENTRIES]) == [ww.request_name("MC8")]
    # no entry can run it: said with the evidence, the expression as GlideinWMS joined it
    lonely = spans[ww.trace_of("FOUR")].attributes
    assert lonely[gc.JOB_WAITING_REASON] == "no_matching_entry"
    descript = (fixtures.GWMS_FRONTEND / "frontend.descript").read_text()
    frontend_expr = [line.split(None, 1)[1] for line in descript.splitlines() if line.startswith("MatchExpr")][0]
    assert "getGlideinCpusNum(glidein)" in frontend_expr
    assert lonely[gc.JOB_WAITING_MATCH_EXPR].startswith(f"({frontend_expr}) and (")
    assert set(lonely[gc.JOB_WAITING_JOB_VALUES]) == {"RequestCpus=8", "DESIRED_Sites=MC4"}
    assert list(lonely[gc.JOB_WAITING_GROUP_ENTRIES]) == [
        f"{ww.request_name('MC4')}: GLIDEIN_CPUS=4, GLIDEIN_Site=MC4",
        f"{ww.request_name('MC8')}: GLIDEIN_CPUS=auto, GLIDEIN_ESTIMATED_CPUS=8, GLIDEIN_Site=MC8"]
    assert lonely[gc.JOB_WAITING_GROUP_ENTRY_COUNT] == 2
    assert gc.JOB_WAITING_MATCH_ERROR not in lonely


def test_an_expression_that_cannot_be_evaluated_gives_unknown(tmp_path, caplog):
    """An entry whose GLIDEIN_ESTIMATED_CPUS is no number makes getGlideinCpusNum raise for
    every job: the Frontend counts those jobs for no entry there. A job that could run only
    there is told unknown, never no_matching_entry; one that matches elsewhere keeps that
    entry's reason; the failures are logged once and counted on the cycle span."""
    instrumentor, exporter = instrumented()
    broken = {"attrs": dict(ww.entry("ODD")["attrs"], GLIDEIN_CPUS="auto", GLIDEIN_ESTIMATED_CPUS="several")}
    sites = {"ODD": broken, "QUEUE": {"factory_monitor": {"StatusIdle": 5, "StatusRunning": 0}}}
    only, also = ww.traceparent("ONLY"), ww.traceparent("ALSO")
    jobs = [ww.job_ad(300, 0, "ODD", only), ww.job_ad(301, 0, "ODD,QUEUE", also), ww.job_ad(302, 0, "QUEUE")]
    try:
        with caplog.at_level("WARNING", logger="frontend_hooks"):
            cycle(tmp_path, _sites_world(tmp_path, sites, jobs))
    finally:
        instrumentor.uninstrument()
    finished = exporter.get_finished_spans()
    spans = by_trace([s for s in finished if s.name == gc.STAGE_JOB_WAITING])
    unknown = spans[ww.trace_of("ONLY")].attributes
    assert unknown[gc.JOB_WAITING_REASON] == "unknown"
    assert unknown[gc.JOB_WAITING_MATCH_ERROR].startswith("ValueError: ")
    assert "several" in unknown[gc.JOB_WAITING_MATCH_ERROR]
    assert unknown[gc.JOB_WAITING_MATCH_EXPR] and unknown[gc.JOB_WAITING_JOB_VALUES]
    assert spans[ww.trace_of("ALSO")].attributes[gc.JOB_WAITING_REASON] == "site_queue"
    (cycle_span,) = [s for s in finished if s.name == fc.CYCLE_SPAN]
    # the traced job kinds (ODD; ODD,QUEUE) x the broken entry
    assert cycle_span.attributes[fc.CYCLE_MATCH_ERRORS] == 2
    logged = [r for r in caplog.records if "match expression raised" in r.getMessage()]
    assert len(logged) == 1 and "ValueError" in logged[0].getMessage()
    assert not instrumentor_module.FAILURES                       # our own code did not fail


def test_unusable_idle_glideins_quote_the_groups_part_glidein_min_memory(exporter, tmp_path):
    cycle(tmp_path, ww.world(tmp_path))
    small = by_trace(waiting_spans(exporter))[ww.trace_of("SMALL")].attributes
    descript = (fixtures.GWMS_FRONTEND / "group_main" / "group.descript").read_text()
    floor = int([line.split()[1] for line in descript.splitlines() if line.startswith("PartGlideinMinMemory")][0])
    assert small[gc.JOB_WAITING_PART_GLIDEIN_MIN_MEMORY] == floor
    assert f"over {floor} MB free" in small[gc.JOB_WAITING_DETAIL]


# --- no user decides another's answer; a crash sends nothing twice -----------------------------
def test_another_owners_copied_traceparent_never_changes_the_reason(exporter, tmp_path):
    """50 jobs of mallory matching nothing, carrying alice's TraceParent and lower cluster ids,
    are a submission of their own: alice's stays site_queue with her 2 jobs."""
    victim = ww.traceparent("QUEUE")
    copies = [ww.job_ad(10 + n // 10, n % 10, "NOWHERE", victim, owner="mallory") for n in range(50)]
    alice = [ww.job_ad(100, proc, "QUEUE", victim) for proc in (0, 1)]
    cycle(tmp_path, ww.world(tmp_path, jobs=copies + alice))
    spans = {s.attributes[gc.JOB_OWNER]: s.attributes for s in waiting_spans(exporter)}
    assert spans["alice"][gc.JOB_WAITING_REASON] == "site_queue"
    assert spans["alice"][gc.JOB_WAITING_IDLE_JOBS] == 2
    assert spans["mallory"][gc.JOB_WAITING_REASON] == "no_matching_entry"
    assert spans["mallory"][gc.JOB_WAITING_IDLE_JOBS] == 50
    # the copies go away: alice's period goes on, untouched
    cycle(tmp_path, ww.world(tmp_path, jobs=alice))
    (ended,) = waiting_spans(exporter)
    assert (ended.attributes[gc.JOB_OWNER], ended.attributes[gc.JOB_WAITING_STATE]) == ("mallory", "ended")
    # the period's own sentence, not one rebuilt without its evidence
    assert ended.attributes[gc.JOB_WAITING_DETAIL] == spans["mallory"][gc.JOB_WAITING_DETAIL]
    assert ended.attributes[gc.JOB_WAITING_DETAIL] == f"none of the group's {len(ww.SITES)} entries matches the jobs"


def test_a_cycle_run_again_after_a_crash_sends_no_new_span_id(exporter, tmp_path):
    cycle(tmp_path, ww.world(tmp_path))
    first = waiting_spans(exporter)
    saved = tmp_path / "history.before"
    shutil.copy(tmp_path / "group_main" / "history.pk", saved)
    world = ww.world(tmp_path, slots=ww.world(tmp_path)["slots"] + [ww.slot("slot1@q1", "QUEUE", 8000)])
    cycle(tmp_path, world)
    changed = waiting_spans(exporter)
    # the Frontend crashed before saving its history; the cycle runs again, a moment later
    shutil.copy(saved, tmp_path / "group_main" / "history.pk")
    cycle(tmp_path, world)
    again = waiting_spans(exporter)
    assert len(changed) == 2 and {s.context.span_id for s in again} == {s.context.span_id for s in changed}
    current = {s.context.span_id for s in first + changed + again
               if s.attributes[gc.JOB_WAITING_STATE] == "current"
               and format(s.context.trace_id, "032x") == ww.trace_of("QUEUE")}
    assert len(current) == 2                     # site_queue's and glidein_idle's, each once


@pytest.mark.parametrize("mangle", [str.upper, lambda value: value + "  "],
                         ids=["upper-case hex", "trailing spaces"])
def test_a_traceparent_not_written_as_w3c_writes_it_gets_no_span(exporter, tmp_path, mangle):
    bad = mangle(ww.traceparent("QUEUE"))
    jobs = [ww.job_ad(100, 0, "QUEUE", bad), ww.job_ad(101, 0, "NEW", ww.traceparent("NEW"))]
    cycle(tmp_path, ww.world(tmp_path, jobs=jobs))
    assert [format(s.context.trace_id, "032x") for s in waiting_spans(exporter)] == [ww.trace_of("NEW")]
