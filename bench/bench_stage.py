"""Benchmark: the cost of recording one stage on the worker node, ours against two baselines.

A stage is what our hooks write for one span: a `start` line (gt_emit with @name, @stage,
@parent) and an `end` line with a reading of the process tree (gt_emit_snap: the tree's
/proc/PID/stat and status with builtins, load1, free disk), appended to a journal by the shell
library. Measured in the same run:

  ours  bash, the library sourced once                                  journal file
  (a)   the OpenTelemetry Python SDK: TracerProvider, SimpleSpanProcessor,
        ConsoleSpanExporter writing OTLP-like JSON to a local file       local file
  (b)   otel-cli v0.4.5 `span --start --end`, OTLP/HTTP to a loopback
        sink in this process (otel-cli has no file exporter; with no
        endpoint it builds nothing and sends nothing)                      loopback sink

Two variants each:
  loop   one long-lived caller records N stages: one bash process (ours, and the bash loop
         that runs otel-cli once per stage), one Python process (a). Per stage =
         (T(N) - T(0)) / N, so interpreter start-up is not counted.
  fresh  one new process per stage, the way the job hooks run: ours = bash +
         source lib + read glidein_config (gt_setup_env) + the two lines; (a) = python3 -c
         importing the SDK, one span, shutdown; (b) = otel-cli itself (no bash around it:
         favourable to otel-cli). Each run is timed on its own; median and p10..p90.
The baselines get the same attributes as static strings but collect no snapshot: also
favourable to them. "ours -stat" is ours without the one fork of a stage (`stat -f` for
r.disk_free): what that fork costs on this machine, not a behaviour we ship. Processes (fork/clone without CLONE_THREAD, plus the process itself in
"fresh") and execs per stage are counted with `strace -f` when strace exists.

otel-cli is built once with the machine's Go from the Go module proxy into
~/.cache/glidein_tracing/otel-cli-v0.4.5/ (`go install`, or, when the proxy refuses the
version-list lookup `go install` makes, `go build` from a throw-away module that requires it).

    python -m bench.bench_stage [--stages 2000] [--runs 5] [--fresh 100] [--py-fresh 20]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bench import quick

REPO = Path(__file__).resolve().parents[1]
LIB = REPO / "glidein_tracing" / "node" / "hooks" / "gconditional_TRACING_lib.sh"
OTEL_CLI_VERSION = "v0.4.5"
OTEL_CLI_MODULE = "github.com/equinix-labs/otel-cli"
CACHE = Path.home() / ".cache" / "glidein_tracing" / f"otel-cli-{OTEL_CLI_VERSION}"
GO = shutil.which("go") or "/usr/local/go/bin/go"
ATTRS = {"stage": "validation", "parent": "setup", "status": "OK", "r.utime": "0.52",
         "r.stime": "0.11", "r.rss": "3469312", "r.load1": "0.40", "r.disk_free": "80783036416"}

# ours, loop: $1 = N stages in this bash process (lib sourced once, before the timing matters)
OURS_LOOP = r'''
. "$GT_LIB" || exit 1
[ -z "$NO_STAT" ] || gt_disk_free() { GT_R_DF=; }
GT_JOURNAL=$PWD/glidein_tracing/journal.gtj GT_WORK_DIR=$PWD GT_HZ=100 GT_PAGE=4096
i=0
while [ $i -lt "$1" ]; do
    gt_now; gt_emit "$GT_NOW" start "stage/$i" "@name=stage" "@stage=validation" "@parent=setup"
    gt_now; gt_emit_snap "$GT_NOW" end "stage/$i" "$$" "@status=OK"
    i=$((i + 1))
done
'''
# ours, fresh: a hook process (run with cwd = the work dir)
OURS_HOOK = r'''#!/bin/bash
. "$GT_LIB" || exit 1
[ -z "$NO_STAT" ] || gt_disk_free() { GT_R_DF=; }
gt_setup_env glidein_config || exit 1
gt_now; gt_emit "$GT_NOW" start stage "@name=stage" "@stage=validation" "@parent=setup"
gt_now; gt_emit_snap "$GT_NOW" end stage "$GT_STARTUP_PID" "@status=OK"
'''
# (a): $1 = N spans in this Python process; N = 1 is the fresh-process variant
SDK = r'''
import sys
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
out = open(sys.argv[2], "a")
provider = TracerProvider(resource=Resource.create({"service.name": "glidein"}))
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out)))
tracer = provider.get_tracer("bench")
attrs = %r
for i in range(int(sys.argv[1])):
    with tracer.start_as_current_span("stage", attributes=attrs):
        pass
provider.shutdown()
''' % (ATTRS,)
# (b), loop: $1 = N, $OTEL_CLI, $ENDPOINT
CLI_LOOP = r'''
i=0
while [ $i -lt "$1" ]; do
    t0=$EPOCHREALTIME
    "$OTEL_CLI" span --endpoint "$ENDPOINT" --protocol http/protobuf --name stage \
        --service glidein --start "$t0" --end "$EPOCHREALTIME" --attrs "$ATTRS" || exit 1
    i=$((i + 1))
done
'''


class Sink(BaseHTTPRequestHandler):
    """A tiny OTLP/HTTP receiver: reads the request, answers 200 with an empty protobuf."""
    count = 0

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Sink.count += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def otel_cli() -> Path:
    """otel-cli v0.4.5, built once with the machine's Go into CACHE."""
    exe = CACHE / "otel-cli"
    if exe.exists():
        return exe
    CACHE.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOBIN=str(CACHE))
    for extra in ({}, {"GOSUMDB": "off"}):
        run = subprocess.run([GO, "install", f"{OTEL_CLI_MODULE}@{OTEL_CLI_VERSION}"],
                             env={**env, **extra}, capture_output=True, text=True)
        if exe.exists():
            return exe
    # `go install m@v` also asks the proxy for m's version list (deprecation check); when
    # that is refused, require the module from a throw-away module and build its main package.
    build = CACHE / "build"
    build.mkdir(exist_ok=True)
    (build / "go.mod").write_text(f"module gtbench/otelcli\n\ngo 1.21\n\n"
                                  f"require {OTEL_CLI_MODULE} {OTEL_CLI_VERSION}\n")
    (build / "tools.go").write_text(f'//go:build tools\n\npackage tools\n\nimport _ "{OTEL_CLI_MODULE}"\n')
    for extra in ({}, {"GOSUMDB": "off"}):
        e = {**env, **extra}
        run = subprocess.run([GO, "mod", "tidy"], cwd=build, env=e, capture_output=True, text=True)
        if run.returncode == 0:
            run = subprocess.run([GO, "build", "-o", str(exe), OTEL_CLI_MODULE], cwd=build, env=e,
                                 capture_output=True, text=True)
        if exe.exists():
            return exe
    sys.exit(f"cannot build otel-cli {OTEL_CLI_VERSION}:\n{run.stderr[-2000:]}")


def timed(argv, **kw) -> tuple:
    """(wall s, CPU s) of one process and all it waited for (its rusage from wait4): on a
    loaded machine the wall time of a single-threaded process stretches more than that of a
    multi-threaded one (otel-cli's Go runtime), the CPU time does not."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, **kw)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{argv[:3]} failed: exit {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime


def loop_ms(argv_for, n, runs, **kw):
    """Per-stage (wall ms, CPU ms) of each run: (T(n) - T(0)) / n, T(0) measured right before T(n)."""
    out = []
    for _ in range(runs):
        (w0, c0), (w1, c1) = timed(argv_for(0), **kw), timed(argv_for(n), **kw)
        out.append(((w1 - w0) / n * 1000, (c1 - c0) / n * 1000))
    return out


def fresh_ms(argv, runs, **kw):
    return [tuple(x * 1000 for x in timed(argv, **kw)) for _ in range(runs)]


def count_procs(argv, stages, fresh, **kw):
    """(processes, execs) per stage seen by strace -f; None without strace."""
    if not shutil.which("strace"):
        return None
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as out:
        subprocess.run(["strace", "-f", "-qq", "-o", out.name, "-e",
                        "trace=fork,vfork,clone,clone3,execve", *argv], check=True,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, **kw)
        text = out.read()
    procs = sum(1 for line in text.splitlines() if re.search(r"\b(v?fork|clone3?)\(", line)
                and "CLONE_THREAD" not in line and "resumed" not in line)
    execs = len(re.findall(r"\bexecve\(", text))
    return (procs + (1 if fresh else 0)) / stages, execs / stages


def stats(ms):
    ms = sorted(ms)
    q = statistics.quantiles(ms, n=10) if len(ms) >= 2 else [ms[0]] * 9
    return statistics.median(ms), q[0], q[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stages", type=int, default=2000, help="stages per loop run (ours)")
    ap.add_argument("--cli-stages", type=int, default=200, help="stages per loop run (otel-cli)")
    ap.add_argument("--runs", type=int, default=5, help="repetitions of each loop run")
    ap.add_argument("--fresh", type=int, default=100, help="fresh-process runs (ours, otel-cli)")
    ap.add_argument("--py-fresh", type=int, default=20, help="fresh-process runs of (a)")
    ap.add_argument("--lib", type=Path, default=LIB, help="the shell library to measure")
    ap.add_argument("--config-lines", type=int, default=95,
                    help="glidein_config size for the fresh hook (95: the recorded glidein's)")
    args = quick.parse_args(ap, stages=20, cli_stages=5, runs=1, fresh=3, py_fresh=1)
    py, bash, cli = sys.executable, shutil.which("bash"), otel_cli()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    work = Path(tempfile.mkdtemp(prefix="gt-bench-stage-"))
    try:
        (work / "glidein_tracing").mkdir()
        journal = work / "glidein_tracing" / "journal.gtj"
        journal.touch()
        cfg = [f"GLIDEIN_WORKSPACE_ORIG {work}", f"GLIDEIN_STARTUP_PID {os.getpid()}",
               f"GLIDEIN_TRACING_JOURNAL {journal}", "GLIDEIN_TRACING_TRACE_ID " + "ab" * 16,
               "GLIDEIN_TRACING_CLK_TCK 100", "GLIDEIN_TRACING_PAGESIZE 4096"]
        cfg = [f"GLIDEIN_FILLER_{i} some value {i}" for i in range(args.config_lines - len(cfg))] + cfg
        (work / "glidein_config").write_text("\n".join(cfg) + "\n")
        (work / "hook.sh").write_text(OURS_HOOK)
        (work / "hook_nostat.sh").write_text(OURS_HOOK.replace("\n", "\nNO_STAT=1\n", 1))
        env = dict(os.environ, NO_STAT="", GT_LIB=str(args.lib.resolve()), OTEL_CLI=str(cli),
                   ENDPOINT=f"http://127.0.0.1:{server.server_address[1]}",
                   ATTRS=",".join(f"{k}={v}" for k, v in ATTRS.items()))
        kw = dict(cwd=work, env=env)
        spans = str(work / "sdk_spans.json")

        variants = {  # name: (loop argv(n), loop stages, fresh argv)
            "ours": (lambda n: [bash, "-c", OURS_LOOP, "ours", str(n)], args.stages,
                     [bash, str(work / "hook.sh"), "glidein_config"]),
            "ours -stat": (lambda n: [bash, "-c", "NO_STAT=1\n" + OURS_LOOP, "ours", str(n)],
                           args.stages, [bash, str(work / "hook_nostat.sh"), "glidein_config"]),
            "(a) SDK": (lambda n: [py, "-c", SDK, str(n), spans], args.stages,
                        [py, "-c", SDK, "1", spans]),
            "(b) otel-cli": (lambda n: [bash, "-c", CLI_LOOP, "cli", str(n)], args.cli_stages,
                             [cli, "span", "--endpoint", env["ENDPOINT"], "--protocol",
                              "http/protobuf", "--name", "stage", "--service", "glidein",
                              "--attrs", env["ATTRS"]]),
        }
        floor = stats([w for w, _ in fresh_ms(["/bin/true"], args.fresh, **kw)])[0]
        print(f"# {os.cpu_count()} cores; bash {bash}; python {sys.version.split()[0]}; "
              f"otel-cli {OTEL_CLI_VERSION} at {cli}")
        print(f"# spawn floor (subprocess of /bin/true): {floor:.2f} ms, included in every fresh figure")
        print(f"{'variant':<14} {'mode':<6} {'ms/stage':>9} {'p10..p90':>15} {'procs':>6} {'execs':>6} "
              f"{'CPU ms':>7}  ratio (wall; CPU)")
        res, cpu = {}, {}
        for mode in ("loop", "fresh"):
            for name, (loop_argv, n, fresh_argv) in variants.items():
                if mode == "loop":
                    ms = loop_ms(loop_argv, n, args.runs, **kw)
                    procs = count_procs(loop_argv(min(n, 50)), min(n, 50), False, **kw)
                else:
                    ms = fresh_ms(fresh_argv, args.py_fresh if name.startswith("(a)") else args.fresh, **kw)
                    procs = count_procs(fresh_argv, 1, True, **kw)
                med, lo, hi = res[name, mode] = stats([w for w, _ in ms])
                cpu[name, mode] = stats([c for _, c in ms])[0]
                r, rc = med / res["ours", mode][0], cpu[name, mode] / cpu["ours", mode]
                ratio = "" if name == "ours" else f"{r:.{2 if r < 10 else 0}f}x; {rc:.{2 if rc < 10 else 0}f}x ours"
                p = f"{procs[0]:6.2f} {procs[1]:6.2f}" if procs else f"{'-':>6} {'-':>6}"
                print(f"{name:<14} {mode:<6} {med:9.3f} {f'{lo:.3f}..{hi:.3f}':>15} {p} {cpu[name, mode]:7.3f}  "
                      f"{ratio}", flush=True)
        print(f"# otel-cli spans received by the sink: {Sink.count}")
        for mode in ("loop", "fresh"):
            wall, spent = (res["ours", mode][0] / res["(b) otel-cli", mode][0],
                           cpu["ours", mode] / cpu["(b) otel-cli", mode])
            print(f"# ours / otel-cli, {mode}: {wall:.2f}x wall, {spent:.2f}x CPU; target below 1: "
                  f"{'met' if wall < 1 and spent < 1 else 'met in CPU' if spent < 1 else 'NOT met'}")
        ours, a = res["ours", "loop"][0], res["(a) SDK", "fresh"][0]
        print(f"# target: ours <= 2 ms/stage: {ours:.2f} ms, {'met' if ours <= 2 else 'NOT met'}; "
              f">= 50x cheaper than (a), one SDK process per stage: {a / ours:.0f}x, "
              f"{'met' if a >= 50 * ours else 'NOT met'}")
    finally:
        server.shutdown()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
