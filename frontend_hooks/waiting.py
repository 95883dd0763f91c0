"""Why a user's idle jobs wait: one reason per submission from the Frontend's own decision,
told in the user's own trace as ``job.waiting`` spans (docs/why-waiting.md, issue 35).

At the end of each group cycle the instrumentor hands over what the cycle computed, read from
the element by frontend_hooks/gwms.py: the idle jobs of its schedd query (to which the
instrumentor added ``TraceParent``, ``Owner`` and the resource requests, see
``JOB_ATTRIBUTES``), the entries and the group's match, evaluated as ``countMatch`` evaluates
it (in glideinFrontendLib's namespace, with its policies), the Factory's per-client monitoring
(glideins in the site queue, running there), the group's idle glideins and, per entry, its
``frontend.request`` span's facts (downtime, limits, glideins requested).

A submission is the jobs of one ``Owner`` sharing one ``TraceParent`` (jobsub_lite puts the same
one in each job of a submission): anyone can read a job's TraceParent, so another user's jobs
carrying a copy form a submission of their own and never change this one's reason. Its reason
is the most hopeful of its matching entries' (ordered in glidein_tracing.core.waiting_reasons);
``unknown`` when no entry matched and the expression raised on some (logged once per cycle,
counted on the cycle span), ``no_matching_entry`` only when it evaluated on every entry and
none matched, with that evidence on the span. The Frontend runs each group cycle as a new process, so
a span cannot stay open across cycles: each reason period gets a ``current`` span when it
begins (start = end = that cycle) and an ``ended`` one spanning the whole period when it ends
(the reason changed, or no idle job is left: the jobs started, ``job.wait`` takes over). The
periods are kept in the group's history file (``history_obj``), as GlideinWMS keeps its own
state between cycles. A period's span ids derive from the period, not from the cycle's time:
the first from the submission and its first job's entry into the idle state, each later one
from the period before it and its reason; so a cycle run again after a crash (the history not
saved) sends the same span ids again, never a second ``current`` span with another id.

Bounds: ``MAX_SPANS_PER_SUBMISSION_DAY`` spans per submission a (UTC) day,
``MAX_SUBMISSIONS_PER_CYCLE`` submissions whose reason is updated per cycle (the others keep
their state and are updated in a later cycle, oldest period first). The state holds only the
submissions idle now.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from opentelemetry import trace
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, TraceFlags

from glidein_tracing.core import conventions as gc
from glidein_tracing.core import waiting_reasons as wr
from glidein_tracing.core.ids import parse_traceparent

from frontend_hooks import conventions as c
from frontend_hooks import gwms

_logger = logging.getLogger("frontend_hooks")

MAX_SPANS_PER_SUBMISSION_DAY = 24
MAX_SUBMISSIONS_PER_CYCLE = 200
MAX_LISTED = 10            # entries, job ids, links on one span
HISTORY_KEY = "glidein_tracing_waiting"

# Job attributes the reasons need, added to the Frontend's schedd query when its format list
# lacks them: TraceParent and Owner (the submission) and RequestMemory (whether an idle glidein has the
# memory: #554's usual case). RequestCpus is always there (GlideinWMS adds it to every group's
# match attributes); RequestDisk and JOB_EXPECTED_MAX_LIFETIME are used when the group's match
# attributes have them. Each added attribute costs every job of every cycle (bench/README.md).
JOB_ATTRIBUTES = (("TraceParent", "s"), ("Owner", "s"), ("RequestMemory", "i"))
# Glidein (startd) attributes added to the group's collector query: retiring, time left, disk.
SLOT_ATTRIBUTES = (("GLIDEIN_ToRetire", "i"), ("GLIDEIN_ToDie", "i"), ("Disk", "i"))


def add_attributes(format_list, wanted):
    """The format list with the wanted (name, type) pairs it lacks appended (a new list)."""
    if not isinstance(format_list, (list, tuple)):
        return format_list
    have = {item[0] for item in format_list if isinstance(item, (list, tuple)) and item}
    return list(format_list) + [item for item in wanted if item[0] not in have]


@dataclass
class Slot:
    memory: float
    cpus: float
    disk: float
    retiring: bool
    time_left: float | None


@dataclass
class Entry:
    """One entry of the cycle, as the Frontend saw it."""

    name: str                      # the request name, entry@glidein@factory
    glidein: object                # glidein_el, what the match expression sees
    site: str | None = None        # its GLIDEIN_Site
    in_downtime: bool = False
    requested: int = 0             # ReqIdleGlideins
    limits: tuple = ()
    queued: int = 0                # the Factory's StatusIdle for this client
    running_at_site: int = 0       # the Factory's StatusRunning
    in_pool: int = 0               # the group's glideins there (count_status Total)
    idle_counted: int = 0          # count_status Idle
    slots: list = field(default_factory=list)
    request_span: object = None    # its frontend.request SpanContext


@dataclass
class Submission:
    traceparent: tuple             # (trace id, span id, flags)
    owner: str
    schedd: str
    jobs: list = field(default_factory=list)   # (cluster, proc) of its idle jobs
    first: object = None           # its first job's attributes
    idle: int = 0


class _ChosenIds(IdGenerator):
    """The SDK tracer's id generator, with the next span id chosen by us (deterministic)."""

    def __init__(self, fallback):
        self.fallback = fallback
        self.next_span_id = None

    def generate_span_id(self) -> int:
        chosen, self.next_span_id = self.next_span_id, None
        return chosen if chosen else self.fallback.generate_span_id()

    def generate_trace_id(self) -> int:
        return self.fallback.generate_trace_id()


def waiting_tracer(tracer):
    """The tracer with span ids we choose: SDK tracers only (others keep random ids)."""
    if hasattr(tracer, "id_generator") and not isinstance(tracer.id_generator, _ChosenIds):
        tracer.id_generator = _ChosenIds(tracer.id_generator or RandomIdGenerator())
    return tracer


def _number(value, default=0.0):
    if isinstance(value, bool):
        return default
    return value if isinstance(value, (int, float)) else default


# --- reading the cycle -------------------------------------------------------------------
def state_key(trace_id: str, span_id: str, owner: str) -> str:
    """A submission's key in the state: its TraceParent's ids and its Owner."""
    return f"{trace_id}-{span_id}-{owner}"


def _split_key(skey: str) -> tuple:
    # a key of a history written before the owner was part of it has none
    trace_id, span_id, owner = (skey.split("-", 2) + [""])[:3]
    return trace_id, span_id, owner


class IdleJobs:
    """The cycle's idle jobs by submission (the jobs of one Owner sharing one TraceParent),
    keyed by ``state_key``. Every submission's first job (what its reason is decided on) is
    found for all of them; the Submission itself (idle count, job ids, flags) is built only
    for the ones whose spans are sent: objects kept for every one of 5,000 submissions set off
    the cyclic GC over the Frontend's whole heap, a third of the work in a steady cycle."""

    def __init__(self, idle_dict):
        self.first_jobs: dict = {}   # state key -> the submission's first idle job
        self._schedds: list = []     # (schedd, stored, job ids, counts, value -> key, value -> first)
        self._by_key = None
        for schedd, query in (idle_dict or {}).items():
            stored = gwms.stored(query)
            # the jobs of one (TraceParent, Owner) counted in C, each distinct value parsed once
            jobs = stored.values()
            values = list(zip(map(_get_traceparent, jobs), map(_get_owner, jobs)))
            counts = Counter(values)
            if not counts:
                continue
            ids = list(stored)
            keys, firsts = {}, {}
            first = -1
            for value in counts:
                # Counter keeps its values in the order they first occur: each value's first
                # job is found by list.index from the previous one's, one pass over the jobs
                first = values.index(value, first + 1)
                traceparent, owner = value
                parsed = parse_traceparent(traceparent) if isinstance(traceparent, str) else None
                if parsed is None or not isinstance(owner, str):
                    continue
                key = keys[value] = state_key(parsed[0], parsed[1], owner)
                firsts[value] = first
                if key not in self.first_jobs:
                    self.first_jobs[key] = stored[ids[first]]
            self._schedds.append((schedd, stored, ids, counts, keys, firsts))

    def submission(self, key: str) -> Submission:
        """The submission of a state key in first_jobs: its jobs over every schedd."""
        if self._by_key is None:
            self._by_key = {}
            for source in self._schedds:
                for value, value_key in source[4].items():
                    self._by_key.setdefault(value_key, []).append((source, value))
        sub = None
        for (schedd, stored, ids, counts, _keys, firsts), value in self._by_key[key]:
            jid = ids[firsts[value]]
            if sub is None:
                sub = Submission(parse_traceparent(value[0]), value[1], str(schedd), first=stored[jid])
            sub.idle += counts[value]
            if len(sub.jobs) < MAX_LISTED:
                sub.jobs.append((jid, schedd))
        return sub


def _get_traceparent(job):
    return job.get("TraceParent")


def _get_owner(job):
    return job.get("Owner")


def idle_slots(element, now: float) -> dict:
    """request name -> [Slot] of the group's idle glideins (the ones the Frontend counts)."""
    out: dict = {}
    for slot in gwms.idle_glidein_ads(element):
        to_retire, to_die = slot.get("GLIDEIN_ToRetire"), slot.get("GLIDEIN_ToDie")
        out.setdefault(gwms.glidein_request_name(slot), []).append(Slot(
            _number(slot.get("Memory"), float("inf")), _number(slot.get("Cpus"), float("inf")),
            _number(slot.get("Disk"), float("inf")),
            _number(to_retire, float("inf")) <= now,
            _number(to_die) - now if _number(to_die, None) is not None else None))
    return out


def entries(element, request_facts: Mapping, now: float) -> dict:
    """glideid -> Entry, for the entries of the cycle."""
    slots = idle_slots(element, now)
    # a "run" cycle that skipped compute_glidein_min_idle at an entry not in downtime: the
    # Frontend itself is in downtime (its downtime file)
    runs = gwms.element_names(element)["action"] in ("run", None)
    out = {}
    for glideid, name, glidein_el in gwms.entries(element):
        facts = request_facts.get(name, {})
        entry = Entry(name, glidein_el, gwms.entry_site(glidein_el))
        entry.in_downtime = bool(facts.get(c.IN_DOWNTIME)) or (
            runs and bool(facts) and c.EFFECTIVE_IDLE_MC not in facts)
        entry.requested = int(_number(facts.get(c.REQ_IDLE_GLIDEINS)))
        entry.limits = tuple(facts.get(c.LIMITS_TRIGGERED) or ())
        entry.queued, entry.running_at_site = gwms.factory_monitor(element, glideid)
        entry.in_pool = int(_number(facts.get(c.GLIDEINS_TOTAL)))
        entry.idle_counted = int(_number(facts.get(c.IDLE_GLIDEINS)))
        entry.slots = slots.get(name, [])
        entry.request_span = facts.get("_span_context")
        out[glideid] = entry
    return out


# --- the reason --------------------------------------------------------------------------
@dataclass
class Verdict:
    reason: str
    attributes: dict
    links: list


def _fit(slot: Slot, job) -> str | None:
    """Why an idle glidein cannot run the job (None: it can)."""
    if slot.retiring:
        return "retiring"
    if slot.memory < _number(job.get("RequestMemory"), 0):
        return "memory"
    if slot.cpus < _number(job.get("RequestCpus"), 1):
        return "cpus"
    if slot.disk < _number(job.get("RequestDisk"), 0):
        return "disk"
    lifetime = _number(job.get("JOB_EXPECTED_MAX_LIFETIME"), 0)
    if slot.time_left is not None and lifetime and slot.time_left < lifetime:
        return "time"
    return None


def entry_reason(entry: Entry, job) -> tuple:
    """(reason, unfit counts) of one entry for one job's requests."""
    if entry.in_downtime:
        return "downtime", {}
    unfit: dict = {}
    for slot in entry.slots:
        why = _fit(slot, job)
        if why is None:
            return "glidein_idle", {}
        unfit[why] = unfit.get(why, 0) + 1
    if entry.requested <= 0:
        if entry.slots and entry.idle_counted > 0:
            return "unusable_idle_glideins", unfit
        if entry.limits:
            return "limit", unfit
    if entry.queued > 0:
        return "site_queue", unfit
    if entry.running_at_site > 0 and entry.in_pool == 0:
        return "validation", unfit
    if entry.requested > 0:
        return "requested", unfit
    return "not_requested", unfit


class Matcher:
    """The group's own match (frontend_hooks/gwms.py, ``MatchSetup``), memoised per job kind:
    jobs equal on the group's match attributes match alike (the Frontend's own ``hashJob``
    clustering), so a cycle evaluates kinds x entries, not jobs. An evaluation that raises is
    kept with its exception (the Frontend counts that job for no entry there)."""

    def __init__(self, element):
        self.setup = gwms.MatchSetup(element)
        self.match_list = self.setup.match_list
        self.cache: dict = {}
        self.errors = 0                 # evaluations that raised this cycle
        self.first_error = None         # (exception text, job, entry name) of the first one

    def kind(self, job) -> tuple:
        keys = self.match_list if self.match_list is not None else sorted(job)
        return tuple((key, job.get(key)) for key in keys if key in job)

    def matching(self, job, all_entries: dict) -> tuple:
        """(matching glideids, {glideid: exception text} of the entries it raised on)."""
        kind = self.kind(job)
        found = self.cache.get(kind)
        if found is None:
            matched, failed = [], {}
            for glideid, entry in all_entries.items():
                try:
                    if self.setup.matches(job, entry.glidein):
                        matched.append(glideid)
                except Exception as exc:  # noqa: BLE001 - any exception of the group's expression
                    failed[glideid] = f"{type(exc).__name__}: {exc}"
                    self.errors += 1
                    if self.first_error is None:
                        self.first_error = (failed[glideid], job, entry.name)
            found = self.cache[kind] = (matched, failed)
        return found


_MISSING = object()


class Decider:
    """Each submission's reason, decided once per job kind and resource requests: submissions
    alike in both wait for the same reason, so a cycle decides kinds, not submissions."""

    REQUESTS = ("RequestCpus", "RequestMemory", "RequestDisk", "JOB_EXPECTED_MAX_LIFETIME")

    def __init__(self, element, all_entries: dict):
        self.matcher = Matcher(element)
        self.entries = all_entries
        self.part_min_memory = gwms.part_glidein_min_memory(element)
        self.cache: dict = {}
        # the attributes a decision depends on, read in C (a missing one is told apart from
        # one whose value is None, as the match expression tells them apart)
        match_list = self.matcher.match_list
        self.key_names = None if match_list is None else list(match_list) + list(self.REQUESTS)
        self.missing = [_MISSING] * len(self.key_names or ())

    def _key(self, job) -> tuple:
        if self.key_names is None:
            return (self.matcher.kind(job), tuple(job.get(name) for name in self.REQUESTS))
        return tuple(map(job.get, self.key_names, self.missing))

    def reason(self, job) -> tuple:
        """(reason, matched glideids, {glideid: (entry reason, unfit counts)}, {glideid:
        exception text})."""
        key = self._key(job)
        found = self.cache.get(key)
        if found is None:
            matched, failed = self.matcher.matching(job, self.entries) if self.matcher.setup.compiled \
                else ([], {None: "the group has no compiled match expression"})
            if not self.entries:
                failed = {None: "the group saw no entry this cycle"}
            per_entry = {glideid: entry_reason(self.entries[glideid], job) for glideid in matched}
            if matched:
                best = min((r for r, _ in per_entry.values()), key=lambda r: wr.RANK[r])
            else:
                best = "unknown" if failed else "no_matching_entry"
            found = self.cache[key] = (best, matched, per_entry, failed)
        return found

    def verdict(self, sub: Submission) -> Verdict:
        """The reason with the span attributes that show it (only for the spans sent)."""
        job = sub.first
        best, matched, per_entry, failed = self.reason(job)
        all_entries = self.entries
        attributes = {gc.JOB_OWNER: sub.owner, gc.JOB_WAITING_IDLE_JOBS: sub.idle,
                      gc.JOB_WAITING_JOBS: [f"{cluster}.{proc}@{schedd}"
                                            for (cluster, proc), schedd in sub.jobs]}
        for key, attr in ((gc.JOB_WAITING_REQUEST_CPUS, "RequestCpus"),
                          (gc.JOB_WAITING_REQUEST_MEMORY, "RequestMemory"),
                          (gc.JOB_WAITING_REQUEST_DISK, "RequestDisk")):
            if isinstance(job.get(attr), (int, float)) and not isinstance(job.get(attr), bool):
                attributes[key] = job[attr]
        if not matched:
            attributes.update(self._evidence(job, failed))
            return Verdict(best, attributes, [])
        giving = [glideid for glideid in matched if per_entry[glideid][0] == best]
        attributes[gc.JOB_WAITING_ENTRIES] = sorted(all_entries[g].name for g in matched)[:MAX_LISTED]
        attributes[gc.JOB_WAITING_REASON_ENTRIES] = sorted(all_entries[g].name for g in giving)[:MAX_LISTED]
        sites = sorted({all_entries[g].site for g in giving} - {None})[:MAX_LISTED]
        if sites:
            attributes[gc.JOB_WAITING_SITES] = sites
        limits = sorted({limit for g in giving for limit in all_entries[g].limits})
        if limits:
            attributes[gc.JOB_WAITING_LIMITS] = limits
        totals = {gc.JOB_WAITING_QUEUED_GLIDEINS: sum(all_entries[g].queued for g in giving),
                  gc.JOB_WAITING_RUNNING_AT_SITE: sum(all_entries[g].running_at_site for g in giving),
                  gc.JOB_WAITING_GLIDEINS_IN_POOL: sum(all_entries[g].in_pool for g in giving),
                  gc.JOB_WAITING_IDLE_GLIDEINS: sum(all_entries[g].idle_counted for g in giving)}
        attributes.update({key: value for key, value in totals.items() if value})
        if best == "unusable_idle_glideins":
            for why, key in (("retiring", gc.JOB_WAITING_UNUSABLE_RETIRING),
                             ("memory", gc.JOB_WAITING_UNUSABLE_MEMORY),
                             ("cpus", gc.JOB_WAITING_UNUSABLE_CPUS),
                             ("disk", gc.JOB_WAITING_UNUSABLE_DISK),
                             ("time", gc.JOB_WAITING_UNUSABLE_TIME)):
                count = sum(per_entry[g][1].get(why, 0) for g in giving)
                if count:
                    attributes[key] = count
            slots = [slot for g in giving for slot in all_entries[g].slots if not slot.retiring]
            for key, values in ((gc.JOB_WAITING_GLIDEIN_MEMORY, [s.memory for s in slots]),
                                (gc.JOB_WAITING_GLIDEIN_CPUS, [s.cpus for s in slots]),
                                (gc.JOB_WAITING_GLIDEIN_DISK, [s.disk for s in slots])):
                finite = [v for v in values if v != float("inf")]
                if finite:
                    attributes[key] = max(finite)
            if self.part_min_memory is not None:
                attributes[gc.JOB_WAITING_PART_GLIDEIN_MIN_MEMORY] = self.part_min_memory
        links = [Link(all_entries[g].request_span) for g in giving[:MAX_LISTED]
                 if isinstance(all_entries[g].request_span, SpanContext)]
        return Verdict(best, attributes, links)

    def _evidence(self, job, failed: Mapping) -> dict:
        """What no_matching_entry and unknown rest on: the expression, the job's values it
        reads, the entries it was tried on (with their match attributes) and, for unknown,
        the exception."""
        setup = self.matcher.setup
        evidence = {gc.JOB_WAITING_GROUP_ENTRY_COUNT: len(self.entries)}
        if setup.expression:
            evidence[gc.JOB_WAITING_MATCH_EXPR] = setup.expression
        evidence[gc.JOB_WAITING_JOB_VALUES] = [
            f"{name}={job[name]}" if name in job else f"{name} undefined"
            for name in setup.job_attributes][:MAX_LISTED]
        listed = sorted(self.entries.values(), key=lambda entry: entry.name)[:MAX_LISTED]
        evidence[gc.JOB_WAITING_GROUP_ENTRIES] = [
            _entry_values(entry, setup.entry_attributes) for entry in listed]
        if failed:
            evidence[gc.JOB_WAITING_MATCH_ERROR] = sorted(set(failed.values()))[0]
        return evidence


def _entry_values(entry: Entry, names) -> str:
    """An entry and its values of the group's FactoryMatchAttrs: "name: Attr=value, ..."."""
    attrs = gwms.entry_attrs(entry.glidein)
    values = ", ".join(f"{name}={attrs[name]}" for name in names if name in attrs)
    return f"{entry.name}: {values}" if values else entry.name


def detail(reason: str, attributes: Mapping) -> str:
    """The reason in one sentence, with its numbers."""
    entries_text = ", ".join(attributes.get(gc.JOB_WAITING_REASON_ENTRIES, ())) or "none"
    if reason == "site_queue":
        sites = ", ".join(attributes.get(gc.JOB_WAITING_SITES, ()))
        return (f"{attributes.get(gc.JOB_WAITING_QUEUED_GLIDEINS, 0)} glideins wait in the batch "
                f"queue of {sites or 'the site'} at {entries_text}")
    if reason == "limit":
        return f"limits at {entries_text}: {', '.join(attributes.get(gc.JOB_WAITING_LIMITS, ()))}"
    if reason == "downtime":
        return f"in downtime: {entries_text}"
    if reason == "requested":
        return f"glideins requested at {entries_text}"
    if reason == "not_requested":
        return f"no glidein requested at {entries_text}"
    if reason == "glidein_idle":
        return f"an idle glidein fits at {entries_text}"
    if reason == "validation":
        sites = ", ".join(attributes.get(gc.JOB_WAITING_SITES, ())) or "the site"
        return (f"{attributes.get(gc.JOB_WAITING_RUNNING_AT_SITE, 0)} glideins run at {sites} but none joined "
                f"the pool, at {entries_text}")
    if reason == "unusable_idle_glideins":
        causes = ", ".join(f"{key.rsplit('.', 1)[1]} {value}" for key, value in attributes.items()
                           if key.startswith("job.waiting.unusable."))
        floor = attributes.get(gc.JOB_WAITING_PART_GLIDEIN_MIN_MEMORY)
        floor_text = f"; the group counts a partitionable glidein with over {floor} MB free" \
            if floor is not None else ""
        return (f"{attributes.get(gc.JOB_WAITING_IDLE_GLIDEINS, 0)} idle glideins at "
                f"{entries_text} counted as capacity but unusable ({causes}){floor_text}")
    if reason == "no_matching_entry":
        return (f"none of the group's {attributes.get(gc.JOB_WAITING_GROUP_ENTRY_COUNT, 0)} "
                "entries matches the jobs")
    if reason == "unknown":
        return f"the group's match expression failed on the jobs ({attributes.get(gc.JOB_WAITING_MATCH_ERROR)})"
    return f"{wr.BY_VALUE[reason].category} ({entries_text})"


# --- the spans ---------------------------------------------------------------------------
def _span_id(period_id: str, kind: str) -> int:
    text = f"{period_id}\n{kind}\n"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") or 1


def _period_id(skey: str, previous: Mapping | None, reason: str, sub: Submission) -> str:
    """A period's identity, from the period alone: the first one's from the submission and
    its first idle job (schedd, id and EnteredCurrentStatus, the schedd's own time of its
    becoming idle), each later one's from the period before it and the new reason. Never the
    cycle's time, so a cycle run again on the same history names the same period."""
    if previous is not None and previous.get("id"):
        origin = previous["id"]
    else:
        (cluster, proc), schedd = sub.jobs[0]
        origin = f"{skey}\n{schedd}#{cluster}.{proc}\n{sub.first.get('EnteredCurrentStatus', '')}"
    return hashlib.sha256(f"{origin}\n{reason}\n".encode()).hexdigest()[:16]


class Reporter:
    """Decides and sends the ``job.waiting`` spans of one group cycle."""

    def __init__(self, tracer, element, request_facts: Mapping, cycle_context, now=None):
        self.tracer = waiting_tracer(tracer)
        self.element = element
        self.request_facts = request_facts
        self.cycle_link = cycle_context
        self.now = time.time() if now is None else now
        self.day = int(self.now // 86400)
        names = gwms.element_names(element)
        self.base = {c.FRONTEND_NAME: names["frontend_name"], c.FRONTEND_GROUP: names["group_name"]}
        self.sent = 0
        self.match_errors = 0

    def run(self) -> int | None:
        """Update every traced submission of the cycle; return the spans sent (None: the
        cycle has no job data, e.g. it ended before its queries)."""
        element = self.element
        history = gwms.history(element)
        idle_dict = gwms.idle_job_queries(element)
        if history is None or idle_dict is None:
            return None
        state = history.get(HISTORY_KEY) if hasattr(history, "get") else None
        state = dict(state) if isinstance(state, Mapping) else {}
        idle = IdleJobs(idle_dict)
        # the schedds whose idle jobs were counted (a schedd that did not answer, or that the
        # Frontend left out as bad, ends no period)
        answered = {str(s) for s in idle_dict}
        decider = Decider(element, entries(element, self.request_facts, self.now))
        changes = []
        for skey, job in idle.first_jobs.items():
            reason = decider.reason(job)[0]
            previous = state.get(skey)
            if previous is None or previous.get("reason") != reason:
                changes.append((previous.get("since", 0.0) if previous else 0.0, skey))
        self._log_match_errors(decider.matcher)
        gone = [(entry.get("since", 0.0), skey) for skey, entry in state.items()
                if skey not in idle.first_jobs and entry.get("schedd") in answered]
        budget = MAX_SUBMISSIONS_PER_CYCLE
        for _since, skey in sorted(gone)[:budget]:
            self._end(_split_key(skey), state.pop(skey), "no_idle_jobs")
        budget -= min(len(gone), budget)
        for _since, skey in sorted(changes, key=lambda item: item[0])[:budget]:
            sub = idle.submission(skey)
            verdict = decider.verdict(sub)
            verdict.attributes[gc.JOB_WAITING_DETAIL] = detail(verdict.reason, verdict.attributes)
            key = _split_key(skey)
            previous = state.get(skey)
            if previous is not None:
                self._end(key, previous, "reason_changed")
            period = {"reason": verdict.reason, "since": self.now, "schedd": sub.schedd,
                      "id": _period_id(skey, previous, verdict.reason, sub),
                      "flags": sub.traceparent[2],
                      "day": previous.get("day") if previous else self.day,
                      "spans": previous.get("spans", 0) if previous else 0,
                      "attributes": verdict.attributes}
            self._send(key, period, "current", verdict.links)
            # kept for the period's ended span: what says why, not the bookkeeping
            period["attributes"] = {k: v for k, v in verdict.attributes.items() if k in _KEPT}
            state[skey] = period
        history[HISTORY_KEY] = state
        return self.sent

    def _log_match_errors(self, matcher: Matcher) -> None:
        """Once per cycle: how often the group's expression raised, and the first exception."""
        self.match_errors = matcher.errors
        if matcher.first_error is not None:
            error, job, entry = matcher.first_error
            _logger.warning(
                "frontend_hooks: the group's match expression raised %d time(s) this cycle "
                "(job kinds x entries); first: %s, on entry %s for jobs with %s; where it "
                "raised on every entry a job could match, the job is told reason 'unknown'",
                matcher.errors, error, entry,
                ", ".join(f"{key}={value}" for key, value in matcher.kind(job)) or "no match attributes")

    def _budget_allows(self, period: dict) -> bool:
        if period.get("day") != self.day:
            period["day"], period["spans"] = self.day, 0
        if period["spans"] >= MAX_SPANS_PER_SUBMISSION_DAY:
            return False
        period["spans"] += 1
        return True

    def _end(self, key: tuple, period: dict, why: str) -> None:
        self._send(key, period, "ended", [], end=why)

    def _send(self, key: tuple, period: dict, state: str, links: list, end: str | None = None):
        if not self._budget_allows(period):
            return
        reason = period["reason"]
        parent = SpanContext(int(key[0], 16), int(key[1], 16), is_remote=True,
                             trace_flags=TraceFlags(period.get("flags", 1) & 0xFF))
        attributes = {gc.STAGE: gc.STAGE_JOB_WAITING, gc.JOB_WAITING_REASON: reason,
                      gc.JOB_WAITING_STATE: state, gc.JOB_OWNER: key[2],
                      **{k: v for k, v in self.base.items() if isinstance(v, str)},
                      **period.get("attributes", {})}
        if gc.JOB_WAITING_DETAIL not in attributes:   # the period's own, kept for its ended span
            attributes[gc.JOB_WAITING_DETAIL] = detail(reason, attributes)
        if end:
            attributes[gc.JOB_WAITING_END] = end
        if period["spans"] >= MAX_SPANS_PER_SUBMISSION_DAY:
            attributes[gc.JOB_WAITING_LAST_TODAY] = True
        start = period["since"] if state == "ended" else self.now
        links = list(links)
        if isinstance(self.cycle_link, SpanContext) and self.cycle_link.is_valid:
            links.append(Link(self.cycle_link))
        ids = getattr(self.tracer, "id_generator", None)
        if isinstance(ids, _ChosenIds):
            # a period stored before its id was kept (an older history) is named by its start
            ids.next_span_id = _span_id(period.get("id") or f"{key}\n{period['since']:.6f}\n{reason}", state)
        span = self.tracer.start_span(
            gc.STAGE_JOB_WAITING, context=trace.set_span_in_context(NonRecordingSpan(parent)),
            kind=SpanKind.INTERNAL, attributes=attributes, links=links,
            start_time=int(start * 1e9))
        span.end(end_time=int(self.now * 1e9))
        self.sent += 1


_KEPT = {gc.JOB_WAITING_DETAIL, gc.JOB_WAITING_IDLE_JOBS, gc.JOB_WAITING_REASON_ENTRIES, gc.JOB_WAITING_LIMITS,
         gc.JOB_WAITING_QUEUED_GLIDEINS}
