"""Instructions per span forwarded, counted by callgrind: a figure the VM's noise does not move.

Timed benchmarks on a shared VM move by +-30 % within minutes (bench/calibration.py), which
hides changes of a few percent. Valgrind's callgrind counts the instructions a process
executes instead. This runs the same program twice under it, once building the Factory log
tree (bench_forwarder.build_tree) and stopping, once building it and running one forwarder
pass to a loopback OTLP/HTTP sink, and prints the difference divided by the spans sent.

    python bench/callgrind_forwarder.py [--glideins 200]
    GLIDEIN_TRACING_PURE_PYTHON=1 python bench/callgrind_forwarder.py   # the modules as Python

Needs valgrind on PATH. Takes about a minute for 200 glideins.
"""

from __future__ import annotations

import argparse
import multiprocessing
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child(glideins: int, forward: bool):
    """The measured program: build the tree; with ``forward``, forward it once."""
    sys.path.insert(0, str(HERE))
    import bench_forwarder as bench
    import classad2  # noqa: F401  imported in both runs: their import is not forwarding work
    import htcondor2  # noqa: F401
    from glidein_tracing.exporters.otlp import make_otlp_exporter
    from glidein_tracing.factory.forwarder import Forwarder
    from glidein_tracing.factory.ledger import Ledger

    counter, port = multiprocessing.Value("q", 0), multiprocessing.Value("i", 0)
    ready = multiprocessing.Event()
    sink = multiprocessing.Process(target=bench.run_sink, args=(counter, port, ready), daemon=True)
    sink.start()
    ready.wait(10)
    work = Path(tempfile.mkdtemp(prefix="gt-callgrind-"))
    try:
        layout = bench.build_tree(work, glideins, 10)
        exporter = make_otlp_exporter(f"http://127.0.0.1:{port.value}", 30)
        forwarder = Forwarder([layout.logs], exporter, Ledger(work / "ledger.sqlite"), bench.FACTORY,
                              grace_s=1, batch_spans=2000)
        if forward:
            print(f"spans {forwarder.run_once().spans_sent}", file=sys.stderr)
    finally:
        sink.terminate()
        shutil.rmtree(work, ignore_errors=True)


def instructions(glideins: int, forward: bool) -> tuple[int, int]:
    """(instructions of the main process, spans sent) of one run under callgrind."""
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
               sys.executable, __file__, "--child", str(glideins)] + (["--forward"] if forward else [])
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    # one "Collected" line per process (the sink is a forked child): the main one is the largest
    counts = [int(n) for n in re.findall(r"Collected : (\d+)", done.stderr)]
    spans = re.search(r"spans (\d+)", done.stderr)
    return max(counts), int(spans.group(1)) if spans else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--glideins", type=int, default=200)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--forward", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        sys.path.insert(0, str(HERE.parent))
        child(args.child, args.forward)
        return
    if shutil.which("valgrind") is None:
        sys.exit("callgrind_forwarder: valgrind is not installed")
    sys.path.insert(0, str(HERE.parent))
    from glidein_tracing import compiled
    base, _ = instructions(args.glideins, False)
    total, spans = instructions(args.glideins, True)
    print("modules: " + compiled.summary(compiled.FORWARDER_MODULES))
    print(f"{args.glideins} glideins, {spans} spans: {(total - base) / spans / 1000:.1f}k instructions "
          f"per span forwarded (whole pass: activity log, journals, convert, encode, ledger, HTTP)")


if __name__ == "__main__":
    main()
