"""OpenTelemetry instrumentation of the GlideinWMS Frontend (docs/frontend.md).

``GlideinFrontendInstrumentor().instrument()`` adds a ``frontend.cycle`` span per group cycle and
a ``frontend.request`` span per entry request, and passes each request span's traceparent to the
glideins as the GlideinParam ``REQUEST_TRACEPARENT_PARAM``. Also loaded by
``opentelemetry-instrument`` through the ``opentelemetry_instrumentor`` entry point
``glideinwms_frontend``.
"""

from frontend_hooks.conventions import REQUEST_TRACEPARENT_PARAM
from frontend_hooks.instrumentor import GlideinFrontendInstrumentor

__all__ = ["GlideinFrontendInstrumentor", "REQUEST_TRACEPARENT_PARAM"]
