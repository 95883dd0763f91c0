"""A user job's phases (docs/user-phases.md): the journal's phase lines -> ``job.phase`` spans.

The phase command (node/hooks/gconditional_TRACING_phase.sh) spools phases in the job's scratch
dir; the job-exit hook copies them into the journal on keys ``phase/<span id>/<job key>``
(docs/journal.md). Each phase becomes a span twice: under the glidein's ``job`` span in the
glidein's trace, and in the user's trace (the job's ``TRACEPARENT``) under the job's own
span there (``job on glidein``, user_view.py: jobs sharing one TRACEPARENT keep their phases
apart), with the very span id the phase command gave the command in its TRACEPARENT, so that
a phase inside it, or the user's own OpenTelemetry program, parents correctly. A job with no context of its own ran under the glidein's job span: its phases
are one span each, in the glidein's trace, with those ids.

Everything here comes from a user job, which may forge anything: a phase counts only when
its trace is its job's context trace and its parents lead to its job's context span; its
times are kept inside its job's span; at most ``MAX_PHASES`` a job. What is left out is
counted in a note on the job span.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from opentelemetry.sdk.trace import Event as SpanEvent
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Link, SpanContext, TraceFlags
from opentelemetry.trace.status import Status, StatusCode

from .. import conventions as c
from .. import ids, redaction, resources
from ..journal import INT, typed
from .readable_span import apart, lasting_within, local_parent, ns, readable_span, remote_context

PREFIX = "phase/"
MAX_PHASES = 500            # a job (the exit hook keeps as many)
MAX_MARKS = 500             # a job (likewise)
MAX_TOTAL = 100_000         # phases of a glidein, all jobs together (a forged journal may name many jobs)
_HEX = frozenset("0123456789abcdef")
MAX_FIGURE = 1 << 62        # CPU seconds, bytes: anything larger is forged
MAX_NAME = 128              # characters of a phase's name (the exit hook cuts at 128 bytes)


def _hex(text: str, digits: int) -> bool:
    return len(text) == digits and set(text) <= _HEX and text.strip("0") != ""


@dataclass
class _Phase:
    span_id: str
    name: str = ""
    trace: str = ""
    parent: str = ""
    start: float | None = None
    end: float | None = None
    fields: dict = field(default_factory=dict)
    marks: list = field(default_factory=list)


@dataclass
class _Job:
    """One job's phases as the journal gave them, and what was left out (reason -> count)."""

    phases: dict = field(default_factory=dict)     # span id -> _Phase, in journal order
    marks: list = field(default_factory=list)      # (time, span id, trace, text)
    left_out: dict = field(default_factory=dict)

    def leave_out(self, reason: str, count: int = 1) -> None:
        self.left_out[reason] = self.left_out.get(reason, 0) + count


@dataclass
class _Context:
    """Where a job's phases hang: the trace and span its TRACEPARENT named, and the job span."""

    trace: str
    span: str
    flags: int
    job_span: int            # the glidein's job span id
    user: bool               # the job came with its user's own context


class PhaseCollector:
    """Takes the phase lines of a glidein's journal (``take``), then, once the job spans are
    known (``prepare``), gives their events (``events_for``) and the phase spans (``spans``)."""

    def __init__(self, max_phases: int = MAX_PHASES):
        self.max_phases = max_phases
        self.total = 0
        self.jobs: dict[str, _Job] = {}
        self.contexts: dict[str, _Context] = {}
        self.trace_id = ""
        self.view_parent: Callable[[str, str, str], int] = lambda *_: 0

    def shift(self, seconds: float) -> None:
        """Move every phase and mark later (the node's stages were: clocks.py)."""
        for job in self.jobs.values():
            job.marks = [(t + seconds, *rest) for t, *rest in job.marks]
            for phase in job.phases.values():
                phase.start = None if phase.start is None else phase.start + seconds
                phase.end = None if phase.end is None else phase.end + seconds
                phase.marks = [(t + seconds, *rest) for t, *rest in phase.marks]

    # -- reading ---------------------------------------------------------------------
    def take(self, event) -> bool:
        """Keep ``event`` when it is a phase line (True); other lines are not ours."""
        if not event.key.startswith(PREFIX):
            return False
        rest = event.key[len(PREFIX):]
        span_id, job_key = rest[:16], rest[17:]
        if rest[16:17] != "/" or not job_key.startswith("job/") or not _hex(span_id, 16):
            return True           # not a key the exit hook writes: nothing to hang it on
        job = self.jobs.get(job_key)
        if job is None:
            if self.total >= MAX_TOTAL:
                return True
            job = self.jobs[job_key] = _Job()
        fields = event.fields
        if event.op == "note" and "@phase.mark" in fields:
            if len(job.marks) < MAX_MARKS:
                job.marks.append((event.time, span_id, fields.get("@phase.trace", ""), fields["@phase.mark"]))
            else:
                job.leave_out("marks beyond the marks a job may have")
            return True
        phase = job.phases.get(span_id)
        if phase is None:
            if event.op != "start":
                return True
            if len(job.phases) >= self.max_phases or self.total >= MAX_TOTAL:
                job.leave_out("beyond the phases a job may have")
                return True
            phase = job.phases[span_id] = _Phase(span_id)
            self.total += 1
        if event.op == "start" and phase.start is None:
            phase.start, phase.name = event.time, fields.get("@name", "")
            phase.trace, phase.parent = fields.get("@phase.trace", ""), fields.get("@phase.parent", "")
        elif event.op == "end" and phase.end is None:
            phase.end, phase.fields = event.time, dict(fields)
        return True

    # -- checking --------------------------------------------------------------------
    def prepare(self, trace_id: str, jobs: dict, taken_ids,
                view_ids: Callable[[str, str, str], set], view_parent: Callable[[str, str, str], int]) -> None:
        """``jobs``: job key -> (its span id in the glidein's trace, its links: the user's
        TRACEPARENT first); ``taken_ids``: every span id of the glidein's trace;
        ``view_ids(glidein trace, job key, user trace)``: the span ids the converter gives the
        job's own spans in its user's trace (user_view.py): a phase must not take one;
        ``view_parent`` (same arguments): the job's own span there, its phases' parent. Keeps
        the phases that belong where they claim to."""
        self.trace_id = trace_id
        self.view_parent = view_parent
        # span ids already taken in each trace a phase may land in: the glidein's spans, and in
        # a user's trace the spans the converter gives its jobs there; then each kept phase's
        taken = {trace_id: set(taken_ids)}
        for key, (job_span, links) in jobs.items():
            if key not in self.jobs:
                continue
            user = next((p for p in map(ids.parse_traceparent, links) if p), None)
            if user is not None and user[0] == trace_id:
                user = None   # a "user" context in the glidein's own trace: the job span is the context
            context = (_Context(user[0], user[1], user[2], job_span, True) if user else
                       _Context(trace_id, ids.span_hex(job_span), 1, job_span, False))
            self.contexts[key] = context
            if user:
                taken.setdefault(context.trace, set()).update(view_ids(trace_id, key, context.trace))
        for key, context in self.contexts.items():
            self._check(self.jobs[key], context, taken[context.trace])

    def _check(self, job: _Job, context: _Context, taken: set) -> None:
        """Keep the phases in the job's context trace, with an id of their own, whose parents
        lead to the job's context span; ``taken`` (the trace's ids) gets the kept ones."""
        good = {}
        for sid, phase in job.phases.items():
            if phase.start is None or phase.trace != context.trace:
                job.leave_out("trace id not the job's")
            elif int(sid, 16) in taken or sid == context.span:
                job.leave_out("span id of another span")
            else:
                good[sid] = phase
        kept = {}
        for sid, phase in good.items():
            seen, at = {sid}, phase.parent
            while at in good and at not in seen:     # up to the job's context, never in circles
                seen.add(at)
                at = good[at].parent
            if at == context.span:
                kept[sid] = phase
            else:
                job.leave_out("parent not in the job")
        taken.update(int(sid, 16) for sid in kept)
        job.phases = kept
        marks, job.marks = job.marks, []
        for time, sid, trace, text in marks:
            if trace != context.trace or (sid not in kept and sid != context.span):
                job.leave_out("mark not in the job")
            elif sid in kept:
                kept[sid].marks.append((time, text))
            else:
                job.marks.append((time, sid, trace, text))   # on the job itself

    # -- building ----------------------------------------------------------------------
    def events_for(self, job_key: str, end_ns: int, scrub) -> list:
        """Events of the job span itself: marks made outside any phase, and a note counting
        what was left out (at the job's end)."""
        job = self.jobs.get(job_key)
        if job is None or job_key not in self.contexts:
            return []
        out = [SpanEvent(c.JOB_PHASE_MARK, scrub({c.NOTE_MESSAGE: text}), timestamp=ns(time))
               for time, _sid, _trace, text in job.marks]
        if job.left_out:
            text = "job phases left out: " + ", ".join(f"{n} {why}" for why, n in sorted(job.left_out.items()))
            out.append(SpanEvent(c.GLIDEIN_TRACING_NOTE, {c.NOTE_MESSAGE: text}, timestamp=end_ns))
        return out

    def spans(self, built: dict, resource, scrub, max_events: int) -> list[ReadableSpan]:
        """Every kept phase as a span under its job span, and again in its user's trace."""
        out = []
        for key, job in self.jobs.items():
            context, job_span = self.contexts.get(key), built.get(key)
            if context is None or job_span is None:
                continue
            times = {sid: _times(phase, job_span) for sid, phase in job.phases.items()}
            # phases one after another (10 ms clock) are set 1 us apart, as stages are
            apart_times = apart({sid: t[:2] for sid, t in times.items()},
                                {sid: phase.parent for sid, phase in job.phases.items()}, {})
            for sid, phase in job.phases.items():
                out.extend(self._phase_spans(key, phase, context, job_span, resource, scrub, max_events,
                                             apart_times[sid], times[sid][2]))
        return out

    def _phase_spans(self, key, phase, context, job_span, resource, scrub, max_events, times, placed) -> list:
        glidein = int(self.trace_id, 16)
        start, end = times
        closed = phase.end is None
        name = redaction.redact_text(phase.name[:MAX_NAME]) or "phase"
        attrs = {c.STAGE: c.STAGE_JOB_PHASE, c.JOB_PHASE_NAME: name,
                 c.GLIDEIN_JOB_SPAN_ID: ids.span_hex(context.job_span)}
        for copied in (c.JOB_GLOBAL_ID, c.JOB_SLOT):
            if copied in job_span.attributes:
                attrs[copied] = job_span.attributes[copied]
        attrs.update(_outcome_attributes(phase.fields))
        if closed:
            attrs[c.GLIDEIN_CLOSED_BY] = c.CLOSED_BY_CONVERTER
        if placed:
            attrs[c.GLIDEIN_TIME_PLACED] = c.TIME_PLACED_MIN_DURATION
        attrs = scrub(attrs)
        status = _status(phase.fields, closed)
        events = [SpanEvent(c.JOB_PHASE_MARK, scrub({c.NOTE_MESSAGE: text}), timestamp=min(max(ns(t), start), end))
                  for t, text in phase.marks[:max_events]]

        def make(trace: int, span_id: int, parent: SpanContext, extra: dict, links=()):
            return readable_span(name=name, resource=resource, trace_id=trace, span_id=span_id, parent=parent,
                                 status=status, start_ns=start, end_ns=end, attributes={**attrs, **extra},
                                 events=events, links=list(links))

        def in_glidein(sid: str) -> int:
            if not context.user:
                return int(sid, 16)
            return ids.span_id_int(self.trace_id, f"{key}/phase/{sid}")

        parent_id = context.job_span if phase.parent == context.span else in_glidein(phase.parent)
        glidein_parent = local_parent(glidein, parent_id)
        if not context.user:
            return [make(glidein, int(phase.span_id, 16), glidein_parent, {})]
        user_trace = int(context.trace, 16)
        # in the user's trace a job's own phases hang under that job's span there (``job on
        # glidein``): jobs sharing one TRACEPARENT keep their phases apart
        user_parent = local_parent(user_trace, self.view_parent(self.trace_id, key, context.trace)
                                   if phase.parent == context.span else int(phase.parent, 16))
        to_user = Link(remote_context(user_trace, int(phase.span_id, 16), TraceFlags.SAMPLED),
                       {c.GLIDEIN_LINK_KIND: c.LINK_USER_PHASE,
                        c.TRACEPARENT: ids.format_traceparent(context.trace, phase.span_id)})
        return [make(glidein, in_glidein(phase.span_id), glidein_parent, {}, [to_user]),
                make(user_trace, int(phase.span_id, 16), user_parent,
                     {c.GLIDEIN_USER_VIEW: True, c.GLIDEIN_TRACE_ID: self.trace_id})]


def _times(phase: _Phase, job_span: ReadableSpan) -> tuple:
    """(start ns, end ns, placed) of a phase, inside its job; ``placed``: measured as lasting
    nothing (shorter than /proc/uptime's 10 ms), so drawn 1 us long."""
    start = min(max(ns(phase.start), job_span.start_time), job_span.end_time)
    end = job_span.end_time if phase.end is None else min(max(ns(phase.end), start), job_span.end_time)
    if end > start:
        return start, end, False
    return (*lasting_within(start, job_span.start_time, job_span.end_time), True)


def _outcome_attributes(fields: dict) -> dict:
    """Exit code or signal, and the phase's resources (``glidein.resource.*``)."""
    out = {}
    for name in (c.JOB_PHASE_EXIT_CODE, c.JOB_PHASE_SIGNAL):
        value = fields.get(typed(name, INT), "")
        if value.isdigit() and len(value) <= 3:
            out[name] = int(value)
    for field_name, attr, kind in (("r.utime", c.GLIDEIN_RESOURCE_CPU_USER_S, float),
                                   ("r.stime", c.GLIDEIN_RESOURCE_CPU_SYSTEM_S, float),
                                   ("r.rss_peak", c.GLIDEIN_RESOURCE_MAX_RSS_BYTES, int)):
        try:
            value = kind(fields[field_name])
        except (KeyError, ValueError, OverflowError):
            continue
        if 0 <= value < MAX_FIGURE:    # a forged figure must not fail the export (OTLP int64)
            out[attr] = value
    if c.GLIDEIN_RESOURCE_MAX_RSS_BYTES in out:    # the phase command's samples of its tree
        out.update(resources.peak_attributes(out[c.GLIDEIN_RESOURCE_MAX_RSS_BYTES], resources.SOURCE_PHASE))
    return out


def _status(fields: dict, closed: bool) -> Status:
    if closed:
        return Status(StatusCode.ERROR, "the phase did not end before its job")
    if fields.get("@status") == "ERROR":
        return Status(StatusCode.ERROR, redaction.redact_text(fields.get("@error.detail") or "failed"))
    return Status(StatusCode.OK) if fields.get("@status") == "OK" else Status(StatusCode.UNSET)

