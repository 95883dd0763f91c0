"""First phase: the journal's events, in time order, into spans in progress (a ``Draft``).

start/end/attr lines open, close and annotate the span of their key; record, history and note
lines are kept for the rules that follow; every reading (``r.*``) goes on the resource
timeline. The root's start line carries the glidein's own knobs (redaction, max spans,
sampling ratio). The SDK's span limits bound what one journal can put on one span.
"""

from __future__ import annotations

import operator

from .. import conventions as c
from .. import resources, sampling
from ..journal import Event, JournalReport
from ..log_tail import LOG_SOURCE
from .draft import ROOT, Draft, Limits, SpanDraft
from .phases import PREFIX as PHASE_PREFIX
from .fields import resource_attributes, span_attributes

_EVENT_ORDER = operator.attrgetter("time", "line_no")
_SAMPLED_OPS = frozenset({"start", "end", "sample"})   # lines that carry r.* readings


def collect(events, report: JournalReport | None, redact, span_ceiling: int) -> Draft:
    """The journal's events of one glidein as a draft trace."""
    events = sorted(events, key=_EVENT_ORDER)
    draft = Draft(limits=Limits.from_sdk(span_ceiling), report=report or JournalReport(),
                  redact={name.strip() for name in (redact or ()) if name.strip()},
                  last_time=max((e.time for e in events), default=None))
    add_sample = draft.timeline.add
    for event in events:
        if event.key.startswith(PHASE_PREFIX) and draft.phases.take(event):
            continue    # a user job's phase line (phases.py)
        op = event.op
        if op in _SAMPLED_OPS and not event.key.startswith("job/"):
            add_sample(event.time, event.fields)
        handler = _HANDLERS.get(op)
        if handler is not None:
            handler(draft, event)
    return draft


def _on_start(draft: Draft, event: Event):
    span = draft.span(event.key)
    fields = event.fields
    span.start = event.time if span.start is None else min(span.start, event.time)
    span.name = fields.get("@name", span.name) or span.name
    span.stage = fields.get("@stage", span.stage)
    if event.key == ROOT:
        span.parent = None
        draft.trace_id = (fields.get("@trace_id") or "").lower() or draft.trace_id
        _root_knobs(draft, span, fields)
    else:
        span.parent = fields.get("@parent", span.parent or ROOT)
    _add_attributes(draft, span, fields)
    _add_links(draft, span, event.links)
    draft.resource_attrs.update(resource_attributes(fields))


def _root_knobs(draft: Draft, root: SpanDraft, fields: dict):
    """The glidein's own knobs travel with its journal, on the root's start line."""
    draft.redact.update(n.strip() for n in fields.get("@redact", "").split(",") if n.strip())
    limits = draft.limits
    try:
        limits.max_spans = min(int(fields.get("@max_spans") or limits.max_spans), limits.span_ceiling)
    except ValueError:
        pass
    # which kernel file the readings' memory peak (r.mpeak) came from
    source = resources.CGROUP_SOURCES.get(fields.get("@memory_peak", ""))
    if source is not None:
        draft.timeline.cgroup_source = source
    # the sampling ratio the glidein ran with: the one decision, on the node and at the Factory
    ratio = sampling.parse_ratio(fields.get("@sampling_ratio"))
    if ratio is not None:
        root.attrs[c.GLIDEIN_TRACING_SAMPLING_RATIO] = ratio


def _on_end(draft: Draft, event: Event):
    span = draft.span(event.key)
    span.end = event.time if span.end is None else max(span.end, event.time)
    fields = event.fields
    _add_attributes(draft, span, fields)
    if len(span.end_fields) < draft.limits.max_attributes:
        span.end_fields.update(fields)
    status = fields.get("@status", "").upper()
    if status in ("OK", "ERROR"):
        span.status = status
    span.error_type = fields.get("@error.type", span.error_type)
    span.error_detail = fields.get("@error.detail", span.error_detail)


def _on_attr(draft: Draft, event: Event):
    span = draft.span(event.key)
    _add_attributes(draft, span, event.fields)
    _add_links(draft, span, event.links)
    if len(draft.resource_attrs) < draft.limits.max_attributes:
        draft.resource_attrs.update(resource_attributes(event.fields))


def _on_note(draft: Draft, event: Event):
    if LOG_SOURCE in event.fields:
        draft.log_tails.append(event)
    else:
        draft.notes.append(event)


def _on_record(draft: Draft, event: Event):
    draft.records.append(event)


def _on_history(draft: Draft, event: Event):
    draft.histories.append(event)


def _on_export(draft: Draft, event: Event):
    draft.exported_live = True


_HANDLERS = {"start": _on_start, "end": _on_end, "attr": _on_attr, "record": _on_record,
             "history": _on_history, "note": _on_note, "export": _on_export}


def _add_attributes(draft: Draft, span: SpanDraft, fields: dict):
    attrs = span_attributes(fields)
    limit = draft.limits.max_attributes
    if len(span.attrs) + len(attrs) <= limit:
        span.attrs.update(attrs)
        return
    for name, value in attrs.items():
        if name in span.attrs or len(span.attrs) < limit:
            span.attrs[name] = value
        else:
            draft.dropped["attributes"] += 1


def _add_links(draft: Draft, span: SpanDraft, links):
    room = max(draft.limits.max_links - len(span.links), 0)
    span.links.extend(links[:room])
    draft.dropped["links"] += max(len(links) - room, 0)
