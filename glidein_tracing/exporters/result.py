"""What one export delivered: the typed result every exporter of ours gives.

The SDK's ``SpanExporter.export`` says SUCCESS or FAILURE for the batch as a whole. The
forwarder needs more to stay exactly-once: which glideins (traces) of a failed batch went
through whole, which only in part, and whether the export ran out of time (then any span may
have arrived). Our exporters are SDK exporters that also answer ``deliver(spans)`` with a
``Delivery``; ``deliver(exporter, spans)`` asks any SDK exporter the same question.
"""

from __future__ import annotations

from dataclasses import dataclass

from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


@dataclass(frozen=True)
class Delivery:
    """The fate of one export, by trace id (int, as in ``span.context.trace_id``).

    ``delivered``: every span of the trace was accepted; ``partly``: some were, not all;
    ``undelivered``: none was (as far as the exporter knows). ``reason`` says why not all
    went (None when they did). ``timed_out``: the export ran out of time, so nothing is known
    and every span may have arrived."""

    delivered: frozenset = frozenset()
    partly: frozenset = frozenset()
    undelivered: frozenset = frozenset()
    reason: str | None = None
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.reason is None and not self.timed_out

    @property
    def result(self) -> SpanExportResult:
        """The SDK's verdict on the whole batch."""
        return SpanExportResult.SUCCESS if self.ok else SpanExportResult.FAILURE

    @classmethod
    def whole(cls, spans) -> Delivery:
        """Every span accepted."""
        return cls(delivered=trace_ids(spans))

    @classmethod
    def refused(cls, spans, reason: str) -> Delivery:
        """No span accepted, for ``reason``."""
        return cls(undelivered=trace_ids(spans), reason=reason)

    @classmethod
    def out_of_time(cls, spans, timeout_s: float) -> Delivery:
        """No answer within ``timeout_s``: any span may have arrived."""
        return cls(undelivered=trace_ids(spans), reason=f"no answer within {timeout_s:g} s", timed_out=True)


def trace_ids(spans) -> frozenset:
    return frozenset(span.context.trace_id for span in spans)


class DeliveringExporter(SpanExporter):
    """An SDK span exporter that says what it delivered: subclasses write ``deliver``; the
    SDK's ``export`` is its verdict on the whole batch."""

    def deliver(self, spans: list) -> Delivery:
        """Export ``spans`` (a list) and say what was delivered."""
        raise NotImplementedError

    def export(self, spans) -> SpanExportResult:
        return self.deliver(list(spans)).result


def deliver(exporter: SpanExporter, spans) -> Delivery:
    """Export ``spans`` through any SDK exporter and say what was delivered: ours answer
    themselves; of another, SUCCESS means every span, FAILURE none."""
    spans = list(spans)
    if isinstance(exporter, DeliveringExporter):
        return exporter.deliver(spans)
    if exporter.export(spans) is SpanExportResult.SUCCESS:
        return Delivery.whole(spans)
    return Delivery.refused(spans, f"refused by {type(exporter).__name__}")
