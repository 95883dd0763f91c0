"""glidein_tracing: OpenTelemetry traces of GlideinWMS glideins, from submission to cleanup."""

__version__ = "0.1.0"
