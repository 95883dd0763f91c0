"""A submission as its user follows it, from the spans of its trace (the user's own trace, as
jobsub_lite's TRACEPARENT names it): its state now (waiting, running, done, failed) with what
a user asks of each (why and since when; where and which phase; the verdict and the log
tail), and its tracking statement, like a parcel's: time, place and event from submission
to the end. Spans come already filtered to what the caller may see (access.py)."""

from __future__ import annotations

import time

from ..core import conventions as c
from ..why import diagnosis as d
from ..why import words

WAITING, RUNNING, DONE, FAILED, UNKNOWN = "waiting", "running", "done", "failed", "unknown"
MAX_TAIL_CHARS = 4000


def _when(ns) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(ns / 1e9)) if ns else ""


def _stage(span) -> str:
    return span["attributes"].get(c.STAGE, "")


def job_spans(spans) -> list:
    """The spans of the submission's jobs as they ran (``job on glidein`` in the user's
    trace, or the glidein's own ``job`` spans), oldest first."""
    return sorted((s for s in spans if _stage(s) == c.STAGE_JOB), key=lambda s: s["start_ns"])


def _failed(span) -> bool:
    return span["status_code"] == 2 or bool(span["attributes"].get(c.JOB_FAILURE_DOMAIN))


def _place(span) -> str:
    """Site / entry: the span's own (the user's view carries them), else its glidein's resource."""
    attrs, resource = span["attributes"], span.get("resource") or {}
    return " / ".join(str(attrs.get(k) or resource.get(k)) for k in (c.GLIDEIN_SITE, c.GLIDEIN_ENTRY)
                      if attrs.get(k) or resource.get(k))


def _tail(span) -> dict | None:
    for event in span.get("events") or ():
        if event["name"] == c.JOB_LOG_TAIL:
            attrs = event["attributes"]
            return {"source": str(attrs.get(c.LOG_SOURCE, "")), "lines": str(attrs.get(c.LOG_LINES, ""))[-MAX_TAIL_CHARS:]}
    return None


def _verdict(span) -> dict:
    names = (("domain", c.JOB_FAILURE_DOMAIN), ("service", c.JOB_FAILURE_SERVICE),
             ("evidence", c.JOB_FAILURE_EVIDENCE), ("rule", c.JOB_FAILURE_RULE),
             ("advice", c.JOB_FAILURE_ADVICE), ("exit_code", c.JOB_EXIT_CODE))
    out = {label: span["attributes"][name] for label, name in names if span["attributes"].get(name) not in (None, "")}
    if span.get("status_message"):
        out["status"] = span["status_message"]
    return out


def in_own_trace(spans: list, owner: str) -> bool:
    """Whether every job of ``owner`` in a glidein's trace came with its user's context
    (``job.user_traceparent``): then "my jobs" lists those submissions' own traces, where the
    same jobs are, and not the glidein's as well."""
    if not any(_stage(s) == c.STAGE_GLIDEIN for s in spans):
        return False
    mine = [s for s in spans if _stage(s) == c.STAGE_JOB and s["attributes"].get(c.JOB_OWNER) == owner]
    return bool(mine) and all(s["attributes"].get(c.JOB_USER_TRACEPARENT) for s in mine)


def is_waiting(spans: list, owner: str | None = None) -> bool:
    """Whether the Frontend's latest record says the submission (``owner``'s jobs in it)
    waits now: then its state needs ``why``'s diagnosis."""
    waiting = d.waiting_spans(spans, owner)
    return bool(waiting) and waiting[-1]["attributes"].get(c.JOB_WAITING_STATE) == "current"


def state(trace_id: str, spans: list, diagnosis: d.Diagnosis | None = None, owner: str | None = None) -> dict:
    """The submission's state now, as "my jobs" shows it and ``GET /api/v1/jobs`` answers;
    ``diagnosis``: ``why``'s answer for it (why/answer.py), when it waits (is_waiting)."""
    jobs = job_spans(spans)
    failed = [s for s in jobs if _failed(s)]
    waiting = d.waiting_spans(spans, owner)
    latest = waiting[-1]["attributes"] if waiting else {}
    still_waiting = diagnosis is not None and is_waiting(spans, owner)
    phases = sorted((s for s in spans if _stage(s) == c.STAGE_JOB_PHASE), key=lambda s: s["start_ns"])
    starts = [s["start_ns"] for s in spans if s["start_ns"]]
    ends = [max(s["end_ns"], s["start_ns"]) for s in spans if s["start_ns"]]
    out = {"trace_id": trace_id, "first": _when(min(starts, default=0)), "last": _when(max(ends, default=0)),
           "jobs_done": len(jobs) - len(failed), "jobs_failed": len(failed)}
    if still_waiting:
        out.update(state=WAITING, since=diagnosis.facts.get("since", _when(waiting[-1]["start_ns"])),
                   reason=diagnosis.reason, category=diagnosis.category, why=diagnosis.meaning,
                   action=diagnosis.action, detail=diagnosis.facts.get("detail", ""),
                   text=words.sentences(diagnosis), estimate=diagnosis.estimate,
                   estimate_text=words.estimate_sentence(diagnosis.estimate) or "No estimate of when it starts: "
                   "this service reads no glidein table.")
    elif failed:
        last = failed[-1]
        out.update(state=FAILED, since=_when(last["end_ns"]), where=_place(last), verdict=_verdict(last),
                   log_tail=_tail(last))
    elif waiting and latest.get(c.JOB_WAITING_END) == "no_idle_jobs" and (
            not jobs or jobs[-1]["start_ns"] < waiting[-1]["start_ns"]):
        # no job seen to start since the wait began: what ended it runs still. (A job that
        # began and ended between two Frontend cycles ends before the Frontend sees it gone.)
        phase = phases[-1] if phases else None
        out.update(state=RUNNING, since=_when(waiting[-1]["end_ns"]),
                   where=_place(phase) if phase else "", phase=phase["name"] if phase else "")
    elif jobs:
        out.update(state=DONE, since=_when(jobs[-1]["end_ns"]), where=_place(jobs[-1]))
    else:
        out.update(state=UNKNOWN, since="")
    return out


def statement(spans: list) -> list:
    """The tracking statement: one line per event, oldest first, each {time, place, event,
    failed}: the Frontend's records of why it waited, each wait and start on a glidein, the
    job's phases, its end and verdict."""
    lines = []
    for span in sorted(spans, key=lambda s: (s["start_ns"], s["span_id"])):
        attrs, stage = span["attributes"], _stage(span)
        place = _place(span)
        if stage == c.STAGE_JOB_WAITING:
            text = attrs.get(c.JOB_WAITING_DETAIL) or attrs.get(c.JOB_WAITING_REASON) or "waiting"
            lines.append((span["start_ns"], place, f"waiting: {text}", False))
            if attrs.get(c.JOB_WAITING_END) == "no_idle_jobs":
                lines.append((span["end_ns"], place, "no job of the submission idle any more: started", False))
        elif stage == c.STAGE_JOB_WAIT:
            kind = "a new glidein" if attrs.get(c.JOB_WAIT_GLIDEIN) == "new" else "an idle glidein"
            lines.append((span["start_ns"], "", f"submitted ({attrs.get(c.JOB_GLOBAL_ID, 'job')})", False))
            lines.append((span["end_ns"], place, f"matched {kind}", False))
        elif stage == c.STAGE_JOB:
            job = attrs.get(c.JOB_GLOBAL_ID, "job")
            lines.append((span["start_ns"], place, f"started {job}", False))
            if _failed(span):
                verdict = _verdict(span)
                words = ", ".join(f"{k} {v}" for k, v in verdict.items())
                lines.append((span["end_ns"], place, f"failed: {words}", True))
            else:
                lines.append((span["end_ns"], place, f"ended {job}, exit code {attrs.get(c.JOB_EXIT_CODE, '?')}", False))
        elif stage == c.STAGE_JOB_PHASE:
            status = " (failed)" if span["status_code"] == 2 else ""
            lines.append((span["start_ns"], place, f"phase {span['name']}{status}", span["status_code"] == 2))
    lines.sort(key=lambda line: line[0])
    return [{"time": _when(ns), "place": place, "event": event, "failed": failed} for ns, place, event, failed in lines]
