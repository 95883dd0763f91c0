"""OpenTelemetry instrumentation of the GlideinWMS Frontend (docs/frontend.md).

``GlideinFrontendInstrumentor().instrument()`` adds a ``frontend.cycle`` span per group cycle and
a ``frontend.request`` span per entry request, and passes each request span's traceparent to the
glideins as the GlideinParam ``REQUEST_TRACEPARENT_PARAM``. Also loaded by
``opentelemetry-instrument`` through the ``opentelemetry_instrumentor`` entry point
``glideinwms_frontend``; frontend_hooks/autoload starts it in group processes without
OpenTelemetry's instrumentation package (frontend_hooks/startup.py).
"""

from frontend_hooks.conventions import REQUEST_TRACEPARENT_PARAM

__all__ = ["GlideinFrontendInstrumentor", "REQUEST_TRACEPARENT_PARAM"]


def __getattr__(name: str):
    # on first use, as frontend_hooks.instrumentor makes it (its base class's imports are a
    # cost the group processes started by frontend_hooks/autoload do without)
    if name == "GlideinFrontendInstrumentor":
        from frontend_hooks import instrumentor

        return instrumentor.GlideinFrontendInstrumentor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
