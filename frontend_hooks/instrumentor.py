"""OpenTelemetry instrumentor for the GlideinWMS Frontend (issue 5, docs/frontend.md).

What it wraps, read from GlideinWMS (master of early 2026):

* ``frontend/glideinFrontendElement.py``, class ``glideinFrontendElement``: one group process runs
  ``main() -> iterate() -> iterate_one()`` once per Frontend cycle (``frontend/glideinFrontend.py``
  ``spawn_group`` starts ``python glideinFrontendElement.py PPID WORK_DIR GROUP ACTION`` for every
  group, every cycle). ``iterate_one`` becomes the ``frontend.cycle`` span.
* Inside ``iterate_one``, one loop pass per entry (``glideid = (factory_pool_node, request_name,
  my_identity)``) calls, in this order: ``compute_glidein_min_idle`` and
  ``compute_glidein_max_run`` (skipped when the Frontend or the entry is in downtime),
  ``decide_removal_type(count_jobs, count_status, glideid)``, ``advertizer.add(...)`` (only when a
  Factory key exists) and, always last, ``build_resource_classad(this_stats_arr, request_name,
  ...)``. There is no single per-entry function, so the ``frontend.request`` span is opened by
  the first of these calls and closed when ``build_resource_classad`` returns; calls that name
  the entry (``decide_removal_type``, ``add``, ``build_resource_classad``) check it is the same.
* ``frontend/glideinFrontendInterface.py``, ``MultiAdvertizeWork.add(factory_pool, request_name,
  glidein_name, min_nr_glideins, max_run_glideins, idle_lifetime=0, glidein_params={}, ...)``:
  the request's params; ``createAdvertizeWorkFile`` writes each as ``GlideinParam<K>`` next to
  ``ReqIdleGlideins`` / ``ReqMaxGlideins``. We add ``GLIDEIN_TRACING_REQUEST_TRACEPARENT`` there.

Nothing here may break the Frontend: every piece of our code runs under a guard that swallows
and logs (once per place) any exception, and the wrapped functions' results and exceptions pass
through untouched.
"""

from __future__ import annotations

import builtins
import functools
import logging
import os
import sys
import threading
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from frontend_hooks import gwms
from frontend_hooks import conventions as c
from frontend_hooks import export_failures
from frontend_hooks import waiting

try:
    from glidein_tracing import __version__
except Exception:  # pragma: no cover - frontend_hooks installed without glidein_tracing
    __version__ = "0"

_logger = logging.getLogger("frontend_hooks")

# GLIDEIN_TRACING_FRONTEND_WAITING=0 turns the job.waiting spans (and the attributes they add
# to the Frontend's queries) off, keeping frontend.cycle and frontend.request.
WAITING_ENV = "GLIDEIN_TRACING_FRONTEND_WAITING"

_PROPAGATOR = TraceContextTextMapPropagator()
_MISSING = object()

# Failures of our own code, per place; each place is logged the first time only.
FAILURES: dict = {}
_failures_lock = threading.Lock()


def _note_failure(where: str) -> None:
    with _failures_lock:
        first = where not in FAILURES
        FAILURES[where] = FAILURES.get(where, 0) + 1
    if first:
        _logger.warning("frontend_hooks: %s failed; tracing skips it, the Frontend is not affected "
                        "(later failures here are not logged)", where, exc_info=True)


def _guarded(where: str, function, *args):
    try:
        return function(*args)
    except Exception:
        _note_failure(where)
        return None


def _mark_error(span, exc: BaseException) -> None:
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))


def traceparent_of(span) -> str | None:
    """The W3C traceparent of a span, or None when the span has no valid context."""
    if not span.get_span_context().is_valid:
        return None
    carrier: dict = {}
    _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
    return carrier.get("traceparent")


@dataclass
class _Request:
    span: object
    name: str | None = None
    failed: bool = False
    facts: dict = field(default_factory=dict)   # what the span was told, kept for job.waiting

    def set_attribute(self, key, value) -> None:
        """The span's attribute, also kept as a fact (a span sampled out keeps none)."""
        self.facts[key] = value
        self.span.set_attribute(key, value)


@dataclass
class _Cycle:
    element: object
    span: object
    context: object
    request: _Request | None = None
    requests: int = 0
    count_status_names: dict | None = None  # id(count_status dict) -> request name
    facts: dict = field(default_factory=dict)  # request name -> its request span's attributes


_CURRENT: ContextVar = ContextVar("frontend_hooks_cycle", default=None)


def _is_element_class(obj) -> bool:
    return isinstance(obj, type) and all(
        callable(getattr(obj, name, None)) for name in (gwms.CYCLE_METHOD,) + gwms.ENTRY_METHODS)


# Wrapping: the wrapper gets (the original, bound to the instance for a method; the instance
# or None; args; kwargs), and the patched attribute keeps the original as __wrapped__. Plain
# functions rather than wrapt's proxies: wrapt (with the asyncio it imports) is a cost every
# group process would pay at start (bench/README.md, bench_frontend_startup.py).
_WRAPPED_BY_US = "_frontend_hooks_wrapper"


def _wrap(owner, name: str, wrapper) -> None:
    original = vars(owner)[name]
    if isinstance(owner, type):
        def patched(self, *args, **kwargs):
            return wrapper(original.__get__(self, type(self)), self, args, kwargs)
    else:
        def patched(*args, **kwargs):
            return wrapper(original, None, args, kwargs)
    functools.update_wrapper(patched, original)
    setattr(patched, _WRAPPED_BY_US, True)
    setattr(owner, name, patched)


def _unwrap(owner, name: str) -> None:
    patched = vars(owner).get(name)
    if getattr(patched, _WRAPPED_BY_US, False):
        setattr(owner, name, patched.__wrapped__)


class FrontendTracing:
    """``frontend.cycle`` and ``frontend.request`` spans for a GlideinWMS Frontend group process,
    and its ``job.waiting`` spans; the OpenTelemetry instrumentor ``GlideinFrontendInstrumentor``
    is this with OpenTelemetry's ``BaseInstrumentor`` around it, and frontend_hooks/startup.py
    uses it without (that base class's imports cost every group process at start).

    ``patch(tracer_provider=None, element_module=None, interface_module=None, lib_module=None,
    watch_main=True, waiting=...)``: the modules default to GlideinWMS's own (skipped when not
    importable); tests and custom set-ups may pass module objects or dotted names. With
    ``watch_main``, a group process that runs ``glideinFrontendElement.py`` as ``__main__`` (the
    normal case) gets its class patched as soon as the script defines it. ``unpatch()`` undoes it.
    """

    # --- patch / unpatch -------------------------------------------------------------------
    def patch(self, **kwargs):
        self._patched = []
        self._main_hook = None
        self._process_cycles = 0
        self._tracer = trace.get_tracer("frontend_hooks", __version__,
                                        tracer_provider=kwargs.get("tracer_provider"))
        self._waiting = kwargs.get("waiting", os.environ.get(WAITING_ENV, "1") != "0")
        self._waiting_tracer = trace.get_tracer("frontend_hooks.waiting", __version__,
                                                tracer_provider=kwargs.get("tracer_provider"))
        _guarded("instrument", self._patch_targets, kwargs)
        _guarded("rate-limiting exporter tracebacks", export_failures.install)

    def unpatch(self):
        _guarded("uninstrument (main hook)", self._remove_main_hook)
        for owner, name in reversed(getattr(self, "_patched", [])):
            _guarded(f"uninstrument {getattr(owner, '__name__', owner)}.{name}", _unwrap, owner, name)
        self._patched = []

    def _patch_targets(self, kwargs) -> None:
        element_module = self._module(kwargs.get("element_module") or gwms.ELEMENT_MODULE)
        interface_module = self._module(kwargs.get("interface_module") or gwms.INTERFACE_MODULE)
        element_class = getattr(element_module, gwms.ELEMENT_CLASS, None)
        if _is_element_class(element_class):
            self._patch_element(element_class)
        advertizer_class = getattr(interface_module, gwms.ADVERTIZER_CLASS, None)
        if isinstance(advertizer_class, type) and gwms.ADVERTIZER_CLASS == advertizer_class.__name__:
            self._patch(advertizer_class, "add", self._advertize_add)
        lib_module = self._module(kwargs.get("lib_module") or gwms.LIB_MODULE)
        if self._waiting and lib_module is not None:
            for name, wrapper in (("getCondorQ", self._job_query), ("getCondorStatus", self._slot_query)):
                if callable(getattr(lib_module, name, None)):
                    self._patch(lib_module, name, wrapper)
        if kwargs.get("watch_main", True):
            self._watch_main()

    @staticmethod
    def _module(module_or_name):
        if not isinstance(module_or_name, str):
            return module_or_name
        try:
            __import__(module_or_name)
        except ImportError:
            _logger.debug("frontend_hooks: %s is not importable; not instrumented", module_or_name)
            return None
        return sys.modules.get(module_or_name)

    # --- the attributes job.waiting needs, added to the Frontend's own queries ----------------
    @staticmethod
    def _with_attributes(args, kwargs, wanted, only_if=None):
        # getCondorQ(schedd_names, constraint=None, format_list=None, ...) and
        # getCondorStatus(collector_names, constraint=None, format_list=None, ...)
        format_list = gwms.arg(args, kwargs, 2, "format_list")
        names = {item[0] for item in format_list or () if isinstance(item, (list, tuple)) and item}
        if format_list is None or (only_if is not None and only_if not in names):
            return args, kwargs
        new_list = waiting.add_attributes(format_list, wanted)
        if len(args) > 2:
            return args[:2] + (new_list,) + tuple(args[3:]), kwargs
        return args, dict(kwargs, format_list=new_list)

    def _job_query(self, wrapped, instance, args, kwargs):
        changed = _guarded("job query attributes", self._with_attributes, args, kwargs,
                           waiting.JOB_ATTRIBUTES)
        return wrapped(*changed[0], **changed[1]) if changed else wrapped(*args, **kwargs)

    def _slot_query(self, wrapped, instance, args, kwargs):
        # only the group's own glidein query (get_condor_status asks it with the credential id)
        changed = _guarded("glidein query attributes", self._with_attributes, args, kwargs,
                           waiting.SLOT_ATTRIBUTES, "GLIDEIN_CredentialIdentifier")
        return wrapped(*changed[0], **changed[1]) if changed else wrapped(*args, **kwargs)

    def _patch(self, owner, name, wrapper) -> None:
        if name not in vars(owner) or (owner, name) in self._patched:
            return
        if getattr(vars(owner)[name], _WRAPPED_BY_US, False):
            return  # already wrapped (by us, through another path)
        _wrap(owner, name, wrapper)
        self._patched.append((owner, name))

    def _patch_element(self, cls) -> None:
        self._patch(cls, gwms.CYCLE_METHOD, self._iterate_one)
        for method in gwms.ENTRY_METHODS:
            self._patch(cls, method, self._entry_wrapper(method))

    # The group process runs glideinFrontendElement.py as __main__: its class is defined after
    # sitecustomize (where opentelemetry-instrument calls us) has run, and it is a different
    # class object from glideinwms.frontend.glideinFrontendElement's. So, in that process only,
    # watch class creation until __main__ defines it, patch it, and stop watching.
    def _watch_main(self) -> None:
        main = sys.modules.get("__main__")
        existing = getattr(main, gwms.ELEMENT_CLASS, None)
        if _is_element_class(existing):
            self._patch_element(existing)
            return
        script = os.path.basename(sys.argv[0]) if getattr(sys, "argv", None) else ""
        if script != gwms.ELEMENT_SCRIPT:
            return
        original = builtins.__build_class__
        instrumentor = self

        def build_class(func, name, *args, **kwargs):
            cls = original(func, name, *args, **kwargs)
            if name == gwms.ELEMENT_CLASS and instrumentor._main_hook is build_class:
                _guarded("patching __main__." + gwms.ELEMENT_CLASS, instrumentor._main_class_built, cls)
            return cls

        self._main_hook = build_class
        self._main_hook_original = original
        builtins.__build_class__ = build_class

    def _main_class_built(self, cls) -> None:
        if getattr(cls, "__module__", None) != "__main__" or not _is_element_class(cls):
            return
        self._remove_main_hook()
        self._patch_element(cls)

    def _remove_main_hook(self) -> None:
        hook, self._main_hook = getattr(self, "_main_hook", None), None
        if hook is not None and builtins.__build_class__ is hook:
            builtins.__build_class__ = self._main_hook_original
        # else someone wrapped it after us: our hook stays in their chain as a pass-through

    # --- frontend.cycle ------------------------------------------------------------------
    def _iterate_one(self, wrapped, instance, args, kwargs):
        started = _guarded("frontend.cycle start", self._start_cycle, instance)
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            if started:
                _guarded("frontend.cycle end", self._end_cycle, started, exc)
            raise
        if started:
            _guarded("frontend.cycle end", self._end_cycle, started, None)
        return result

    def _next_cycle_number(self, element) -> int:
        # GlideinWMS keeps per-group state between cycles in HistoryFile (glideinFrontendConfig),
        # saved by iterate() after iterate_one; a fresh process per cycle needs it for a counter.
        history = gwms.history(element)
        if history is not None:
            try:
                previous = history.get(c.HISTORY_CYCLE_KEY)
                number = (previous if gwms.number(previous) and previous > 0 else 0) + 1
                history[c.HISTORY_CYCLE_KEY] = number
                return number
            except Exception:
                _note_failure("cycle counter in history_obj")
        self._process_cycles += 1
        return self._process_cycles

    @staticmethod
    def _element_attributes(element) -> dict:
        names = gwms.element_names(element)
        attributes = {}
        for key, name in ((c.FRONTEND_NAME, "frontend_name"), (c.FRONTEND_GROUP, "group_name"),
                          (c.FRONTEND_CLIENT_NAME, "published_frontend_name"),
                          (c.FRONTEND_ACTION, "action")):
            if isinstance(names[name], str) and names[name]:
                attributes[key] = names[name]
        return attributes

    def _start_cycle(self, element):
        attributes = {c.STAGE: c.CYCLE_SPAN, **self._element_attributes(element)}
        attributes[c.CYCLE_NUMBER] = self._next_cycle_number(element)
        span = self._tracer.start_span(c.CYCLE_SPAN, kind=SpanKind.INTERNAL, attributes=attributes)
        context = trace.set_span_in_context(span)
        cycle = _Cycle(element, span, context)
        token = otel_context.attach(context)
        try:
            cycle_token = _CURRENT.set(cycle)
        except BaseException:
            otel_context.detach(token)
            raise
        return cycle, token, cycle_token

    def _end_cycle(self, started, exc) -> None:
        cycle, token, cycle_token = started
        try:
            try:
                if cycle.request is not None:
                    self._close_request(cycle, cycle.request, incomplete=True, exc=exc)
                cycle.span.set_attribute(c.CYCLE_ENTRIES, cycle.requests)
                if exc is not None:
                    _mark_error(cycle.span, exc)
                elif self._waiting:
                    _guarded("job.waiting", self._report_waiting, cycle)
            finally:   # a span whose attributes could not be set still ends
                cycle.span.end()
        finally:
            _CURRENT.reset(cycle_token)
            otel_context.detach(token)

    def _report_waiting(self, cycle: _Cycle) -> None:
        reporter = waiting.Reporter(self._waiting_tracer, cycle.element, cycle.facts,
                                    cycle.span.get_span_context())
        sent = reporter.run()
        if sent is not None:
            cycle.span.set_attribute(c.CYCLE_WAITING_SPANS, sent)
            cycle.span.set_attribute(c.CYCLE_MATCH_ERRORS, reporter.match_errors)

    # --- frontend.request ----------------------------------------------------------------
    def _request(self, cycle: _Cycle, name: str | None) -> _Request:
        """The open request span of the cycle for entry ``name`` (None: whichever is open)."""
        request = cycle.request
        if request is not None and (name is None or request.name in (None, name)):
            if name and request.name is None:
                self._name_request(request, name)
            return request
        if request is not None:  # another entry's request was left open
            self._close_request(cycle, request, incomplete=True)
        attributes = {c.STAGE: c.REQUEST_SPAN, **self._element_attributes(cycle.element)}
        attributes.pop(c.FRONTEND_ACTION, None)
        span = self._tracer.start_span(c.REQUEST_SPAN, context=cycle.context,
                                       kind=SpanKind.INTERNAL, attributes=attributes)
        request = _Request(span)
        cycle.request = request
        cycle.requests += 1
        if name:
            self._name_request(request, name)
        return request

    @staticmethod
    def _name_request(request: _Request, name: str) -> None:
        request.name = name
        request.span.set_attribute(c.REQUEST_NAME, name)
        # ReqName is the glidefactory ad's Name: "entry@glidein@factory"
        # (factory/glideFactoryInterface.py, EntryClassad.__init__); build_resource_classad's
        # glidein_el attrs later confirm it.
        parts = name.split("@")
        if len(parts) == 3:
            for key, value in zip((c.ENTRY, c.GLIDEIN_NAME, c.FACTORY), parts):
                request.span.set_attribute(key, value)

    @staticmethod
    def _close_request(cycle: _Cycle, request: _Request, incomplete=False, exc=None) -> None:
        if cycle.request is request:
            cycle.request = None
        if request.name:   # what job.waiting reads of the entry's request
            request.facts["_span_context"] = request.span.get_span_context()
            cycle.facts[request.name] = request.facts
        try:
            if incomplete:
                request.span.set_attribute(c.INCOMPLETE, True)
            if exc is not None and not request.failed:
                request.failed = True
                _mark_error(request.span, exc)
        finally:   # a span whose attributes could not be set still ends
            request.span.end()

    def _entry_wrapper(self, method: str):
        where = f"frontend.request ({method})"

        def wrapper(wrapped, instance, args, kwargs):
            entered = _guarded(where, self._enter_request, instance, method, args, kwargs)
            if entered is None:
                return wrapped(*args, **kwargs)
            try:
                result = wrapped(*args, **kwargs)
            except BaseException as exc:
                _guarded(where, self._leave_request, entered, method, args, kwargs, None, exc)
                raise
            _guarded(where, self._leave_request, entered, method, args, kwargs, result, None)
            return result

        return wrapper

    def _enter_request(self, instance, method, args, kwargs):
        cycle = _CURRENT.get()
        if cycle is None or cycle.element is not instance:
            return None
        request = self._request(cycle, gwms.name_in_call(cycle, method, args, kwargs))
        token = otel_context.attach(trace.set_span_in_context(request.span, cycle.context))
        return cycle, request, token

    def _leave_request(self, entered, method, args, kwargs, result, exc) -> None:
        cycle, request, token = entered
        try:
            try:
                if exc is not None:
                    request.failed = True
                    _mark_error(request.span, exc)
                else:
                    gwms.AFTER[method](request, args, kwargs, result)
            finally:
                otel_context.detach(token)
        finally:
            if method == gwms.ENTRY_LAST_METHOD:
                self._close_request(cycle, request)

    # --- the request's GlideinParam ------------------------------------------------------
    def _advertize_add(self, wrapped, instance, args, kwargs):
        prepared = _guarded("GlideinParam " + c.REQUEST_TRACEPARENT_PARAM, self._prepare_add,
                            args, kwargs)
        call_args, call_kwargs = (prepared[0], prepared[1]) if prepared else (args, kwargs)
        try:
            return wrapped(*call_args, **call_kwargs)
        except BaseException as exc:
            if prepared:
                _guarded("frontend.request (add)", _mark_request_error, prepared[2], exc)
            raise

    def _prepare_add(self, args, kwargs):
        # MultiAdvertizeWork.add(factory_pool, request_name, glidein_name, min_nr_glideins,
        #     max_run_glideins, idle_lifetime=0, glidein_params={}, ...)
        cycle = _CURRENT.get()
        if cycle is None:
            return None
        request = self._request(cycle, gwms.arg(args, kwargs, 1, "request_name"))
        request.span.set_attribute(c.ADVERTISED, True)
        value = traceparent_of(request.span)
        params = gwms.arg(args, kwargs, 6, "glidein_params", _MISSING)
        if value is None or not (params is _MISSING or isinstance(params, Mapping)):
            return args, kwargs, request
        # A new dict: never mutate the caller's (nor add()'s shared {} default).
        new_params = {} if params is _MISSING else dict(params)
        new_params[c.REQUEST_TRACEPARENT_PARAM] = value
        if len(args) > 6:
            args = args[:6] + (new_params,) + tuple(args[7:])
        else:
            kwargs = dict(kwargs, glidein_params=new_params)
        request.span.set_attribute(c.TRACEPARENT_SENT, True)
        return args, kwargs, request


def _mark_request_error(request: _Request, exc: BaseException) -> None:
    if not request.failed:
        request.failed = True
        _mark_error(request.span, exc)


def _instrumentor_class():
    from opentelemetry.instrumentation.instrumentor import BaseInstrumentor

    class GlideinFrontendInstrumentor(FrontendTracing, BaseInstrumentor):
        """FrontendTracing as an OpenTelemetry instrumentor: ``instrument(**kwargs)`` (the
        arguments of ``FrontendTracing.patch``) and ``uninstrument()``, idempotent, found by
        ``opentelemetry-instrument`` through the ``opentelemetry_instrumentor`` entry point
        ``glideinwms_frontend`` (setup.cfg)."""

        def instrumentation_dependencies(self):
            # GlideinWMS is installed from RPMs without Python distribution metadata, so a
            # requirement here would make opentelemetry-instrument skip us; we check for the
            # modules themselves instead (a missing module is skipped quietly).
            return ()

        def _instrument(self, **kwargs):
            self.patch(**kwargs)

        def _uninstrument(self, **kwargs):
            self.unpatch()

    GlideinFrontendInstrumentor.__module__ = __name__
    GlideinFrontendInstrumentor.__qualname__ = "GlideinFrontendInstrumentor"
    return GlideinFrontendInstrumentor


def __getattr__(name: str):
    # GlideinFrontendInstrumentor is made on first use: its base class, from
    # opentelemetry-instrumentation, imports wrapt, packaging and importlib.metadata, about
    # 0.06 s of every group process's start that frontend_hooks/startup.py does without
    if name == "GlideinFrontendInstrumentor":
        cls = globals()[name] = _instrumentor_class()
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

