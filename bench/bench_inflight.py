"""Benchmark: from a Factory event to its span in Jaeger, for a glidein still running.

Starts the real Jaeger on loopback (tests/support/jaeger_harness.py, the cached build), runs
`glidein-tracing forward --follow --interval I` against it in its own process, then, --runs
times, writes "Job executing" for a submitted glidein into the activity log (the stand-in
Condor-G log) and polls Jaeger until that glidein's `factory.queue` span is queryable by its
trace id. Prints each latency beside the target, one forwarder interval plus 5 s.

    python -m bench.bench_inflight [--interval 10] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import quick

REPO = Path(__file__).resolve().parents[1]

from tests.support import jaeger_harness  # noqa: E402

from glidein_tracing.core import ids  # noqa: E402
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout  # noqa: E402

FACTORY, SCHEDD = "bench_factory", "schedd_glideins1@bench"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--interval", type=float, default=10.0, help="the forwarder's --interval, seconds")
    parser.add_argument("--runs", type=int, default=5)
    args = quick.parse_args(parser, interval=1.0, runs=1)
    with tempfile.TemporaryDirectory(prefix="gt-bench-inflight-") as tmp:
        tmp = Path(tmp)
        jaeger = jaeger_harness.JaegerProcess(jaeger_harness.ensure_jaeger(), log_dir=tmp / "jaeger").start()
        query = jaeger.query()
        layout = FactoryLayout(logs=tmp / "logs", instance="bench_instance", entry="BENCH_ENTRY")
        log = CondorGLog(layout)
        log.submit(1, 0, when=time.time() - 60)       # the activity log exists before the forwarder
        config = tmp / "forwarder.yaml"
        config.write_text(f"factory: {FACTORY}\nschedd: {SCHEDD}\nlogs: [{layout.logs}]\n"
                          f"endpoint: {jaeger.otlp_endpoint}\nquery: {jaeger.query_url}\n"
                          f"state: {tmp / 'ledger.sqlite'}\ninterval: {args.interval}\nfollow: true\n")
        forwarder = subprocess.Popen([sys.executable, "-m", "glidein_tracing", "forward", "--config", str(config),
                                      "--no-progress"], cwd=REPO, stdout=subprocess.DEVNULL,
                                     stderr=open(tmp / "forwarder.log", "w"), env=dict(os.environ))
        latencies = []
        try:
            time.sleep(2)
            for run in range(args.runs):
                proc = run + 1
                log.submit(1, proc, when=time.time() - 30)
                log.grid_submit(1, proc, when=time.time() - 20)
                time.sleep(args.interval * (0.3 + 0.4 * (run % 2)))   # land anywhere in a cycle
                event = time.time()
                log.execute(1, proc, when=event)
                trace = ids.GlideinIdentity(FACTORY, layout.instance, layout.entry, SCHEDD, "1", str(proc)).trace_id
                queue = ids.span_id(trace, "factory.queue")
                query.wait_for_trace(trace, [queue], timeout=args.interval * 3 + 30)
                latencies.append(time.time() - event)
                print(f"run {run + 1}: factory.queue of 1.{proc} queryable {latencies[-1]:.1f} s after the event "
                      f"(target {args.interval + 5:.0f} s)", flush=True)
        finally:
            forwarder.terminate()
            forwarder.wait(30)
            jaeger.stop()
        print(f"interval {args.interval:.0f} s: latency max {max(latencies):.1f} s, median "
              f"{sorted(latencies)[len(latencies) // 2]:.1f} s; target (interval + 5 s) "
              f"{'met' if max(latencies) <= args.interval + 5 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
