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

import logging

_logger = logging.getLogger("frontend_hooks")

DEFAULT_SERVICE_NAME = "gwms-frontend"


def start() -> None:
    """Instrument this group process (never raises: a failure is logged and tracing is off)."""
    try:
        from opentelemetry.sdk.resources import SERVICE_NAME, OTELResourceDetector, Resource
        from opentelemetry.sdk.trace import TracerProvider

        from frontend_hooks.instrumentor import FrontendTracing
        from frontend_hooks.otlp_http import OtlpHttpExporter, SendAtExit

        # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, as Resource.create reads them,
        # without its entry-point lookup of resource detectors
        resource = Resource({SERVICE_NAME: DEFAULT_SERVICE_NAME}).merge(OTELResourceDetector().detect())
        provider = TracerProvider(resource=resource)
        provider.add_span_processor(SendAtExit(OtlpHttpExporter()))
        FrontendTracing().patch(tracer_provider=provider)
    except Exception:
        _logger.warning("frontend_hooks: tracing could not start; the Frontend is not affected",
                        exc_info=True)
