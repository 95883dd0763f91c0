"""Helpers for tests/test_analysis_*.py: synthetic glidein tables, hand-made rows, a plain-Python
reference of the what-if replay (the oracle the SQL replay is checked against), and hand-made
span dicts of one glidein (for show and the waterfall)."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from glidein_tracing.analysis import whatif
from glidein_tracing.testing import synth, synth_table
from glidein_tracing.core import ids
from glidein_tracing.table import writer
from glidein_tracing.table.schema import GLIDEINS, JOBS, SCHEMA_VERSION

BASE = 1767225600.0  # 2026-01-01T00:00:00Z


def write_synth_store(directory, **kwargs) -> synth.SynthConfig:
    cfg = synth.SynthConfig(**kwargs)
    synth.write_store(cfg, directory)
    return cfg


def write_synth_table(directory, **kwargs) -> synth.SynthConfig:
    cfg = synth.SynthConfig(**kwargs)
    synth_table.write_table(cfg, directory)
    return cfg


def write_rows(directory, dataset: str, rows: list[dict], day: str = "2026-01-01", name: str = "part-0",
               version: int = SCHEMA_VERSION) -> Path:
    """Hand-made rows (column -> value; the rest NULL) as one Parquet file of a day;
    ``version`` 1: a file of schema version 1 (no job timeline columns)."""
    columns = GLIDEINS if dataset == "glideins" else JOBS
    if version < 2:
        columns = [c for c in columns if c.name not in whatif.TIMELINE]
    table = synth_table._arrow({c.name: _column(c, [r.get(c.name) for r in rows]) for c in columns
                                if any(c.name in r for r in rows)} or {"schema_version": _column(columns[0], [])},
                               columns)
    table = table.replace_schema_metadata({writer.VERSION_KEY: str(version)})
    path = Path(directory) / dataset / f"date={day}" / f"{name}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def _column(column, values):
    """Values as the column's Arrow array; instants given as epoch seconds."""
    us = lambda v: None if v is None else int(round(v * 1e6))  # noqa: E731
    if column.sql_type == "TIMESTAMP":
        values = [us(v) for v in values]
    elif column.sql_type == "TIMESTAMP[]":
        values = [None if v is None else [us(x) for x in v] for v in values]
    return pa.array(values, type=writer.arrow_type(column.sql_type))


def glidein_row(trace: str, *, condor=(0.0, 3000.0), jobs=(), reason="daemon_shutdown", cores=1, entry="E1",
                site="S1", start=BASE, outcome="ok", version=SCHEMA_VERSION, **extra) -> tuple[dict, list[dict]]:
    """A glidein row and its job rows; ``jobs``: (start, end, failed) relative to condor start;
    ``version`` 1: a row of schema version 1 (no job timeline)."""
    cs, L = condor
    row = {"schema_version": version, "trace_id": trace, "entry": entry, "site": site, "cpus": cores,
           "outcome": outcome, "submitted_at": start - 100, "node_start_at": start, "setup_s": 60.0,
           "condor_start_at": start + 60 + cs, "condor_s": L, "shutdown_reason": reason, "jobs": len(jobs),
           "ended_at": start + 60 + cs + L + 5}
    job_rows = [{"schema_version": version, "trace_id": trace, "entry": entry, "site": site, "request_cpus": cores,
                 "started_at": start + 60 + cs + s, "ended_at": start + 60 + cs + e, "wall_s": e - s,
                 "exit_code": 1 if failed else 0, "exit_by": "exit", "failure_domain": "user_code" if failed else None}
                for s, e, failed in sorted(jobs)]
    if version >= 2:
        row.update(job_started_at=[j["started_at"] for j in job_rows], job_ended_at=[j["ended_at"] for j in job_rows],
                   job_request_cpus=[cores] * len(jobs), job_failed=[failed for _, _, failed in sorted(jobs)])
    row.update(extra)
    return row, job_rows


def timeline_mismatches(con) -> list:
    """Trace ids of the glideins whose job timeline (``job_*`` lists) is not their job rows'
    values in the order of start, end and span id (``con``: views glideins and jobs)."""
    from glidein_tracing.table.aggregates import JOB_FAILED
    order = "ORDER BY started_at, ended_at, span_id"
    lists = {"job_started_at": "started_at", "job_ended_at": "ended_at", "job_request_cpus": "request_cpus",
             "job_failed": f"COALESCE({JOB_FAILED}, false)"}
    built = ", ".join(f"list({value} {order}) AS {name}" for name, value in lists.items())
    differs = " OR ".join(f"g.{name} IS DISTINCT FROM COALESCE(j.{name}, [])" for name in lists)
    return [r[0] for r in con.execute(f"WITH j AS (SELECT trace_id, {built} FROM jobs GROUP BY trace_id) "
                                      f"SELECT g.trace_id FROM glideins g LEFT JOIN j USING (trace_id) "
                                      f"WHERE {differs}").fetchall()]


def as_schema_1(table_dir, out_dir, days=None) -> Path:
    """A copy of a glidein table as schema version 1 wrote it (no job timeline columns, version
    1 in the files); ``days``: only these days' files (the others copied as they are)."""
    for path in sorted(Path(table_dir).rglob("*.parquet")):
        target = Path(out_dir) / path.relative_to(table_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        table = pq.read_table(path, partitioning=None)
        if days is None or path.parent.name.split("=", 1)[1] in days:
            table = table.drop_columns([n for n in whatif.TIMELINE if n in table.column_names])
            table = table.set_column(0, "schema_version", pa.array([1] * table.num_rows, pa.int32()))
            table = table.replace_schema_metadata({writer.VERSION_KEY: b"1"})
        pq.write_table(table, target)
    return Path(out_dir)


def replay_one(L: float, jobs: list, own: bool, cores: float, current, candidate) -> dict:
    """Plain-Python reference of the what-if model for one glidein (docs/analysis.md):
    ``jobs``: (start, end, failed) relative to the condor start. Core-seconds."""
    zero = {"idle": 0.0, "no_job": 0.0, "bad": 0.0, "lost_jobs": 0, "cut": 0}
    rel, cursor, gaps = [], 0.0, []
    for s, e, failed in sorted(jobs):
        s = min(max(s, 0.0), L)
        e = min(max(e, s), L)
        gaps.append((max(0.0, s - cursor), cursor))
        rel.append((s, e, failed))
        cursor = max(cursor, e)
    cend, tail_rec = cursor, L - cursor
    I0, T0, R0 = current.max_idle, current.max_tail, current.retire
    I, T, R = candidate.max_idle, candidate.max_tail, candidate.retire
    thr0 = T0 if jobs else I0
    lag = min(max(tail_rec - thr0, 0.0), 300.0) if own else 0.0
    out, new_tail, kept = dict(zero), None, 0
    for index, ((s, e, failed), (gap, cur)) in enumerate(zip(rel, gaps)):
        first = index == 0
        idle_lost = (min(gap, I0) > I) if first else (min(gap, T0) > T)
        retire_lost = min(s, R0) > R
        if idle_lost or retire_lost:
            end = math.inf
            if idle_lost:
                end = cur + (I if first else T) + lag
            if retire_lost:
                end = min(end, max(cur, R))
            new_tail = max(end - cur, 0.0)
            out["cut"] = 1
            break
        kept += 1
        out["idle"] += gap * cores
        out["bad"] += (e - s) * cores if failed else 0.0
    out["lost_jobs"] = len(rel) - kept
    if new_tail is None:
        thr = T if jobs else I
        if own and tail_rec >= thr0 - 1.0:
            new_tail = max(tail_rec + (thr - thr0), 0.0)
        else:
            new_tail = min(tail_rec, thr + max(tail_rec - thr0, 0.0))
        new_tail = min(new_tail, max(cend, R + max(L - R0, 0.0)) - cend)
    out["idle" if kept else "no_job"] += new_tail * cores
    return out


def span(trace, key, stage, start, end, *, name=None, parent="glidein", attrs=None, resource=None, status=0):
    """A flat span dict as flatten_request yields it (times in seconds from BASE)."""
    attributes = {"glidein.stage": stage}
    attributes.update(attrs or {})
    return {"trace_id": trace, "span_id": ids.span_id(trace, key),
            "parent_span_id": "" if parent is None else ids.span_id(trace, parent),
            "name": name or key.split("/", 1)[0], "start_ns": int((BASE + start) * 1e9),
            "end_ns": int((BASE + end) * 1e9) if end is not None else 0, "status_code": status,
            "status_message": "", "attributes": attributes,
            "resource": resource if resource is not None else {"glidein.entry": "ENTRY_T", "glidein.site": "SITE_T",
                                                               "host.cpu.logical_count": 4},
            "events": [], "links": []}


def simple_glidein(trace, *, jobs=((100, 1000, 0),), condor=(50, 1400), reason="daemon_shutdown",
                   outcome="ok", root=True, factory=True, node_offset=0.0):
    """One glidein: optional Factory spans, setup + one validation, condor, jobs, teardown."""
    o = node_offset
    spans = []
    if root:
        spans.append(span(trace, "glidein", "glidein", -300, condor[1] + 10 + o, parent=None,
                          attrs={"glidein.entry": "ENTRY_T", "glidein.site": "SITE_T", "glidein.outcome": outcome}))
    if factory:
        spans.append(span(trace, "factory.submit", "factory.submit", -300, -295))
        spans.append(span(trace, "factory.queue", "factory.queue", -295, -5))
    spans.append(span(trace, "setup", "setup", 0 + o, condor[0] + o))
    spans.append(span(trace, "validation/main/a.sh", "validation", 1 + o, 40 + o, name="main/a.sh",
                      parent="setup", attrs={"glidein.script.id": "main/a.sh"}))
    spans.append(span(trace, "condor", "condor.start", condor[0] + o, condor[1] + o, name="condor",
                      attrs={"glidein.shutdown.reason": reason}))
    for index, (start, end, code) in enumerate(jobs):
        spans.append(span(trace, f"job/{index}", "job", start + o, end + o, parent="condor",
                          attrs={"job.exit_code": code}, status=2 if code else 1))
    spans.append(span(trace, "teardown", "teardown", condor[1] + o, condor[1] + 10 + o))
    return spans


def trace_id(n: int) -> str:
    return f"{n:032x}"
