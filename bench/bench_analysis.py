#!/usr/bin/env python3
"""Benchmark of the analysis on DuckDB over the glidein table (not a test; figures go to
bench/README.md).

1. The table: N synthetic glideins (default 1,000,000) written by the numpy generator
   (glidein_tracing.testing.synth_table) over ``--days`` day partitions, cached under
   ~/.cache/glidein_tracing/bench/table-N-dDAYS-sSEED-vSCHEMA.GENERATOR (generation is not timed against the budget).
2. The whole analysis in a fresh process, as ``glidein-tracing analyze TABLE --whatif
   --html OUT`` runs it: distributions, waste, analyze_entries, failures with outage windows,
   compare, the what-if over today's candidates (GlideinWMS's 7 Max_Idle x 8 Max_Tail values,
   retire as recorded), and the HTML report; wall time per section and the analysis's peak RSS
   (taken before step 3's queries, whose DuckDB has no memory limit).
3. The limit of each section, in the same process after the analysis: a hand-written DuckDB
   query over the same Parquet files (``read_parquet`` of the table's files, no views, no
   rollups) that computes that section's figures (LIMITS below), its CPU seconds beside the
   section's own (``analyze``'s sections timed by process CPU: DuckDB's threads included) and
   their ratio.
4. ``--baseline CHECKOUT``: today's path in the same run, where it still exists: that
   checkout's own bench_analysis.py (the compact in-memory numpy table of the same number of
   glideins from its generator, its whole analysis), its wall time and peak RSS.

Budgets (issue 22): 1,000,000 glideins in at most 5 s; 30,000,000 in at most 60 s with at most
2 GB peak RSS, on the 2-core machine. A calibration workload says how fast the machine was.

Usage: python -m bench.bench_analysis [--glideins 1000000] [--days 30] [--baseline /path/to/old/checkout]
       [--json OUT]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.calibration import calibrate
from bench import quick

CACHE = Path(os.path.expanduser("~/.cache/glidein_tracing/bench"))


def table_dir(glideins: int, days: float, seed: int) -> Path:
    """The cached table of these settings, of this schema and generator version."""
    from glidein_tracing.testing.synth import GENERATOR_VERSION
    from glidein_tracing.table.schema import SCHEMA_VERSION
    return CACHE / f"table-{glideins}-d{days:g}-s{seed}-v{SCHEMA_VERSION}.{GENERATOR_VERSION}"


def build_table(glideins: int, days: float, seed: int) -> Path:
    from glidein_tracing.testing.synth import SynthConfig
    from glidein_tracing.testing.synth_table import write_table
    directory = table_dir(glideins, days, seed)
    if not (directory / "glideins").is_dir():
        started = time.time()
        partial = directory.with_name(directory.name + ".partial")
        counts = write_table(SynthConfig(glideins=glideins, seed=seed, period_s=days * 86400.0), partial)
        partial.rename(directory)
        print(f"generated {counts['glideins']:,} glideins, {counts['jobs']:,} jobs in {counts['files']} files "
              f"in {time.time() - started:.0f} s -> {directory}", flush=True)
    else:   # cached by an earlier version: the rollups it lacks (a kind added since), as an operator writes them
        from glidein_tracing.table.backfill import missing_rollups
        started = time.time()
        written, _, problems = missing_rollups(directory)
        if written or problems:
            print(f"rollups written for {written} files of the cached table in {time.time() - started:.0f} s"
                  + "".join(f"; {p}" for p in problems), flush=True)
    return directory


# Each section's limit: the figures it shows, computed by hand over every row of the files
# ({g}: the glidein files, {j}: the job files), as a user fluent in SQL would write them.
IDLE = "COALESCE(idle_no_job_s, 0) + COALESCE(idle_tail_s, 0) + COALESCE(idle_before_first_job_s, 0)"
LIMITS = {
    # per entry and site: glideins, failed, jobs, quantiles of the glidein metrics
    "stats": ["""SELECT entry, site, COUNT(*), COUNT(*) FILTER (WHERE failure_domain IS NOT NULL), SUM(jobs),
        quantile_cont(setup_s, [0.5, 0.9, 0.99]), quantile_cont(idle_before_first_job_s, [0.5, 0.9, 0.99]),
        quantile_cont(idle_tail_s, [0.5, 0.9, 0.99]), quantile_cont(condor_s, [0.5, 0.9, 0.99])
        FROM {g} GROUP BY ALL""",
              "SELECT entry, COUNT(*), SUM(wall_s), quantile_cont(wall_s, [0.5, 0.9, 0.99]) FROM {j} GROUP BY ALL"],
    # analyze_entries: GlideinWMS's sums per entry
    "analyze_entries": ["""SELECT entry, COUNT(*), SUM(CASE WHEN traced = false THEN 1 ELSE 0 END),
        SUM(CASE WHEN gwms_condor_started THEN 0 ELSE 1 END), SUM(CASE WHEN gwms_jobs_nr = 0 THEN 1 ELSE 0 END),
        SUM(gwms_lasted_s), SUM(CASE WHEN waste_validation_mill > 998 THEN gwms_lasted_s ELSE 0 END),
        SUM(gwms_lasted_s * waste_validation_mill / 1e3), SUM(gwms_lasted_s * waste_idle_mill / 1e3),
        SUM(gwms_jobs_lasted_s), SUM(gwms_jobs_goodput_s) FROM {g} WHERE gwms_lasted_s IS NOT NULL GROUP BY 1"""],
    # failed glideins per site, entry, hour, domain and type with core-hours; all per site and hour; failed jobs per domain
    "failures": ["""SELECT site, entry, CAST(floor(epoch(COALESCE(node_start_at, submitted_at)) / 3600) AS BIGINT),
        failure_domain, failure_type, COUNT(*), SUM(epoch(ended_at) - epoch(node_start_at)), first(trace_id)
        FROM {g} WHERE failure_domain IS NOT NULL GROUP BY ALL""",
                 """SELECT site, entry, CAST(floor(epoch(COALESCE(node_start_at, submitted_at)) / 3600) AS BIGINT), COUNT(*)
        FROM {g} GROUP BY ALL""",
                 "SELECT failure_domain, COUNT(*), SUM(wall_s) FROM {j} WHERE failure_domain IS NOT NULL GROUP BY ALL"],
    # per Frontend client and group, and per client: glideins, failed, no job, jobs, ran, and
    # analyze_entries' sums
    "frontends": ["""SELECT client, client_group, COUNT(*), COUNT(*) FILTER (WHERE failed),
        COUNT(*) FILTER (WHERE COALESCE(jobs, 0) = 0), SUM(jobs), COUNT(*) FILTER (WHERE condor_s IS NOT NULL),
        COUNT(*) FILTER (WHERE gwms_lasted_s IS NOT NULL), SUM(CASE WHEN traced = false THEN 1 ELSE 0 END),
        SUM(CASE WHEN gwms_condor_started THEN 0 ELSE 1 END), SUM(CASE WHEN gwms_jobs_nr = 0 THEN 1 ELSE 0 END),
        SUM(gwms_lasted_s), SUM(CASE WHEN waste_validation_mill > 998 THEN gwms_lasted_s ELSE 0 END),
        SUM(gwms_lasted_s * waste_validation_mill / 1e3), SUM(gwms_lasted_s * waste_idle_mill / 1e3),
        SUM(gwms_jobs_lasted_s), SUM(gwms_jobs_goodput_s)
        FROM {g} GROUP BY GROUPING SETS ((client, client_group), (client))"""],
    # per day: glideins, Lasted, waste, efficiency
    "trend": ["""SELECT date, COUNT(*), SUM(gwms_lasted_s), SUM(gwms_lasted_s - gwms_jobs_lasted_s),
        SUM(gwms_jobs_goodput_s * COALESCE(cpus, 1)), SUM(gwms_lasted_s * COALESCE(cpus, 1))
        FROM {g} WHERE gwms_lasted_s IS NOT NULL GROUP BY 1"""],
    # the slowest setups and longest idle glideins, top 3, ties to the higher trace id; and per
    # recommended entry ({cuts}: their conditions, examples.py's) the longest idle it cuts
    "examples": ["SELECT trace_id FROM {g} WHERE setup_s IS NOT NULL ORDER BY setup_s DESC, trace_id DESC LIMIT 3",
                 f"SELECT trace_id FROM {{g}} WHERE condor_s IS NOT NULL ORDER BY {IDLE} DESC, trace_id DESC LIMIT 3",
                 f"SELECT trace_id FROM {{g}} WHERE {{cut}} ORDER BY {IDLE} DESC, trace_id DESC LIMIT 3"],
    # the replay's floor: each glidein's idle cut at each of GlideinWMS's 7 x 8 Max_Idle x
    # Max_Tail candidates (whatif.py's defaults), summed per entry and candidate (the replay also rebuilds the job timelines)
    "whatif": ["""WITH c AS (SELECT * FROM (VALUES {idles}) a(mi), (VALUES {tails}) b(mt))
        SELECT entry, mi, mt, SUM(CASE WHEN jobs = 0 THEN LEAST(idle_no_job_s, mi) ELSE LEAST(idle_before_first_job_s, mi)
        + LEAST(idle_tail_s, mt) END), COUNT(*) FILTER (WHERE idle_tail_s > mt OR idle_before_first_job_s > mi)
        FROM {g}, c GROUP BY ALL"""],
}


class _CpuStages:
    """``analyze``'s stages timed by this process's CPU (DuckDB's and numpy's threads included)."""

    def __init__(self):
        self.cpu: dict = {}

    @contextlib.contextmanager
    def stage(self, name: str):
        started = time.process_time()
        yield
        self.cpu[name] = round(time.process_time() - started, 3)


def limits(table: str, recommended: list) -> dict:
    """Each section's limit (LIMITS) in CPU seconds, over the table's files; ``recommended``:
    the what-if's recommended entries (a query of ``{cut}`` runs once per entry)."""
    from glidein_tracing.analysis.examples import _cut_condition
    import duckdb
    con = duckdb.connect()
    from glidein_tracing.analysis.whatif import DEFAULT_MAX_IDLE, DEFAULT_MAX_TAIL
    grid = {"idles": ", ".join(f"({v})" for v in DEFAULT_MAX_IDLE), "tails": ", ".join(f"({v})" for v in DEFAULT_MAX_TAIL)}
    files = {key: f"read_parquet('{Path(table) / name}/**/*.parquet', hive_partitioning = true, union_by_name = true)"
             for key, name in (("g", "glideins"), ("j", "jobs"))}
    out = {}
    for section, queries in LIMITS.items():
        started = time.process_time()
        for sql in queries:
            for cut in [_cut_condition(rec) for rec in recommended] if "{cut}" in sql else [None]:
                con.execute(sql.format(**files, **grid, cut=cut)).fetchall()
        out[section] = round(time.process_time() - started, 3)
    con.close()
    return out


def child(table: str, html_out: str) -> dict:
    """The whole analysis as ``analyze TABLE --whatif --html`` runs it (in its own process)."""
    from glidein_tracing.analysis.dataset import open_dataset
    from glidein_tracing.analysis.html import render_html
    from glidein_tracing.analysis.report import analyze, summary_text
    times: dict = {}
    started, cpu_started = time.perf_counter(), time.process_time()
    data = open_dataset(table)
    times["open"] = round(time.perf_counter() - started, 2)
    stages = _CpuStages()
    doc = analyze(data, whatif=True, timings=times, stages=stages)
    summary_text(doc)
    html_started = time.perf_counter()
    Path(html_out).write_text(render_html(doc), encoding="utf-8")
    times["html"] = round(time.perf_counter() - html_started, 2)
    total, total_cpu = round(time.perf_counter() - started, 2), round(time.process_time() - cpu_started, 2)
    # the analysis's own peak, before the limits' queries (a DuckDB of no memory limit) raise it
    analysis_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    recommended = doc["whatif"]["recommendations"]["entries"] if doc.get("whatif") else []
    return {"sections_s": times, "sections_cpu_s": stages.cpu, "limits_cpu_s": limits(table, recommended), "total_s": total,
            "total_cpu_s": total_cpu, "analysis_peak_rss_mb": round(analysis_rss_mb),
            "glideins": doc["stats"]["glideins"], "jobs": doc["stats"]["jobs"],
            "candidates": len(doc["whatif"]["candidates"]), "exact": doc["whatif"]["current_replay"]["exact"]}


def run_child(args: list[str], python: str = sys.executable, cwd=None) -> tuple[dict | str, float, float]:
    """(its JSON or its output, wall seconds, peak RSS MB) of a fresh process (its own rusage)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        env = dict(os.environ, PYTHONPATH=str(cwd)) if cwd else None   # the checkout's own package
        proc = subprocess.Popen([python, *args], stdout=out, stderr=err, text=True, cwd=cwd, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        text = out.read()
        if status:
            raise SystemExit(f"{args} failed:\n{err.read()[-3000:]}")
    try:
        result = json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError):
        result = text
    return result, wall, usage.ru_maxrss / 1024.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--glideins", type=int, default=1_000_000)
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--baseline", metavar="CHECKOUT", help="a checkout with today's analysis path")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--build", action="store_true", help=argparse.SUPPRESS)
    args = quick.parse_args(parser, argv, glideins=2000, days=2)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    if args.build:
        build_table(args.glideins, args.days, args.seed)
        return 0
    # generated in its own process: a child forked from a parent holding the generator's
    # arrays would report the parent's pages in its peak RSS
    out, _, _ = run_child(["-m", "bench.bench_analysis", "--build", "--glideins", str(args.glideins), "--days", str(args.days),
                           "--seed", str(args.seed)])
    print(out.strip() if isinstance(out, str) else out, flush=True)
    table = table_dir(args.glideins, args.days, args.seed)
    machine_ms = calibrate()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        result, wall, rss = run_child(["-m", "bench.bench_analysis", "--child", str(table), str(Path(tmp) / "report.html")])
    figures = {"glideins": args.glideins, "machine_ms": round(machine_ms, 1), "load_before": round(load, 1),
               "duckdb": {**result, "process_wall_s": round(wall, 2), "peak_rss_mb": round(rss)}}
    print(f"machine speed {machine_ms:.0f} ms, load {load:.1f}")
    print(f"DuckDB over the glidein table: {result['glideins']:,} glideins, {result['jobs']:,} jobs, "
          f"{result['candidates']} what-if candidates (replay exact: {result['exact']})")
    print(f"  whole analysis {result['total_s']:.1f} s (process {wall:.1f} s), peak RSS {result['analysis_peak_rss_mb']:,} MB "
          f"(the process's with the limits' queries: {rss:,.0f} MB); sections: "
          + ", ".join(f"{k} {v:.1f} s" for k, v in result["sections_s"].items()))
    print("  each section against its limit (hand-written DuckDB over the same files), CPU seconds:")
    for section, limit in result["limits_cpu_s"].items():
        own_cpu = result["sections_cpu_s"].get(section)
        ratio = f"{own_cpu / limit:.2f}x" if own_cpu is not None and limit > 0 else "-"
        print(f"    {section:16} {own_cpu if own_cpu is not None else '-':>8} s  limit {limit:8.3f} s  ratio {ratio}")
    floor = sum(result["limits_cpu_s"][s] for s in ("stats", "analyze_entries", "failures"))
    print(f"  whole analysis {result['total_cpu_s']:.2f} s CPU (the page included) against the limits of the statistics, "
          f"analyze_entries and failures ({floor:.3f} s): {result['total_cpu_s'] / floor:.2f}x")
    if args.baseline:
        own = Path(args.baseline) / ".venv" / "bin" / "python"     # its own package, not this one
        with tempfile.TemporaryDirectory() as tmp:
            _, old_wall, old_rss = run_child(
                ["-m", "bench.bench_analysis", "--glideins", str(args.glideins), "--store-glideins", "0", "--naive-glideins", "200",
                 "--naive-candidates", "1",
                 "--json", str(Path(tmp) / "old.json")], str(own) if own.exists() else sys.executable,
                cwd=args.baseline)
            old_s = json.loads((Path(tmp) / "old.json").read_text())["compact"]["analysis_s"]
        figures["baseline"] = {"checkout": args.baseline, "analysis_s": old_s, "process_wall_s": round(old_wall, 2),
                               "peak_rss_mb": round(old_rss)}
        print(f"today's path ({args.baseline}): the compact numpy table of {args.glideins:,} glideins (generated in "
              f"its process, not timed; reading a store costs 60-74 s per million on top): analysis {old_s:.1f} s, "
              f"peak RSS {old_rss:,.0f} MB; DuckDB / today: {result['total_s'] / old_s:.2f}x time, "
              f"{rss / old_rss:.2f}x memory")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
