"""Synthetic glidein traces at scale, seeded and realistic enough to test the analysis.

The model (all knobs in ``SynthConfig``; every random draw comes from one seeded
``random.Random``, so a seed gives the same traces on every machine):

- Entries and sites: ``entries`` entries spread over ``sites`` sites. Each entry draws a
  profile: cores per glidein (1, 4, 8 or 16), a median queue wait (2 min .. 2 h, lognormal
  around it), the chance that a glidein finds matching jobs at all (40-97 %; otherwise it
  idles until Max_Idle) and then the mean wait for its first job (20 s .. 25 min, exponential),
  the chance that another job follows a finished one, the mean gap between jobs, a median
  job runtime (15 min .. 4 h, lognormal) and a job failure rate.
- Factory side: submitted uniformly over ``period_s``; ``factory.submit`` lasts 1-10 s,
  ``factory.queue`` is the queue wait; the node starts 0-5 s after the execute event.
- Setup: the validation scripts of ``SCRIPTS`` run in order with lognormal durations. With
  probability ``validation_failure_rate`` (scaled per entry) one script fails (picked by its
  weight, with one of its error types), later scripts do not run, and the glidein keeps the
  slot ``validation_failure_sleep_s`` (GlideinWMS sleeps ~20 min) before cleanup.
- Condor phase, driven by the lifetime knobs exactly as HTCondor applies them: no job
  within ``max_idle`` -> shutdown (reason ``max_idle``); idle for ``max_tail`` after a job ->
  shutdown (``daemon_shutdown``); no new job after ``retire`` + U(0, ``retire_spread``)
  (``daemon_shutdown`` once idle). The startd notices a timeout up to ``shutdown_lag_s``
  late (its polling), so shutdowns cluster just above the knob values.
- With probability ``kill_rate`` the site's batch system ends the glidein at a uniform time
  (reason ``sigterm``, outcome ``terminated``, a running job is evicted and counts as failed).
- ``skew_rate``: share of nodes whose clock is off by 5-60 min (tests the skew check).
- ``fragment_rate``: share of traces whose Factory spans are written far later in the store
  (as a live export and a later recovery would), to exercise grouping and merging.
- ``outages``: site outage windows (``Outage``): glideins of that site whose node starts
  inside the window fail their validation with the window's error type, with probability
  ``rate``. Without outages the random stream is the same as before they existed.
- Failures carry what the converter writes: the glidein's failure domain (failure.py: the
  GlideinWMS error type's domain; ``preempted`` for a killed glidein), its message (a failed
  script's detail, with numbers, paths and hosts that differ between glideins), and each
  failed job's domain (``user_code``; ``preempted`` for a job cut by a kill).

``generate(cfg)`` yields ``SynthGlidein``s; ``glidein_spans(...)`` gives the flat span dicts of one glidein, with the same ids
and attributes the converter and the Factory forwarder write; ``write_store`` writes OTLP
JSON Lines into a store directory that ``show`` (and the table's backfill) reads. The glidein
table's rows at scale come from ``synth_table`` (numpy, the same model and knobs).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from ..core import failure, ids
from ..exporters.store import ROTATE_BYTES, Store

NAN = float("nan")
#: bumped whenever the same SynthConfig would generate other glideins (these spans or
#: synth_table.py's rows, or its files: 3 adds each glidein's job timeline and each file's rollup,
#: 4 puts odd entries in a second Frontend group, and fills overload_enabled and resource_name):
#: benchmarks key their cached stores and tables on it
GENERATOR_VERSION = 4


@dataclass
class GlideinTimeline:
    """What one synthetic glidein did, in epoch seconds (NaN when it did not happen): what
    ``glidein_spans`` turns into spans."""

    trace_id: str
    entry: str = ""
    site: str = ""
    cores: float = 1.0
    outcome: str = "unknown"
    shutdown_reason: str = ""
    submit: float = NAN
    queue_s: float = NAN
    node_start: float = NAN
    node_end: float = NAN
    setup_s: float = NAN
    validations: tuple = ()           # (script, seconds, failed, error_type)
    condor_start: float = NAN
    condor_end: float = NAN
    jobs: tuple = ()                  # (start, end, exit_code (-1 killed), failed, cores)
    failure: tuple = ("", "", "")     # a failed glidein's (domain, error type, message)
    job_domains: tuple = ()           # each job's failure domain ("" when it did not fail)

# (script id, median seconds, lognormal sigma, failure weight, error types)
SCRIPTS = (
    ("main/check_blacklist.sh", 0.4, 0.4, 0.02, ("WN_Resource",)),
    ("main/setup_x509.sh", 1.2, 0.5, 0.08, ("VO_Proxy",)),
    ("main/glidein_cpus_setup.sh", 0.6, 0.4, 0.05, ("WN_Resource",)),
    ("main/cvmfs_setup.sh", 25.0, 0.8, 0.35, ("Network", "WN_Resource")),
    ("main/singularity_setup.sh", 12.0, 0.7, 0.25, ("Config", "WN_Resource")),
    ("entry/site_setup.sh", 3.0, 0.5, 0.05, ("Config",)),
    ("client/validate_node.sh", 40.0, 0.6, 0.15, ("VO_Config", "WN_Resource")),
    ("client_group/check_gpu.sh", 4.0, 0.5, 0.05, ("WN_Resource",)),
)
SITE_NAMES = ("SITE_Alpha", "SITE_Bravo", "SITE_Charlie", "SITE_Delta", "SITE_Echo", "SITE_Foxtrot",
              "SITE_Golf", "SITE_Hotel", "SITE_India", "SITE_Juliett", "SITE_Kilo", "SITE_Lima")
JOB_FAILURE_CODES = (1, 1, 2, 127, 137, 255)


@dataclass(frozen=True)
class Outage:
    """A site outage: glideins of ``site`` whose node starts between ``start`` and ``end``
    (epoch seconds) fail validation with ``error_type``, each with probability ``rate``."""
    site: str
    start: float
    end: float
    error_type: str = "Network"
    rate: float = 0.9


# failure messages as scripts print them: numbers, paths and hosts differ between glideins
MESSAGES = {
    "WN_Resource": "not enough disk in /scratch/job_{n}: {m} MB free, {k} MB needed",
    "Network": "cannot reach cvmfs-stratum{m}.example.org:8000 after {k} tries (timeout {n} s)",
    "Config": "singularity image /cvmfs/images/{n}/sl7 not found",
    "VO_Config": "validate_node.sh: check {m} of {k} failed on wn{n}.example.org",
    "VO_Proxy": "proxy /tmp/x509up_u{n} expires in {m} s",
    "Corruption": "file /tmp/glide_{n}/main/condor.tgz has a bad checksum",
}


def failure_message(error_type: str, seed: str) -> str:
    """A failed script's detail for ``error_type``, with this glidein's own numbers."""
    rng = random.Random(seed)
    return MESSAGES.get(error_type, "check failed with code {m}").format(
        n=rng.randrange(1, 99999), m=rng.randrange(1, 999), k=rng.randrange(1000, 9999))


@dataclass
class SynthConfig:
    glideins: int = 1000
    seed: int = 1
    entries: int = 8
    sites: int = 4
    max_idle: float = 1200.0          # GLIDEIN_Max_Idle in force
    max_tail: float = 400.0           # GLIDEIN_Max_Tail in force
    retire: float = 21600.0           # GLIDEIN_Retire_Time in force
    retire_spread: float = 1800.0     # GLIDEIN_Retire_Time_Spread in force
    shutdown_lag_s: float = 30.0
    validation_failure_rate: float = 0.03
    validation_failure_sleep_s: float = 1200.0
    job_failure_rate: float = 0.05
    kill_rate: float = 0.02
    skew_rate: float = 0.0
    fragment_rate: float = 0.0
    outages: tuple = ()               # Outage windows
    # the index of an entry given a long idle tail (None: none): its jobs stop coming after a
    # short run of quick ones, so most of its 16-core glideins idle out their whole Max_Tail
    idle_tail_entry: int | None = None
    overload_share: float = 0.5       # share of glideins with GlideinOverloadEnabled true
    overload_job_failure: float = 0.0  # a planted difference: their jobs fail this much more often
    start: float = 1767225600.0       # 2026-01-01T00:00:00Z
    period_s: float = 7 * 86400.0
    factory: str = "synth_factory"
    schedd: str = "schedd_glideins1@synth_factory"


@dataclass
class EntryProfile:
    name: str
    site: str
    cores: int
    queue_median_s: float
    p_demand: float
    first_job_mean_s: float
    p_next_job: float
    between_mean_s: float
    runtime_median_s: float
    job_failure_rate: float
    validation_failure_scale: float
    long_gap_rate: float = 0.1        # share of the gaps between jobs that are long (mean 900 s)


@dataclass
class SynthGlidein:
    """One generated glidein: its timeline plus what the spans need beyond it."""

    timeline: GlideinTimeline
    identity: ids.GlideinIdentity
    submit_s: float = 0.0             # factory.submit duration
    validation_starts: tuple = ()     # start of each validation script (node clock)
    extra: dict = field(default_factory=dict)


def entry_profiles(cfg: SynthConfig) -> list[EntryProfile]:
    rng = random.Random(f"{cfg.seed}-entries")
    sites = [SITE_NAMES[i % len(SITE_NAMES)] + ("" if i < len(SITE_NAMES) else f"_{i}")
             for i in range(max(1, cfg.sites))]
    out = []
    for index in range(max(1, cfg.entries)):
        site = sites[index % len(sites)]
        out.append(EntryProfile(
            name=f"ENTRY_{site[5:]}_{index}",
            site=site,
            cores=rng.choice((1, 4, 8, 8, 16)),
            queue_median_s=math.exp(rng.uniform(math.log(120), math.log(7200))),
            p_demand=rng.uniform(0.4, 0.97),
            first_job_mean_s=rng.choice((20, 60, 120, 300, 600, 1500)),
            p_next_job=rng.uniform(0.6, 0.95),
            between_mean_s=rng.uniform(20, 200),
            runtime_median_s=math.exp(rng.uniform(math.log(900), math.log(14400))),
            job_failure_rate=cfg.job_failure_rate * rng.uniform(0.5, 2.0),
            validation_failure_scale=rng.uniform(0.3, 2.0),
        ))
    if cfg.idle_tail_entry is not None:
        tail = out[cfg.idle_tail_entry % len(out)]
        tail.cores, tail.p_demand, tail.first_job_mean_s = 16, 0.97, 60
        tail.p_next_job, tail.between_mean_s, tail.long_gap_rate = 0.3, 15.0, 0.0
    return out


def _r(value: float) -> float:
    return round(value, 3)


def generate(cfg: SynthConfig):
    """Yield ``SynthGlidein``s (timeline + identity), ``cfg.glideins`` of them."""
    rng = random.Random(cfg.seed)
    profiles = entry_profiles(cfg)
    for number in range(cfg.glideins):
        p = profiles[rng.randrange(len(profiles))]
        identity = ids.GlideinIdentity(factory=cfg.factory, name="synth", entry=p.name, schedd=cfg.schedd,
                                       cluster=str(1000 + number // 100), proc=str(number % 100))
        tl = GlideinTimeline(trace_id=identity.trace_id, entry=p.name, site=p.site, cores=float(p.cores))
        submit = _r(cfg.start + rng.random() * cfg.period_s)
        submit_s = _r(rng.uniform(1, 10))
        queue_s = _r(rng.lognormvariate(math.log(p.queue_median_s), 1.0))
        tl.submit, tl.queue_s = submit, queue_s
        skew = 0.0
        if cfg.skew_rate and rng.random() < cfg.skew_rate:
            skew = rng.choice((-1, 1)) * rng.uniform(300, 3600)
        node_start = _r(submit + submit_s + queue_s + rng.uniform(0, 5) + skew)
        tl.node_start = node_start
        vals, starts, t = _validation(cfg, rng, p, node_start, identity.trace_id)
        tl.validations = tuple(vals)
        setup_end = _r(t + rng.uniform(0.2, 1.5))
        tl.setup_s = _r(setup_end - node_start)
        if vals[-1][2]:
            tl.outcome = "validation_failed"
            error = vals[-1][3]
            tl.failure = (failure.GLIDEINWMS_TYPES.get(error, failure.GLIDEIN), error,
                          failure_message(error, identity.trace_id))
            tl.node_end = _r(setup_end + cfg.validation_failure_sleep_s + rng.uniform(0, 60) + rng.uniform(1, 5))
        else:
            _condor_phase(cfg, rng, p, tl, setup_end)
        yield SynthGlidein(tl, identity, submit_s, tuple(starts))


def _validation(cfg: SynthConfig, rng, p: EntryProfile, node_start: float, trace_id: str):
    """The validation scripts of one glidein, up to the one that fails (if any): (name,
    seconds, failed, error) each, their starts, and when the last one ended."""
    t = node_start + rng.uniform(0.5, 2.0)
    fail_at = -1
    if rng.random() < cfg.validation_failure_rate * p.validation_failure_scale:
        fail_at = rng.choices(range(len(SCRIPTS)), [s[3] for s in SCRIPTS])[0]
    forced = _outage_failure(cfg, p.site, node_start, trace_id)
    if forced:
        fail_at = next((i for i, s in enumerate(SCRIPTS) if forced in s[4]), len(SCRIPTS) - 1)
    vals, starts = [], []
    for index, (name, median, sigma, _, errors) in enumerate(SCRIPTS):
        seconds = _r(rng.lognormvariate(math.log(median), sigma))
        starts.append(_r(t))
        failed = index == fail_at
        vals.append((name, seconds, failed, (forced or rng.choice(errors)) if failed else ""))
        t = _r(t) + seconds
        if failed:
            break
    return vals, starts, t


def _jobs(cfg: SynthConfig, rng, p: EntryProfile):
    """The condor phase's jobs ([start, end, exit code, failed], relative to its start), when
    it ended and why. A glidein either matches waiting jobs (a wait of about first_job_mean_s)
    or finds none that fit it and idles out."""
    retire_at = cfg.retire + rng.uniform(0, cfg.retire_spread)
    cursor, seen, jobs = 0.0, False, []
    gap = rng.expovariate(1.0 / p.first_job_mean_s) if rng.random() < p.p_demand else math.inf
    while True:
        threshold = cfg.max_tail if seen else cfg.max_idle
        if gap > threshold:
            return jobs, cursor + threshold + rng.uniform(0, cfg.shutdown_lag_s), "daemon_shutdown" if seen else "max_idle"
        start = cursor + gap
        if start > retire_at:
            return jobs, max(cursor, retire_at) + rng.uniform(0, cfg.shutdown_lag_s), "daemon_shutdown"
        runtime = rng.lognormvariate(math.log(p.runtime_median_s), 0.9)
        failed = rng.random() < p.job_failure_rate
        jobs.append([_r(start), _r(start + runtime), rng.choice(JOB_FAILURE_CODES) if failed else 0, failed])
        cursor = _r(start + runtime)
        seen = True
        if rng.random() > p.p_next_job:
            gap = math.inf            # no more demand: the tail runs out
        elif rng.random() < p.long_gap_rate:
            gap = rng.expovariate(1.0 / 900.0)
        else:
            gap = rng.expovariate(1.0 / p.between_mean_s)


def _condor_phase(cfg: SynthConfig, rng, p: EntryProfile, tl: GlideinTimeline, condor_start: float) -> None:
    """The condor phase of a glidein that passed validation, into ``tl``: its jobs, its end,
    and (at ``cfg.kill_rate``) a SIGTERM that cuts it short."""
    jobs, end, reason = _jobs(cfg, rng, p)
    end = _r(end)
    tl.outcome = "ok"
    if cfg.kill_rate and rng.random() < cfg.kill_rate:
        kill = _r(rng.uniform(0, end))
        kept = []
        for job in jobs:
            if job[0] >= kill:
                break
            if job[1] > kill:
                job = [job[0], kill, -1, True]
            kept.append(job)
        jobs, end, reason, tl.outcome = kept, kill, "sigterm", "terminated"
        tl.failure = (failure.PREEMPTED, "terminated", "glidein.outcome=terminated")
    tl.shutdown_reason = reason
    tl.condor_start = condor_start
    tl.condor_end = _r(condor_start + end)
    tl.jobs = tuple((_r(condor_start + s), _r(condor_start + e), code, failed, float(p.cores))
                    for s, e, code, failed in jobs)
    tl.job_domains = tuple((failure.PREEMPTED if code < 0 else failure.USER_CODE) if failed else ""
                           for _, _, code, failed in jobs)
    tl.node_end = _r(tl.condor_end + rng.uniform(1, 10))


def _outage_failure(cfg: SynthConfig, site: str, node_start: float, trace_id: str) -> str:
    """The error type an outage forces on a glidein starting then at that site, or ""."""
    for outage in cfg.outages:
        if outage.site == site and outage.start <= node_start < outage.end:
            if random.Random(f"outage-{trace_id}").random() < outage.rate:
                return outage.error_type
    return ""


# -- spans ------------------------------------------------------------------------------------------

def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


def glidein_spans(glidein: SynthGlidein) -> list[dict]:
    """The flat span dicts of one synthetic glidein (the shape flatten_request yields)."""
    tl, identity = glidein.timeline, glidein.identity
    trace = tl.trace_id
    resource = {
        "service.name": "glidein", "glidein.factory": identity.factory, "glidein.name": identity.name,
        "glidein.entry": identity.entry, "glidein.schedd": identity.schedd,
        "glidein.cluster": int(identity.cluster), "glidein.proc": int(identity.proc),
        "glidein.multi_index": 0, "glidein.site": tl.site,
        "host.cpu.logical_count": int(tl.cores) * 2, "host.arch": "amd64",
    }
    root_id = ids.span_id(trace, "glidein")
    out = []

    def add(key, name, stage, start, end, parent=root_id, attrs=None, status=0, message=""):
        attributes = {"glidein.stage": stage}
        attributes.update(attrs or {})
        out.append({"trace_id": trace, "span_id": ids.span_id(trace, key), "parent_span_id": parent,
                    "name": name, "start_ns": _ns(start), "end_ns": _ns(end), "status_code": status,
                    "status_message": message, "attributes": attributes, "resource": resource,
                    "events": [], "links": []})

    root_attrs = {"glidein.factory": identity.factory, "glidein.name": identity.name,
                  "glidein.entry": identity.entry, "glidein.schedd": identity.schedd,
                  "glidein.cluster": int(identity.cluster), "glidein.proc": int(identity.proc),
                  "glidein.site": tl.site, "glidein.cpus": int(tl.cores), "glidein.outcome": tl.outcome}
    if tl.failure[0]:
        evidence = f"glidein.outcome={tl.outcome}" if tl.outcome == "terminated" else f"error.type={tl.failure[1]}"
        root_attrs.update({"glidein.failure.domain": tl.failure[0], "error.type": tl.failure[1],
                           "glidein.failure.evidence": evidence})
    failed_val = next((v for v in tl.validations if v[2]), None)
    add("glidein", "glidein", "glidein", tl.submit, tl.node_end, parent="", attrs=root_attrs,
        status=2 if failed_val else 0, message=f"{failed_val[0]} failed" if failed_val else "")
    submitted = tl.submit + glidein.submit_s
    add("factory.submit", "factory.submit", "factory.submit", tl.submit, submitted, status=1)
    add("factory.queue", "factory.queue", "factory.queue", submitted, submitted + tl.queue_s)
    setup_end = tl.node_start + tl.setup_s
    add("setup", "setup", "setup", tl.node_start, setup_end,
        attrs={"error.type": failed_val[3]} if failed_val else {}, status=2 if failed_val else 0,
        message=f"{failed_val[0]} failed" if failed_val else "")
    setup_id = ids.span_id(trace, "setup")
    for (name, seconds, failed, error), start in zip(tl.validations, glidein.validation_starts):
        attrs = {"glidein.script.id": name, "glidein.script.list": name.split("/", 1)[0],
                 "glidein.script.status": "ERROR" if failed else "OK"}
        if failed:
            attrs["error.type"] = error
            attrs["glidein.script.detail"] = tl.failure[2] or "synthetic failure"
        add("validation/" + name, name, "validation", start, start + seconds, parent=setup_id,
            attrs=attrs, status=2 if failed else 1, message="synthetic failure" if failed else "")
    last = setup_end
    if not math.isnan(tl.condor_start):
        add("condor", "condor", "condor.start", tl.condor_start, tl.condor_end,
            attrs={"condor.exit_code": 0 if tl.shutdown_reason == "sigterm" else 99,
                   "condor.duration_s": tl.condor_end - tl.condor_start,
                   "glidein.shutdown.reason": tl.shutdown_reason})
        condor_id = ids.span_id(trace, "condor")
        cursor, seen, gaps = tl.condor_start, False, []
        for index, (start, end, code, failed, cores) in enumerate(tl.jobs):
            attrs = {"job.global_id": f"synth#{trace[:8]}.{index}", "job.request_cpus": int(cores),
                     "job.exit_by": "evict" if code < 0 else "exit"}
            if code >= 0:
                attrs["job.exit_code"] = code
            if failed and index < len(tl.job_domains) and tl.job_domains[index]:
                attrs["job.failure.domain"] = tl.job_domains[index]
            add(f"job/{index}", "job", "job", start, end, parent=condor_id, attrs=attrs,
                status=2 if failed else 1)
            if start > cursor:
                gaps.append((cursor, start, "between_jobs" if seen else "before_first_job"))
            cursor, seen = max(cursor, end), True
        if cursor < tl.condor_end:
            gaps.append((cursor, tl.condor_end, "tail" if seen else "no_job"))
        for index, (start, end, kind) in enumerate(gaps):
            add(f"idle/{index}", "idle", "idle", start, end, parent=condor_id,
                attrs={"glidein.idle.kind": kind})
        last = tl.condor_end
    add("teardown", "teardown", "teardown", last, tl.node_end, attrs={"glidein.outcome": tl.outcome})
    return out


def write_store(cfg: SynthConfig, directory, *, rotate_bytes: int = ROTATE_BYTES,
                fragment_delay_lines: int = 5000, batch_lines: int = 2000, progress=None) -> dict:
    """Write ``cfg.glideins`` synthetic glideins into a store directory through the store's
    own writer (indexed as it goes; one line each; with ``fragment_rate``, some traces'
    Factory spans go ``fragment_delay_lines`` later); ``progress.update(1)`` told of each
    glidein (core/progress.py's bar). Returns counts."""
    store = Store(directory, rotate_bytes)
    rng = random.Random(f"{cfg.seed}-fragments")
    delayed: list[tuple[int, list]] = []
    pending: list = []
    spans_written = lines = 0

    def add(spans):
        nonlocal lines
        pending.append(spans)
        lines += 1
        if len(pending) >= batch_lines:
            store.append_span_dicts(pending)
            pending.clear()

    for number, glidein in enumerate(generate(cfg)):
        spans = glidein_spans(glidein)
        spans_written += len(spans)
        if cfg.fragment_rate and rng.random() < cfg.fragment_rate:
            factory = [s for s in spans if s["attributes"]["glidein.stage"].startswith("factory.")]
            spans = [s for s in spans if not s["attributes"]["glidein.stage"].startswith("factory.")]
            delayed.append((number + fragment_delay_lines, factory))
        add(spans)
        while delayed and delayed[0][0] <= number:
            add(delayed.pop(0)[1])
        if progress is not None:
            progress.update(1)
    for _, factory in delayed:
        add(factory)
    store.append_span_dicts(pending)
    return {"glideins": cfg.glideins, "spans": spans_written, "lines": lines}
