"""One glidein's spans -> its row in the glidein table and one row per user job
(schema.GLIDEINS, schema.JOBS). Durations are the spans' own (end - start, in seconds), so the
table agrees with the traces; GlideinWMS's quantities come from gwms.py. The spans are those
the converter makes for one glidein (root first or not: the root is found by its stage);
spans of other traces (the user's view of a job) are ignored.

Values the node reports (HTCondor's own counts, a job's CPU and memory, the host's size) are
untrusted: each must be a finite number within the glidein's lifetime or a physical bound
(``Plausible``), else it is stored as NULL (a duration falls back to its span's length) and
counted in the row's ``implausible_values``, so a forged value cannot make one row dominate a
sum or a waste figure."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from operator import itemgetter

from opentelemetry.trace import StatusCode

from ..core import conventions as c, ids
from ..core import failure
from ..core.sampling import RATIO_ATTRIBUTE
from . import gwms
from .aggregates import FAILED_EXITS
from .schema import GLIDEINS, JOBS, SCHEMA_VERSION, TIMELINE, names

NS = 1_000_000_000
MESSAGE_CHARS = 1000
#: physical bounds of one worker node: beyond them a reported value is forged or broken
MAX_CPUS = 4096                  # logical CPUs
MAX_MEMORY_BYTES = 1 << 46       # 64 TiB
MAX_JOB_HISTORY_S = 366 * 86400  # a job's wall time summed over all its runs (RemoteWallClockTime)
_MD5 = re.compile("[0-9a-f]{32}")   # glidein_version: what the returned stdout's checksum line can hold

#: glidein_config key -> column; the cleanup hook puts each on the root as glidein.setting.<column>
SETTINGS = {"GLIDEIN_Max_Idle": "max_idle_s", "GLIDEIN_Max_Tail": "max_tail_s",
            "GLIDEIN_Retire_Time": "retire_time_s", "GLIDEIN_Retire_Time_Spread": "retire_time_spread_s",
            "GLIDEIN_Max_Walltime": "max_walltime_s", "GLIDEIN_Job_Max_Time": "job_max_time_s",
            "GLIDEIN_Graceful_Shutdown": "graceful_shutdown_s"}
SETTING_PREFIX = c.GLIDEIN_SETTING_PREFIX

_IDENTITY = (("factory", c.GLIDEIN_FACTORY), ("entry", c.GLIDEIN_ENTRY), ("site", c.GLIDEIN_SITE),
             ("client", c.GLIDEIN_CLIENT), ("client_group", c.GLIDEIN_CLIENT_GROUP),
             ("schedd", c.GLIDEIN_SCHEDD), ("cluster", c.GLIDEIN_CLUSTER), ("proc", c.GLIDEIN_PROC),
             ("multi_index", c.GLIDEIN_MULTI_INDEX), ("glidein_name", c.GLIDEIN_NAME),
             ("uuid", c.GLIDEIN_UUID))
_HOST = (("host_name", c.HOST_NAME), ("cpu_model", c.HOST_CPU_MODEL_NAME),
         ("cpu_logical_count", c.HOST_CPU_LOGICAL_COUNT), ("memory_bytes", c.HOST_MEMORY_TOTAL_BYTES),
         ("os_description", c.OS_DESCRIPTION), ("os_version", c.OS_VERSION))
_VALIDATION_LISTS = {"main": "validation_main_s", "entry": "validation_entry_s",
                     "client": "validation_client_s", "client_group": "validation_client_group_s"}
_IDLE_KINDS = {"before_first_job": "idle_before_first_job_s", "between_jobs": "idle_between_jobs_s",
               "tail": "idle_tail_s", "no_job": "idle_no_job_s"}
_JOB_ATTRS = (("job_global_id", c.JOB_GLOBAL_ID), ("job_cluster", c.JOB_CLUSTER_ID),
              ("job_proc", c.JOB_PROC_ID), ("owner", c.JOB_OWNER),
              ("accounting_group", c.JOB_ACCOUNTING_GROUP), ("request_cpus", c.JOB_REQUEST_CPUS),
              ("request_memory_mb", c.JOB_REQUEST_MEMORY_MB), ("slot", c.JOB_SLOT),
              ("remote_wall_s", c.JOB_WALL_S), ("exit_code", c.JOB_EXIT_CODE),
              ("exit_signal", c.JOB_EXIT_SIGNAL), ("exit_by", c.JOB_EXIT_BY),
              ("failure_domain", c.JOB_FAILURE_DOMAIN), ("failure_rule", c.JOB_FAILURE_RULE),
              ("failure_label", c.JOB_FAILURE_LABEL), ("failure_service", c.JOB_FAILURE_SERVICE),
              ("failure_downtime", c.JOB_FAILURE_DOWNTIME), ("hold_reason", c.JOB_HOLD_REASON),
              ("num_job_starts", c.JOB_NUM_JOB_STARTS), ("cpu_user_s", c.GLIDEIN_RESOURCE_CPU_USER_S),
              ("cpu_system_s", c.GLIDEIN_RESOURCE_CPU_SYSTEM_S), ("rss_bytes", c.JOB_RSS_BYTES),
              ("user_traceparent", c.JOB_USER_TRACEPARENT))


_IDENTITY_COLUMNS = tuple(column for column, _ in _IDENTITY)
_IDENTITY_NAMES = tuple(name for _, name in _IDENTITY)


class NoGlideinRoot(ValueError):
    """The spans hold no glidein root span: nothing to make a row of."""


def _stage(span) -> str:
    return (span.attributes or {}).get(c.STAGE, "")


def _us(ns) -> int | None:
    return None if ns is None else ns // 1000


def find_root(spans):
    for span in spans:
        if span.parent is None and _stage(span) == "glidein":
            return span
    raise NoGlideinRoot("no glidein root span")


#: stages whose spans are summed by one of their attributes: stage -> (attribute, value -> column)
_SUMMED_BY = {"validation": (c.GLIDEIN_SCRIPT_LIST, _VALIDATION_LISTS), "idle": (c.GLIDEIN_IDLE_KIND, _IDLE_KINDS)}


class _Stages(dict):
    """stage -> the glidein's spans of that stage (the root and other traces' spans left out)
    as records ``(start ns, end ns, attributes, span)``: each span's properties are read once
    here (the SDK's ``attributes`` makes a new mapping at every read), in one pass that also
    sums the validation spans by list and the idle spans by kind (``sums``: column -> seconds,
    None when no span); ``first(stage)`` is the record of a stage's earliest span, found once
    however often the row asks for it."""

    def __init__(self, root, spans):
        trace, stage_key = root.context.trace_id, c.STAGE
        groups: defaultdict = defaultdict(list)
        sums = dict.fromkeys(_SUMMED_COLUMNS)
        for span in spans:
            if span is root or span.context.trace_id != trace:
                continue
            attrs = span.attributes
            stage = attrs.get(stage_key, "")
            record = (span.start_time, span.end_time, attrs, span)
            groups[stage].append(record)
            summed = _SUMMED_BY.get(stage)
            if summed is not None:
                column = summed[1].get(attrs.get(summed[0]))
                if column is not None:
                    sums[column] = (sums[column] or 0) + (record[1] - record[0])
        super().__init__(groups)
        self.sums = {column: None if ns is None else ns / NS for column, ns in sums.items()}
        self._first: dict = {}

    def first(self, stage):
        if stage not in self._first:
            records = self.get(stage)
            self._first[stage] = (records[0] if len(records) == 1 else min(records, key=_START)) if records else None
        return self._first[stage]


_SUMMED_COLUMNS = tuple(column for _, columns in _SUMMED_BY.values() for column in columns.values())
_START = itemgetter(0)


def _seconds(record) -> float:
    return (record[1] - record[0]) / NS


def _sum(records) -> float | None:
    return sum(end - start for start, end, _, _ in records) / NS if records else None


def _whole(record) -> int:
    """A span's length in GlideinWMS's integer seconds (both ends truncated to the second)."""
    return record[1] // NS - record[0] // NS


def _in_job_order(records) -> list:
    """Jobs by start, then end, then span id: one order however the spans came (the full key
    only when two jobs share a start, which is rare)."""
    jobs = sorted(records, key=_START)
    if len({record[0] for record in jobs}) < len(jobs):
        jobs.sort(key=lambda record: (record[0], record[1], record[3].context.span_id))
    return jobs


def _int32(value) -> int | None:
    """An INTEGER column's value as the writer (Arrow) stores it: a number truncated to an
    integer, a forged one (text, a truth value, out of range) NULL."""
    if isinstance(value, float) and math.isfinite(value):
        value = int(value)
    return value if type(value) is int and -(1 << 31) <= value < 1 << 31 else None


class Plausible:
    """The checks of node-reported numbers for one glidein, counting what they refuse."""

    def __init__(self, lifetime_s: float):
        self.lifetime_s = lifetime_s + 1.0     # GlideinWMS truncates both ends to the second
        self.refused = 0

    def number(self, value, limit: float, minimum: float = 0, integer: bool = False):
        """``value`` when it is a finite number (an integer if ``integer``) within [minimum,
        limit] (None stays None), else None, counted."""
        if value is None:
            return None
        kind = type(value)
        if (kind is int or kind is float and not integer and math.isfinite(value)) and minimum <= value <= limit:
            return value
        self.refused += 1
        return None

    def within_life(self, value):
        """A duration of this glidein (seconds): at most its lifetime."""
        return self.number(value, self.lifetime_s)


def _instants(us) -> list:
    """TIMESTAMP values (microseconds) as the writer stores them: beyond Arrow's range, NULL."""
    if us and not (-(1 << 63) <= min(us) and max(us) < 1 << 63):
        return [t if -(1 << 63) <= t < 1 << 63 else None for t in us]
    return list(us)


def _failed(domain, exit_code, exit_signal, exit_by) -> bool:
    """The jobs dataset's rule for a failed job (table/aggregates.py JOB_FAILED) on the values its
    row stores: a failure domain, a non-zero exit code, a signal, or removed, held or evicted."""
    return (isinstance(domain, str) or exit_code not in (0, None) and (_int32(exit_code) or 0) != 0
            or exit_signal is not None and _int32(exit_signal) is not None or exit_by in FAILED_EXITS)


def _timeline(job_rows: list) -> dict:
    """The glidein's job timeline: its job rows' values (in their order) as lists, what the
    what-if replay reads from the glidein's own row without joining and sorting the jobs."""
    if not job_rows:
        return {name: [] for name in TIMELINE}
    started, ended, cpus, domain, code, signal, by = zip(*map(_TIMELINE_SOURCES, job_rows))
    return {"job_started_at": _instants(started), "job_ended_at": _instants(ended),
            "job_request_cpus": list(map(_int32, cpus)), "job_failed": list(map(_failed, domain, code, signal, by))}


def glidein_values(spans, *, trace_kept: bool = True) -> tuple[tuple, list[tuple]]:
    """(the glidein's row, its jobs' rows) from one glidein's spans, as tuples in their
    datasets' column order (what the writer takes with no column names repeated per row)."""
    row, jobs = _rows(spans, trace_kept)
    return _GLIDEIN_ORDER(row), jobs


def _rows(spans, trace_kept: bool) -> tuple[dict, list[tuple]]:
    root = find_root(spans)
    by_stage = _Stages(root, spans)
    attrs = root.attributes or {}
    row = {"schema_version": SCHEMA_VERSION, "trace_id": ids.trace_hex(root.context.trace_id)}
    row.update(zip(_IDENTITY_COLUMNS, map(attrs.get, _IDENTITY_NAMES)))
    row.update(_times(root, by_stage))
    row.update(_outcome(root, attrs, by_stage))
    plausible = Plausible(row["glidein_s"])
    cpus = attrs.get(c.GLIDEIN_CPUS)   # from the node: untrusted, maybe text or absurd
    row["cpus"] = plausible.number(cpus, MAX_CPUS, 1, integer=True)
    row["gatekeeper"] = attrs.get(c.GLIDEIN_GATEKEEPER)
    overload = attrs.get(c.GLIDEIN_OVERLOAD_ENABLED)
    row["overload_enabled"] = overload if isinstance(overload, bool) else None
    row["resource_name"] = attrs.get(c.GLIDEIN_RESOURCE_NAME) or None
    version = attrs.get(c.GLIDEIN_GWMS_STARTUP_MD5)
    row["glidein_version"] = version if isinstance(version, str) and _MD5.fullmatch(version) else None
    jobs = _in_job_order(by_stage.get("job", ()))
    classes = [gwms.job_class(a.get(c.JOB_EXIT_CODE), a.get(c.JOB_EXIT_SIGNAL), a.get(c.JOB_EXIT_BY))
               for _, _, a, _ in jobs]
    row.update(zip(_SETTING_COLUMNS, map(attrs.get, _SETTING_NAMES)))
    resource = root.resource.attributes if root.resource is not None else {}
    row.update({column: resource.get(name, attrs.get(name)) for column, name in _HOST})
    row["cpu_logical_count"] = plausible.number(row["cpu_logical_count"], MAX_CPUS, 1, integer=True)
    row["memory_bytes"] = plausible.number(row["memory_bytes"], MAX_MEMORY_BYTES, 1, integer=True)
    row.update(gwms.quantities(_gwms_run(row, root, by_stage, jobs, classes, plausible)))
    row["sampling_ratio"] = attrs.get(RATIO_ATTRIBUTE)
    row["trace_kept"] = trace_kept
    job_rows = _job_values(row, by_stage, jobs, classes, plausible)
    row.update(_timeline(job_rows))
    row["implausible_values"] = plausible.refused
    return row, job_rows


def _times(root, by_stage: _Stages) -> dict:
    setup, condor = by_stage.first("setup"), by_stage.first(c.STAGE_CONDOR)
    submit = by_stage.first(c.STAGE_FACTORY_SUBMIT)
    get = by_stage.get
    jobs = get("job", ())
    start, end = root.start_time, root.end_time
    out = {"submitted_at": _us(submit[0]) if submit else None,
           "queue_wait_s": _sum(get(c.STAGE_FACTORY_QUEUE)), "held_s": _sum(get(c.STAGE_FACTORY_HELD)),
           "node_start_at": _us(setup[0]) if setup else None,
           "setup_s": _seconds(setup) if setup else None,
           "validation_scripts": len(get("validation", ())),
           "condor_start_at": _us(condor[0]) if condor else None,
           "condor_s": _seconds(condor) if condor else None,
           "jobs": len(jobs), "jobs_wall_s": _sum(jobs),
           "teardown_s": _sum(get("teardown")),
           "post_failure_sleep_s": _sum(get("post_failure_sleep")),
           "started_at": _us(start), "ended_at": _us(end), "glidein_s": (end - start) / NS}
    out.update(by_stage.sums)
    return out


def _failed_stage(root, by_stage: _Stages):
    """The span that says why a failed glidein failed: the earliest stage in error other than
    setup (which only repeats its script's error) and jobs (the user's), else setup, else the root."""
    candidates = [record for stage, group in by_stage.items() if stage not in ("setup", "job") for record in group
                  if record[3].status.status_code is StatusCode.ERROR]
    if candidates:
        return min(candidates, key=_START)[3]
    setup = by_stage.first("setup")
    return setup[3] if setup is not None and setup[3].status.status_code is StatusCode.ERROR else root


def _outcome(root, attrs, by_stage: _Stages) -> dict:
    glidein_failed = failure.glidein_failed(root.status.status_code is StatusCode.ERROR, attrs)
    failed = _failed_stage(root, by_stage) if glidein_failed else None
    condor = by_stage.first(c.STAGE_CONDOR)
    teardown = by_stage.first("teardown")
    return {"outcome": attrs.get(c.GLIDEIN_OUTCOME),
            "failed": glidein_failed,
            "failure_domain": attrs.get(c.GLIDEIN_FAILURE_DOMAIN),
            "failure_evidence": attrs.get(c.GLIDEIN_FAILURE_EVIDENCE),
            "failure_stage": failed.name if failed else None,
            "failure_type": failed.attributes.get(c.ERROR_TYPE) if failed else None,
            "failure_message": (failed.status.description or "")[:MESSAGE_CHARS] or None if failed else None,
            "failure_rule": attrs.get(c.GLIDEIN_FAILURE_RULE),
            "failure_label": attrs.get(c.GLIDEIN_FAILURE_LABEL),
            "failure_service": attrs.get(c.GLIDEIN_FAILURE_SERVICE),
            "failure_downtime": attrs.get(c.GLIDEIN_FAILURE_DOWNTIME),
            "shutdown_reason": condor[2].get(c.GLIDEIN_SHUTDOWN_REASON) if condor else None,
            "exit_code": teardown[2].get(c.GLIDEIN_EXIT_CODE) if teardown else None,
            "incomplete": bool(attrs.get(c.GLIDEIN_INCOMPLETE, False)),
            "traced": not failure.untraced(attrs)}


def _gwms_run(row, root, by_stage: _Stages, jobs, classes, plausible: Plausible) -> gwms.GlideinRun:
    """What GlideinWMS's parser reads: its own reading of the returned stdout where the Factory
    had it (the root's ``glidein.gwms.*``), else the same quantities from the spans
    (docs/glidein-table.md, the table)."""
    setup, condor = by_stage.first("setup"), by_stage.first(c.STAGE_CONDOR)
    node_end = by_stage.first("post_failure_sleep") or by_stage.first("teardown")
    end = root.end_time
    attrs = root.attributes
    queues = by_stage.get(c.STAGE_FACTORY_QUEUE)
    factory_s = end // NS - max(queue[1] for queue in queues) // NS if queues else None
    if isinstance(attrs.get(c.GLIDEIN_GWMS_CONDOR_STARTED), bool):
        return _gwms_read(attrs, factory_s, row, jobs, classes, plausible)
    glidein_s = (node_end[1] if node_end else end) // NS - setup[0] // NS if setup else None
    # a condor_startup.sh record whose script was killed before "=== Condor starting" (the
    # cleanup hook read the glidein's stdout copy) is no condor phase for GlideinWMS
    started = condor is not None and condor[2].get(c.CONDOR_STARTED) is not False
    return gwms.GlideinRun(glidein_s=glidein_s, factory_s=factory_s, condor_started=started,
                           validation_s=_whole(setup) if setup and started else None,
                           condor_s=_condor_seconds(condor, plausible) if condor else None,
                           summary=_job_summary(row, jobs, classes))


def _gwms_read(attrs, factory_s, row, jobs, classes, plausible: Plausible) -> gwms.GlideinRun:
    """GlideinWMS's own reading of the glidein's stdout (factory/glidein_stdout.py); the
    StarterLog summary from the job spans when the stdout held none. The stdout is the
    node's: a count beyond the glidein's lifetime (jobs' seconds: times its cores) is refused."""
    cores = row["cpu_logical_count"] or row["cpus"] or MAX_CPUS
    limits = {c.GLIDEIN_GWMS_JOBS_S: plausible.lifetime_s * cores, c.GLIDEIN_GWMS_JOBS_NR: 1 << 31,
              c.GLIDEIN_GWMS_GOODZ_S: plausible.lifetime_s * cores,
              c.GLIDEIN_GWMS_GOODNZ_S: plausible.lifetime_s * cores}

    def seconds(name):
        value = attrs.get(name)
        return plausible.number(value, limits.get(name, plausible.lifetime_s)) if type(value) is int else None
    summary = _job_summary(row, jobs, classes)
    if seconds(c.GLIDEIN_GWMS_JOBS_S) is not None:
        summary = gwms.StarterSummary(seconds(c.GLIDEIN_GWMS_JOBS_NR) or 0, seconds(c.GLIDEIN_GWMS_JOBS_S),
                                      seconds(c.GLIDEIN_GWMS_GOODZ_S) or 0, seconds(c.GLIDEIN_GWMS_GOODNZ_S) or 0)
    return gwms.GlideinRun(glidein_s=seconds(c.GLIDEIN_GWMS_GLIDEIN_S), factory_s=factory_s,
                           validation_s=seconds(c.GLIDEIN_GWMS_VALIDATION_S),
                           condor_started=attrs[c.GLIDEIN_GWMS_CONDOR_STARTED],
                           condor_s=seconds(c.GLIDEIN_GWMS_CONDOR_S), summary=summary)


def _job_summary(row, jobs, classes) -> gwms.StarterSummary:
    """condor_startup.sh's StarterLog summary of the job spans."""
    return gwms.starter_summary([(max(0, _whole(job)), kind) for job, kind in zip(jobs, classes)], row["cpus"])


def _condor_seconds(condor, plausible: Plausible) -> int:
    """condor_startup.sh's own count (its record's CondorDuration metric, the "Condor ended
    ... after N" banner), else the length of its record (``condor.duration_s``: the cleanup
    hook's, from tStart to tEnd), else the span truncated to seconds. A record cut by a
    SIGTERM has no metric: the span may then end with a job HTCondor ended later. A count
    longer than the glidein's life (forged: 1e23) is refused, counted."""
    for name in ("condor.metric.CondorDuration", c.CONDOR_DURATION_S):
        try:
            value = float(condor[2].get(name))
        except (TypeError, ValueError):
            continue
        if plausible.within_life(value) is not None:
            return int(value)
    return _whole(condor)


_JOB_COLUMNS = tuple(column for column, _ in _JOB_ATTRS)
_JOB_NAMES = tuple(name for _, name in _JOB_ATTRS)
_SETTING_COLUMNS = tuple(SETTINGS.values())
_SETTING_NAMES = tuple(SETTING_PREFIX + column for column in _SETTING_COLUMNS)


#: a job row's values as _job_values makes them (the glidein's, the span's own, its attributes),
#: and the picker that puts them in the jobs dataset's column order
_JOB_COMMON = ("schema_version", "trace_id", "factory", "entry", "site", "glidein_name")
_JOB_MADE = _JOB_COMMON + ("span_id", "started_at", "ended_at", "wall_s", "wait_s", "idle_before_s",
                           "gwms_class") + _JOB_COLUMNS
_JOB_ORDER = itemgetter(*(_JOB_MADE.index(name) for name in names(JOBS)))
JOB_COLUMNS = tuple(names(JOBS))
GLIDEIN_COLUMNS = tuple(names(GLIDEINS))
_GLIDEIN_ORDER = itemgetter(*GLIDEIN_COLUMNS)
#: the job row columns the timeline is made of
_TIMELINE_SOURCES = itemgetter(*(JOB_COLUMNS.index(name) for name in (
    "started_at", "ended_at", "request_cpus", "failure_domain", "exit_code", "exit_signal", "exit_by")))


def _job_values(glidein: dict, by_stage: _Stages, jobs, classes, plausible: Plausible) -> list[tuple]:
    """Each job's row as a tuple in the jobs dataset's column order, the node's figures checked
    (``_job_figures``)."""
    idle_before = {end: end - start for start, end, _, _ in by_stage.get("idle", ())}
    common = tuple(glidein[k] for k in _JOB_COMMON)
    cores = glidein["cpu_logical_count"] or glidein["cpus"] or MAX_CPUS
    memory = glidein["memory_bytes"] or MAX_MEMORY_BYTES
    out = []
    for (start, end, attrs, span), kind in zip(jobs, classes):
        qdate = attrs.get(c.JOB_QDATE)
        idle = idle_before.get(start)
        wall = (end - start) / NS
        values = list(map(attrs.get, _JOB_NAMES))
        _job_figures(values, wall, cores, memory, plausible)
        out.append(_JOB_ORDER((
            *common, ids.span_hex(span.context.span_id), start // 1000, end // 1000, wall,
            (start - qdate * NS) / NS if isinstance(qdate, int) and 0 < qdate * NS <= start else None,
            None if idle is None else idle / NS, kind, *values)))
    return out


_REMOTE_WALL, _CPU_USER, _CPU_SYSTEM, _RSS, _REQUEST_CPUS, _REQUEST_MEMORY = (
    [column for column, _ in _JOB_ATTRS].index(name) for name in (
        "remote_wall_s", "cpu_user_s", "cpu_system_s", "rss_bytes", "request_cpus", "request_memory_mb"))


def _job_figures(values: list, wall: float, cores: int, memory: int, plausible: Plausible):
    """A job's node-reported figures (``_JOB_ATTRS`` order) within physical bounds: its summed
    wall time at most a year, its CPU times at most its wall time (this run's or all runs') on
    every core of the host, its RSS at most the host's memory, its requests at most a node's."""
    number = plausible.number
    remote_wall = values[_REMOTE_WALL] = number(values[_REMOTE_WALL], MAX_JOB_HISTORY_S)
    cpu_limit = (max(wall, remote_wall or 0) + 1) * cores
    values[_CPU_USER] = number(values[_CPU_USER], cpu_limit)
    values[_CPU_SYSTEM] = number(values[_CPU_SYSTEM], cpu_limit)
    values[_RSS] = number(values[_RSS], memory, integer=True)
    values[_REQUEST_CPUS] = number(values[_REQUEST_CPUS], MAX_CPUS, integer=True)
    values[_REQUEST_MEMORY] = number(values[_REQUEST_MEMORY], MAX_MEMORY_BYTES >> 20)
