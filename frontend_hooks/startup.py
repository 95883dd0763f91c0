"""Turns frontend_hooks on in a group process at start: the cheapest way, docs/frontend.md's
first (bench/README.md, bench_frontend_startup.py, for what it costs against
``opentelemetry-instrument``).

``frontend_hooks/autoload/sitecustomize.py`` calls ``start()`` in a process whose script is
``glideinFrontendElement.py`` (the group process GlideinWMS starts each cycle) and in no other,
so the Frontend daemon and every other Python program the Frontend's environment reaches only
compare a name. ``start()`` sets up what ``opentelemetry-instrument`` would, for this
instrumentor only: a TracerProvider from the ``OTEL_*`` variables (``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER``), spans kept and sent over OTLP/HTTP
when the process exits (frontend_hooks/otlp_http.py, ``SendAtExit``: no batching thread).
Not loaded: the distro, the configurator, the scan of every installed package's entry
points, the resource detectors, other instrumentors, OpenTelemetry's instrumentation base
class (with wrapt and packaging) and ``requests``.
"""

from __future__ import annotations

import gc
import logging
import threading

_logger = logging.getLogger("frontend_hooks")

DEFAULT_SERVICE_NAME = "gwms-frontend"


def group_provider():
    """The group process's TracerProvider: its resource from ``OTEL_SERVICE_NAME`` and
    ``OTEL_RESOURCE_ATTRIBUTES`` (as Resource.create reads them, without its entry-point
    lookup of resource detectors), its spans sent at exit (``SendAtExit``).

    The SDK's provider (1.45 here; 1.41, the last for Python 3.9, does not) detects the
    process's resource again in every forked child (its
    ``_handle_fork``: an executor thread and the process detectors, a few ms a child).
    GlideinWMS forks a child per query and per job type each cycle (lib/fork.py,
    ``fork_in_bg``), and a child sends no span (``SendAtExit`` sends the parent's only), so
    here a child only gets the new lock the SDK gives it (bench/README.md,
    bench_frontend_startup.py, for what the detection cost)."""
    from opentelemetry.sdk.resources import SERVICE_NAME, OTELResourceDetector, Resource
    from opentelemetry.sdk.trace import TracerProvider

    from frontend_hooks.otlp_http import OtlpHttpExporter, SendAtExit

    class GroupTracerProvider(TracerProvider):
        def _handle_fork(self) -> None:
            self._tracers_lock = threading.Lock()

    resource = Resource({SERVICE_NAME: DEFAULT_SERVICE_NAME}).merge(OTELResourceDetector().detect())
    provider = GroupTracerProvider(resource=resource)
    provider.add_span_processor(SendAtExit(OtlpHttpExporter()))
    return provider


def start() -> None:
    """Instrument this group process (never raises: a failure is logged and tracing is off).

    Then every object alive so far (the interpreter's and what tracing imported: modules,
    classes, the provider, all kept for the process's life) is moved out of the garbage
    collector's reach with ``gc.freeze()``. Otherwise each full collection of the cycle walks
    them again, and in every child GlideinWMS forks the walk also copies their memory pages
    (Python's gc docs advise ``freeze()`` before a fork for this). Frozen, they cost the cycle
    what they cost at import only (bench/README.md, bench_frontend_startup.py: the freeze alone
    on the plain group process, and tracing with and without it)."""
    try:
        from frontend_hooks.instrumentor import FrontendTracing

        FrontendTracing().patch(tracer_provider=group_provider())
        gc.freeze()
    except Exception:
        _logger.warning("frontend_hooks: tracing could not start; the Frontend is not affected",
                        exc_info=True)
