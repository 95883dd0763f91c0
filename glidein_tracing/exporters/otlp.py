"""OTLP/HTTP export with a hard time bound.

A glidein must never wait on an unreachable collector for longer than the export bound, and
nothing may be lost: the caller keeps the journal (and the stderr copy) whatever happens. The
SDK exporter retries with backoff; we give it a deadline and run it in a daemon thread, so the
bound holds even if a connect hangs.
"""

from __future__ import annotations

import os
import threading
from urllib.parse import urlsplit, urlunsplit

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ..span_data import export_span_data, readable_spans
from .otlp_proto import encode_request_bytes

TRACES_PATH = "/v1/traces"


class GroupedOTLPSpanExporter(OTLPSpanExporter):
    """The SDK's OTLP/HTTP exporter (its transport, retries, TLS and OTEL_* handling), with
    our faster per-resource encoding (otlp_proto.py). It also takes SpanData (the forwarder's
    spans), which it encodes without making SDK spans of them."""

    def export(self, spans) -> SpanExportResult:
        client = getattr(self, "_client", None)
        if client is None or self._shutdown:  # another SDK layout: use the SDK as it is
            return super().export(readable_spans(spans))
        try:
            data = encode_request_bytes(spans)
        except Exception:
            return super().export(readable_spans(spans))
        result = client.export(data)
        return SpanExportResult.SUCCESS if result.success else SpanExportResult.FAILURE

    export_span_data = export


def sdk_disabled() -> bool:
    """OTEL_SDK_DISABLED=true turns every export off (OTel spec)."""
    return os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


def traces_url(endpoint: str) -> str:
    """A base URL (http://host:4318) -> its traces URL; a full /v1/traces URL is kept."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith(TRACES_PATH) else endpoint + TRACES_PATH


def public_url(url: str) -> str:
    """``url`` without what may authenticate (user:password@, query, fragment): where spans
    go, fit for messages and logs."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        if parts.port is not None:
            netloc += f":{parts.port}"
    except ValueError:  # not a URL we can take apart: say nothing of it
        return "(unparsable endpoint)"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class BoundedExporter(SpanExporter):
    """Wrap an exporter so that export() returns within ``timeout_s`` whatever happens."""

    def __init__(self, inner: SpanExporter, timeout_s: float):
        self.inner = inner
        self.timeout_s = timeout_s

    def export(self, spans) -> SpanExportResult:
        return self._bounded(self.inner.export, spans)

    def export_span_data(self, spans) -> SpanExportResult:
        return self._bounded(lambda data: export_span_data(self.inner, data), spans)

    def _bounded(self, export, spans) -> SpanExportResult:
        result = [SpanExportResult.FAILURE]

        def run():
            try:
                result[0] = export(spans)
            except Exception:  # an exporter bug must not reach the glidein
                result[0] = SpanExportResult.FAILURE

        worker = threading.Thread(target=run, name="glidein-tracing-export", daemon=True)
        worker.start()
        worker.join(self.timeout_s)
        return result[0] if not worker.is_alive() else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        try:
            self.inner.shutdown()
        except Exception:
            pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _ca_preserving_session():
    """A requests session that keeps the CA file the exporter gives it.

    The SDK sets ``session.verify`` from OTEL_EXPORTER_OTLP_(TRACES_)CERTIFICATE, but requests
    replaces a session's verify with REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE at request time, so on
    hosts that set those the OTel knob would be silently ignored."""
    import requests

    class CAPreservingSession(requests.Session):
        def merge_environment_settings(self, url, proxies, stream, verify, cert):
            settings = super().merge_environment_settings(url, proxies, stream, verify, cert)
            if isinstance(self.verify, str) and verify in (None, True):
                settings["verify"] = self.verify
            return settings

    return CAPreservingSession()


def make_otlp_exporter(endpoint: str | None, timeout_s: float = 5.0) -> SpanExporter:
    """The OTLP/HTTP exporter for ``endpoint`` (base URL), bounded to ``timeout_s`` seconds.
    With endpoint None the standard OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS, _TIMEOUT,
    _CERTIFICATE... variables apply, as the SDK reads them."""
    kwargs = {"timeout": timeout_s, "session": _ca_preserving_session()}
    if endpoint:
        kwargs["endpoint"] = traces_url(endpoint)
    return BoundedExporter(GroupedOTLPSpanExporter(**kwargs), timeout_s)
