"""OTLP/HTTP (JSON) span export on Python's own http.client, for the group processes.

GlideinWMS starts every group, every cycle, as a new process, so what the exporter imports is
paid every cycle: the SDK's OTLP/HTTP exporter brings ``requests`` (and urllib3, charset
detection, cookies), about a third of what tracing costs a group process at start, and its
protobuf encoding the protobuf runtime and OTLP's generated messages (bench/README.md,
bench_frontend_startup.py). OTLP/HTTP takes JSON as well; the encoding is the project's one
OTLP JSON writer (glidein_tracing/exporters/otlp_json.py, the store's format), only the
transport is this module's. One attempt per export, bounded by the timeout: a group process
lives one cycle, and the next cycle sends its own spans.

Configured by the OTLP exporter variables the SDK's exporter reads:
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (the full URL), else ``OTEL_EXPORTER_OTLP_ENDPOINT`` +
``/v1/traces`` (default ``http://localhost:4318``); ``OTEL_EXPORTER_OTLP[_TRACES]_HEADERS``
(``key=value,...``, URL-encoded); ``OTEL_EXPORTER_OTLP[_TRACES]_TIMEOUT`` (seconds, default
10); ``OTEL_EXPORTER_OTLP[_TRACES]_CERTIFICATE`` (a CA file for https; default the system's).
"""

from __future__ import annotations

import http.client
import json
import logging
import os
from urllib.parse import unquote, urlsplit

from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from glidein_tracing.exporters.otlp_json import request_from_span_dicts, span_dict

_logger = logging.getLogger("frontend_hooks")

DEFAULT_ENDPOINT = "http://localhost:4318"
TRACES_PATH = "/v1/traces"
MAX_BATCH = 512   # spans per request: the SDK's default OTEL_BSP_MAX_EXPORT_BATCH_SIZE


def _setting(name: str, default: str | None = None) -> str | None:
    """OTEL_EXPORTER_OTLP_TRACES_<name>, else OTEL_EXPORTER_OTLP_<name>."""
    return os.environ.get(f"OTEL_EXPORTER_OTLP_TRACES_{name}") or os.environ.get(f"OTEL_EXPORTER_OTLP_{name}") \
        or default


def traces_url() -> str:
    url = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if url:
        return url
    return os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", DEFAULT_ENDPOINT).rstrip("/") + TRACES_PATH


def headers() -> dict:
    out = {}
    for item in (_setting("HEADERS") or "").split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            out[unquote(key.strip())] = unquote(value.strip())
    return out


class OtlpHttpExporter(SpanExporter):
    """Sends each batch as one OTLP/HTTP JSON request; a failure is logged as one line
    (the group process's next cycle sends its own spans, so nothing is retried)."""

    def __init__(self):
        url = urlsplit(traces_url())
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"OTLP traces endpoint is not an http(s) URL: {traces_url()}")
        self.url = url
        self.path = (url.path or TRACES_PATH) + (f"?{url.query}" if url.query else "")
        self.headers = dict(headers(), **{"Content-Type": "application/json"})
        self.timeout = float(_setting("TIMEOUT", "10"))
        self.certificate = _setting("CERTIFICATE")
        self._logged_failure = False

    def _connection(self):
        if self.url.scheme == "http":
            return http.client.HTTPConnection(self.url.hostname, self.url.port, timeout=self.timeout)
        import ssl   # only for https: its import is a cost too

        context = ssl.create_default_context(cafile=self.certificate)
        return http.client.HTTPSConnection(self.url.hostname, self.url.port, timeout=self.timeout,
                                           context=context)

    def export(self, spans) -> SpanExportResult:
        resources: dict = {}   # one dict per resource, so the request holds each once
        body = json.dumps(request_from_span_dicts(
            [span_dict(span, resources.setdefault(id(span.resource), dict(span.resource.attributes)))
             for span in spans]), separators=(",", ":")).encode()
        connection = self._connection()
        try:
            connection.request("POST", self.path, body=body, headers=self.headers)
            response = connection.getresponse()
            response.read()
            if 200 <= response.status < 300:
                return SpanExportResult.SUCCESS
            problem = f"HTTP {response.status} {response.reason}"
        except (OSError, http.client.HTTPException) as exc:
            problem = f"{type(exc).__name__}: {exc}"
        finally:
            connection.close()
        if not self._logged_failure:
            self._logged_failure = True
            _logger.warning("frontend_hooks: %d spans not sent to %s: %s", len(spans), self.url.geturl(), problem)
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        return None


class SendAtExit(SpanProcessor):
    """Keeps the ended spans and sends them when the provider shuts down, at the process's exit
    (the SDK's TracerProvider shuts down at exit). A group process lives one cycle, so the
    SDK's BatchSpanProcessor only adds its thread, started again in every child GlideinWMS
    forks for its queries and matching (bench/README.md, bench_frontend_startup.py). A forked
    child that exits normally sends nothing: its spans are the parent's copies."""

    def __init__(self, exporter: SpanExporter):
        self._exporter = exporter
        self._spans: list = []
        self._pid = os.getpid()

    def on_end(self, span) -> None:
        self._spans.append(span)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        if os.getpid() != self._pid:
            return True
        spans, self._spans = self._spans, []
        ok = True
        for first in range(0, len(spans), MAX_BATCH):
            ok = self._exporter.export(spans[first:first + MAX_BATCH]) is SpanExportResult.SUCCESS and ok
        return ok

    def shutdown(self) -> None:
        self.force_flush()
        self._exporter.shutdown()
