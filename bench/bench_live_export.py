"""Wall time of the cleanup hook with live export, against GLIDEIN_TRACING_EXPORT_TIMEOUT.

Runs the real cleanup hook (recorded 'success' glidein, real `glidein-tracing export`) against
a reachable loopback OTLP receiver, an endpoint that accepts and never answers, a closed
port, and a node Python that never answers (the probe is cut), each with `timeout(1)` on PATH and with the hook's shell watchdog instead. Prints each
wall time, its ratio to the bound, and the same hook with live export off (the baseline,
measured in the same run).

    .venv/bin/python -m bench.bench_live_export [--bound 5] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from contextlib import contextmanager
from pathlib import Path

from bench import quick


from tests.support.live_export_support import (closed_port_endpoint, glidein_for_live_export,  # noqa: E402
                                 hung_endpoint, path_without_timeout, run_cleanup,
                                 stuck_python)
from tests.support.otlp_receiver import counting_collector  # noqa: E402


@contextmanager
def closed_port():
    yield closed_port_endpoint()


ENDPOINTS = {"reachable receiver": counting_collector, "hung endpoint": hung_endpoint,
             "closed port": closed_port}


CASES = {name: (cm, None) for name, cm in ENDPOINTS.items()}
CASES["Python never answers"] = (closed_port, "stuck")


def one_run(root: Path, endpoint_cm, bound: int, path: str | None, mode: str, python) -> float:
    with endpoint_cm() as endpoint:
        kwargs = {"python": stuck_python(root / "py")} if python == "stuck" else {}
        g, cleanup_dir = glidein_for_live_export(root, endpoint, bound, mode=mode, **kwargs)
        try:
            wall, _, left = run_cleanup(g, cleanup_dir, path=path)
        finally:
            g.stop()
    if left:
        raise SystemExit(f"processes left behind: {left}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bound", type=int, default=5, help="GLIDEIN_TRACING_EXPORT_TIMEOUT, s")
    parser.add_argument("--runs", type=int, default=3, help="runs per case (median printed)")
    args = quick.parse_args(parser, bound=1, runs=1)
    with tempfile.TemporaryDirectory(prefix="gt-bench-live-") as tmp:
        tmp = Path(tmp)
        no_timeout = path_without_timeout(tmp / "bin")
        counter = iter(range(1_000_000))

        def median(endpoint_cm, path, mode="live", python=None):
            return statistics.median(one_run(tmp / f"g{next(counter)}", endpoint_cm, args.bound, path,
                                             mode, python) for _ in range(args.runs))

        baseline = median(counting_collector, None, mode="forward")
        print(f"cleanup hook wall time, GLIDEIN_TRACING_EXPORT_TIMEOUT={args.bound} s, "
              f"median of {args.runs}")
        print(f"baseline (live export off): {baseline:.2f} s")
        print("| case | bounded by | wall s | wall / bound | wall - baseline s |")
        print("|---|---|---|---|---|")
        for name, (endpoint_cm, python) in CASES.items():
            for helper, path in (("timeout(1)", None), ("shell watchdog", no_timeout)):
                wall = median(endpoint_cm, path, python=python)
                print(f"| {name} | {helper} | {wall:.2f} | {wall / args.bound:.2f} | "
                      f"{wall - baseline:.2f} |", flush=True)


if __name__ == "__main__":
    main()
