"""One compact timeline per glidein trace, and a columnar table of many.

``timeline_from_spans(trace_id, spans)`` reads the flat span dicts of one trace (the shape of
``exporters.otlp_json.flatten_request``) and keeps only what the analysis needs: identity
(entry, site, cores), the Factory-side waits, the validation scripts, the condor phase, the
job intervals with their exit codes, the shutdown reason and outcome. It never raises on odd
input: problems (no root, negative durations, clock skew between Factory and node, jobs
outside the condor phase, ...) are recorded as bits in ``problems`` and counted by stats.

``TimelineTable`` holds many timelines as numpy columns (one row per glidein, one per job,
one per validation script), so a million glideins fit in a few hundred MB.

Times are epoch seconds (float). Each derived duration uses spans from one clock only:
queue wait from Factory spans, everything else from node spans, so a skewed node clock
shows up as a problem but does not distort the numbers.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field, replace

import numpy as np

NAN = float("nan")
UNKNOWN = "(unknown)"

# problem bits
NO_ROOT = 1 << 0
MULTIPLE_ROOTS = 1 << 1
NEGATIVE_DURATION = 1 << 2
CLOCK_SKEW = 1 << 3
JOB_OUTSIDE_CONDOR = 1 << 4
NO_CONDOR = 1 << 5
INCOMPLETE = 1 << 6
MISSING_END = 1 << 7
NO_NODE_SPANS = 1 << 8
NO_ENTRY = 1 << 9
FRAGMENTED = 1 << 10
PROBLEMS = {
    NO_ROOT: "no_root",
    MULTIPLE_ROOTS: "multiple_roots",
    NEGATIVE_DURATION: "negative_duration",
    CLOCK_SKEW: "clock_skew",
    JOB_OUTSIDE_CONDOR: "job_outside_condor",
    NO_CONDOR: "jobs_without_condor",
    INCOMPLETE: "incomplete",
    MISSING_END: "missing_end",
    NO_NODE_SPANS: "no_node_spans",
    NO_ENTRY: "no_entry",
    FRAGMENTED: "fragmented",
}

# a node that starts this long before the Factory submitted it has a skewed clock
SKEW_TOLERANCE_S = 60.0
NODE_STAGES = ("setup", "validation", "condor.start", "job", "idle", "teardown")
FAILED_EXIT_BY = ("remove", "hold", "evict")
SHUTDOWN_REASONS = ("max_idle", "daemon_shutdown", "sigterm", "killed", "unknown")
OUTCOMES = ("ok", "validation_failed", "terminated", "incomplete")


@dataclass(slots=True)
class GlideinTimeline:
    """What one glidein did, in epoch seconds (NaN when unknown)."""

    trace_id: str
    entry: str = UNKNOWN
    site: str = UNKNOWN
    cores: float = 1.0
    outcome: str = "unknown"
    shutdown_reason: str = ""
    problems: int = 0
    skew_s: float = 0.0               # node clock minus Factory clock, when evidently skewed
    submit: float = NAN               # Factory: submission
    queue_s: float = NAN              # Factory: waiting at the site (sum of factory.queue)
    held_s: float = 0.0               # Factory: held (sum of factory.held)
    node_start: float = NAN           # node: first node-side span start
    node_end: float = NAN             # node: last node-side span end (cleanup done)
    setup_s: float = NAN              # node: the setup stage
    validations: tuple = ()           # (script, seconds, failed, error_type)
    condor_start: float = NAN
    condor_end: float = NAN
    jobs: tuple = ()                  # (start, end, exit_code (-1 unknown), failed, cores)
    failure: tuple = ("", "", "")     # a failed glidein's (domain, error type, message), else empty
    job_domains: tuple = ()           # each job's failure domain ("" when it did not fail), as jobs

    # -- derived -------------------------------------------------------------------
    @property
    def lifetime_s(self) -> float:
        return self.node_end - self.node_start

    @property
    def validation_failed(self) -> bool:
        return self.outcome == "validation_failed" or any(v[2] for v in self.validations)

    def merge(self, other: "GlideinTimeline") -> "GlideinTimeline":
        """Combine two partial timelines of the same trace (a trace split across files)."""
        def pick(a, b, empty):
            return a if a != empty and not (isinstance(a, float) and math.isnan(a)) else b
        jobs = {(round(j[0], 3), round(j[1], 3)): (j, d) for j, d in
                zip(self.jobs + other.jobs, _domains_of(self) + _domains_of(other))}
        merged_jobs = sorted(jobs.values())
        vals = {v[0]: v for v in self.validations + other.validations}
        merged = replace(
            self,
            entry=pick(self.entry, other.entry, UNKNOWN), site=pick(self.site, other.site, UNKNOWN),
            # the part with the root knows GLIDEIN_CPUS; a part without has only host facts
            cores=(self.cores if not self.problems & NO_ROOT else
                   other.cores if not other.problems & NO_ROOT else max(self.cores, other.cores)),
            outcome=pick(self.outcome, other.outcome, "unknown"),
            shutdown_reason=pick(self.shutdown_reason, other.shutdown_reason, ""),
            submit=_nanmin(self.submit, other.submit),
            queue_s=pick(self.queue_s, other.queue_s, NAN),
            held_s=max(self.held_s, other.held_s),
            node_start=_nanmin(self.node_start, other.node_start),
            node_end=_nanmax(self.node_end, other.node_end),
            setup_s=pick(self.setup_s, other.setup_s, NAN),
            validations=tuple(sorted(vals.values())),
            condor_start=_nanmin(self.condor_start, other.condor_start),
            condor_end=_nanmax(self.condor_end, other.condor_end),
            jobs=tuple(j for j, _ in merged_jobs), job_domains=tuple(d for _, d in merged_jobs),
            failure=self.failure if self.failure[0] else other.failure)
        problems = (self.problems | other.problems) | FRAGMENTED
        # a root or entry found in one part clears the other part's complaint
        if self.problems & NO_ROOT == 0 or other.problems & NO_ROOT == 0:
            problems &= ~NO_ROOT
        if merged.entry != UNKNOWN:
            problems &= ~NO_ENTRY
        if not math.isnan(merged.node_start):
            problems &= ~NO_NODE_SPANS
        merged.problems = problems
        return merged


def _domains_of(tl: "GlideinTimeline") -> tuple:
    return tl.job_domains if len(tl.job_domains) == len(tl.jobs) else ("",) * len(tl.jobs)


def _nanmin(a, b):
    if math.isnan(a):
        return b
    return a if math.isnan(b) else min(a, b)


def _nanmax(a, b):
    if math.isnan(a):
        return b
    return a if math.isnan(b) else max(a, b)


def stage_of(attrs, name) -> str:
    """The glidein stage of a span: its ``glidein.stage`` attribute, else from its name."""
    stage = attrs.get("glidein.stage") if attrs else None
    if stage:
        return str(stage)
    if not isinstance(name, str):
        return ""
    if name == "condor":
        return "condor.start"
    if name in ("glidein", "setup", "job", "idle", "teardown") or name.startswith("factory."):
        return name.split("/", 1)[0]
    if "/" in name:
        return "validation"
    return ""


def is_glidein_span(attrs, name) -> bool:
    """A span of a glidein stage (not a frontend/submit-cycle span): makes its trace a
    glidein trace."""
    stage = str((attrs or {}).get("glidein.stage", ""))
    if (attrs or {}).get("glidein.user_view") is True:
        return False  # "job on glidein" lives in the user's own trace, not a glidein's
    if stage:
        return not stage.startswith("frontend.")
    return name in ("glidein", "setup", "condor", "job")


def _attr(spans_attrs, key, default=None):
    for attrs in spans_attrs:
        if attrs and attrs.get(key) not in (None, ""):
            return attrs[key]
    return default


def _int(value, default=-1):
    if isinstance(value, bool) or value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return default


def _positive(value):
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


# A span as the timeline needs it (``span_record``; the store's fast reader, analysis.fastread,
# builds these directly): trace id, span id, start and end (ns, 0 when unknown), name, status
# code, ``(stage, glidein-stage span?, attributes)`` (``span_kind``: what the span's name and
# attributes say, shared by spans with the same name and attributes) and the resource
# attributes. Attributes are dicts or None; only the keys in TIMELINE_KEYS are read.
R_TRACE, R_SID, R_START, R_END, R_NAME, R_STATUS, R_KIND, R_RESOURCE = range(8)
K_STAGE, K_GLIDEIN, K_ATTRS = range(3)

# every span attribute the timeline reads (resource attributes: the identity ones)
IDENTITY_KEYS = frozenset({"glidein.entry", "glidein.site", "glidein.cpus", "GLIDEIN_CPUS",
                           "host.cpu.logical_count"})
TIMELINE_KEYS = IDENTITY_KEYS | frozenset({
    "glidein.stage", "glidein.incomplete", "glidein.outcome", "glidein.shutdown.reason",
    "glidein.script.id", "glidein.script.status", "error.type",
    "job.exit_code", "job.exit_signal", "job.exit_by", "job.request_cpus", "glidein.user_view",
    "glidein.failure.domain", "glidein.failure.evidence", "glidein.script.detail", "job.failure.domain"})


def span_kind(attrs, name) -> tuple:
    """``(stage, is_glidein_span, attrs)`` of a span's attributes and name."""
    return stage_of(attrs, name), is_glidein_span(attrs, name), attrs


def span_record(span: dict) -> tuple:
    """A flat span dict as the record ``timeline_from_records`` reads."""
    name = span.get("name", "")
    return (span.get("trace_id"), span.get("span_id"), span.get("start_ns") or 0, span.get("end_ns") or 0,
            name, span.get("status_code"), span_kind(span.get("attributes"), name), span.get("resource"))


def timeline_from_spans(trace_id: str, spans) -> GlideinTimeline:
    """Build the timeline of one trace from its flat span dicts. Never raises on bad data."""
    return timeline_from_records(trace_id, [span_record(span) for span in spans])


_BUCKETS = {"glidein": 0, "setup": 1, "validation": 2, "condor.start": 3, "job": 4, "teardown": 5,
            "factory.queue": 6, "factory.held": 7, "factory.submit": 8,
            # the slot kept after a validation failure: part of the node's life (waste)
            "post_failure_sleep": 5}
_EMPTY: dict = {}


def timeline_from_records(trace_id: str, records) -> GlideinTimeline:
    """Build the timeline of one trace from its span records (``span_record``)."""
    return GlideinTimeline(*timeline_fields(trace_id, records))


def timeline_fields(trace_id: str, records) -> tuple:
    """The fields of ``timeline_from_records``'s GlideinTimeline, in their order (what
    ``TableBuilder.add_fields`` takes: no GlideinTimeline object on the fast path)."""
    problems = 0
    buckets = ([], [], [], [], [], [], [], [], [])
    roots, setups, validations, condors, jobs, teardowns, queues, helds, submits = buckets
    bucket_of = _BUCKETS.get
    if len({rec[1] for rec in records}) < len(records):   # a span id twice (or several without one)
        records = _first_of_each_span(records)
    for rec in records:
        start = rec[2] / 1e9     # R_START, R_END, R_KIND: literal indices in this loop
        end_ns = rec[3]
        if not end_ns:
            problems |= MISSING_END
            end = start
        else:
            end = end_ns / 1e9
            if end < start:
                problems |= NEGATIVE_DURATION
                end = start
        index = bucket_of(rec[6][0])
        if index is not None:   # idle spans are re-derived from the jobs; unknown stages ignored
            buckets[index].append((start, end, rec))

    if not roots:
        problems |= NO_ROOT
        root_attrs = []
    else:
        if len(roots) > 1:
            problems |= MULTIPLE_ROOTS
        root_attrs = [r[2][R_KIND][K_ATTRS] for r in roots]
    # identity: the roots' attributes, then the resources of the first 8 spans in this order
    all_attrs = list(root_attrs)
    for bucket in (roots, setups, condors, jobs, teardowns, queues, submits, validations):
        for item in bucket:
            if len(all_attrs) - len(root_attrs) == 8:
                break
            all_attrs.append(item[2][R_RESOURCE])

    entry = str(_attr(all_attrs, "glidein.entry", UNKNOWN))
    if entry == UNKNOWN:
        problems |= NO_ENTRY
    site = str(_attr(all_attrs, "glidein.site", UNKNOWN))
    cores = float(_positive(_attr(all_attrs, "glidein.cpus")) or _positive(_attr(all_attrs, "GLIDEIN_CPUS"))
                  or _positive(_attr(all_attrs, "host.cpu.logical_count")) or 1.0)
    if root_attrs and _attr(root_attrs, "glidein.incomplete"):
        problems |= INCOMPLETE

    # Factory side (Factory clock)
    submit = queue_s = NAN
    held_s = 0.0
    if submits:
        submit = min([s for s, _, _ in submits])
    elif queues:
        submit = min([s for s, _, _ in queues])
    if queues:
        queue_s = sum([e - s for s, e, _ in queues])
    if helds:
        held_s = sum([e - s for s, e, _ in helds])

    # node side (node clock)
    skew_s = 0.0
    node_start = node_end = NAN
    node_items = setups + validations + condors + jobs + teardowns
    if node_items:
        node_start = min([s for s, _, _ in node_items])
        node_end = max([e for _, e, _ in node_items])
        if submits or queues or helds:
            earliest_factory = min([s for s, _, _ in submits + queues + helds])
            if node_start < earliest_factory - SKEW_TOLERANCE_S:
                problems |= CLOCK_SKEW
                # the node starts right after the Factory sees it running (end of the queue)
                seen_running = max([e for _, e, _ in queues]) if queues else earliest_factory
                skew_s = node_start - seen_running
    else:
        problems |= NO_NODE_SPANS

    setup_s = NAN
    if setups:
        setup_s = max([e for _, e, _ in setups]) - min([s for s, _, _ in setups])
    elif validations:
        setup_s = max([e for _, e, _ in validations]) - min([s for s, _, _ in validations])
    vals = ()
    any_failed = False
    failed_detail = ""
    if validations:
        if len(validations) > 1:
            validations.sort(key=_first)
        vals = []
        for start, end, rec in validations:
            attrs = rec[R_KIND][K_ATTRS] or _EMPTY
            failed = rec[R_STATUS] == 2 or str(attrs.get("glidein.script.status", "")).upper() == "ERROR"
            if failed:
                if not any_failed:
                    failed_detail = str(attrs.get("glidein.script.detail") or "")
                any_failed = True
                error_type = str(attrs.get("error.type", "")) or "Unknown"
            else:
                error_type = ""
            vals.append((str(attrs.get("glidein.script.id") or rec[R_NAME]), end - start, failed, error_type))
        vals = tuple(vals)

    condor_start = condor_end = NAN
    reason = ""
    if condors:
        condor_start = min([s for s, _, _ in condors])
        condor_end = max([e for _, e, _ in condors])
        reason = _attr([c[2][R_KIND][K_ATTRS] for c in condors], "glidein.shutdown.reason", "")
        reason = str(reason) if reason else "unknown"

    job_rows = job_domains = ()
    if jobs:
        job_rows = []
        for start, end, rec in jobs:
            attrs = rec[R_KIND][K_ATTRS] or _EMPTY
            code = _int(attrs.get("job.exit_code"))
            failed = (rec[R_STATUS] == 2 or code > 0 or attrs.get("job.exit_signal") not in (None, 0, "")
                      or attrs.get("job.exit_by") in FAILED_EXIT_BY)
            request = _positive(attrs.get("job.request_cpus"))
            job_cores = min(request, cores) if request else cores
            if condors and (start < condor_start - 1 or end > condor_end + 1):
                problems |= JOB_OUTSIDE_CONDOR
            job_rows.append(((start, end, code, bool(failed), float(job_cores)),
                             str(attrs.get("job.failure.domain") or ("(unknown)" if failed else ""))))
        if not condors:
            problems |= NO_CONDOR
        job_rows.sort()
        job_domains = tuple(d for _, d in job_rows)
        job_rows = tuple(j for j, _ in job_rows)

    outcome = (_attr(root_attrs, "glidein.outcome") if root_attrs else None) or (_attr(
        [t[2][R_KIND][K_ATTRS] for t in teardowns], "glidein.outcome") if teardowns else None)
    if not outcome:
        if any_failed:
            outcome = "validation_failed"
        elif problems & INCOMPLETE:
            outcome = "incomplete"
        else:
            outcome = "unknown"
    failure = ("", "", "")
    domain = _attr(root_attrs, "glidein.failure.domain") if root_attrs else None
    if domain or str(outcome) not in ("ok", "unknown"):
        error_type = (_attr(root_attrs, "error.type") if root_attrs else None) or next(
            (v[3] for v in vals if v[2]), "") or str(outcome)
        message = failed_detail or str((_attr(root_attrs, "glidein.failure.evidence") if root_attrs else "") or "")
        failure = (str(domain or "(unknown)"), str(error_type), message or f"outcome={outcome}")
    return (trace_id, entry, site, cores, str(outcome), reason, problems, skew_s, submit, queue_s, held_s,
            node_start, node_end, setup_s, vals, condor_start, condor_end, job_rows, failure, job_domains)


def _first_of_each_span(records) -> list:
    """The first record of each span id (records without an id are all kept)."""
    seen = set()
    out = []
    for rec in records:
        sid = rec[R_SID]
        if sid:
            if sid in seen:
                continue
            seen.add(sid)
        out.append(rec)
    return out


def _first(item):
    return item[0]


# -- columnar table ---------------------------------------------------------------------

class Interner:
    """Strings <-> small integer codes."""

    def __init__(self, values=()):
        self.values: list[str] = []
        self.codes: dict[str, int] = {}
        for value in values:
            self.code(value)

    def code(self, value: str) -> int:
        code = self.codes.get(value)
        if code is None:
            code = self.codes[value] = len(self.values)
            self.values.append(value)
        return code

    def __len__(self):
        return len(self.values)


GLIDEIN_FLOAT_COLUMNS = ("cores", "skew_s", "submit", "queue_s", "held_s", "node_start", "node_end",
                         "setup_s", "condor_start", "condor_end")   # TableBuilder.add lists them in this order


class TableBuilder:
    """Append timelines (or their raw fields) into compact arrays; ``finish()`` -> table."""

    def __init__(self):
        self.entries, self.sites = Interner(), Interner()
        self.outcomes, self.reasons = Interner(OUTCOMES), Interner(("",) + SHUTDOWN_REASONS)
        self.scripts, self.errors = Interner(), Interner(("",))
        self.domains, self.ftypes, self.messages = Interner(("",)), Interner(("",)), Interner(("",))
        self.trace_ids: list[str] = []
        self.g_float = {name: array("d") for name in GLIDEIN_FLOAT_COLUMNS}
        self._float_appends = [self.g_float[name].append for name in GLIDEIN_FLOAT_COLUMNS]
        self.g_int = {name: array("q") for name in ("entry", "site", "outcome", "reason", "problems",
                                                     "n_jobs", "n_val", "domain", "ftype", "message")}
        self.j_float = {name: array("d") for name in ("start", "end", "cores")}
        self.j_int = {name: array("q") for name in ("exit", "failed", "domain")}
        self.v_float = array("d")
        self.v_int = {name: array("q") for name in ("name", "failed", "error")}

    def __len__(self):
        return len(self.trace_ids)

    def add(self, tl: GlideinTimeline) -> int:
        return self.add_fields((tl.trace_id, tl.entry, tl.site, tl.cores, tl.outcome, tl.shutdown_reason,
                                tl.problems, tl.skew_s, tl.submit, tl.queue_s, tl.held_s, tl.node_start,
                                tl.node_end, tl.setup_s, tl.validations, tl.condor_start, tl.condor_end, tl.jobs,
                                tl.failure, _domains_of(tl)))

    def add_fields(self, f: tuple) -> int:
        """Add a timeline given as its fields in GlideinTimeline's order (``timeline_fields``)."""
        (trace_id, entry, site, cores, outcome, reason, problems, skew_s, submit, queue_s, held_s, node_start,
         node_end, setup_s, validations, condor_start, condor_end, jobs, failure, job_domains) = f
        row = len(self.trace_ids)
        self.trace_ids.append(trace_id)
        a = self._float_appends   # GLIDEIN_FLOAT_COLUMNS' order
        a[0](cores)
        a[1](skew_s)
        a[2](submit)
        a[3](queue_s)
        a[4](held_s)
        a[5](node_start)
        a[6](node_end)
        a[7](setup_s)
        a[8](condor_start)
        a[9](condor_end)
        gi = self.g_int
        gi["entry"].append(self.entries.code(entry))
        gi["site"].append(self.sites.code(site))
        gi["outcome"].append(self.outcomes.code(outcome))
        gi["reason"].append(self.reasons.code(reason))
        gi["problems"].append(problems)
        gi["n_jobs"].append(len(jobs))
        gi["n_val"].append(len(validations))
        gi["domain"].append(self.domains.code(failure[0]))
        gi["ftype"].append(self.ftypes.code(failure[1]))
        gi["message"].append(self.messages.code(failure[2]))
        if jobs:
            jf, ji = self.j_float, self.j_int
            domain_code = self.domains.code
            for (start, end, code, failed, job_cores), domain in zip(jobs, job_domains or ("",) * len(jobs)):
                jf["start"].append(start)
                jf["end"].append(end)
                jf["cores"].append(job_cores)
                ji["exit"].append(code)
                ji["failed"].append(1 if failed else 0)
                ji["domain"].append(domain_code(domain))
        if validations:
            vi = self.v_int
            script, error_code = self.scripts.code, self.errors.code
            for name, seconds, failed, error in validations:
                self.v_float.append(seconds)
                vi["name"].append(script(name))
                vi["failed"].append(1 if failed else 0)
                vi["error"].append(error_code(error))
        return row

    def finish(self) -> "TimelineTable":
        n_jobs = np.frombuffer(self.g_int["n_jobs"], dtype=np.int64).copy()
        n_val = np.frombuffer(self.g_int["n_val"], dtype=np.int64).copy()
        cols = {name: np.frombuffer(arr, dtype=np.float64).copy() for name, arr in self.g_float.items()}
        for name in ("entry", "site", "outcome", "reason", "problems", "domain", "ftype", "message"):
            cols[name] = np.frombuffer(self.g_int[name], dtype=np.int64).astype(np.int32)
        cols["n_jobs"], cols["n_val"] = n_jobs.astype(np.int32), n_val.astype(np.int32)
        jobs = {name: np.frombuffer(arr, dtype=np.float64).copy() for name, arr in self.j_float.items()}
        jobs["exit"] = np.frombuffer(self.j_int["exit"], dtype=np.int64).astype(np.int32)
        jobs["failed"] = np.frombuffer(self.j_int["failed"], dtype=np.int64).astype(bool)
        jobs["domain"] = np.frombuffer(self.j_int["domain"], dtype=np.int64).astype(np.int32)
        jobs["glidein"] = np.repeat(np.arange(len(n_jobs), dtype=np.int64), n_jobs)
        vals = {"seconds": np.frombuffer(self.v_float, dtype=np.float64).copy(),
                "name": np.frombuffer(self.v_int["name"], dtype=np.int64).astype(np.int32),
                "failed": np.frombuffer(self.v_int["failed"], dtype=np.int64).astype(bool),
                "error": np.frombuffer(self.v_int["error"], dtype=np.int64).astype(np.int32),
                "glidein": np.repeat(np.arange(len(n_val), dtype=np.int64), n_val)}
        names = {"entry": list(self.entries.values), "site": list(self.sites.values),
                 "outcome": list(self.outcomes.values), "reason": list(self.reasons.values),
                 "script": list(self.scripts.values), "error": list(self.errors.values),
                 "domain": list(self.domains.values), "ftype": list(self.ftypes.values),
                 "message": list(self.messages.values)}
        return TimelineTable(cols, jobs, vals, names, list(self.trace_ids))


class TimelineTable:
    """Many glideins as numpy columns.

    ``g``: per glidein (see GLIDEIN_FLOAT_COLUMNS, plus entry/site/outcome/reason codes,
    problems bits, n_jobs, n_val, and a failed glidein's domain/ftype/message codes, 0 = none);
    ``jobs``: per job (start, end, cores, exit, failed, failure domain code, glidein row,
    sorted by glidein then start); ``vals``: per validation script run (seconds, name code,
    failed, error code, glidein row); ``names``: the code -> string lists.
    """

    def __init__(self, g: dict, jobs: dict, vals: dict, names: dict, trace_ids: list | None = None):
        self.g, self.jobs, self.vals, self.names = g, jobs, vals, names
        self.trace_ids = trace_ids

    def __len__(self):
        return len(self.g["entry"])

    @property
    def job_offsets(self) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(self.g["n_jobs"], dtype=np.int64)))

    @property
    def val_offsets(self) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(self.g["n_val"], dtype=np.int64)))

    @classmethod
    def empty(cls) -> "TimelineTable":
        return TableBuilder().finish()

    @classmethod
    def from_timelines(cls, timelines) -> "TimelineTable":
        builder = TableBuilder()
        for tl in timelines:
            builder.add(tl)
        return builder.finish()

    def timeline(self, row: int) -> GlideinTimeline:
        """The row as a GlideinTimeline (for merging, printing and tests)."""
        g, names = self.g, self.names
        jo, vo = self.job_offsets, self.val_offsets
        j, v = self.jobs, self.vals
        jobs = tuple((float(j["start"][i]), float(j["end"][i]), int(j["exit"][i]), bool(j["failed"][i]),
                      float(j["cores"][i])) for i in range(jo[row], jo[row + 1]))
        vals = tuple((names["script"][v["name"][i]], float(v["seconds"][i]), bool(v["failed"][i]),
                      names["error"][v["error"][i]]) for i in range(vo[row], vo[row + 1]))
        kwargs = {name: float(g[name][row]) for name in GLIDEIN_FLOAT_COLUMNS}
        failure = (names["domain"][g["domain"][row]], names["ftype"][g["ftype"][row]],
                   names["message"][g["message"][row]])
        job_domains = tuple(names["domain"][j["domain"][i]] for i in range(jo[row], jo[row + 1]))
        return GlideinTimeline(
            failure=failure, job_domains=job_domains,
            trace_id=self.trace_ids[row] if self.trace_ids else str(row),
            entry=names["entry"][g["entry"][row]], site=names["site"][g["site"][row]],
            outcome=names["outcome"][g["outcome"][row]], shutdown_reason=names["reason"][g["reason"][row]],
            problems=int(g["problems"][row]), validations=vals, jobs=jobs, **kwargs)

    def select(self, mask: np.ndarray) -> "TimelineTable":
        """The rows where mask is true (names are kept, codes unchanged)."""
        mask = np.asarray(mask, dtype=bool)
        g = {name: col[mask] for name, col in self.g.items()}
        new_index = np.cumsum(mask) - 1
        jmask = mask[self.jobs["glidein"]]
        jobs = {name: col[jmask] for name, col in self.jobs.items()}
        jobs["glidein"] = new_index[jobs["glidein"]]
        vmask = mask[self.vals["glidein"]]
        vals = {name: col[vmask] for name, col in self.vals.items()}
        vals["glidein"] = new_index[vals["glidein"]]
        ids = [t for t, keep in zip(self.trace_ids, mask) if keep] if self.trace_ids else None
        return TimelineTable(g, jobs, vals, dict(self.names), ids)

    @classmethod
    def concat(cls, tables) -> "TimelineTable":
        """One table from several (codes re-mapped onto shared name lists)."""
        tables = [t for t in tables if t is not None]
        if not tables:
            return cls.empty()
        interners = {kind: Interner(tables[0].names[kind]) for kind in tables[0].names}
        g_parts, j_parts, v_parts, ids = [], [], [], []
        offset = 0
        for table in tables:
            remap = {kind: np.array([interners[kind].code(v) for v in table.names[kind]] or [0], dtype=np.int32)
                     for kind in table.names}
            g = dict(table.g)
            for col, kind in (("entry", "entry"), ("site", "site"), ("outcome", "outcome"), ("reason", "reason"),
                              ("domain", "domain"), ("ftype", "ftype"), ("message", "message")):
                g[col] = remap[kind][g[col]] if len(g[col]) else g[col]
            jobs = dict(table.jobs)
            if len(jobs["domain"]):
                jobs["domain"] = remap["domain"][jobs["domain"]]
            jobs["glidein"] = jobs["glidein"] + offset
            vals = dict(table.vals)
            vals["glidein"] = vals["glidein"] + offset
            if len(vals["name"]):
                vals["name"] = remap["script"][vals["name"]]
                vals["error"] = remap["error"][vals["error"]]
            g_parts.append(g)
            j_parts.append(jobs)
            v_parts.append(vals)
            ids.extend(table.trace_ids or [""] * len(table))
            offset += len(table)
        cat = lambda parts: {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}  # noqa: E731
        names = {kind: list(interner.values) for kind, interner in interners.items()}
        return cls(cat(g_parts), cat(j_parts), cat(v_parts), names, ids)


class Intervals:
    """The condor phase of every glidein of a table, relative to its start, in the shape
    stats and the what-if replay need. Times are kept as integer milliseconds while
    computing cursors (exact segmented maxima), exposed as float seconds.

    Per glidein: ``has_condor`` (a condor phase, or jobs that imply one), ``L`` (its length),
    ``cend`` (when the last job finished, 0 with no job), ``tail`` (``L - cend``).
    Per job (table order: by glidein, then start): ``rel_s``/``rel_e`` (clipped into the
    phase), ``cursor`` (when the jobs before it had all finished: 0 for the first),
    ``gap`` (idle time before it), ``first`` (first job of its glidein).
    The idle time a glidein had is then exactly: before its first job ``gap[first]``,
    between jobs ``gap[~first]``, after its last job ``tail`` (or ``L`` with no job),
    the same cut as the converter's ``idle`` spans.
    """

    def __init__(self, table: "TimelineTable"):
        g, j = table.g, table.jobs
        n = len(table)
        n_jobs = g["n_jobs"].astype(np.int64)
        offsets = table.job_offsets
        jg = j["glidein"]
        has_jobs = n_jobs > 0
        first_start = np.full(n, np.nan)
        last_end = np.full(n, np.nan)
        if len(jg):
            first_start[has_jobs] = j["start"][offsets[:-1][has_jobs]]
            last_end[has_jobs] = np.maximum.reduceat(j["end"], offsets[:-1][has_jobs])
        condor = np.isfinite(g["condor_start"]) & np.isfinite(g["condor_end"])
        cs = np.where(condor, g["condor_start"], first_start)
        ce = np.where(condor, g["condor_end"], last_end)
        self.has_condor = condor | has_jobs
        to_ms = lambda x: np.round(x * 1000.0).astype(np.int64)  # noqa: E731
        L_ms = np.where(self.has_condor, np.maximum(to_ms(np.nan_to_num(ce - cs)), 0), 0)
        cs0 = np.nan_to_num(cs)
        rs = np.clip(to_ms(j["start"] - cs0[jg]), 0, L_ms[jg]) if len(jg) else np.zeros(0, np.int64)
        re = np.clip(to_ms(j["end"] - cs0[jg]), rs, L_ms[jg]) if len(jg) else np.zeros(0, np.int64)
        first = np.zeros(len(jg), dtype=bool)
        first[offsets[:-1][has_jobs]] = True
        big = int(L_ms.max(initial=0)) + 1
        key = jg * big + re
        running = np.maximum.accumulate(key) - jg * big if len(jg) else key
        cursor = np.zeros(len(jg), dtype=np.int64)
        if len(jg) > 1:
            cursor[1:] = running[:-1]
        cursor[first] = 0
        gap = np.maximum(rs - cursor, 0)
        cend = np.zeros(n, dtype=np.int64)
        if len(jg):
            last = offsets[1:][has_jobs] - 1
            cend[has_jobs] = running[last]
        self.n_jobs = n_jobs
        self.offsets = offsets
        self.glidein = jg
        self.first = first
        self.L = L_ms / 1000.0
        self.cend = cend / 1000.0
        self.tail = (L_ms - cend) / 1000.0
        self.rel_s = rs / 1000.0
        self.rel_e = re / 1000.0
        self.cursor = cursor / 1000.0
        self.gap = gap / 1000.0
