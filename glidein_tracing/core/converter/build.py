"""Last phase: the draft trace as the SDK's spans, the glidein's own and the user's view.

The OTel mapping lives here: the resource (identity, host facts, the caller's defaults),
each span's ``glidein.stage``, its per-stage ``glidein.resource.*`` (resources.py), links
with their kind, note and log-tail events, status, and the counts of what the limits cut.
Secrets are scrubbed from every value on the way (redaction.py).
"""

from __future__ import annotations

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event as SpanEvent
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Link
from opentelemetry.trace.status import Status, StatusCode

from .. import conventions as c
from .. import ids, log_tail, redaction, resources
from .clocks import is_node_span
from .draft import ROOT, Draft, SpanDraft
from .glideinwms import VALIDATION_PREFIX
from .readable_span import apart, local_parent, ns, readable_span, remote_context, with_attributes, within_otlp
from .user_view import job_on_glidein_id, job_view_span_ids, user_trace_spans

FACTORY, NODE = "factory", "node"   # the parts of a trace sent before the rest (_sent_early)
_STATUS = {"OK": Status(StatusCode.OK), "UNSET": Status(StatusCode.UNSET)}   # immutable, shared


def build(draft: Draft, resource_defaults: dict) -> list[ReadableSpan]:
    """Every span of the trace, the root first and the others in the draft's order, then the
    user's view of its jobs."""
    resource = _resource(draft, resource_defaults)
    trace_int = int(draft.trace_id, 16)
    span_ids = {key: ids.span_id_int(draft.trace_id, key) for key in draft.spans}
    all_clean = draft.all_spans_clean()
    notes = _notes_by_span(draft)
    for kind, count in draft.dropped.items():
        if count:  # what the limits cut, counted where a reader looks first
            draft.root.attrs[c.GLIDEIN_TRACING_DROPPED_PREFIX + kind] = count
    tails_by_key = log_tail.group(draft.log_tails) if draft.log_tails else {}
    phases = draft.phases
    if phases.jobs:
        phases.prepare(draft.trace_id, {k: (span_ids[k], draft.spans[k].links) for k in draft.keys_starting("job/")},
                       span_ids.values(), job_view_span_ids, job_on_glidein_id)
    parents = {key: _parent_key(draft, key, span) for key, span in draft.spans.items()}
    times = apart({key: (ns(span.start), ns(max(span.end, span.start))) for key, span in draft.spans.items()},
                  parents, _sent_early(draft), frozenset(draft.keys_starting(VALIDATION_PREFIX)))
    built = {}
    for key, span in draft.spans.items():
        parent_key = parents[key]
        events = _note_events(draft, notes.get(key, ()), draft.node_shift if is_node_span(key, span.stage) else 0.0)
        if key in tails_by_key:
            events += _log_tail_events(draft, tails_by_key[key], span)
        if phases.jobs and key.startswith("job/"):
            events += phases.events_for(key, ns(max(span.end, span.start)), draft.scrub)
        built[key] = readable_span(
            name=span.name or key, resource=resource, trace_id=trace_int, span_id=span_ids[key],
            parent=local_parent(trace_int, span_ids[parent_key]) if parent_key else None,
            status=_status(span), start_ns=times[key][0], end_ns=times[key][1],
            attributes=_attributes(draft, span, all_clean), events=events, links=_links(draft, span))
    phase_spans = phases.spans(built, resource, draft.scrub, draft.limits.max_events)
    if ROOT in built:
        built[ROOT] = _root_peak(built[ROOT], list(built.values()) + phase_spans)
    # the root first, whatever order the journal's lines made the others in: callers decide
    # on the glidein by it (sampling.keep_glidein)
    ordered = ([built[ROOT]] if ROOT in built else []) + [s for k, s in built.items() if k != ROOT]
    return ordered + phase_spans + user_trace_spans(draft, built, resource)


def _sent_early(draft: Draft) -> dict:
    """The spans whose times stay as measured (readable_span.apart): key -> (the part of the
    trace it may be in the backend with before the rest, the parts it may still move for). The
    Factory's stages (the forwarder sends them while the glidein runs); setup and its scripts
    (the node may send them live when setup ends), which move for one another, and for the
    Factory's stages unless the node exported live (a conversion on the node, before it records
    its export, sees none of those and must agree on the rest); each job keeps its times (sent
    live when it ends, and copied into its user's trace)."""
    fixed = {key: (FACTORY, {FACTORY}) for key, span in draft.spans.items()
             if span.stage.startswith(c.FACTORY_STAGE_PREFIX)}
    for key, span in draft.spans.items():
        if span.stage in (c.STAGE_SETUP, c.STAGE_VALIDATION):
            fixed[key] = (NODE, {NODE} if draft.exported_live else {NODE, FACTORY})
    fixed.update((key, (key, set())) for key in draft.keys_starting("job/"))
    return fixed


def _parent_key(draft: Draft, key: str, span: SpanDraft) -> str | None:
    """The key of the span's parent: its own when in the trace, else the root's."""
    return span.parent if span.parent in draft.spans else (None if key == ROOT else ROOT)


def _root_peak(root: ReadableSpan, spans) -> ReadableSpan:
    """The root's memory peak. The kernel's peak of the glidein's own cgroup, when the root has
    it, is the tree's exact peak and stays. Otherwise it is at least each of its spans': the
    tree holds every stage's processes, and a process that ran between two of the root's
    readings (a job, a phase) is seen only by its own span's figure (a job's from HTCondor);
    ``max_rss_kind`` is then the largest figure's (a lower bound or an estimate, never exact:
    what ran between readings outside any span is not seen)."""
    peak, source = root.attributes.get(resources.MAX_RSS), root.attributes.get(resources.MAX_RSS_SOURCE)
    if resources.KIND_OF_SOURCE.get(source) == resources.KIND_EXACT:
        return root
    for span in spans:
        value = span.attributes.get(resources.MAX_RSS)
        other = span.attributes.get(resources.MAX_RSS_SOURCE)
        if span is not root and span.context.trace_id == root.context.trace_id and type(value) is int \
                and other in resources.KIND_OF_SOURCE and (peak is None or value > peak):
            peak, source = value, other
    if peak == root.attributes.get(resources.MAX_RSS):
        return root
    return with_attributes(root, resources.peak_attributes(peak, source))


def _resource(draft: Draft, resource_defaults: dict) -> Resource:
    """service.name, the node's resource attributes, the root's identity, then the caller's."""
    root = draft.root
    attrs = {c.SERVICE_NAME: c.DEFAULT_SERVICE_NAME}
    attrs.update(draft.resource_attrs)
    for key in c.IDENTITY:
        if key in root.attrs and root.attrs[key] != "":
            attrs[key] = root.attrs[key]
    attrs.update(resource_defaults)
    return Resource(within_otlp(draft.scrub(attrs)))


def _attributes(draft: Draft, span: SpanDraft, all_clean: bool) -> dict:
    attrs = {c.STAGE: span.stage or span.key.split("/", 1)[0]}
    attrs.update(span.attrs if all_clean else draft.scrub(span.attrs))
    if span.key == ROOT:
        for key in c.IDENTITY:
            if key in draft.resource_attrs:
                attrs.setdefault(key, draft.resource_attrs[key])
    attrs.update(_resources_for(draft, span))
    if span.status == "ERROR" and span.error_type:
        attrs[c.ERROR_TYPE] = span.error_type
    return attrs


def _status(span: SpanDraft) -> Status:
    if span.status == "ERROR":
        description = span.error_detail or span.error_type or None
        return Status(StatusCode.ERROR, redaction.redact_text(description) if description else None)
    return _STATUS.get(span.status, _STATUS["UNSET"])


def _links(draft: Draft, span: SpanDraft) -> list[Link]:
    links = []
    for value in (dict.fromkeys(span.links) if span.links else ()):
        parsed = ids.parse_traceparent(value)
        if parsed is None:
            continue
        trace, sid, flags = parsed
        links.append(Link(remote_context(int(trace, 16), int(sid, 16), flags),
                          {c.GLIDEIN_LINK_KIND: _link_kind(draft, span, value), c.TRACEPARENT: value}))
    return links


def _link_kind(draft: Draft, span: SpanDraft, value: str) -> str:
    if span.key.startswith("job/"):
        return c.LINK_USER_JOB
    if value == draft.root.attrs.get(c.GLIDEIN_REQUEST_TRACEPARENT):
        return c.LINK_FRONTEND_REQUEST
    return c.LINK_RELATED


def _notes_by_span(draft: Draft) -> dict:
    """Note events per span key (notes on "-" go to the root), at most ``max_events`` each."""
    out: dict = {}
    for note in draft.notes:
        key = ROOT if note.key == "-" else note.key
        if key not in draft.spans:
            continue
        kept = out.setdefault(key, [])
        if len(kept) < draft.limits.max_events:
            kept.append(note)
        else:
            draft.dropped["events"] += 1
    return out


def _note_events(draft: Draft, notes, shift: float) -> list:
    return [SpanEvent(c.GLIDEIN_TRACING_NOTE, draft.scrub({c.NOTE_MESSAGE: n.fields.get("@msg", "")}),
                      timestamp=ns(n.time + shift))
            for n in notes]


def _log_tail_events(draft: Draft, tails: dict, span: SpanDraft) -> list:
    """The ``glidein.log_tail`` events of one span (``job.log_tail`` on a job's: its own
    stdout and stderr) (``tails``: source -> its chunks), bounded again (the node is
    untrusted) and scrubbed like every other value."""
    out = []
    name = c.JOB_LOG_TAIL if span.key.startswith("job/") else c.GLIDEIN_LOG_TAIL
    for source, chunks in tails.items():
        attrs = {c.LOG_SOURCE: source}
        attrs.update(log_tail.assemble(chunks))
        out.append(SpanEvent(name, draft.scrub(attrs), timestamp=ns(span.end)))
    return out


def _resources_for(draft: Draft, span: SpanDraft) -> dict:
    """A stage's ``glidein.resource.*``: the readings inside it (resources.py), or none."""
    if span.stage.startswith(c.FACTORY_STAGE_PREFIX) or span.stage == c.STAGE_POST_FAILURE_SLEEP:
        return {}  # the Factory's view, or after cleanup: no node readings
    if span.stage == c.STAGE_VALIDATION:
        return {}  # a script's record has 1 s resolution: no reading can be placed in it
    shift = draft.node_shift if is_node_span(span.key, span.stage) else 0.0   # readings: node's clock
    inside = draft.timeline.over(span.start - shift, span.end - shift)
    if not span.key.startswith("job/"):
        return inside
    return resources.job_figures(inside, span.end_fields, span.attrs.get(c.JOB_RSS_BYTES))
