"""The one converter: journal events -> spans (the SDK's ``ReadableSpan``).

Every path uses it: live export on the node, the Factory forwarder, the demo. Ids are
deterministic (glidein_tracing.ids), so the same journal converted twice, anywhere, gives
the same spans. Nothing here knows where spans go.

What it derives beyond the journal's own start/end lines:
- one ``validation`` span per GlideinWMS per-script record (their own timings);
- the ``condor`` span from the ``condor_startup.sh`` record when no hook wrote it;
- job ends from StartdHistoryLog records when the exit hook missed a job;
- ``idle`` spans: the parts of the condor phase with no job running;
- per-stage ``glidein.resource.*`` from the readings inside each stage (resources.py);
- for a killed glidein, stages left open are closed at the last known time and marked.
"""

from __future__ import annotations

import base64
import bisect
import functools
import operator
from datetime import datetime

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event as SpanEvent
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, TraceFlags
from opentelemetry.trace.status import Status, StatusCode

from . import __version__, failure, ids, log_tail, redaction, sampling, span_digest
from .log_tail import LOG_SOURCE, LOG_TAIL_EVENT
from .journal import Event, JournalReport
from .numbers import finite_float
from . import resources
from .resources import ResourceTimeline

SCOPE = InstrumentationScope("glidein_tracing", __version__)
ROOT = "glidein"
CONDOR_RECORD = "condor_startup.sh"
DEFAULT_SERVICE = "glidein"
SLEEP_STAGE = "post_failure_sleep"
DEFAULT_MAX_SPANS = 2000  # knob GLIDEIN_TRACING_MAX_SPANS
MAX_SPANS_CEILING = 100000  # the knob's maximum: a journal claiming more gets this many
DEFAULT_ATTRIBUTE_COUNT = 128  # per span, when OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT is not set
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1   # OTLP's int_value: a larger int goes as text
SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_STATUS = {"OK": Status(StatusCode.OK), "UNSET": Status(StatusCode.UNSET)}   # immutable, shared
IDENTITY_RESOURCE_KEYS = (
    "glidein.factory", "glidein.name", "glidein.entry", "glidein.client", "glidein.client_group",
    "glidein.schedd", "glidein.cluster", "glidein.proc", "glidein.multi_index", "glidein.site",
    "glidein.uuid",
)


# job ad attributes a failed job's triage needs (issue 13), from the StartdHistoryLog
_HISTORY_TRIAGE = (("HoldReason", "job.hold_reason", str), ("HoldReasonCode", "job.hold_reason_code", int),
                   ("RemoteWallClockTime", "job.wall_s", float), ("LastRemoteHost", "job.remote_host", str),
                   ("RemoteHost", "job.remote_host", str))
# what a failed job's span should tell (job span or resource); any missing is named in a note
_JOB_TRIAGE = (("exit code or signal", ("job.exit_code", "job.exit_signal", "job.hold_reason")),
               ("remote host", ("job.remote_host",)), ("CPU time", ("r.utime",)),
               ("wall time", ("job.wall_s",)), ("site", ("glidein.site",)),
               ("processor model", ("host.cpu.model.name",)))


class ConversionError(ValueError):
    """The journal holds no glidein trace (no root and no trace id)."""


class _Span:
    """One span while the journal is being read (mutable, unlike the SDK span it becomes)."""

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
        self.links: list = []
        self.status = "UNSET"
        self.error_type = ""
        self.error_detail = ""
        self.closed_by_converter = False
        self.end_fields: dict = {}


def _typed_value(suffix: str, value: str):
    """A field's text as the type its suffix names (i, f, b); the text when it does not parse."""
    try:
        if suffix == "i":
            return int(finite_float(value))
        if suffix == "f":
            return finite_float(value)
        return value.strip().lower() in ("true", "1", "yes")
    except (ValueError, OverflowError):   # "1e999:i" is text, not a crash
        return value


def _split_type(name: str) -> tuple[str, str]:
    """``name:i`` -> (``name``, ``i``) for the journal's type suffixes (:i, :f, :b); else (name, "")."""
    base, _, suffix = name.rpartition(":")
    return (base, suffix) if base and suffix in ("i", "f", "b") else (name, "")


def _typed(name: str, value: str):
    """Apply the journal's type suffix (:i, :f, :b) to one field."""
    key, suffix = _split_type(name)
    return key, (_typed_value(suffix, value) if suffix else value)


_FIELD_PLAN: dict = {}   # journal field name -> None (not a span attribute) or (key, type suffix)


def _plan(name: str):
    """How one journal field name becomes a span attribute (names repeat: decided once and
    remembered in ``_FIELD_PLAN``, which the caller looks in first)."""
    plan = None if name.startswith(("@", "r.", "res.")) else _split_type(name)
    if len(_FIELD_PLAN) < 100_000:
        _FIELD_PLAN[name] = plan
    return plan


def _attributes(fields: dict) -> dict:
    """Span attributes of one event: every field that is not control (@) or resource (r.)."""
    out = {}
    plans = _FIELD_PLAN
    for name, value in fields.items():
        plan = plans.get(name, False)
        if plan is False:
            plan = _plan(name)
        if plan is None or value == "":
            continue  # control/resource field; or empty: a hook writes every field it knows of
        key, suffix = plan
        out[key] = _typed_value(suffix, value) if suffix else value
    return out


def _resource_attributes(fields: dict) -> dict:
    out = {}
    for name, value in fields.items():
        if name.startswith("res."):
            key, typed = _typed(name[4:], value)
            out[key] = typed
    return out


@functools.lru_cache(maxsize=1024)
def parse_iso(text: str) -> float | None:
    """ISO 8601 with offset (GlideinWMS records) -> epoch seconds; None when unparsable.
    Cached: one script's end is usually the next one's start."""
    try:
        return datetime.fromisoformat(text.strip().replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError):
        return None


def _ns(seconds: float) -> int:
    """Epoch seconds -> ns. Journal times have microseconds; a double at today's epoch is
    ~256 ns coarse, so round at the microsecond (seconds * 1e9 would land 1 us early)."""
    return int(round(seconds * 1e6)) * 1000


_EVENT_ORDER = operator.attrgetter("time", "line_no")
_SAMPLED_OPS = frozenset({"start", "end", "sample"})   # lines that carry r.* readings


class _Builder:
    def __init__(self, events, report, resource_defaults, redact):
        self.events = sorted(events, key=_EVENT_ORDER)
        self.report = report or JournalReport()
        self.resource_defaults = dict(resource_defaults or {})
        self.redact = {name.strip() for name in (redact or ()) if name.strip()}
        self.spans: dict[str, _Span] = {}
        self.order: list[str] = []
        self.records: list[Event] = []
        self.histories: list[Event] = []
        self.notes: list[Event] = []
        self.log_tails: list[Event] = []
        self.resource_attrs: dict = {}
        self.trace_id: str | None = None
        self.fixed_trace_id: str | None = None
        self.timeline = ResourceTimeline()
        self.max_spans = DEFAULT_MAX_SPANS
        self.span_ceiling = MAX_SPANS_CEILING
        # the SDK's span limits (OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT, OTEL_SPAN_EVENT_COUNT_LIMIT,
        # OTEL_SPAN_LINK_COUNT_LIMIT) bound what one journal can put on one span
        limits = SpanLimits()
        self.max_attributes = limits.max_span_attributes or DEFAULT_ATTRIBUTE_COUNT
        self.max_events = limits.max_events or DEFAULT_ATTRIBUTE_COUNT
        self.max_links = limits.max_links or DEFAULT_ATTRIBUTE_COUNT
        self.dropped = {"attributes": 0, "links": 0, "events": 0, "spans": 0}
        self.last_time = max((e.time for e in self.events), default=None)

    # -- collecting ------------------------------------------------------------------
    def span(self, key: str) -> _Span:
        span = self.spans.get(key)
        if span is None:
            span = self.spans[key] = _Span(key=key, name=key.split("/", 1)[0])
            self.order.append(key)
        return span

    def collect(self):
        handlers = {op: getattr(self, "_on_" + op) for op in
                    ("start", "end", "attr", "record", "history", "note")}
        add_sample = self.timeline.add
        for event in self.events:
            op = event.op
            if op in _SAMPLED_OPS and not event.key.startswith("job/"):
                add_sample(event.time, event.fields)
            handler = handlers.get(op)
            if handler is not None:
                handler(event)

    def _on_start(self, event: Event):
        span = self.span(event.key)
        fields = event.fields
        span.start = event.time if span.start is None else min(span.start, event.time)
        span.name = fields.get("@name", span.name) or span.name
        span.stage = fields.get("@stage", span.stage)
        if event.key == ROOT:
            span.parent = None
            self.trace_id = (fields.get("@trace_id") or "").lower() or self.trace_id
            # the glidein's own knobs travel with its journal
            self.redact.update(n.strip() for n in fields.get("@redact", "").split(",") if n.strip())
            try:
                self.max_spans = min(int(fields.get("@max_spans") or self.max_spans), self.span_ceiling)
            except ValueError:
                pass
            # the sampling ratio the glidein ran with: the one decision, on the node and at the Factory
            ratio = sampling.parse_ratio(fields.get("@sampling_ratio"))
            if ratio is not None:
                span.attrs[sampling.RATIO_ATTRIBUTE] = ratio
        else:
            span.parent = fields.get("@parent", span.parent or ROOT)
        self._add_attributes(span, fields)
        self._add_links(span, event.links)
        self.resource_attrs.update(_resource_attributes(fields))

    def _on_end(self, event: Event):
        span = self.span(event.key)
        span.end = event.time if span.end is None else max(span.end, event.time)
        fields = event.fields
        self._add_attributes(span, fields)
        if len(span.end_fields) < self.max_attributes:
            span.end_fields.update(fields)
        status = fields.get("@status", "").upper()
        if status in ("OK", "ERROR"):
            span.status = status
        span.error_type = fields.get("@error.type", span.error_type)
        span.error_detail = fields.get("@error.detail", span.error_detail)

    def _on_attr(self, event: Event):
        span = self.span(event.key)
        self._add_attributes(span, event.fields)
        self._add_links(span, event.links)
        if len(self.resource_attrs) < self.max_attributes:
            self.resource_attrs.update(_resource_attributes(event.fields))

    def _add_attributes(self, span: _Span, fields: dict):
        attrs = _attributes(fields)
        if len(span.attrs) + len(attrs) <= self.max_attributes:
            span.attrs.update(attrs)
            return
        for name, value in attrs.items():
            if name in span.attrs or len(span.attrs) < self.max_attributes:
                span.attrs[name] = value
            else:
                self.dropped["attributes"] += 1

    def _add_links(self, span: _Span, links):
        room = self.max_links - len(span.links)
        span.links.extend(links[:max(room, 0)])
        self.dropped["links"] += max(len(links) - max(room, 0), 0)

    def _on_record(self, event: Event):
        self.records.append(event)

    def _on_history(self, event: Event):
        self.histories.append(event)

    def _on_note(self, event: Event):
        if LOG_SOURCE in event.fields:
            self.log_tails.append(event)
        else:
            self.notes.append(event)

    # -- deriving ----------------------------------------------------------------------
    def derive(self):
        root = self.span(ROOT)
        root.parent = None
        root.stage = root.stage or "glidein"
        root.name = root.name or "glidein"
        self.trace_id = self.fixed_trace_id or self.trace_id
        if not self.trace_id:
            self.trace_id = self._trace_id_from_identity(root.attrs)
        if not self.trace_id:
            raise ConversionError("journal has no glidein root with a trace id or identity")
        request = ids.parse_traceparent(str(root.attrs.get("glidein.request_traceparent", "")))
        if request:
            value = root.attrs["glidein.request_traceparent"]
            root.links.append(value)
            if "factory.submit" in self.spans:
                self.spans["factory.submit"].links.append(value)
        self._records_to_spans()
        self._history_to_job_ends()
        self._close_open_spans()
        self._idle_spans()
        self._cap_jobs()
        self._cap_spans()
        self._outcome()
        self._post_failure_sleep()
        self._failure_domains()

    def _cap_jobs(self):
        """GLIDEIN_TRACING_MAX_SPANS: a glidein running thousands of short jobs keeps the first
        ones as spans; the rest are counted on the root, not traced."""
        many = [k for k in self.order if k.startswith(("job/", "idle/"))]
        room = max(0, self.max_spans - (len(self.order) - len(many)))
        if len(many) <= room:
            return
        many.sort(key=lambda k: (self.spans[k].start, k))   # keep the earliest
        dropped = many[room:]
        for key in dropped:
            del self.spans[key]
        self.order = [k for k in self.order if k in self.spans]
        root = self.spans[ROOT].attrs
        root["glidein_tracing.jobs_not_traced"] = sum(1 for k in dropped if k.startswith("job/"))
        root["glidein_tracing.idle_not_traced"] = sum(1 for k in dropped if k.startswith("idle/"))

    def _cap_spans(self):
        """Spans of every kind together stay within the cap (a journal can open any number
        of keys, or chain parents 300,000 deep): the earliest are kept, the rest counted."""
        if len(self.order) <= self.max_spans:
            return
        others = sorted((k for k in self.order if k != ROOT), key=lambda k: (self.spans[k].start, k))
        for key in others[self.max_spans - 1:]:
            del self.spans[key]
            self.dropped["spans"] += 1
        self.order = [k for k in self.order if k in self.spans]

    def _trace_id_from_identity(self, attrs) -> str | None:
        needed = ("glidein.factory", "glidein.name", "glidein.entry", "glidein.cluster", "glidein.proc")
        if not all(str(attrs.get(k, "")) for k in needed):
            return None
        return ids.GlideinIdentity(
            factory=str(attrs["glidein.factory"]), name=str(attrs["glidein.name"]),
            entry=str(attrs["glidein.entry"]), schedd=str(attrs.get("glidein.schedd", "")),
            cluster=str(attrs["glidein.cluster"]), proc=str(attrs["glidein.proc"]),
            index=str(attrs.get("glidein.multi_index", "0"))).trace_id

    def _records_to_spans(self):
        has_condor_span = "condor" in self.spans and self.spans["condor"].start is not None
        for record in self.records:
            fields = record.fields
            start = parse_iso(fields.get("@tstart", "")) or record.time
            end = parse_iso(fields.get("@tend", "")) or start
            status = fields.get("@status", "").upper()
            metrics = {name[2:]: value for name, value in fields.items() if name.startswith("m.")}
            if record.key == CONDOR_RECORD or record.key.endswith("/" + CONDOR_RECORD):
                condor = self.span("condor")
                if not has_condor_span:
                    condor.start, condor.end = start, end
                condor.name, condor.stage, condor.parent = "condor", "condor.start", ROOT
                for name, value in metrics.items():
                    condor.attrs.setdefault(f"condor.metric.{name}", value)
                condor.attrs.setdefault("condor.duration_s", max(0.0, end - start))
                if status == "ERROR":
                    condor.status = "ERROR"
                    condor.error_type = fields.get("@failure", "") or condor.error_type
                    condor.error_detail = fields.get("@detail", "") or condor.error_detail
                continue
            span = self.span("validation/" + record.key)
            span.name, span.stage, span.parent = record.key, "validation", "setup"
            span.start, span.end = start, end
            span.attrs["glidein.script.id"] = record.key
            span.attrs["glidein.script.list"] = record.key.split("/", 1)[0]
            span.attrs["glidein.script.status"] = status or "UNKNOWN"
            for name, value in metrics.items():
                if name != "failure":
                    span.attrs[f"glidein.script.metric.{name}"] = value
            if fields.get("@detail"):
                span.attrs["glidein.script.detail"] = fields["@detail"]
            if status == "ERROR":
                span.status = "ERROR"
                span.error_type = fields.get("@failure", "") or metrics.get("failure", "") or "Unknown"
                span.error_detail = fields.get("@detail", "")
            elif status == "OK":
                span.status = "OK"
        setup = self.spans.get("setup")
        failed = [self.spans[k] for k in self.order
                  if k.startswith("validation/") and self.spans[k].status == "ERROR"]
        if setup is not None or self.records:
            setup = self.span("setup")
            setup.name, setup.stage = "setup", "setup"
            validations = [self.spans[k] for k in self.order if k.startswith("validation/")]
            if setup.start is None and validations:
                setup.start = min(v.start for v in validations)
            if setup.end is None:
                # where GlideinWMS's setup ends (the cleanup hook writes the same): the last
                # script's start, else the end of the last per-script record
                condor = self.spans.get("condor")
                if condor is not None and condor.start is not None:
                    setup.end = condor.start
                elif validations:
                    setup.end = max(v.end for v in validations)
            if failed:
                setup.status = "ERROR"
                setup.error_type = failed[0].error_type
                setup.error_detail = f"{failed[0].name} failed: {failed[0].error_detail}".strip()

    def _history_to_job_ends(self):
        for event in self.histories:
            ad = _parse_history_ad(event.fields.get("@ad", ""))
            if ad is None:
                self.report.skip("unparsable history record", event.line_no)
                continue
            key = event.key
            span = self.spans.get(key)
            if span is None or span.end is not None:
                continue
            completion = _number(ad.get("CompletionDate")) or _number(ad.get("EnteredCurrentStatus"))
            if not completion:
                continue
            span.end = float(completion)
            span.attrs["job.end_source"] = "StartdHistoryLog"
            code = _number(ad.get("ExitCode"))
            if code is not None:
                span.attrs["job.exit_code"] = int(code)
            if ad.get("ExitBySignal") is True:
                span.attrs["job.exit_signal"] = int(_number(ad.get("ExitSignal")) or 0)
            for attr, name in (("RemoteUserCpu", "r.utime"), ("RemoteSysCpu", "r.stime")):
                if _number(ad.get(attr)) is not None:
                    span.end_fields[name] = str(_number(ad.get(attr)))
            rss = _number(ad.get("ResidentSetSize"))
            if rss is not None:
                span.attrs["job.rss_bytes"] = int(rss) * 1024
            for attr, name, kind in _HISTORY_TRIAGE:
                value = ad.get(attr)
                if kind is str and isinstance(value, str) and value:
                    span.attrs.setdefault(name, value)
                elif kind is not str and _number(value) is not None:
                    span.attrs.setdefault(name, kind(_number(value)))
            failed = (code not in (None, 0)) or ad.get("ExitBySignal") is True
            span.status = "ERROR" if failed else "OK"
            if failed:
                span.error_type = "job_failed"

    def _close_open_spans(self):
        last = self.last_time
        for key in list(self.order):
            span = self.spans[key]
            if span.start is None:
                # attributes for a span that never started (e.g. an attr line only): fold
                # into the root rather than invent a span
                if key != ROOT:
                    del self.spans[key]
                    self.order.remove(key)
        for key in self.order:
            self._close(self.spans[key], last)
        self._root_bounds()

    def _close(self, span: _Span, last, depth: int = 0) -> None:
        """Close a stage a killed glidein left open at the last known time, or at its
        parent's end when that came first (a job cut by a SIGTERM ends with its condor
        phase): a stage never outlives its parent."""
        if span.end is not None:
            return
        end = last if last is not None else span.start
        parent = self.spans.get(span.parent) if span.parent else None
        if parent is not None and parent is not span and depth < 8:
            self._close(parent, last, depth + 1)
            if parent.end is not None and end is not None and span.start is not None:
                end = min(end, max(parent.end, span.start))
        span.end = end
        span.closed_by_converter = True
        span.attrs["glidein.closed_by"] = "converter"

    def _root_bounds(self):
        """The root covers every stage (the Factory's view may start before the node's)."""
        last = self.last_time
        root = self.spans[ROOT]
        if root.start is None:
            starts = [s.start for s in self.spans.values() if s.start is not None]
            root.start = min(starts) if starts else last
        starts = [s.start for s in self.spans.values() if s.start is not None]
        ends = [s.end for s in self.spans.values() if s.end is not None]
        root.start = min([root.start] + starts)
        if root.end is None or root.closed_by_converter:
            root.end = max([root.start] + ends)
        if any(s.closed_by_converter for s in self.spans.values()):
            root.attrs["glidein.incomplete"] = True

    def _idle_spans(self):
        condor = self.spans.get("condor")
        if condor is None or condor.start is None or condor.end is None:
            return
        jobs = sorted((s.start, s.end) for k, s in self.spans.items()
                      if k.startswith("job/") and s.start is not None)
        gaps = []
        cursor = condor.start
        seen_job = False
        for start, end in jobs:
            start, end = max(start, condor.start), min(end, condor.end)
            if start > cursor:
                gaps.append((cursor, start, "between_jobs" if seen_job else "before_first_job"))
            cursor = max(cursor, end)
            seen_job = True
        if cursor < condor.end:
            gaps.append((cursor, condor.end, "tail" if seen_job else "no_job"))
        for index, (start, end, kind) in enumerate(gaps):
            span = self.span(f"idle/{index}")
            span.name, span.stage, span.parent = "idle", "idle", "condor"
            span.start, span.end = start, end
            span.attrs["glidein.idle.kind"] = kind

    def _outcome(self):
        root = self.spans[ROOT]
        if "glidein.outcome" in root.attrs:
            outcome = root.attrs["glidein.outcome"]
        elif self.spans.get("setup") and self.spans["setup"].status == "ERROR":
            outcome = "validation_failed"
        elif root.closed_by_converter:
            outcome = "incomplete"
        else:
            outcome = "ok"
        root.attrs["glidein.outcome"] = outcome
        if outcome == "validation_failed":
            setup = self.spans["setup"]
            root.status, root.error_type = "ERROR", setup.error_type
            root.error_detail = setup.error_detail
        if self.report.skipped_total:
            root.attrs["glidein_tracing.journal.skipped_lines"] = self.report.skipped_total
            root.attrs["glidein_tracing.journal.skipped"] = self.report.summary()

    def _post_failure_sleep(self):
        """After a validation failure GlideinWMS keeps the slot ~20 min (GLIDEIN_ToDie, its
        protection against black-hole nodes) after cleanup: the end of teardown to the
        glidein's exit as the Factory saw it, as its own stage. Only the Factory's end event
        knows the exit; without it (node export alone) there is no such span."""
        root, teardown = self.spans[ROOT], self.spans.get("teardown")
        if root.attrs.get("glidein.outcome") != "validation_failed" or teardown is None \
                or teardown.end is None or root.end is None:
            return
        if "factory.removed" in root.attrs:
            source = "factory.removed"
        elif "factory.terminated_normally" in root.attrs or "factory.return_value" in root.attrs:
            source = "factory.terminated"
        else:
            return
        if root.end - teardown.end < 1.0:
            return
        span = self.span(SLEEP_STAGE)
        span.name = span.stage = SLEEP_STAGE
        span.start, span.end = teardown.end, root.end
        span.attrs["glidein.sleep.reason"] = "validation_failed"
        span.attrs["glidein.sleep.end_source"] = source

    def _failure_domains(self):
        """Who is to blame (failure.py): the root of a glidein that did not end ok, and
        every failed job, get their domain and the evidence that decided it."""
        root = self.spans[ROOT]
        holds = [self.spans[k] for k in self.order if k.startswith("factory.held")]
        hold_code = holds[-1].attrs.get("factory.hold_reason_code") if holds else None
        condor = self.spans.get("condor")
        error_type = root.error_type or (condor.error_type if condor and condor.status == "ERROR" else "")
        verdict = failure.glidein_domain(root.attrs, error_type, hold_code)
        if verdict is not None:
            root.attrs["glidein.failure.domain"] = verdict.domain
            root.attrs["glidein.failure.evidence"] = verdict.evidence
        for key in self.order:
            span = self.spans[key]
            if not key.startswith("job/"):
                continue
            if span.closed_by_converter and span.status != "OK":
                # the job never ended: its glidein ended first
                span.status, span.error_type = "ERROR", span.error_type or "job.cut_short"
                span.error_detail = span.error_detail or "the glidein ended while the job ran"
            if span.status == "ERROR":
                job = failure.job_domain(span.attrs, span.error_type, verdict,
                                         span.closed_by_converter)
                span.attrs["job.failure.domain"] = job.domain
                span.attrs["job.failure.evidence"] = job.evidence
                self._job_triage(key, span)

    def _job_triage(self, key: str, span: _Span):
        """A failed job's where and how (production notes): the slot it ran in is its remote
        host when the ad did not say; what is still unknown is named in a note."""
        host = self.resource_attrs.get("host.name")
        if "job.remote_host" not in span.attrs and span.attrs.get("job.slot") and host:
            span.attrs["job.remote_host"] = f"{span.attrs['job.slot']}@{host}"
        known = dict(span.attrs)
        known.update(span.end_fields)
        known.update(self.resource_attrs)
        if self.spans[ROOT].attrs.get("glidein.site"):
            known["glidein.site"] = self.spans[ROOT].attrs["glidein.site"]
        missing = [what for what, names in _JOB_TRIAGE
                   if not any(known.get(name) not in (None, "") for name in names)]
        if missing:
            self.notes.append(Event(time=span.end, op="note", key=key, fields={
                "@msg": "failed job: unknown " + ", ".join(missing)}))

    # -- building SDK spans ------------------------------------------------------------
    def resource(self) -> Resource:
        root = self.spans[ROOT]
        attrs = {"service.name": DEFAULT_SERVICE}
        attrs.update({k: v for k, v in self.resource_attrs.items()})
        for key in IDENTITY_RESOURCE_KEYS:
            if key in root.attrs and root.attrs[key] != "":
                attrs[key] = root.attrs[key]
        attrs.update(self.resource_defaults)
        return Resource(_within_otlp(self._scrub(attrs)))

    def _all_spans_clean(self) -> bool:
        """One substring check over every span's attributes: with nothing that could be a
        secret anywhere (the common case) no span needs its own."""
        names, values = [], []
        for span in self.spans.values():
            names.extend(span.attrs)
            values.extend(v for v in span.attrs.values() if isinstance(v, str))
        return (not redaction.might_hold_secret("\0".join(names + values))
                and (not self.redact or self.redact.isdisjoint(names)))

    def _scrub(self, attrs: dict) -> dict:
        """Secrets never reach a span (redaction.py): by name (knob and known markers) and
        inside free-text values. Returns ``attrs`` itself when nothing needs redacting."""
        return redaction.scrub(attrs, self.redact) if attrs else attrs

    def build(self) -> list[ReadableSpan]:
        resource = self.resource()
        trace_int = int(self.trace_id, 16)
        span_ids = {key: ids.span_id_int(self.trace_id, key) for key in self.spans}
        out = []
        built = {}
        all_clean = self._all_spans_clean()
        notes = self._notes_by_span()
        for kind, count in self.dropped.items():
            if count:  # what the limits cut, counted where a reader looks first
                self.spans[ROOT].attrs[f"glidein_tracing.dropped_{kind}"] = count
        tails_by_key = log_tail.group(self.log_tails) if self.log_tails else {}
        for key in self.order:
            if key not in self.spans:
                continue
            span = self.spans[key]
            attrs = {"glidein.stage": span.stage or key.split("/", 1)[0]}
            attrs.update(span.attrs if all_clean else self._scrub(span.attrs))
            if key == ROOT:
                for rkey in IDENTITY_RESOURCE_KEYS:
                    if rkey in self.resource_attrs:
                        attrs.setdefault(rkey, self.resource_attrs[rkey])
            attrs.update(self._resources_for(span))
            if span.status == "ERROR" and span.error_type:
                attrs["error.type"] = span.error_type
            parent_key = span.parent if span.parent in self.spans else (None if key == ROOT else ROOT)
            links = []
            for value in (dict.fromkeys(span.links) if span.links else ()):
                parsed = ids.parse_traceparent(value)
                if parsed is None:
                    continue
                trace, sid, link_flags = parsed
                links.append(Link(SpanContext(int(trace, 16), int(sid, 16), is_remote=True,
                                              trace_flags=TraceFlags(link_flags & 1)),
                                  {"glidein.link.kind": self._link_kind(span, value),
                                   "traceparent": value}))
            events = [SpanEvent("glidein_tracing.note", self._scrub({"message": n.fields.get("@msg", "")}),
                                timestamp=_ns(n.time))
                      for n in notes.get(key, ())]
            if key in tails_by_key:
                events = list(events) + self._log_tail_events(tails_by_key[key], span)
            if span.status == "ERROR":
                description = span.error_detail or span.error_type or None
                status = Status(StatusCode.ERROR, redaction.redact_text(description) if description else None)
            else:
                status = _STATUS.get(span.status, _STATUS["UNSET"])
            parent = SpanContext(trace_int, span_ids[parent_key], is_remote=False,
                                 trace_flags=SAMPLED) if parent_key else None
            built[key] = ReadableSpan(
                name=span.name or key, resource=resource, instrumentation_scope=SCOPE,
                context=SpanContext(trace_int, span_ids[key], is_remote=False, trace_flags=SAMPLED),
                parent=parent, kind=SpanKind.INTERNAL, status=status,
                start_time=_ns(span.start), end_time=_ns(max(span.end, span.start)),
                attributes=_within_otlp(attrs), events=events, links=links)
            out.append(built[key])
        out.extend(self._user_trace_spans(built, resource))
        return out

    def _notes_by_span(self) -> dict:
        """Note events per span key (notes on "-" go to the root), at most ``max_events`` each."""
        out: dict = {}
        for note in self.notes:
            key = ROOT if note.key == "-" else note.key
            if key not in self.spans:
                continue
            kept = out.setdefault(key, [])
            if len(kept) < self.max_events:
                kept.append(note)
            else:
                self.dropped["events"] += 1
        return out

    def _log_tail_events(self, tails: dict, span: _Span) -> list:
        """The ``glidein.log_tail`` events of one span (``tails``: source -> its chunks),
        bounded again (the node is untrusted) and scrubbed like every other value."""
        out = []
        for source, chunks in tails.items():
            attrs = {"log.source": source}
            attrs.update(log_tail.assemble(chunks))
            out.append(SpanEvent(LOG_TAIL_EVENT, self._scrub(attrs), timestamp=_ns(span.end)))
        return out

    def _link_kind(self, span: _Span, value: str) -> str:
        if span.key.startswith("job/"):
            return "user_job"
        if value == self.spans[ROOT].attrs.get("glidein.request_traceparent"):
            return "frontend_request"
        return "submit_cycle" if span.key == ROOT else "related"

    def _user_trace_spans(self, built, resource) -> list[ReadableSpan]:
        """For every job that came with its user's context (jobsub_lite's TRACEPARENT), one span
        in the user's own trace, child of their context: where and when the job ran, linked
        back to the glidein's job span. A user reading their trace sees where their job went."""
        root = self.spans[ROOT]
        where = {k: root.attrs.get(k) or self.resource_attrs.get(k) for k in
                 ("glidein.site", "glidein.entry", "glidein.name", "glidein.factory")}
        where["host.name"] = self.resource_attrs.get("host.name")
        out = []
        glidein_facts = None   # what every job.wait of this glidein needs, computed once
        for key, job in built.items():
            if not key.startswith("job/"):
                continue
            key_span = self.spans[key]
            user = next((ids.parse_traceparent(v) for v in key_span.links if ids.parse_traceparent(v)), None)
            if user is None:
                continue
            user_trace, user_span, flags = user
            attrs = {k: v for k, v in where.items() if v not in (None, "")}
            attrs.update({"glidein.stage": "job", "glidein.user_view": True,
                          "glidein.trace_id": self.trace_id})
            for name in ("job.global_id", "job.exit_code", "job.exit_signal", "job.slot"):
                if name in job.attributes:
                    attrs[name] = job.attributes[name]
            back = Link(job.context, {"glidein.link.kind": "glidein_job",
                                      "traceparent": ids.format_traceparent(
                                          self.trace_id, format(job.context.span_id, "016x"))})
            user_trace_int = int(user_trace, 16)
            out.append(ReadableSpan(
                name="job on glidein", resource=resource, instrumentation_scope=SCOPE,
                context=SpanContext(user_trace_int,
                                    int(ids.span_id(user_trace, f"glidein/{self.trace_id}/{key_span.key}"), 16),
                                    is_remote=False, trace_flags=SAMPLED),
                parent=SpanContext(user_trace_int, int(user_span, 16), is_remote=True,
                                   trace_flags=TraceFlags(flags & 1)),
                kind=SpanKind.INTERNAL, status=job.status, start_time=job.start_time,
                end_time=job.end_time, attributes=_within_otlp(self._scrub(attrs)), links=[back]))
            if glidein_facts is None:
                glidein_facts = self._wait_facts()
            wait = self._job_wait(key_span, job, where, glidein_facts, user_trace_int, int(user_span, 16), flags,
                                  back, resource)
            if wait is not None:
                out.append(wait)
        return out

    def _wait_facts(self) -> dict:
        """What every ``job.wait`` of this glidein reads, from one pass over its spans: its
        first job's start, its jobs' ends (sorted), its queue wait and validation time, and
        when its condor phase began."""
        job_starts, job_ends, queue_s = [], [], []
        for key, span in self.spans.items():
            if key.startswith("job/"):
                if span.start is not None:
                    job_starts.append(span.start)
                if span.end is not None:
                    job_ends.append(span.end)
            elif span.stage == "factory.queue" and span.end is not None:
                queue_s.append(span.end - span.start)
        glidein = {}
        if queue_s:
            glidein["glidein.queue_wait_s"] = round(sum(queue_s), 3)
        setup = self.spans.get("setup")
        if setup is not None and setup.end is not None:
            glidein["glidein.validation_s"] = round(setup.end - setup.start, 3)
        condor = self.spans.get("condor")
        return {"first_job_start": min(job_starts, default=None), "job_ends": sorted(job_ends),
                "condor_start": condor.start if condor is not None else None, "attrs": glidein}

    def _job_wait(self, key_span, job, where, facts: dict, user_trace: int, user_span: int, flags: int, back,
                  resource):
        """The user's view of why the job waited: ``job.wait`` from its submission (``QDate``)
        to its start on this glidein, with what the glidein did meanwhile (``facts``:
        ``_wait_facts``), or None without a QDate (or with one after the start: clocks disagree)."""
        qdate = key_span.attrs.get("job.qdate")
        if not isinstance(qdate, int) or qdate <= 0 or _ns(qdate) > job.start_time:
            return None
        root = self.spans[ROOT]
        first_job = key_span.start <= facts["first_job_start"]
        # a glidein submitted after the job was, and this is its first job: it came for the job
        new_glidein = first_job and root.start is not None and root.start >= qdate
        attrs = {k: v for k, v in where.items() if v not in (None, "")}
        attrs.update({"glidein.stage": "job.wait", "glidein.user_view": True, "glidein.trace_id": self.trace_id,
                      "job.wait.glidein": "new" if new_glidein else "idle",
                      "job.wait_s": round(job.start_time / 1e9 - qdate, 3)})
        for name in ("job.global_id", "job.num_job_starts"):
            if name in key_span.attrs:
                attrs[name] = key_span.attrs[name]
        attrs.update(facts["attrs"])
        if not new_glidein:
            ends = facts["job_ends"]
            before = bisect.bisect_right(ends, key_span.start)   # jobs that ended before this one began
            idle_from = ends[before - 1] if before else facts["condor_start"]
            if idle_from is not None:
                attrs["job.wait.glidein_idle_s"] = round(max(key_span.start - idle_from, 0.0), 3)
        return ReadableSpan(
            name="job.wait", resource=resource, instrumentation_scope=SCOPE,
            context=SpanContext(user_trace, int(ids.span_id(format(user_trace, "032x"),
                                                            f"glidein/{self.trace_id}/{key_span.key}/wait"), 16),
                                is_remote=False, trace_flags=SAMPLED),
            parent=SpanContext(user_trace, user_span, is_remote=True, trace_flags=TraceFlags(flags & 1)),
            kind=SpanKind.INTERNAL, status=_STATUS["UNSET"], start_time=_ns(qdate), end_time=job.start_time,
            attributes=_within_otlp(self._scrub(attrs)), links=[back])

    def _resources_for(self, span: _Span) -> dict:
        """A stage's ``glidein.resource.*``: the readings inside it (resources.py), or none."""
        if span.stage.startswith("factory.") or span.stage == SLEEP_STAGE:
            return {}  # the Factory's view, or after cleanup: no node readings
        if span.stage == "validation":
            return {}  # a script's record has 1 s resolution: no reading can be placed in it
        inside = self.timeline.over(span.start, span.end)
        if not span.key.startswith("job/"):
            return inside
        # a job: CPU and memory only from its own ClassAd (the tree's readings cover every
        # job and daemon of the glidein); disk and load are the node's, from the readings
        out = {k: v for k, v in inside.items() if k in (resources.DISK_FREE, resources.LOAD1)}
        fields = span.end_fields
        for field_name, attr in (("r.utime", resources.CPU_USER), ("r.stime", resources.CPU_SYSTEM)):
            try:
                out[attr] = float(fields[field_name])
            except (KeyError, ValueError):
                pass
        if "job.rss_bytes" in span.attrs:
            out[resources.MAX_RSS] = int(span.attrs["job.rss_bytes"])
        return out


def _within_otlp(attrs: dict) -> dict:
    """``attrs`` with every int OTLP cannot carry (beyond int64) as its text: one such value
    from a journal or a ClassAd must not fail the export of a whole batch."""
    if any(type(v) is int and not INT64_MIN <= v <= INT64_MAX for v in attrs.values()):
        return {k: str(v) if type(v) is int and not INT64_MIN <= v <= INT64_MAX else v
                for k, v in attrs.items()}
    return attrs


def _number(value):
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _parse_history_ad(encoded: str):
    """Decode one StartdHistoryLog record (base64 of old-syntax ClassAd text) into a dict."""
    try:
        text = base64.b64decode(encoded, validate=False).decode("utf-8", "replace")
    except (ValueError, TypeError):
        return None
    from .classads import parse_old_ad
    return parse_old_ad(text)


def convert(events, report: JournalReport | None = None, *, resource_defaults: dict | None = None,
            redact=(), trace_id: str | None = None,
            span_ceiling: int = MAX_SPANS_CEILING) -> list[ReadableSpan]:
    """Turn one glidein's journal events into its spans (root first). ``trace_id`` (the
    Factory's) wins over what the events say; ``span_ceiling`` bounds the spans a journal may
    ask for (its ``@max_spans``)."""
    builder = _Builder(events, report, resource_defaults, redact)
    builder.fixed_trace_id = trace_id
    builder.span_ceiling = span_ceiling
    builder.collect()
    builder.derive()
    return span_digest.stamped(builder.build())
