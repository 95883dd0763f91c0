"""OTLP/HTTP export with a hard time bound.

A glidein must never wait on an unreachable collector for longer than the export bound, and
nothing may be lost: the caller keeps the journal (and the stderr copy) whatever happens. The
SDK exporter retries with backoff; we give it a deadline and run it in a daemon thread, so the
bound holds even if a connect hangs.
"""

from __future__ import annotations

import inspect
import logging
import os
import threading
from collections import Counter
from urllib.parse import urlsplit, urlunsplit

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ..core.numbers import finite_float
from ..core.redaction import redact_text
from .result import DeliveringExporter, Delivery, deliver

TRACES_PATH = "/v1/traces"
# Jaeger refuses bodies above ~20 MiB and some Collector receivers take less: requests stay
# under this many bytes (before compression), split by span count until they fit
DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024
# newer SDK exporters refuse a request above their ``max_request_size``; 1.41 (the last for
# Python 3.9) has no such cap and would send it: there the size is checked here first
SDK_REFUSES_LARGE_REQUESTS = "max_request_size" in inspect.signature(OTLPSpanExporter.__init__).parameters


class SizeLimitedExporter(DeliveringExporter):
    """Export through ``inner`` (the SDK's OTLP/HTTP exporter: its transport, retries, TLS and
    OTEL_* handling, and its ``max_request_size``, which refuses to send a larger request; with
    an SDK that has none, ``inner_refuses_large=False`` checks the size here) in requests that
    stay under ``max_request_bytes``.

    A batch goes as one request first (encoded once, by the SDK). Only when that fails and the
    batch is larger than the limit is it split: spans packed by trace (one glidein each), a
    trace too large for one request halved until its parts fit (a single span that does not
    fit is not sent); sizes are the SDK encoder's own (``encode_spans``). Its ``Delivery``
    says which traces (glideins) of a failed batch went through whole and which in part."""

    def __init__(self, inner: SpanExporter, max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES, *,
                 inner_refuses_large: bool = True):
        self.inner = inner
        self.max_request_bytes = max_request_bytes
        self.inner_refuses_large = inner_refuses_large

    def deliver(self, spans) -> Delivery:
        limit = self.max_request_bytes
        # an inner exporter without the cap is never handed a request above the limit
        oversize = not self.inner_refuses_large and limit > 0 and self._size(spans) > limit
        if not oversize and self.inner.export(spans) is SpanExportResult.SUCCESS:
            return Delivery.whole(spans)
        if len(spans) <= 1 or limit <= 0 or not (oversize or self._size(spans) > limit):
            return Delivery.refused(spans, "the request was refused")  # not too large: nothing to split
        total = Counter(span.context.trace_id for span in spans)
        accepted: Counter = Counter()
        refused = too_large = 0
        for part, fits in self._requests(spans):
            if not fits:
                too_large += 1
            elif self.inner.export(part) is SpanExportResult.SUCCESS:
                accepted.update(span.context.trace_id for span in part)
            else:
                refused += 1
        delivered = frozenset(t for t, n in accepted.items() if n == total[t])
        reasons = ([f"{refused} requests refused"] if refused else []) + \
                  ([f"{too_large} spans larger than {self.max_request_bytes} bytes alone"] if too_large else [])
        return Delivery(delivered=delivered, partly=frozenset(accepted) - delivered,
                        undelivered=frozenset(total) - frozenset(accepted),
                        reason="; ".join(reasons) or None)

    def _size(self, spans) -> int:
        return encode_spans(spans).ByteSize()

    def _requests(self, spans):
        """(spans of one request, whether it fits) pairs for a batch larger than the limit."""
        limit = self.max_request_bytes
        by_trace: dict = {}
        for span in spans:
            by_trace.setdefault(span.context.trace_id, []).append(span)
        pieces = [piece for group in by_trace.values() for piece in self._fit(group)]
        out, parts, size = [], [], 0
        for piece, piece_size in pieces:
            if piece_size > limit:           # one span alone too large: never sent
                out.append((piece, False))
                continue
            if parts and size + piece_size > limit:
                out.append((parts, True))
                parts, size = [], 0
            parts = parts + piece
            size += piece_size
        if parts:
            out.append((parts, True))
        return out

    def _fit(self, spans):
        """(piece, its size) pairs of one trace, halved until each fits or is one span."""
        size = self._size(spans)
        if size <= self.max_request_bytes or len(spans) == 1:
            return [(spans, size)]
        half = len(spans) // 2
        return self._fit(spans[:half]) + self._fit(spans[half:])

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


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


class BoundedExporter(DeliveringExporter):
    """Wrap an exporter so that an export returns within ``timeout_s`` whatever happens.

    An export that runs out of time is delivered ``timed_out``: its spans may have arrived
    (the forwarder reconciles before any resend); ``timed_out`` also says so of the last
    export, for callers of the SDK's ``export``. The inner SDK exporter is given the same
    timeout as its own deadline (retries included), so its thread ends by itself too."""

    def __init__(self, inner: SpanExporter, timeout_s: float):
        self.inner = inner
        self.timeout_s = timeout_s
        self.timed_out = False

    def deliver(self, spans) -> Delivery:
        outcome = [Delivery.refused(spans, "the exporter failed")]

        def run():
            try:
                outcome[0] = deliver(self.inner, spans)
            except Exception as exc:  # an exporter bug must not reach the glidein
                outcome[0] = Delivery.refused(spans, f"the exporter failed: {exc}")

        worker = threading.Thread(target=run, name="glidein-tracing-export", daemon=True)
        worker.start()
        worker.join(self.timeout_s)
        self.timed_out = worker.is_alive()
        if self.timed_out:  # unknown: the caller treats every span as maybe sent
            return Delivery.out_of_time(spans, self.timeout_s)
        return outcome[0]

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


def otel_timeout_s(environ=os.environ) -> float:
    """OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT as this SDK reads it (seconds), else 10."""
    raw = environ.get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") or environ.get("OTEL_EXPORTER_OTLP_TIMEOUT")
    try:
        return finite_float(raw) if raw and finite_float(raw) > 0 else 10.0
    except ValueError:
        return 10.0


class _NoCredentialsInLogs(logging.Filter):
    """The SDK exporter logs the URL it could not use ("Failed to parse: http://user:password@
    host:99999/v1/traces"), password and all, on the forwarder's output and the node's
    export.log: its records go out with the secrets redacted (redaction.redact_text)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact_text(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


def _hide_credentials_in_sdk_logs() -> None:
    sdk_log = logging.getLogger(OTLPSpanExporter.__module__)
    if not any(isinstance(f, _NoCredentialsInLogs) for f in sdk_log.filters):
        sdk_log.addFilter(_NoCredentialsInLogs())


def make_otlp_exporter(endpoint: str | None, timeout_s: float | None = 5.0,
                       max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES, *, headers: dict | None = None,
                       certificate: str | None = None, compression: str | None = None) -> SpanExporter:
    """The OTLP/HTTP exporter for ``endpoint`` (base URL), bounded to ``timeout_s`` seconds.
    What is None here comes from the standard OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS,
    _TIMEOUT, _CERTIFICATE, _COMPRESSION variables, as the SDK reads them."""
    from opentelemetry.exporter.otlp.proto.http import Compression

    _hide_credentials_in_sdk_logs()
    timeout_s = otel_timeout_s() if timeout_s is None else timeout_s
    kwargs = {"timeout": timeout_s, "session": _ca_preserving_session()}
    if endpoint:
        kwargs["endpoint"] = traces_url(endpoint)
    if headers:
        kwargs["headers"] = dict(headers)
    if certificate:
        kwargs["certificate_file"] = certificate
    if compression:
        kwargs["compression"] = Compression(compression)
    if max_request_bytes > 0 and SDK_REFUSES_LARGE_REQUESTS:
        kwargs["max_request_size"] = max_request_bytes
    return BoundedExporter(SizeLimitedExporter(OTLPSpanExporter(**kwargs), max_request_bytes,
                                               inner_refuses_large=SDK_REFUSES_LARGE_REQUESTS), timeout_s)
