"""The trace while it is being made: spans in progress and what the journal said besides.

Every phase reads and changes one ``Draft``: collect.py fills it from the journal, the rules
(glideinwms.py, bounds.py, outcome.py) derive what the journal does not say, build.py turns it
into the SDK's ``ReadableSpan`` s. A ``SpanDraft`` is mutable, unlike the span it becomes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from opentelemetry.sdk.trace import SpanLimits

from .. import redaction
from ..journal import JournalReport
from ..resources import ResourceTimeline
from .phases import PhaseCollector

ROOT = "glidein"   # the root's journal key
DEFAULT_MAX_SPANS = 2000  # knob GLIDEIN_TRACING_MAX_SPANS
MAX_SPANS_CEILING = 100000  # the knob's maximum: a journal claiming more gets this many
DEFAULT_ATTRIBUTE_COUNT = 128  # per span, when OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT is not set


class SpanDraft:
    """One span while the journal is being read."""

    __slots__ = ("key", "name", "stage", "parent", "start", "end", "attrs", "links", "status",
                 "error_type", "error_detail", "closed_by_converter", "end_fields")

    def __init__(self, key: str, name: str = ""):
        self.key = key
        self.name = name
        self.stage = ""
        self.parent: str | None = ROOT
        self.start: float | None = None
        self.end: float | None = None
        self.attrs: dict = {}
        self.links: list = []          # traceparent strings
        self.status = "UNSET"          # or OK, ERROR
        self.error_type = ""
        self.error_detail = ""
        self.closed_by_converter = False
        self.end_fields: dict = {}     # the end line's raw fields (a job's r.utime, r.stime)


@dataclass
class Limits:
    """What one journal may put into one trace. The SDK's span limits
    (OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT, OTEL_SPAN_EVENT_COUNT_LIMIT, OTEL_SPAN_LINK_COUNT_LIMIT)
    bound one span; ``max_spans`` (the glidein's knob, at most ``span_ceiling``) the trace."""

    max_attributes: int
    max_events: int
    max_links: int
    max_spans: int = DEFAULT_MAX_SPANS
    span_ceiling: int = MAX_SPANS_CEILING

    @classmethod
    def from_sdk(cls, span_ceiling: int = MAX_SPANS_CEILING) -> "Limits":
        sdk = SpanLimits()
        return cls(max_attributes=sdk.max_span_attributes or DEFAULT_ATTRIBUTE_COUNT,
                   max_events=sdk.max_events or DEFAULT_ATTRIBUTE_COUNT,
                   max_links=sdk.max_links or DEFAULT_ATTRIBUTE_COUNT,
                   span_ceiling=span_ceiling)


@dataclass
class Draft:
    """One glidein's trace in progress. ``spans`` keeps the order in which the journal first
    named each key: the order of the trace's spans."""

    limits: Limits
    report: JournalReport = field(default_factory=JournalReport)
    spans: dict = field(default_factory=dict)          # journal key -> SpanDraft
    trace_id: str | None = None
    redact: set = field(default_factory=set)           # attribute names to redact whole
    resource_attrs: dict = field(default_factory=dict)
    timeline: ResourceTimeline = field(default_factory=ResourceTimeline)
    last_time: float | None = None                     # the journal's last event
    # lines kept for the rules: GlideinWMS per-script records, StartdHistoryLog records,
    # notes (become span events) and the failed stages' log tails
    records: list = field(default_factory=list)
    histories: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    log_tails: list = field(default_factory=list)
    phases: PhaseCollector = field(default_factory=PhaseCollector)   # a user job's phases (phases.py)
    dropped: dict = field(default_factory=lambda: {"attributes": 0, "links": 0, "events": 0, "spans": 0})
    exported_live: bool = False                        # the node sent spans itself (``export`` lines)
    node_shift: float = 0.0                            # the node's stages moved later by (clocks.py)

    def span(self, key: str) -> SpanDraft:
        """The span of a journal key, made on first mention (named after the key's first part)."""
        span = self.spans.get(key)
        if span is None:
            span = self.spans[key] = SpanDraft(key=key, name=key.split("/", 1)[0])
        return span

    @property
    def root(self) -> SpanDraft:
        return self.spans[ROOT]

    def keys_starting(self, prefix) -> list[str]:
        """Span keys starting with ``prefix`` (a string or a tuple of them), in order."""
        return [key for key in self.spans if key.startswith(prefix)]

    def scrub(self, attrs: dict) -> dict:
        """Secrets never reach a span (redaction.py): by name (knob and known markers) and
        inside free-text values. Returns ``attrs`` itself when nothing needs redacting."""
        return redaction.scrub(attrs, self.redact) if attrs else attrs

    def all_spans_clean(self) -> bool:
        """One substring check over every span's attributes: with nothing that could be a
        secret anywhere (the common case) no span needs its own."""
        names, values = [], []
        for span in self.spans.values():
            names.extend(span.attrs)
            values.extend(v for v in span.attrs.values() if isinstance(v, str))
        return (not redaction.might_hold_secret("\0".join(names + values))
                and (not self.redact or self.redact.isdisjoint(names)))
