"""Why is my job not running yet? One diagnosis per job (``glidein-tracing why``,
docs/why-waiting.md), in HTCondor's categories (held, idle, running) extended with the glidein
ones: from the job ad (held: the hold code's meaning and action; evicted: the vacate code; the
schedd's own reasons: the transfer queue, a cool-down, the user's running cap), and for an
idle job from the ``job.waiting`` spans the Frontend instrumentor put in the user's trace
(frontend_hooks/waiting.py), with the glidein table's recent outcomes at the entries as more
evidence. The first reason of ``waiting_reasons.PRECEDENCE`` that holds is the answer.

Inputs: job ads as plain dicts (read with classad2 from a ``condor_q -l`` file, or asked of the
schedd with htcondor2), span dicts as the store and the Jaeger reader give them (None: the
trace could not be read), the owner's user record when the schedd gave one.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from ..core import conventions as c
from ..core import waiting_reasons as wr
from ..core.errors import UserError
from ..core.ids import TRACEPARENT_RE, parse_traceparent
from .holdcodes import hold_code, vacate_is_system_problem

JOB_ID_RE = re.compile(r"^(\d+)\.(\d+)(?:@(\S+))?$")
TRACE_ID_RE = re.compile(r"^[0-9a-fA-F]{32}$")
JOB_STATUS = {1: "idle", 2: "running", 3: "removed", 4: "completed", 5: "held",
              6: "transferring output", 7: "suspended"}

# the categories beyond waiting_reasons' ones
HELD = "held"
EVICTED = "ran and was evicted"
NOT_WAITING = "not waiting"
NO_RECORD = "idle, no Frontend record"


@dataclass
class Evidence:
    what: str
    trace_id: str = ""
    span_id: str = ""
    when: str = ""


@dataclass
class Diagnosis:
    job: str                         # cluster.proc@schedd, or the trace id
    status: str                      # HTCondor's: idle, held, running, ...
    category: str
    meaning: str
    action: str
    reason: str = ""                 # a value of waiting_reasons (the Frontend's or the schedd's)
    helps: str = wr.HELPS_UNKNOWN    # does waiting help: yes, no, unknown
    actor: str = wr.ACTOR_NOBODY     # who can act: you, the operators, nobody
    facts: dict = field(default_factory=dict)
    evidence: list = field(default_factory=list)
    estimate: dict | None = None     # when it may start (why/estimate.py), with --table

    def as_dict(self) -> dict:
        """As data (``dataclasses.asdict`` deep-copies every fact: a third of ``why``'s time on
        a whole queue; the facts are plain values already)."""
        out = dict(self.__dict__)
        out["evidence"] = [dict(e.__dict__) for e in self.evidence]
        return out


def _with_reason(job: str, status: str, reason: wr.Reason, facts=None, evidence=None) -> Diagnosis:
    return Diagnosis(job, status, reason.category, reason.meaning, reason.action, reason.value,
                     reason.helps, reason.actor, facts or {}, evidence or [])


def job_name(ad: dict) -> str:
    global_id = str(ad.get("GlobalJobId") or "")
    schedd = global_id.split("#", 1)[0] if "#" in global_id else str(ad.get("ScheddName") or "?")
    return f"{ad.get('ClusterId')}.{ad.get('ProcId')}@{schedd}"


def trace_id_of(ad: dict) -> str | None:
    parsed = parse_traceparent(ad.get("TraceParent") or "") if isinstance(ad.get("TraceParent"), str) else None
    return parsed[0] if parsed else None


def _when(ns) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(ns / 1e9)) if ns else ""


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def waiting_spans(spans, owner=None) -> list:
    """The job.waiting spans of a trace, oldest first; with ``owner`` (the job ad's Owner), only
    that owner's: anyone can copy another's TraceParent, and the Frontend keys a submission by
    its owner too (``job.owner``), so another owner's spans in the trace say nothing of this job."""
    return sorted((s for s in spans if s.get("name") == c.STAGE_JOB_WAITING
                   and (owner is None or (s.get("attributes") or {}).get(c.JOB_OWNER) in (None, owner))),
                  key=lambda s: (s.get("end_ns", 0), s.get("attributes", {}).get(c.JOB_WAITING_STATE) == "current"))


def _fit_facts(ad: dict, attributes: dict) -> dict:
    """The job's requests against the largest idle glidein's (for 'does not fit')."""
    facts = {}
    for label, job_key, span_request, span_glidein in (
            ("cpus", "RequestCpus", c.JOB_WAITING_REQUEST_CPUS, c.JOB_WAITING_GLIDEIN_CPUS),
            ("memory_mb", "RequestMemory", c.JOB_WAITING_REQUEST_MEMORY, c.JOB_WAITING_GLIDEIN_MEMORY),
            ("disk_kib", "RequestDisk", c.JOB_WAITING_REQUEST_DISK, c.JOB_WAITING_GLIDEIN_DISK)):
        asked = _number(ad.get(job_key, attributes.get(span_request)))
        has = _number(attributes.get(span_glidein))
        if asked is not None and has is not None:
            facts[label] = {"job": asked, "largest_idle_glidein": has, "fits": asked <= has}
    for why in ("retiring", "memory", "cpus", "disk", "time"):
        count = attributes.get(f"job.waiting.unusable.{why}")
        if count:
            facts.setdefault("unusable_idle_glideins", {})[why] = count
    return facts


def from_waiting_span(job: str, status: str, span: dict, ad: dict | None = None, now: float | None = None) -> Diagnosis:
    attributes = span.get("attributes") or {}
    value = attributes.get(c.JOB_WAITING_REASON)
    reason = wr.BY_VALUE.get(value) if value in wr.RANK else None
    if reason is None:
        return Diagnosis(job, status, NO_RECORD, "the Frontend's record has a reason this version does not "
                         f"know: {value}", "upgrade glidein-tracing", "", wr.HELPS_UNKNOWN, wr.ACTOR_NOBODY)
    facts = {key.split("job.waiting.", 1)[1]: v for key, v in attributes.items()
             if key.startswith("job.waiting.") and key not in (c.JOB_WAITING_REASON,)}
    if value == "unusable_idle_glideins":
        facts["fit"] = _fit_facts(ad or {}, attributes)
    if attributes.get(c.JOB_WAITING_STATE) == "current" and span.get("start_ns"):
        # the reason's period began with this span: how long it has lasted
        facts["since"] = _when(span["start_ns"])
        facts["for_s"] = max(0, int((time.time() if now is None else now) - span["start_ns"] / 1e9))
    evidence = [Evidence(f"job.waiting {attributes.get(c.JOB_WAITING_STATE, '')}: "
                         f"{attributes.get(c.JOB_WAITING_DETAIL, value)}",
                         span.get("trace_id", ""), span.get("span_id", ""), _when(span.get("start_ns")))]
    for link in span.get("links") or []:
        evidence.append(Evidence("the Frontend's decision (frontend.request / frontend.cycle)",
                                 link.get("trace_id", ""), link.get("span_id", "")))
    return _with_reason(job, status, reason, facts, evidence)


def _held(name: str, status: str, ad: dict) -> Diagnosis:
    code = ad.get("HoldReasonCode")
    meaning = hold_code(code)
    facts = {"hold_code": code, "hold_code_name": meaning.name,
             "hold_subcode": ad.get("HoldReasonSubCode"), "hold_reason": ad.get("HoldReason")}
    return Diagnosis(name, status, HELD, meaning.meaning, meaning.action, "", meaning.helps, meaning.actor, facts)


def _schedd_reason(name: str, status: str, ad: dict, user: dict | None, now: float) -> Diagnosis | None:
    """The schedd's own reasons, in the order its Runnable() checks them (HTCondor's
    condor_schedd.V6/qmgmt.cpp): a job that has a slot but waits to transfer its input, a
    cool-down, the user's running cap. None: none holds."""
    if status == "running" and ad.get("TransferringInput") is True and ad.get("TransferQueued") is True:
        return _with_reason(name, status, wr.BY_VALUE["transfer_queue"])
    if status != "idle":
        return None
    until = _number(ad.get("JobCoolDownExpiration"))
    if until is not None and until >= now:
        return _with_reason(name, status, wr.BY_VALUE["cooldown"],
                            {"cooldown_until": time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(until)),
                             "cooldown_left_s": int(until - now)})
    cap, running = _number((user or {}).get("MaxJobsRunning")), _number((user or {}).get("NumRunning")) or 0
    if cap is not None and running >= cap:
        return _with_reason(name, status, wr.BY_VALUE["running_cap"],
                            {"max_jobs_running": cap, "running_jobs": running})
    return None


def _no_record(name: str, status: str, ad: dict, spans, looked: str) -> Diagnosis:
    """An idle job without the Frontend's reason, saying why: no TraceParent, a malformed one,
    a trace that could not be read, or one without a job.waiting span where it looked."""
    value = ad.get("TraceParent")
    if value is None:
        why = "it has no TraceParent, so the Frontend kept no record of why it waits"
    elif not isinstance(value, str) or parse_traceparent(value) is None:
        why = f"its TraceParent is malformed ({str(value)[:80]}), so the Frontend kept no record of why it waits"
    elif spans is None:
        why = f"its trace could not be read: {looked}"
    else:
        why = (f"the Frontend has left no record of why it waits in its trace at {looked} yet (no job.waiting "
               "span; the Frontend sends one within a cycle or two of the submission)")
    return Diagnosis(name, status, NO_RECORD, why,
                     "condor_q -better-analyze tells whether any slot present now matches it",
                     "", wr.HELPS_UNKNOWN, wr.ACTOR_YOU)


def _trace_without_record(name: str, spans, looked: str) -> Diagnosis:
    """Asked by trace alone, without the Frontend's record of a waiting job in it: the trace
    could not be read, or it holds none; the jobs of the submission that started meanwhile
    (their job.wait spans) are said, so a submission that ran is not left unexplained."""
    action = "to ask about a job still idle, give its job id or job ad"
    if spans is None:
        found = f"its trace could not be read: {looked}"
        action = "name where the trace is (--jaeger or --store), or give the job id or job ad"
    else:
        found = f"the Frontend left no record of a waiting job in this trace at {looked} (no job.waiting span)"
        waits = sorted((s.get("end_ns") or 0 for s in spans if s.get("name") == c.STAGE_JOB_WAIT))
        if waits:
            started = (f"1 job of the submission started at {_when(waits[-1])}" if len(waits) == 1 else
                       f"{len(waits):,} jobs of the submission started, the last at {_when(waits[-1])}")
            found = f"{started} (job.wait in your trace says how long it waited), and {found}"
    return Diagnosis(name, "unknown", NO_RECORD, found, action, "", wr.HELPS_UNKNOWN, wr.ACTOR_YOU)


def _evicted(name: str, status: str, ad: dict, now_waiting: Diagnosis | None) -> Diagnosis:
    vacate = ad.get("VacateReasonCode")
    system = vacate_is_system_problem(vacate)
    facts = {"vacate_code": vacate, "vacate_reason": ad.get("VacateReason"),
             "num_job_starts": ad.get("NumJobStarts"), "system_problem": system}
    meaning = ("it ran and was evicted by a system problem (the glidein or the site), not by "
               "the job" if system else "it ran and was evicted by a policy or the job itself")
    action = ("nothing: HTCondor runs it again, and a retry may succeed" if system
              else "read VacateReason; fix the job's resource use if it was over its requests")
    out = Diagnosis(name, status, EVICTED, meaning, action, "", wr.HELPS_YES if system else wr.HELPS_UNKNOWN,
                    wr.ACTOR_NOBODY if system else wr.ACTOR_YOU, facts)
    if now_waiting is not None:    # evicted, and now waiting again for a reason
        out.reason = now_waiting.reason
        out.facts["now_waiting"] = {"category": now_waiting.category, "meaning": now_waiting.meaning}
        out.facts.update({k: v for k, v in now_waiting.facts.items() if k not in out.facts})
        out.evidence = now_waiting.evidence
    return out


def diagnose(ad: dict | None, spans=(), job: str | None = None, *, user: dict | None = None,
             unchecked: str = "", looked: str = "", asker: str | None = None, now: float | None = None) -> Diagnosis:
    """One job's diagnosis from its ad (None: only its trace is known), its trace's spans (None:
    they could not be read, ``looked`` says where and why; otherwise where they were read) and
    its owner's user record at the schedd (None: ``unchecked`` says why there is none). Only the
    spans of the job's Owner count; asked by trace alone, those of ``asker`` (the user running
    ``why``) when several owners' jobs carry the TraceParent."""
    now = time.time() if now is None else now
    name = job or (job_name(ad) if ad else "?")
    if ad is not None:
        owner = ad.get("Owner") if isinstance(ad.get("Owner"), str) else None
    else:
        owners = sorted({(s.get("attributes") or {}).get(c.JOB_OWNER) for s in waiting_spans(spans or ())} - {None})
        owner = asker if asker in owners else (owners[0] if len(owners) == 1 else None)
        if len(owners) > 1 and owner is None:
            return Diagnosis(name, "unknown", NO_RECORD, f"jobs of several owners ({', '.join(owners)}) carry this "
                             "TraceParent, and none is you", "give your job id or job ad instead",
                             "", wr.HELPS_UNKNOWN, wr.ACTOR_YOU)
    latest = waiting_spans(spans or (), owner)
    if latest and (latest[-1].get("attributes") or {}).get(c.JOB_WAITING_END) == "no_idle_jobs":
        last = latest[-1]
        latest = []            # the Frontend saw no idle job of the submission since
        if ad is None:
            # what it waited for last: the ended period's own reason, as the Frontend wrote it
            attrs = last.get("attributes") or {}
            waited = attrs.get(c.JOB_WAITING_DETAIL) or attrs.get(c.JOB_WAITING_REASON)
            began, ended = _when(last.get("start_ns")), _when(last.get("end_ns"))
            facts, before = {"no_idle_job_since": ended}, ""
            if isinstance(waited, str) and waited:
                before = f"; before that, from {began}, the Frontend saw it wait: {waited}"
                facts.update(waited_from=began, waited_for=str(attrs.get(c.JOB_WAITING_REASON, "")))
            return Diagnosis(name, "not idle", NOT_WAITING,
                             f"the submission has had no idle job since {ended}: "
                             "its jobs started (job.wait in your trace says how long each waited) "
                             f"or left the queue{before}", "nothing", "", wr.HELPS_NO, wr.ACTOR_NOBODY,
                             facts,
                             [Evidence("job.waiting ended: no idle jobs", last.get("trace_id", ""),
                                       last.get("span_id", ""), ended)])
    if ad is None:
        if not latest:
            return _trace_without_record(name, spans, looked)
        return from_waiting_span(name, "idle", latest[-1], now=now)
    status = JOB_STATUS.get(ad.get("JobStatus"), f"status {ad.get('JobStatus')}")
    if status == "held":
        return _held(name, status, ad)
    schedd_says = _schedd_reason(name, status, ad, user, now)
    if schedd_says is not None:
        return _annotated(schedd_says, ad, latest, now, unchecked)
    if status != "idle":
        return Diagnosis(name, status, NOT_WAITING, f"the job is {status}", "nothing", "",
                         wr.HELPS_NO, wr.ACTOR_NOBODY)
    out = from_waiting_span(name, status, latest[-1], ad, now) if latest else None
    if (ad.get("NumJobStarts") or 0) > 0 and ad.get("VacateReasonCode") is not None:
        return _annotated(_evicted(name, status, ad, out), ad, (), now, unchecked)
    return _annotated(out or _no_record(name, status, ad, spans, looked), ad, (), now, unchecked)


def _annotated(diagnosis: Diagnosis, ad: dict, latest, now: float, unchecked: str) -> Diagnosis:
    """The job's own times (idle for how long); for a schedd reason, the Frontend's reason
    behind it, which takes over once the schedd's ends; why the running cap was not checked."""
    entered = _number(ad.get("EnteredCurrentStatus")) or _number(ad.get("QDate"))
    if entered is not None and diagnosis.status in ("idle", "running"):
        diagnosis.facts.setdefault("status_for_s", max(0, int(now - entered)))
    if latest and diagnosis.status == "idle":   # a running job in the transfer queue waits for no glidein
        behind = from_waiting_span(diagnosis.job, diagnosis.status, latest[-1], ad, now)
        if behind.reason:
            diagnosis.facts["then"] = {"reason": behind.reason, "category": behind.category}
            # its numbers (entries, sites, glideins queued, since when), for its own sentence
            diagnosis.facts.update({k: v for k, v in behind.facts.items() if k not in diagnosis.facts})
            diagnosis.evidence = behind.evidence
    if unchecked and diagnosis.status == "idle" and diagnosis.reason != "running_cap":
        diagnosis.facts["running_cap_unchecked"] = unchecked
    return diagnosis


def add_table_evidence(diagnosis: Diagnosis, outcomes: dict) -> None:
    """The glidein table's recent outcomes at the entries that give the reason."""
    for entry in diagnosis.facts.get("reason_entries") or ():
        counts = outcomes.get(str(entry).split("@", 1)[0])
        if counts:
            text = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            diagnosis.evidence.append(Evidence(f"glideins at {entry} in the last 2 days: {text}"))


def count(counts: dict, diagnosis: Diagnosis) -> None:
    """Count one diagnosis in ``counts`` (category, reason) -> jobs, for the summary."""
    key = (diagnosis.category, diagnosis.reason)
    counts[key] = counts.get(key, 0) + 1


def summary_rows(counts: dict) -> list:
    """Jobs per category and reason (like LSF's bjobs -psum), most first: [(jobs, category, reason)]."""
    return sorted(((n, cat, reason) for (cat, reason), n in counts.items()), key=lambda t: (-t[0], t[1]))


def parse_job_id(text: str):
    """(cluster, proc, schedd or None) of cluster.proc[@schedd], or None. Without a schedd the
    local one is asked, as condor_q does."""
    match = JOB_ID_RE.match(text)
    return (int(match.group(1)), int(match.group(2)), match.group(3)) if match else None


def check_trace_id(text: str) -> str:
    """The trace id of a submission: given alone, or as the whole TRACEPARENT value."""
    if TRACE_ID_RE.match(text):
        return text.lower()
    if text.count("-") == 3 and text.split("-")[0].isalnum() and len(text) < 80:
        parsed = parse_traceparent(text) if TRACEPARENT_RE.match(text.strip().lower()) else None
        if parsed is None:
            raise UserError(f"a malformed TRACEPARENT: {text!r} (W3C: 00-<32 hex>-<16 hex>-<2 hex>, not all zero)")
        return parsed[0]
    raise UserError(f"not a job id (cluster.proc[@schedd]), a job ad file, a trace id or a TRACEPARENT: {text!r}")
