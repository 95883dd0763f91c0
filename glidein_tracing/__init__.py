"""glidein_tracing: OpenTelemetry traces of GlideinWMS glideins, from submission to cleanup."""

__version__ = "0.1.0"

from . import compiled as _compiled  # noqa: E402 - before any compiled module is imported

_compiled.install()
