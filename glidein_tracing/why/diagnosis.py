"""Why is my job not running yet? One diagnosis per job (``glidein-tracing why``,
docs/why-waiting.md), in HTCondor's categories (held, idle, running) extended with the glidein
ones: from the job ad (held: the hold code's meaning and action; evicted: the vacate code), and
for an idle job from the ``job.waiting`` spans the Frontend instrumentor put in the user's
trace (frontend_hooks/waiting.py), with the glidein table's recent outcomes at the entries
as more evidence.

Inputs: job ads as plain dicts (read with classad2 from a ``condor_q -l`` file, or asked of the
schedd with htcondor2), span dicts as the store and the Jaeger reader give them.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field

from ..core import conventions as c
from ..core import waiting_reasons as wr
from ..core.errors import UserError
from ..core.ids import parse_traceparent
from .holdcodes import hold_code, vacate_is_system_problem

JOB_ID_RE = re.compile(r"^(\d+)\.(\d+)@(\S+)$")
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

    def text(self) -> str:
        where = f" (trace {self.trace_id} span {self.span_id})" if self.span_id else ""
        return f"{self.when + ' ' if self.when else ''}{self.what}{where}"


@dataclass
class Diagnosis:
    job: str                         # cluster.proc@schedd, or the trace id
    status: str                      # HTCondor's: idle, held, running, ...
    category: str
    meaning: str
    action: str
    reason: str = ""                 # job.waiting.reason, when the Frontend gave one
    facts: dict = field(default_factory=dict)
    evidence: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def job_name(ad: dict) -> str:
    global_id = str(ad.get("GlobalJobId") or "")
    schedd = global_id.split("#", 1)[0] if "#" in global_id else str(ad.get("ScheddName") or "?")
    return f"{ad.get('ClusterId')}.{ad.get('ProcId')}@{schedd}"


def trace_id_of(ad: dict) -> str | None:
    parsed = parse_traceparent(ad.get("TraceParent") or "") if isinstance(ad.get("TraceParent"), str) else None
    return parsed[0] if parsed else None


def _when(ns) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(ns / 1e9)) if ns else ""


def waiting_spans(spans) -> list:
    """The job.waiting spans of a trace, oldest first."""
    return sorted((s for s in spans if s.get("name") == c.STAGE_JOB_WAITING),
                  key=lambda s: (s.get("end_ns", 0), s.get("attributes", {}).get(c.JOB_WAITING_STATE) == "current"))


def _fit_facts(ad: dict, attributes: dict) -> dict:
    """The job's requests against the largest idle glidein's (for 'does not fit')."""
    facts = {}
    for label, job_key, span_request, span_glidein in (
            ("cpus", "RequestCpus", c.JOB_WAITING_REQUEST_CPUS, c.JOB_WAITING_GLIDEIN_CPUS),
            ("memory_mb", "RequestMemory", c.JOB_WAITING_REQUEST_MEMORY, c.JOB_WAITING_GLIDEIN_MEMORY),
            ("disk_kib", "RequestDisk", c.JOB_WAITING_REQUEST_DISK, c.JOB_WAITING_GLIDEIN_DISK)):
        asked = ad.get(job_key, attributes.get(span_request))
        has = attributes.get(span_glidein)
        if isinstance(asked, (int, float)) and isinstance(has, (int, float)):
            facts[label] = {"job": asked, "largest_idle_glidein": has, "fits": asked <= has}
    for why in ("retiring", "memory", "cpus", "disk", "time"):
        count = attributes.get(f"job.waiting.unusable.{why}")
        if count:
            facts.setdefault("unusable_idle_glideins", {})[why] = count
    return facts


def from_waiting_span(job: str, status: str, span: dict, ad: dict | None = None) -> Diagnosis:
    attributes = span.get("attributes") or {}
    value = attributes.get(c.JOB_WAITING_REASON)
    reason = wr.BY_VALUE.get(value)
    if reason is None:
        return Diagnosis(job, status, NO_RECORD, "the Frontend's record has a reason this "
                         "version does not know: " + str(value), "upgrade glidein-tracing")
    facts = {key.split("job.waiting.", 1)[1]: v for key, v in attributes.items()
             if key.startswith("job.waiting.") and key not in (c.JOB_WAITING_REASON,)}
    if value == "unusable_idle_glideins":
        facts["fit"] = _fit_facts(ad or {}, attributes)
    if attributes.get(c.JOB_WAITING_STATE) == "current" and span.get("start_ns"):
        # the reason's period began with this span: how long it has lasted
        facts["since"] = _when(span["start_ns"])
        facts["for_s"] = max(0, int(time.time() - span["start_ns"] / 1e9))
    evidence = [Evidence(f"job.waiting {attributes.get(c.JOB_WAITING_STATE, '')}: "
                         f"{attributes.get(c.JOB_WAITING_DETAIL, value)}",
                         span.get("trace_id", ""), span.get("span_id", ""), _when(span.get("start_ns")))]
    for link in span.get("links") or []:
        evidence.append(Evidence("the Frontend's decision (frontend.request / frontend.cycle)",
                                 link.get("trace_id", ""), link.get("span_id", "")))
    return Diagnosis(job, status, reason.category, reason.meaning, reason.action, value, facts, evidence)


def diagnose(ad: dict | None, spans=(), job: str | None = None) -> Diagnosis:
    """One job's diagnosis from its ad (None: only its trace is known) and its trace's spans."""
    name = job or (job_name(ad) if ad else "?")
    latest = waiting_spans(spans)
    if latest and (latest[-1].get("attributes") or {}).get(c.JOB_WAITING_END) == "no_idle_jobs":
        last = latest[-1]
        latest = []            # the Frontend saw no idle job of the submission since
        if ad is None:
            return Diagnosis(name, "not idle", NOT_WAITING,
                             f"the submission has had no idle job since {_when(last.get('end_ns'))}: "
                             "its jobs started (job.wait in your trace says how long each waited) "
                             "or left the queue", "nothing",
                             evidence=[Evidence("job.waiting ended: no idle jobs", last.get("trace_id", ""),
                                                last.get("span_id", ""), _when(last.get("end_ns")))])
    if ad is None:
        if not latest:
            return Diagnosis(name, "unknown", NO_RECORD, "no job.waiting span in this trace",
                             "give the job id or its job ad instead")
        return from_waiting_span(name, "idle", latest[-1])
    status = JOB_STATUS.get(ad.get("JobStatus"), f"status {ad.get('JobStatus')}")
    if status == "held":
        code = ad.get("HoldReasonCode")
        meaning = hold_code(code)
        facts = {"hold_code": code, "hold_code_name": meaning.name,
                 "hold_subcode": ad.get("HoldReasonSubCode"), "hold_reason": ad.get("HoldReason")}
        return Diagnosis(name, status, HELD, meaning.meaning, meaning.action, "", facts)
    if status != "idle":
        return Diagnosis(name, status, NOT_WAITING, f"the job is {status}", "nothing")
    vacate = ad.get("VacateReasonCode")
    evicted = (ad.get("NumJobStarts") or 0) > 0 and vacate is not None
    if latest:
        out = from_waiting_span(name, status, latest[-1], ad)
    elif evicted:
        out = None
    else:
        why = ("it has no TraceParent, so the Frontend kept no record of why it waits"
               if trace_id_of(ad) is None else "no job.waiting span in its trace yet (the Frontend "
               "sends one within a cycle or two of the submission)")
        out = Diagnosis(name, status, NO_RECORD, f"the job is idle; {why}",
                        "condor_q -better-analyze tells whether any slot present now matches it")
    if evicted:
        system = vacate_is_system_problem(vacate)
        facts = {"vacate_code": vacate, "vacate_reason": ad.get("VacateReason"),
                 "num_job_starts": ad.get("NumJobStarts"), "system_problem": system}
        meaning = ("it ran and was evicted by a system problem (the glidein or the site), not by "
                   "the job" if system else "it ran and was evicted by a policy or the job itself")
        action = ("nothing: HTCondor runs it again, and a retry may succeed" if system
                  else "read VacateReason; fix the job's resource use if it was over its requests")
        evicted_diag = Diagnosis(name, status, EVICTED, meaning, action, "", facts)
        if out is not None:    # evicted, and now waiting again for a reason
            evicted_diag.reason = out.reason
            evicted_diag.facts["now_waiting"] = {"category": out.category, "meaning": out.meaning}
            evicted_diag.evidence = out.evidence
        return evicted_diag
    return out


def add_table_evidence(diagnosis: Diagnosis, outcomes: dict) -> None:
    """The glidein table's recent outcomes at the entries that give the reason."""
    for entry in diagnosis.facts.get("reason_entries") or ():
        counts = outcomes.get(str(entry).split("@", 1)[0])
        if counts:
            text = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            diagnosis.evidence.append(Evidence(f"glideins at {entry} in the last 2 days: {text}"))


def summary(diagnoses) -> list:
    """Jobs per category and reason (like LSF's bjobs -psum): [(count, category, reason)]."""
    counts: dict = {}
    for d in diagnoses:
        key = (d.category, d.reason)
        counts[key] = counts.get(key, 0) + 1
    return sorted(((n, cat, reason) for (cat, reason), n in counts.items()), key=lambda t: (-t[0], t[1]))


def parse_job_id(text: str):
    """(cluster, proc, schedd) of cluster.proc@schedd, or None."""
    match = JOB_ID_RE.match(text)
    return (int(match.group(1)), int(match.group(2)), match.group(3)) if match else None


def check_trace_id(text: str) -> str:
    if not TRACE_ID_RE.match(text):
        raise UserError(f"not a job id (cluster.proc@schedd), a job ad file or a trace id: {text!r}")
    return text.lower()
