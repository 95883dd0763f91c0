"""frontend_hooks.GlideinFrontendInstrumentor against a stand-in Frontend group process.

The stand-ins (tests/frontend_standin.py, tests/frontend_standin_interface.py) mirror GlideinWMS master (early 2026):
frontend/glideinFrontendElement.py ``glideinFrontendElement.iterate -> iterate_one`` and, per
entry, ``compute_glidein_min_idle``, ``compute_glidein_max_run``, ``decide_removal_type``,
``build_resource_classad``; frontend/glideinFrontendInterface.py ``MultiAdvertizeWork.add`` and
the ``ReqIdleGlideins`` / ``ReqMaxGlideins`` / ``GlideinParam<K>`` attributes that
``createAdvertizeWorkFile`` writes; frontend/glideinFrontendConfig.py ``HistoryFile``.
Spans go through the real OTel SDK into an InMemorySpanExporter.
"""

import logging
import types

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode


# frontend_hooks needs opentelemetry-instrumentation (and its wrapt); until setup.cfg's
# install_requires lists it, a plain `pip install -e .[test]` skips these tests.
pytest.importorskip("opentelemetry.instrumentation.instrumentor")

import frontend_hooks.instrumentor as instrumentor_module
from tests.support import frontend_standin as standin
from tests.support import frontend_standin_interface as interface
from frontend_hooks import REQUEST_TRACEPARENT_PARAM, GlideinFrontendInstrumentor
from frontend_hooks import gwms
from frontend_hooks import conventions as c
from glidein_tracing.core.ids import parse_traceparent

POOL = "gfactory.example.org"
A = "CMS_T2_US_A@gfactory_instance@OSG"
B = "CMS_T2_US_B@gfactory_instance@OSG"
C = "CMS_T2_US_C@gfactory_instance@OSG"
D = "CMS_T2_US_D@gfactory_instance@OSG"


def entry(name, idle, status, **extra):
    entry_name, glidein_name, factory_name = name.split("@")
    return dict({"glideid": [POOL, name, "vofe@gfactory.example.org"],
                 "attrs": {"EntryName": entry_name, "GlideinName": glidein_name,
                           "FactoryName": factory_name},
                 "idle": idle, "old_idle": 0, "running": 0, "real": 0, "status": status}, **extra)


WORLD = [
    # 30 idle jobs, 4 idle + 6 running glideins, 9 jobs idle for long, 5 running here
    entry(A, 30, {"Total": 10, "Idle": 4, "Running": 6}, old_idle=9, running=5, real=5),
    entry(B, 12, {"Total": 2, "Idle": 1, "Running": 1}, in_downtime=True),  # entry in downtime
    entry(C, 7, {"Total": 0, "Idle": 0, "Running": 0}, has_key=False),  # no Factory key: no ad
    entry(D, 50, {"Total": 150, "Idle": 120, "Running": 30}),  # IdleGlideinsPerEntry limit hit
]


def reset(instrumentor):
    if instrumentor.is_instrumented_by_opentelemetry:  # a singleton: start clean
        instrumentor.uninstrument()


@pytest.fixture
def exporter():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = GlideinFrontendInstrumentor()
    reset(instrumentor)
    instrumentor_module.FAILURES.clear()
    instrumentor.instrument(tracer_provider=provider, element_module=standin,
                            interface_module=interface, watch_main=False)
    yield exporter
    instrumentor.uninstrument()
    instrumentor_module.FAILURES.clear()


def run_cycle(tmp_path, world=WORLD, group="main"):
    element = standin.glideinFrontendElement(1, str(tmp_path), group, "run", world=world)
    assert element.main() == 0
    return element


def spans_by_name(exporter):
    spans = exporter.get_finished_spans()
    cycles = [s for s in spans if s.name == c.CYCLE_SPAN]
    requests = {s.attributes[c.REQUEST_NAME]: s for s in spans if s.name == c.REQUEST_SPAN}
    assert len(cycles) + len(requests) == len(spans)
    return cycles, requests


def ads_by_name(element):
    return {ad["ReqName"]: ad for _pool, ad in element.advertizer.request_ads()}


def test_one_cycle_span_with_a_child_request_span_per_entry(exporter, tmp_path):
    run_cycle(tmp_path)
    cycles, requests = spans_by_name(exporter)
    assert len(cycles) == 1
    cycle = cycles[0]
    assert cycle.parent is None
    assert dict(cycle.attributes) == {
        c.STAGE: "frontend.cycle", c.FRONTEND_NAME: "vofe", c.FRONTEND_GROUP: "main",
        c.FRONTEND_CLIENT_NAME: "vofe.main", c.FRONTEND_ACTION: "run", c.CYCLE_NUMBER: 1,
        c.CYCLE_ENTRIES: 4}
    assert sorted(requests) == [A, B, C, D]
    for request in requests.values():
        assert request.parent.span_id == cycle.context.span_id
        assert request.context.trace_id == cycle.context.trace_id
        assert request.attributes[c.STAGE] == "frontend.request"
        assert request.attributes[c.FRONTEND_GROUP] == "main"
        assert c.INCOMPLETE not in request.attributes
        assert cycle.start_time <= request.start_time <= request.end_time <= cycle.end_time
        assert request.status.status_code == StatusCode.UNSET
    # one after the other, in the loop's order
    ordered = sorted(requests.values(), key=lambda s: s.start_time)
    assert [s.attributes[c.REQUEST_NAME] for s in ordered] == [A, B, C, D]
    assert all(a.end_time <= b.start_time for a, b in zip(ordered, ordered[1:]))


def test_request_attributes_are_the_numbers_the_frontend_advertised(exporter, tmp_path):
    element = run_cycle(tmp_path)
    _, requests = spans_by_name(exporter)
    ads = ads_by_name(element)
    a = requests[A].attributes
    assert (a[c.ENTRY], a[c.GLIDEIN_NAME], a[c.FACTORY]) == ("CMS_T2_US_A", "gfactory_instance", "OSG")
    assert a[c.FACTORY_POOL] == POOL
    assert a[c.IDLE_JOBS] == 30 and a[c.MATCHING_IDLE_JOBS] == 30
    assert a[c.EFFECTIVE_IDLE] == 30 - 4 and a[c.EFFECTIVE_IDLE_MC] == 26
    assert a[c.OLD_IDLE_JOBS] == 9 and a[c.RUNNING_JOBS] == 5
    assert (a[c.GLIDEINS_TOTAL], a[c.IDLE_GLIDEINS], a[c.RUNNING_GLIDEINS]) == (10, 4, 6)
    # 26 effective idle / ramp-up 3 -> 8, + min((9 - 4) // 3, reserve 5) = 9
    assert a[c.REQ_IDLE_GLIDEINS] == ads[A]["ReqIdleGlideins"] == 9
    # (30 - 4 idle glideins + 5 running here) * 1.15 + 1 -> 36
    assert a[c.REQ_MAX_GLIDEINS] == ads[A]["ReqMaxGlideins"] == 36
    assert a[c.REMOVE_EXCESS] == "NO" and a[c.IN_DOWNTIME] is False
    assert a[c.ADVERTISED] is True and a[c.TRACEPARENT_SENT] is True
    assert c.LIMITS_TRIGGERED not in a

    d = requests[D].attributes
    assert d[c.LIMITS_TRIGGERED] == ("IdleGlideinsPerEntry",)
    assert d[c.REQ_IDLE_GLIDEINS] == ads[D]["ReqIdleGlideins"] == 0
    assert d[c.REQ_MAX_GLIDEINS] == ads[D]["ReqMaxGlideins"]


def test_downtime_and_keyless_entries_still_get_a_request_span(exporter, tmp_path):
    element = run_cycle(tmp_path)
    _, requests = spans_by_name(exporter)
    ads = ads_by_name(element)
    b = requests[B].attributes  # in downtime: compute_glidein_* are not called, 0/0 is advertised
    assert b[c.IN_DOWNTIME] is True
    assert c.EFFECTIVE_IDLE_MC not in b
    assert b[c.REQ_IDLE_GLIDEINS] == b[c.REQ_MAX_GLIDEINS] == 0 == ads[B]["ReqIdleGlideins"]
    assert b[c.ENTRY] == "CMS_T2_US_B" and b[c.ADVERTISED] is True
    cc = requests[C].attributes  # no Factory key: iterate_one does not call advertizer.add
    assert C not in ads
    assert c.ADVERTISED not in cc and c.TRACEPARENT_SENT not in cc
    assert cc[c.REQ_IDLE_GLIDEINS] == 2 and cc[c.ENTRY] == "CMS_T2_US_C"


def test_glidein_param_carries_the_request_spans_traceparent(exporter, tmp_path):
    element = run_cycle(tmp_path)
    _, requests = spans_by_name(exporter)
    ads = ads_by_name(element)
    assert sorted(ads) == [A, B, D]
    for name, ad in ads.items():
        parsed = parse_traceparent(ad["GlideinParam" + REQUEST_TRACEPARENT_PARAM])
        assert parsed is not None
        trace_id, span_id, flags = parsed
        span = requests[name].context
        assert span_id == format(span.span_id, "016x")
        assert trace_id == format(span.trace_id, "032x")
        assert flags & 1 == 1  # sampled (the SDK also sets the 0x02 "random trace id" flag)
        # the Frontend's own params are untouched
        assert ad["GlideinParamGLIDECLIENT_ReqNode"] == POOL
        assert ad["GlideinParamUSE_MATCH_AUTH"] == "True"
    assert REQUEST_TRACEPARENT_PARAM not in element.const_params
    assert REQUEST_TRACEPARENT_PARAM not in interface.MultiAdvertizeWork.add.__wrapped__.__defaults__[1]


def test_cycle_number_is_kept_between_group_processes(exporter, tmp_path):
    # GlideinWMS starts a new group process every cycle; the count lives in its HistoryFile.
    run_cycle(tmp_path, world=WORLD[:1])
    run_cycle(tmp_path, world=WORLD[:1])
    run_cycle(tmp_path, world=WORLD[:1], group="other")
    cycles = [s for s in exporter.get_finished_spans() if s.name == c.CYCLE_SPAN]
    numbers = [(s.attributes[c.FRONTEND_GROUP], s.attributes[c.CYCLE_NUMBER]) for s in cycles]
    assert numbers == [("main", 1), ("main", 2), ("other", 1)]


def test_advertising_outside_a_cycle_is_left_alone(exporter):
    advertizer = interface.MultiAdvertizeWork(None)
    params = {"X": "1"}
    advertizer.add(POOL, A, A, 1, 2, 0, params)
    assert advertizer.factory_queue[POOL][0][0].glidein_params is params
    assert params == {"X": "1"} and exporter.get_finished_spans() == ()


def test_an_exception_in_the_frontend_passes_through_and_marks_the_spans(exporter, tmp_path):
    element = standin.glideinFrontendElement(1, str(tmp_path), "main", "run", world=WORLD)
    element.ramp_up_attenuation = 0  # RampUpAttenuation=0: compute_glidein_min_idle divides by it
    element.published_frontend_name = "vofe.main"
    with pytest.raises(ZeroDivisionError) as info:
        element.iterate_one()
    assert info.traceback[-1].name == "compute_glidein_min_idle"
    cycles, requests = spans_by_name(exporter)
    assert list(requests) == [A]
    request, cycle = requests[A], cycles[0]
    assert request.status.status_code == StatusCode.ERROR
    assert "ZeroDivisionError" in request.status.description
    assert [e.name for e in request.events] == ["exception"]
    assert request.attributes[c.INCOMPLETE] is True
    assert cycle.status.status_code == StatusCode.ERROR
    assert request.parent.span_id == cycle.context.span_id
    # and the real main() still turns it into its exit code 2
    assert element.main() == 2


def test_the_same_exception_object_reaches_the_caller(exporter, tmp_path, monkeypatch):
    failure = RuntimeError("config broke")

    def deepcopy(_value):
        raise failure

    monkeypatch.setattr(standin, "copy", types.SimpleNamespace(deepcopy=deepcopy))
    element = standin.glideinFrontendElement(1, str(tmp_path), "main", "run", world=WORLD)
    with pytest.raises(RuntimeError) as info:
        element.iterate_one()
    assert info.value is failure
    cycles, requests = spans_by_name(exporter)
    # raised between two of our hooks: the open request span is closed by the cycle, as failed
    assert requests[A].status.status_code == StatusCode.ERROR
    assert requests[A].attributes[c.INCOMPLETE] is True
    assert cycles[0].status.status_code == StatusCode.ERROR


def outcome(element):
    ads = [(pool, {k: v for k, v in ad.items() if REQUEST_TRACEPARENT_PARAM not in k})
           for pool, ad in element.advertizer.request_ads()]
    return ads, element.resource_classads


def test_failures_of_our_code_do_not_change_the_frontend(exporter, tmp_path, monkeypatch, caplog):
    GlideinFrontendInstrumentor().uninstrument()
    expected = outcome(run_cycle(tmp_path / "plain"))
    GlideinFrontendInstrumentor().instrument(element_module=standin, interface_module=interface,
                                             watch_main=False)

    def broken(*_args, **_kwargs):
        raise ValueError("bug in frontend_hooks")

    monkeypatch.setattr(instrumentor_module, "traceparent_of", broken)
    monkeypatch.setitem(gwms.AFTER, "build_resource_classad", broken)
    monkeypatch.setitem(gwms.AFTER, "decide_removal_type", broken)
    caplog.set_level(logging.WARNING, logger="frontend_hooks")
    for _ in range(2):
        element = run_cycle(tmp_path / "traced")
        assert outcome(element) == expected
        assert not any(REQUEST_TRACEPARENT_PARAM in key for _pool, ad in element.advertizer.request_ads()
                       for key in ad)
    # each broken place is logged once, however often it fails
    assert instrumentor_module.FAILURES == {
        "GlideinParam " + REQUEST_TRACEPARENT_PARAM: 6,
        "frontend.request (build_resource_classad)": 8,
        "frontend.request (decide_removal_type)": 8,
    }
    warnings = [r for r in caplog.records if r.name == "frontend_hooks"]
    assert len(warnings) == 3


def test_a_broken_tracer_does_not_change_the_frontend(exporter, tmp_path, monkeypatch):
    GlideinFrontendInstrumentor().uninstrument()
    expected = outcome(run_cycle(tmp_path / "plain"))
    GlideinFrontendInstrumentor().instrument(element_module=standin, interface_module=interface,
                                             watch_main=False)

    class BrokenTracer:
        def start_span(self, *_args, **_kwargs):
            raise RuntimeError("no tracer")

    monkeypatch.setattr(GlideinFrontendInstrumentor(), "_tracer", BrokenTracer())
    element = run_cycle(tmp_path / "traced")
    assert outcome(element) == expected
    assert set(instrumentor_module.FAILURES) == {"frontend.cycle start"}


def test_uninstrument_restores_the_originals_and_instrument_is_idempotent(tmp_path):
    methods = ("iterate_one",) + gwms.ENTRY_METHODS
    element_originals = {name: vars(standin.glideinFrontendElement)[name] for name in methods}
    add_original = vars(interface.MultiAdvertizeWork)["add"]
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = GlideinFrontendInstrumentor()
    reset(instrumentor)
    try:
        for _ in range(2):
            instrumentor.instrument(tracer_provider=provider, element_module=standin,
                                    interface_module=interface, watch_main=False)
        for name, original in element_originals.items():
            assert vars(standin.glideinFrontendElement)[name].__wrapped__ is original
        assert vars(interface.MultiAdvertizeWork)["add"].__wrapped__ is add_original
        run_cycle(tmp_path)
        assert len(exporter.get_finished_spans()) == 5
    finally:
        instrumentor.uninstrument()
        instrumentor.uninstrument()
    for name, original in element_originals.items():
        assert vars(standin.glideinFrontendElement)[name] is original
    assert vars(interface.MultiAdvertizeWork)["add"] is add_original
    element = run_cycle(tmp_path)
    assert len(exporter.get_finished_spans()) == 5
    assert all(REQUEST_TRACEPARENT_PARAM not in ad for _pool, ad in element.advertizer.request_ads())


def test_missing_glideinwms_is_skipped_quietly():
    instrumentor = GlideinFrontendInstrumentor()
    reset(instrumentor)
    instrumentor_module.FAILURES.clear()
    try:
        instrumentor.instrument(watch_main=False)  # glideinwms is not installed here
        assert instrumentor._patched == [] and instrumentor_module.FAILURES == {}
        assert instrumentor.instrumentation_dependencies() == ()
    finally:
        instrumentor.uninstrument()


MAIN_SOURCE = """
class glideinFrontendElement:
    def iterate_one(self): return "cycle"
    def compute_glidein_min_idle(self, *args): return 0
    def compute_glidein_max_run(self, prop_jobs, real, idle_glideins): return 0
    def decide_removal_type(self, count_jobs, count_status, glideid): return "NO", 0
    def build_resource_classad(self, *args): return None
"""


def test_a_group_script_run_as_main_gets_its_class_patched_when_defined(monkeypatch):
    # frontend/glideinFrontend.py spawn_group runs glideinFrontendElement.py as __main__: the
    # class does not exist yet when sitecustomize (opentelemetry-instrument) instruments.
    import builtins
    original_build_class = builtins.__build_class__
    monkeypatch.setattr("sys.argv", ["/usr/sbin/glideinFrontendElement.py", "1", "/w", "main"])
    instrumentor = GlideinFrontendInstrumentor()
    reset(instrumentor)
    instrumentor.instrument(element_module=types.ModuleType("empty"), interface_module=interface)
    try:
        assert builtins.__build_class__ is not original_build_class
        namespace = {"__name__": "__main__"}
        exec(compile(MAIN_SOURCE, "glideinFrontendElement.py", "exec"), namespace)
        cls = namespace["glideinFrontendElement"]
        assert builtins.__build_class__ is original_build_class  # watching stopped
        assert hasattr(vars(cls)["iterate_one"], "__wrapped__")
        assert cls().iterate_one() == "cycle"
    finally:
        instrumentor.uninstrument()
    assert builtins.__build_class__ is original_build_class
    assert not hasattr(vars(cls)["iterate_one"], "__wrapped__")
    # uninstrument before the class appears also stops watching
    instrumentor.instrument(element_module=types.ModuleType("empty"), interface_module=interface)
    instrumentor.uninstrument()
    assert builtins.__build_class__ is original_build_class


def test_spans_end_even_when_setting_their_attributes_raises(exporter, tmp_path, monkeypatch):
    """_end_cycle and _close_request end their span in `finally`: a span whose error status or
    attributes could not be set is still exported, not left open for ever."""
    def broken(*_args, **_kwargs):
        raise ValueError("bug in frontend_hooks")

    monkeypatch.setattr(instrumentor_module, "_mark_error", broken)
    element = standin.glideinFrontendElement(1, str(tmp_path), "main", "run", world=WORLD)
    element.ramp_up_attenuation = 0  # compute_glidein_min_idle raises: both spans get marked
    element.published_frontend_name = "vofe.main"
    with pytest.raises(ZeroDivisionError):
        element.iterate_one()
    cycles, requests = spans_by_name(exporter)
    assert len(cycles) == 1 and list(requests) == [A]
    assert cycles[0].end_time is not None and requests[A].end_time is not None
    assert {"frontend.cycle end", "frontend.request (compute_glidein_min_idle)"} <= set(instrumentor_module.FAILURES)


def test_a_failed_cycle_repeats_its_number(exporter, tmp_path):
    """The count lives in the HistoryFile, which iterate() saves only after iterate_one
    returns: a cycle that raised is counted again by the next one (docs/frontend.md)."""
    run_cycle(tmp_path, world=WORLD[:1])
    failing = standin.glideinFrontendElement(1, str(tmp_path), "main", "run", world=WORLD[:1])
    failing.ramp_up_attenuation = 0
    assert failing.main() == 2
    run_cycle(tmp_path, world=WORLD[:1])
    cycles = [s for s in exporter.get_finished_spans() if s.name == c.CYCLE_SPAN]
    assert [(s.attributes[c.CYCLE_NUMBER], s.status.status_code) for s in cycles] == [
        (1, StatusCode.UNSET), (2, StatusCode.ERROR), (2, StatusCode.UNSET)]


def test_a_second_instrument_logs_a_warning_and_changes_nothing(exporter, tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    GlideinFrontendInstrumentor().instrument(element_module=standin, interface_module=interface, watch_main=False)
    assert any("already instrumented" in r.getMessage() for r in caplog.records)
    run_cycle(tmp_path)
    assert len(exporter.get_finished_spans()) == 5


def test_a_request_cut_by_the_idle_glideins_per_entry_max_shows_no_limits_triggered(exporter, tmp_path):
    """`idle_glideins_per_entry max` (the element's max_idle) caps compute_glidein_min_idle's
    result without an entry in limits_triggered, unlike the limits on glideins already there."""
    element = standin.glideinFrontendElement(1, str(tmp_path), "main", "run",
                                             world=[entry(A, 5000, {"Total": 0, "Idle": 0, "Running": 0})])
    assert element.main() == 0
    _, requests = spans_by_name(exporter)
    assert requests[A].attributes[c.REQ_IDLE_GLIDEINS] == element.max_idle
    assert c.LIMITS_TRIGGERED not in requests[A].attributes


EXPORT_FAILING_GROUP = """
import logging, sys
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from frontend_hooks import GlideinFrontendInstrumentor
from tests.support import frontend_standin as standin, frontend_standin_interface as interface

class CollectorGone(SpanExporter):      # a lasting export failure, as the SDK meets it
    def export(self, spans):
        raise ConnectionRefusedError(111, "Connection refused")
    def shutdown(self):
        pass

logging.basicConfig(stream=sys.stderr)
provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(CollectorGone()))
GlideinFrontendInstrumentor().instrument(tracer_provider=provider, element_module=standin,
                                         interface_module=interface, watch_main=False)
element = standin.glideinFrontendElement(1, sys.argv[1], "main", "run", world=[])
assert element.main() == 0
provider.shutdown()
"""


def test_a_lasting_export_failure_logs_one_traceback_across_group_processes(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path
    repo = str(Path(__file__).resolve().parents[1])     # tests.support imports from the repo root
    env = dict(os.environ, TMPDIR=str(tmp_path), PYTHONPATH=os.pathsep.join(
        [repo] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    cycles = [subprocess.run([sys.executable, "-c", EXPORT_FAILING_GROUP, str(tmp_path)], env=env,
                             capture_output=True, text=True, timeout=60) for _ in range(3)]
    assert all(cycle.returncode == 0 for cycle in cycles), cycles[0].stderr
    first, *later = [cycle.stderr for cycle in cycles]
    assert "Traceback" in first and "ConnectionRefusedError" in first
    for stderr in later:      # the failure is still said, once a cycle, without the traceback
        assert "Exception while exporting" in stderr and "traceback not repeated" in stderr
        assert "Traceback" not in stderr
    assert (tmp_path / f"frontend_hooks-export-traceback-{os.getuid()}").exists()
