"""Benchmark: what tracing costs a Frontend group process, start-up included (docs/frontend.md).

GlideinWMS starts every group, every cycle, as a fresh process (``frontend/glideinFrontend.py``,
``spawn_group``: ``sys.executable glideinFrontendElement.py PPID WORK_DIR GROUP run``), so
whatever the tracing set-up imports at start is paid every cycle by every group. Here the
element stand-in (tests/support/frontend_standin*.py, laid out as GlideinWMS's package, its
configuration the one GlideinWMS wrote in ../shared/fixtures/gwms-frontend) runs as such a
process over 6,000 idle jobs (300 submissions of 20, each its own TraceParent) at 50 entries,
its spans sent over OTLP/HTTP to a loopback receiver, in the same run, alternating:

- plain: not instrumented;
- each documented way of turning the instrumentor on (docs/frontend.md), in two cycles:
  steady (the history holds every submission's reason: the cycle and request spans only) and
  cap (no history: 200 job.waiting spans, the per-cycle cap, besides them);
- the plain process with ``gc.freeze()`` at start, as frontend_hooks/startup.py does after
  its set-up (what the freeze alone does to GlideinWMS's own cost);
- two parts of it, steady: frontend_hooks/autoload with job.waiting off
  (``GLIDEIN_TRACING_FRONTEND_WAITING=0``), and job.waiting's query attributes alone (no
  tracing; the job query asks for ``waiting.JOB_ATTRIBUTES`` too): what the data job.waiting
  needs from the schedd costs the cycle, whatever sends the spans.

CPU time of the group process and its children (user + system, from its rusage), median of
``--repeat``; the ratios are against plain in the same run. The stand-in imports what
GlideinWMS's element imports where it is installed here and queries and matches in forked
children as the real ``iterate_one`` and ``do_match`` do; it still does less than GlideinWMS
(no M2Crypto or rrdtool, no advertising, no monitoring files or logs), so its plain CPU is
smaller and the ratios overstate tracing's share of a real cycle. Modules run from bytecode,
as an installed Frontend's do (each way's first, unmeasured run writes it).

    python -m bench.bench_frontend_startup [--repeat 7 --submissions 300 --jobs 20 --entries 50]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import quick
from bench.bench_frontend_waiting import build_world
from frontend_hooks import waiting
from frontend_hooks.instrumentor import WAITING_ENV
from tests.support import frontend_package
from tests.support.fixtures import GWMS_FRONTEND
from tests.support.otlp_receiver import CountingCollector, counting_collector

ROOT = Path(__file__).resolve().parents[1]


def _opentelemetry_instrument_path() -> str | None:
    """The directory of opentelemetry-instrument's sitecustomize, which the tool puts on the
    PYTHONPATH the Frontend daemon, and so every group process, inherits."""
    try:
        from opentelemetry.instrumentation import auto_instrumentation
    except ImportError:
        return None
    return os.path.dirname(auto_instrumentation.__file__)


# A sitecustomize for the floor: the group process untraced, its job query asking for the
# attributes job.waiting adds (JOB_ATTRIBUTES, passed in the environment), as the instrumentor
# adds them, and nothing else.
ATTRIBUTES_ONLY = """\
import json, os, sys
if os.path.basename(sys.argv[0]) == "glideinFrontendElement.py":
    import glideinwms.frontend.glideinFrontendLib as lib
    _query, _wanted = lib.getCondorQ, [tuple(item) for item in json.loads(os.environ["BENCH_JOB_ATTRIBUTES"])]

    def getCondorQ(schedd_names, constraint=None, format_list=None, *args, **kwargs):
        have = {item[0] for item in format_list or ()}
        extra = [item for item in _wanted if item[0] not in have] if format_list is not None else []
        return _query(schedd_names, constraint, None if format_list is None else list(format_list) + extra,
                      *args, **kwargs)

    lib.getCondorQ = getCondorQ
"""


# The plain group process with what frontend_hooks/startup.py does besides tracing: gc.freeze()
# at start, which must not be what makes tracing look cheap (the plain cycle made faster).
FREEZE_ONLY = """\
import gc, os, sys
if os.path.basename(sys.argv[0]) == "glideinFrontendElement.py":
    gc.freeze()
"""


def _sitecustomize(directory: Path, text: str) -> str:
    directory.mkdir()
    (directory / "sitecustomize.py").write_text(text)
    return str(directory)


def ways(tmp: Path) -> dict:
    """name -> (PYTHONPATH entries before the package's, extra environment, cycles) of each way."""
    floor = _sitecustomize(tmp / "attributes_only", ATTRIBUTES_ONLY)
    autoload = str(ROOT / "frontend_hooks" / "autoload")
    out = {"plain": ([], {}, ("plain",)),
           "plain, gc.freeze() at start": ([_sitecustomize(tmp / "freeze_only", FREEZE_ONLY)], {}, ("steady",)),
           "job.waiting's query attributes alone": (
               [floor], {"BENCH_JOB_ATTRIBUTES": json.dumps(waiting.JOB_ATTRIBUTES)}, ("steady",)),
           "frontend_hooks/autoload, job.waiting off": ([autoload], {WAITING_ENV: "0"}, ("steady",)),
           "frontend_hooks/autoload": ([autoload], {}, ("steady", "cap"))}
    otel = _opentelemetry_instrument_path()
    if otel:
        out["opentelemetry-instrument"] = ([otel], {"OTEL_TRACES_EXPORTER": "otlp"}, ("steady", "cap"))
    return out


def run_cycle(script: Path, work: Path, env: dict) -> float:
    """CPU seconds (user + system) of one group process run to its end."""
    process = subprocess.Popen([sys.executable, str(script), "1", str(work), "main", "run"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(process.pid, 0)
    error = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0 or "Traceback" in error:
        raise SystemExit(f"the group process failed:\n{error}")
    return usage.ru_utime + usage.ru_stime


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--submissions", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=20, help="idle jobs per submission")
    parser.add_argument("--entries", type=int, default=50)
    args = quick.parse_args(parser, argv, repeat=1, submissions=30, jobs=2, entries=5)
    if not GWMS_FRONTEND.exists():
        parser.error(f"needs the Frontend configuration GlideinWMS wrote: {GWMS_FRONTEND} is absent")
    with tempfile.TemporaryDirectory() as tmp, counting_collector() as url:
        tmp = Path(tmp)
        lib, script = frontend_package.lay_out(tmp / "lib")
        world = build_world(tmp, args.submissions, args.jobs, args.entries)
        # a Frontend's Python modules are installed byte-compiled: each way's first run writes
        # the bytecode (to PYCACHEPREFIX, not into the checkout), the measured runs read it
        base_env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("OTEL_", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX"))}
        base_env.update(PYTHONPYCACHEPREFIX=str(tmp / "pycache"), OTEL_SERVICE_NAME="gwms-frontend", OTEL_EXPORTER_OTLP_ENDPOINT=url,
                        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf", OTEL_METRICS_EXPORTER="none",
                        OTEL_LOGS_EXPORTER="none")
        runs = []   # (name, cycle, work dir, env, history to start from or None)
        for name, (paths, extra, cycles) in ways(tmp).items():
            env = dict(base_env, PYTHONPATH=os.pathsep.join(paths + [str(lib), str(ROOT)]), **extra)
            for cycle in cycles:
                work = tmp / re.sub(r"[^A-Za-z0-9_.-]", "_", f"{name}-{cycle}")
                work.mkdir()
                (work / "world.json").write_text(json.dumps(world))
                history = None
                run_cycle(script, work, env)   # writes the bytecode
                if cycle == "steady":   # two cycles give every submission its period (200 + 100)
                    for _ in range(2):
                        run_cycle(script, work, env)
                    history = work.with_suffix(".pk")
                    shutil.copy(work / "group_main" / "history.pk", history)
                runs.append((name, cycle, work, env, history))
        times: dict = {(name, cycle): [] for name, cycle, *_ in runs}
        spans: dict = {}
        for _ in range(args.repeat):
            for name, cycle, work, env, history in runs:
                if history is not None:
                    shutil.copy(history, work / "group_main" / "history.pk")
                else:
                    shutil.rmtree(work / "group_main", ignore_errors=True)
                before = len(CountingCollector.received)
                times[(name, cycle)].append(run_cycle(script, work, env))
                spans[(name, cycle)] = len(CountingCollector.received) - before
    plain = statistics.median(times[("plain", "plain")])
    print(f"{args.submissions * args.jobs:,} idle jobs in {args.submissions} submissions over {args.entries} entries, "
          f"a fresh {sys.implementation.name} {sys.version.split()[0]} process per cycle; CPU, "
          f"median of {args.repeat}:")
    print("| way | cycle | CPU s | added vs plain | spans sent |")
    print("|---|---|---|---|---|")
    for (name, cycle), values in times.items():
        median = statistics.median(values)
        added = "" if name == "plain" else f"{(median - plain) / plain * 100:+.1f} %"
        print(f"| {name} | {cycle} | {median:.3f} | {added} | {spans[(name, cycle)]} |")
    print("group process CPU measured: plain and each way")


if __name__ == "__main__":
    main()
