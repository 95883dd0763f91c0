"""Synthetic glidein-table rows at scale: the Parquet datasets the forwarder writes
(docs/glidein-table.md), generated directly with numpy, a million glideins in a few seconds.

The model is the span generator's (``synth.py``, same ``SynthConfig`` and entry profiles, same
HTCondor rules: Max_Idle before the first job, Max_Tail after a job, retire time plus spread,
a startd lag up to ``shutdown_lag_s``, site kills, validation failures, outage windows), drawn
vectorized from ``numpy.random.default_rng((seed, chunk))`` instead of one ``random.Random``:
the same seed gives the same rows, not the same glideins as the span generator. Each glidein
row carries its jobs' timeline (the ``job_*`` lists) as the forwarder writes it.
GlideinWMS's own quantities (``gwms_*``, ``waste_*_mill``) are filled from the generated
durations with glideFactoryLogParser's definitions, so the analyze_entries table has data.

``write_table(cfg, directory)`` writes ``glideins/date=YYYY-MM-DD/`` and ``jobs/date=.../``
(hive style, the glidein's UTC end day), each file with its rollup (``rollups/``, as the
writer leaves a merged file), and returns counts.
"""

from __future__ import annotations

import binascii
from pathlib import Path

import numpy as np

from ..core import failure
from ..table import rollup
from ..table.schema import GLIDEINS, GLIDEINS_DATASET, JOBS, JOBS_DATASET, SCHEMA_VERSION
from ..table.writer import arrow_type
from .synth import MESSAGES, SCRIPTS, SynthConfig, entry_profiles

CHUNK = 1_000_000
CPU_MODELS = ("Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz", "AMD EPYC 7763 64-Core Processor",
              "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz", "AMD EPYC 9654 96-Core Processor")
OS_NAMES = ("AlmaLinux 9.4 (Seafoam Ocelot)", "Rocky Linux 8.10 (Green Obsidian)", "CentOS Linux 7 (Core)")
ERROR_TYPES = ("WN_Resource", "Network", "Config", "VO_Config", "VO_Proxy")
ERROR_WEIGHTS = np.array([0.25, 0.35, 0.15, 0.15, 0.10])


def _failing_script(error_type: str) -> str:
    """The validation script that fails with ``error_type`` (the first that reports it)."""
    return next((s[0] for s in SCRIPTS if error_type in s[4]), SCRIPTS[-1][0])


def _hex_ids(rng, n: int, nbytes: int = 16) -> np.ndarray:
    raw = rng.integers(0, 256, size=n * nbytes, dtype=np.uint8).tobytes()
    return np.frombuffer(binascii.hexlify(raw), dtype=f"S{2 * nbytes}").astype(str)


def _condor_phase(rng, cfg: SynthConfig, n: int, prof: dict):
    """HTCondor's lifetime rules per glidein, one job index at a time for all glideins.
    Returns (phase length, shutdown reason code, job glidein index, start, end, failed)."""
    lag, I, T = cfg.shutdown_lag_s, cfg.max_idle, cfg.max_tail
    retire_at = cfg.retire + rng.uniform(0, cfg.retire_spread, n)
    demand = rng.random(n) < prof["p_demand"]
    gap = np.where(demand, rng.exponential(prof["first_job_mean_s"]), np.inf)
    cursor, seen = np.zeros(n), np.zeros(n, dtype=bool)
    active = np.ones(n, dtype=bool)
    length, reason = np.zeros(n), np.zeros(n, dtype=np.int8)     # 0 max_idle, 1 daemon_shutdown
    jobs = []
    while active.any():
        idx = np.nonzero(active)[0]
        g, c, s = gap[idx], cursor[idx], seen[idx]
        idle_out = g > np.where(s, T, I)
        start = c + g
        retired = ~idle_out & (start > retire_at[idx])
        stop = idle_out | retired
        ends = np.where(idle_out, c + np.where(s, T, I), np.maximum(c, retire_at[idx])) + rng.uniform(0, lag, len(idx))
        length[idx[stop]] = ends[stop]
        reason[idx[stop]] = np.where(s[stop] | retired[stop], 1, 0)
        active[idx[stop]] = False
        run = idx[~stop]
        if not len(run):
            break
        runtime = rng.lognormal(np.log(prof["runtime_median_s"][run]), 0.9)
        st = start[~stop]
        jobs.append((run, st, st + runtime, rng.random(len(run)) < prof["job_failure_rate"][run]))
        cursor[run], seen[run] = st + runtime, True
        more = rng.random(len(run)) <= prof["p_next_job"][run]
        long_gap = rng.random(len(run)) < prof["long_gap_rate"][run]
        gap[run] = np.where(more, np.where(long_gap, rng.exponential(900.0, len(run)),
                                           rng.exponential(prof["between_mean_s"][run])), np.inf)
    cols = [np.concatenate([j[k] for j in jobs]) if jobs else np.zeros(0) for k in range(4)]
    order = np.lexsort((cols[1], cols[0]))
    return length, reason, cols[0].astype(np.int64)[order], cols[1][order], cols[2][order], cols[3].astype(bool)[order]


def _ts(seconds: np.ndarray):
    import pyarrow as pa
    known = np.isfinite(seconds)
    micros = np.round(np.where(known, seconds, 0) * 1e6).astype(np.int64)
    return pa.array(micros, type=pa.timestamp("us"), mask=~known)


def generate_chunk(cfg: SynthConfig, chunk: int, n: int) -> tuple[dict, dict]:
    """The columns (numpy arrays) of ``n`` glideins and of their jobs."""
    rng = np.random.default_rng((cfg.seed, chunk))
    profiles = entry_profiles(cfg)
    e = rng.integers(0, len(profiles), n)
    prof = {k: np.array([getattr(p, k) for p in profiles], dtype=float)[e]
            for k in ("cores", "queue_median_s", "p_demand", "first_job_mean_s", "p_next_job", "between_mean_s",
                      "runtime_median_s", "job_failure_rate", "validation_failure_scale", "long_gap_rate")}
    cores = prof["cores"]
    submitted = cfg.start + rng.random(n) * cfg.period_s
    queue = rng.lognormal(np.log(prof["queue_median_s"]), 1.0)
    node_start = submitted + rng.uniform(1, 10, n) + queue + rng.uniform(0, 5, n)
    groups = {}
    for group in ("main", "entry", "client", "client_group"):
        scripts = [s for s in SCRIPTS if s[0].split("/", 1)[0] == group]
        groups[group] = sum(rng.lognormal(np.log(s[1]), s[2], n) for s in scripts)
    vfail = rng.random(n) < cfg.validation_failure_rate * prof["validation_failure_scale"]
    etype = rng.choice(len(ERROR_TYPES), n, p=ERROR_WEIGHTS)
    sites = np.array([p.site for p in profiles])[e]
    for outage in cfg.outages:
        hit = (sites == outage.site) & (node_start >= outage.start) & (node_start < outage.end)
        hit &= rng.random(n) < outage.rate
        vfail |= hit
        etype[hit] = ERROR_TYPES.index(outage.error_type) if outage.error_type in ERROR_TYPES else 1
    validation = sum(groups.values())
    setup = np.where(vfail, validation * rng.uniform(0.2, 1.0, n), validation) + rng.uniform(0.7, 3.5, n)
    # GlideinOverloadEnabled: drawn apart (the other columns stay as they were); a planted
    # difference makes the overloaded glideins' jobs fail more often (less goodput)
    overload = np.random.default_rng((cfg.seed, chunk, 629)).random(n) < cfg.overload_share
    prof["job_failure_rate"] = np.minimum(prof["job_failure_rate"] + overload * cfg.overload_job_failure, 1.0)
    length, reason, jg, js, je, jfail = _condor_phase(rng, cfg, n, prof)
    ran = ~vfail
    keep_job = ran[jg]
    jg, js, je, jfail = jg[keep_job], js[keep_job], je[keep_job], jfail[keep_job]
    killed = ran & (rng.random(n) < cfg.kill_rate)
    kill_at = np.where(killed, rng.random(n) * length, np.inf)
    alive = js < kill_at[jg]
    jg, js, je, jfail = jg[alive], js[alive], je[alive], jfail[alive]
    evicted = je > kill_at[jg]
    je = np.minimum(je, kill_at[jg])
    jfail |= evicted
    length = np.where(ran, np.minimum(length, kill_at), np.nan)
    condor_start = node_start + setup
    out = _glidein_columns(cfg, rng, n, e, profiles, sites, cores, submitted, queue, node_start, groups, setup,
                           vfail, etype, length, reason, killed, condor_start, jg, js, je, jfail)
    out["overload_enabled"] = overload
    out["resource_name"] = np.char.add("RESOURCE_", sites.astype(str))
    jobs = _job_columns(rng, out, e, profiles, jg, js, je, jfail, evicted, condor_start, cores)
    out.update(_timeline(n, jg, jobs, jfail))
    return out, jobs


def _timeline(n: int, jg, jobs: dict, failed) -> dict:
    """The glideins' job timelines (list columns) from their jobs' rows, which come sorted by
    glidein, then start; ``failed``: the jobs that fail by the jobs dataset's rule."""
    import pyarrow as pa
    offsets = pa.array(np.concatenate(([0], np.cumsum(np.bincount(jg, minlength=n)))).astype(np.int32))
    lists = lambda values: pa.ListArray.from_arrays(offsets, pa.array(values))  # noqa: E731
    return {"job_started_at": lists(jobs["started_at"]), "job_ended_at": lists(jobs["ended_at"]),
            "job_request_cpus": lists(jobs["request_cpus"]), "job_failed": lists(failed)}


def _glidein_columns(cfg, rng, n, e, profiles, sites, cores, submitted, queue, node_start, groups, setup,
                     vfail, etype, length, reason, killed, condor_start, jg, js, je, jfail) -> dict:
    ran = ~vfail
    n_jobs = np.bincount(jg, minlength=n)
    wall = je - js
    # jobs run one after the other: the idle before each is its start minus the previous end
    first = np.ones(len(jg), dtype=bool)
    first[1:] = jg[1:] != jg[:-1]
    prev_end = np.concatenate(([0.0], je[:-1]))
    gap = np.where(first, js, js - prev_end)
    last_end = np.zeros(n)
    last_end[jg] = je                               # sorted: the last write per glidein wins
    has = n_jobs > 0
    L = np.nan_to_num(length)
    sleep = np.where(vfail, cfg.validation_failure_sleep_s + rng.uniform(0, 60, n), np.nan)
    teardown = rng.uniform(1, 10, n)
    ended = node_start + setup + np.where(ran, L, 0) + np.nan_to_num(sleep) + teardown
    lasted = ended - node_start
    good = np.bincount(jg, weights=np.where(jfail, 0, wall), minlength=n)
    total = np.bincount(jg, weights=wall, minlength=n)
    terminated = np.bincount(jg, weights=np.where(je < np.inf, wall, 0), minlength=n)
    outcome = np.where(vfail, "validation_failed", np.where(killed, "terminated", "ok"))
    domain = np.array([failure.GLIDEINWMS_TYPES.get(t, failure.GLIDEIN) for t in ERROR_TYPES])[etype]
    message = np.full(n, None, dtype=object)
    numbers = rng.integers(1, 99999, (int(vfail.sum()), 3))
    for index, row, (a, b, c) in zip(np.nonzero(vfail)[0], range(len(numbers)), numbers):
        message[index] = MESSAGES[ERROR_TYPES[etype[index]]].format(n=a, m=b % 999, k=1000 + c % 9000)
    host = rng.integers(0, 4, n)
    mill = lambda part, whole: np.where(whole > 0, 1000.0 * part / np.maximum(whole, 1e-9), 0.0)  # noqa: E731
    return {
        "schema_version": np.full(n, SCHEMA_VERSION, dtype=np.int32),
        "trace_id": _hex_ids(rng, n), "factory": np.full(n, cfg.factory), "entry": np.array([p.name for p in profiles])[e],
        "site": sites, "client": np.full(n, "synth_frontend"), "client_group": np.where(e % 2 == 0, "main", "overflow"),
        "schedd": np.full(n, cfg.schedd), "cluster": 1000 + np.arange(n) // 100, "proc": np.arange(n) % 100,
        "multi_index": np.zeros(n, dtype=np.int32), "glidein_name": np.full(n, "synth"),
        "submitted_at": _ts(submitted), "queue_wait_s": queue, "held_s": np.zeros(n),
        "node_start_at": _ts(node_start), "setup_s": setup,
        **{f"validation_{k}_s": np.where(vfail, v * setup / np.maximum(sum(groups.values()), 1e-9), v)
           for k, v in groups.items()},
        "validation_scripts": np.full(n, len(SCRIPTS), dtype=np.int32),
        "condor_start_at": _ts(np.where(ran, condor_start, np.nan)), "condor_s": length,
        "idle_before_first_job_s": np.where(has, np.bincount(jg, weights=np.where(first, gap, 0), minlength=n), np.nan),
        "idle_between_jobs_s": np.where(has, np.bincount(jg, weights=np.where(first, 0, gap), minlength=n), np.nan),
        "idle_tail_s": np.where(has, L - last_end, np.nan), "idle_no_job_s": np.where(ran & ~has, L, np.nan),
        "jobs": n_jobs.astype(np.int32), "jobs_wall_s": total, "teardown_s": teardown, "post_failure_sleep_s": sleep,
        "started_at": _ts(submitted), "ended_at": _ts(ended), "glidein_s": ended - submitted,
        "outcome": outcome, "failed": vfail | killed,
        "failure_domain": np.where(vfail, domain, np.where(killed, failure.PREEMPTED, None)),
        "failure_type": np.where(vfail, np.array(ERROR_TYPES)[etype], np.where(killed, "terminated", None)),
        "failure_message": message,
        "failure_stage": np.where(vfail, np.array([_failing_script(t) for t in ERROR_TYPES])[etype],
                                  np.where(killed, "glidein", None)),
        "shutdown_reason": np.where(vfail, None, np.where(killed, "sigterm",
                                                         np.where(reason == 0, "max_idle", "daemon_shutdown"))),
        "gwms_condor_started": ran, "gwms_lasted_s": lasted.astype(np.int64),
        "gwms_validation_s": setup.astype(np.int64), "gwms_condor_lasted_s": L.astype(np.int64),
        "gwms_jobs_nr": n_jobs.astype(np.int64), "gwms_jobs_lasted_s": total.astype(np.int64),
        "gwms_jobs_goodput_s": good.astype(np.int64), "gwms_jobs_terminated_s": terminated.astype(np.int64),
        "waste_validation_mill": np.where(vfail, 1000.0, mill(setup, lasted)),
        "waste_idle_mill": mill(L - total, L), "waste_nosuccess_mill": mill(total - terminated, total),
        "waste_badput_mill": mill(lasted - good, lasted),
        "max_idle_s": np.full(n, int(cfg.max_idle)), "max_tail_s": np.full(n, int(cfg.max_tail)),
        "retire_time_s": np.full(n, int(cfg.retire)), "retire_time_spread_s": np.full(n, int(cfg.retire_spread)),
        "cpus": cores.astype(np.int32), "cpu_model": np.array(CPU_MODELS)[(e + host) % len(CPU_MODELS)],
        "cpu_logical_count": (cores * 2).astype(np.int32), "os_description": np.array(OS_NAMES)[e % len(OS_NAMES)],
        "sampling_ratio": np.ones(n), "trace_kept": np.ones(n, dtype=bool),
    }


def _job_columns(rng, g: dict, e, profiles, jg, js, je, jfail, evicted, condor_start, cores) -> dict:
    m = len(jg)
    first = np.ones(m, dtype=bool)
    first[1:] = jg[1:] != jg[:-1]
    prev_end = np.concatenate(([0.0], je[:-1]))
    codes = np.array([1, 2, 127, 137, 255])[rng.integers(0, 5, m)]
    return {
        "schema_version": np.full(m, SCHEMA_VERSION, dtype=np.int32), "trace_id": g["trace_id"][jg],
        "span_id": _hex_ids(rng, m, 8), "factory": g["factory"][jg], "entry": g["entry"][jg], "site": g["site"][jg],
        "glidein_name": g["glidein_name"][jg], "request_cpus": cores[jg].astype(np.int32),
        "started_at": _ts(condor_start[jg] + js), "ended_at": _ts(condor_start[jg] + je), "wall_s": je - js,
        "idle_before_s": np.where(first, js, js - prev_end),
        "exit_code": np.where(evicted, None, np.where(jfail, codes, 0)),
        "exit_by": np.where(evicted, "evict", "exit"),
        "failure_domain": np.where(evicted, failure.PREEMPTED, np.where(jfail, failure.USER_CODE, None)),
    }


def _arrow(columns: dict, schema_columns):
    import pyarrow as pa
    n = len(next(iter(columns.values())))
    arrays = []
    for col in schema_columns:
        value = columns.get(col.name)
        if value is None:
            arrays.append(pa.nulls(n, arrow_type(col.sql_type)))
        elif isinstance(value, pa.Array):
            arrays.append(value)
        elif col.sql_type == "DOUBLE":
            arrays.append(pa.array(value, type=pa.float64(), from_pandas=True))   # NaN -> null
        else:
            arrays.append(pa.array(value.tolist() if value.dtype == object else value, type=arrow_type(col.sql_type)))
    table = pa.table(arrays, names=[c.name for c in schema_columns])
    return table.replace_schema_metadata({"glidein_tracing.schema_version": str(SCHEMA_VERSION)})


def write_table(cfg: SynthConfig, directory, *, chunk_rows: int = CHUNK, progress=None) -> dict:
    """Write ``cfg.glideins`` glideins (and their jobs) as the glidein table under
    ``directory``, one file per day and chunk; ``progress.update(n)`` told of each file's
    glideins (core/progress.py's bar). Returns counts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory = Path(directory)
    counts = {"glideins": 0, "jobs": 0, "files": 0}
    for chunk, begin in enumerate(range(0, cfg.glideins, chunk_rows)):
        n = min(chunk_rows, cfg.glideins - begin)
        glideins, jobs = generate_chunk(cfg, chunk, n)
        days = np.datetime_as_string(glideins["ended_at"].to_numpy(zero_copy_only=False).astype("datetime64[D]"))
        # a job lives in its glidein's partition (jobs come sorted by glidein)
        tables = {GLIDEINS_DATASET: (_arrow(glideins, GLIDEINS), days),
                  JOBS_DATASET: (_arrow(jobs, JOBS), np.repeat(days, glideins["jobs"]))}
        for name, (table, row_days) in tables.items():
            for day in np.unique(row_days):
                part = directory / name / f"date={day}"
                part.mkdir(parents=True, exist_ok=True)
                rows, path = table.filter(pa.array(row_days == day)), part / f"part-synth-{cfg.seed}-{chunk:05d}.parquet"
                pq.write_table(rows, path)
                rollup.write(rollup.compute(rows, name), path)      # as the writer does for each merged file
                counts["files"] += 1
                if progress is not None and name == GLIDEINS_DATASET:
                    progress.update(rows.num_rows)
        counts["glideins"] += n
        counts["jobs"] += len(jobs["trace_id"])
    return counts
