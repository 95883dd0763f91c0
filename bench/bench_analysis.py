#!/usr/bin/env python3
"""Benchmark of the analysis on DuckDB over the glidein table (not a test; figures go to
bench/README.md).

1. The table: N synthetic glideins (default 1,000,000) written by the numpy generator
   (glidein_tracing.testing.synth_table) over ``--days`` day partitions, cached under
   ~/.cache/glidein_tracing/bench/table-N-dDAYS-sSEED-vSCHEMA.GENERATOR (generation is not timed against the budget).
2. The whole analysis in a fresh process, as ``glidein-tracing analyze TABLE --whatif
   --html OUT`` runs it: distributions, waste, analyze_entries, failures with outage windows,
   compare, the what-if over today's candidates (GlideinWMS's 7 Max_Idle x 8 Max_Tail values,
   retire as recorded), and the HTML report; wall time per section and the process's peak RSS.
3. ``--baseline CHECKOUT``: today's path in the same run, where it still exists: that
   checkout's own bench_analysis.py (the compact in-memory numpy table of the same number of
   glideins from its generator, its whole analysis), its wall time and peak RSS.

Budgets (issue 22): 1,000,000 glideins in at most 5 s; 30,000,000 in at most 60 s with at most
2 GB peak RSS, on the 2-core machine. A calibration workload says how fast the machine was.

Usage: python -m bench.bench_analysis [--glideins 1000000] [--days 30] [--baseline /path/to/old/checkout]
       [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
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
    return directory


def child(table: str, html_out: str) -> dict:
    """The whole analysis as ``analyze TABLE --whatif --html`` runs it (in its own process)."""
    from glidein_tracing.analysis.dataset import open_dataset
    from glidein_tracing.analysis.html import render_html
    from glidein_tracing.analysis.report import analyze, summary_text
    times: dict = {}
    started = time.perf_counter()
    data = open_dataset(table)
    times["open"] = round(time.perf_counter() - started, 2)
    doc = analyze(data, whatif=True, timings=times)
    summary_text(doc)
    html_started = time.perf_counter()
    Path(html_out).write_text(render_html(doc), encoding="utf-8")
    times["html"] = round(time.perf_counter() - html_started, 2)
    return {"sections_s": times, "total_s": round(time.perf_counter() - started, 2),
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
    print(f"  whole analysis {result['total_s']:.1f} s (process {wall:.1f} s), peak RSS {rss:,.0f} MB; sections: "
          + ", ".join(f"{k} {v:.1f} s" for k, v in result["sections_s"].items()))
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
