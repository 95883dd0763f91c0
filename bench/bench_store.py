"""Benchmark: the embedded store's cost against the size of what it holds, in one run.

Builds (once, cached under ~/.cache/glidein_tracing/bench) a store of N synthetic glideins
with the synthetic trace generator, lets the store index it (its first open), then measures
in the same run, best of --rounds:

- exporting a batch of ~1,000 spans (new glideins) into an empty store and into the big one
  (the ratio is the figure: target at most 2x);
- ``show`` of one trace of the big store (find by prefix + read its lines; target under 1 s);
- ``show --list``'s page of 100 traces, beside reading every trace's summary (what it did before).

    python -m bench.bench_store [--glideins 1000000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import tempfile
import time
from pathlib import Path

from bench import quick

REPO = Path(__file__).resolve().parents[1]

from glidein_tracing.testing import synth  # noqa: E402
from glidein_tracing.core.converter import convert  # noqa: E402
from glidein_tracing.exporters.store import JsonLinesStoreExporter, Store  # noqa: E402
from glidein_tracing.core.journal import format_line, parse_lines  # noqa: E402

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "glidein_tracing" / "bench"


def glidein_spans(name: str, start: float, children: int = 42) -> list:
    """One glidein of 1 + ``children`` spans, its own trace (the name makes the id)."""
    lines = [format_line(start, "start", "glidein", {
        "@name": "glidein", "@stage": "glidein", "glidein.factory": "bench", "glidein.name": name,
        "glidein.entry": "BENCH_ENTRY", "glidein.schedd": "schedd@bench", "glidein.cluster:i": "1",
        "glidein.proc:i": "0", "res.host.name": "wn.example.org"})]
    for i in range(children):
        lines.append(format_line(start + i, "start", f"stage{i}", {"@name": f"stage{i}", "@stage": "setup"}))
        lines.append(format_line(start + i + 0.5, "end", f"stage{i}", {}))
    lines.append(format_line(start + children + 1, "end", "glidein", {"glidein.outcome": "ok"}))
    return convert(parse_lines("".join(lines).encode())[0])


def batch(tag: str) -> list:
    """~1,000 spans: 23 glidein traces of 43 spans."""
    return [s for i in range(23) for s in glidein_spans(f"{tag}-{i}", 1_700_000_000.0 + i)]


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--glideins", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = quick.parse_args(parser, glideins=2000, rounds=1)
    big = CACHE / f"store-{args.glideins}-s7-g{synth.GENERATOR_VERSION}"   # the generator's rows and spans
    if not (big / "index.sqlite").exists():
        shutil.rmtree(big, ignore_errors=True)
        built, _ = timed(lambda: synth.write_store(synth.SynthConfig(glideins=args.glideins, seed=7), big))
        indexed, health = timed(lambda: Store(big).health())
        print(f"built {args.glideins:,} glideins in {built:.0f} s, indexed in {indexed:.0f} s "
              f"({health['traces']:,} traces, {health['files']} files)")
    size = sum(p.stat().st_size for p in big.iterdir()) / 1e9
    print(f"store: {args.glideins:,} glideins, {size:.1f} GB with its index; load {os.getloadavg()[0]:.2f}")
    empty_times, big_times, batch_spans = [], [], 0
    for round_ in range(args.rounds):
        tag = f"{time.time_ns()}-{round_}"
        spans, more = batch(tag), batch(tag + "b")
        batch_spans = len(spans)
        with tempfile.TemporaryDirectory(prefix="gt-bench-store-") as empty:
            empty_times.append(timed(lambda: JsonLinesStoreExporter(empty).export(spans))[0])
        big_times.append(timed(lambda: JsonLinesStoreExporter(big).export(more))[0])
    store = Store(big)
    show_times = []
    while len(show_times) < args.rounds:
        found = store.find(format(random.getrandbits(16), "04x"), 1)    # a random stored trace
        if found:
            seconds, spans = timed(lambda: store.trace(store.find(found[0][:12])[0]))
            assert spans
            show_times.append(seconds)
    page_times = [timed(lambda: store.listing(limit=100))[0] for _ in range(args.rounds)]
    every_times = [timed(lambda: list(store.summaries()))[0] for _ in range(args.rounds)]
    e, b = min(empty_times), min(big_times)
    print(f"export of a {batch_spans}-span batch: empty store {e * 1000:.1f} ms, big store {b * 1000:.1f} ms, "
          f"ratio {b / e:.2f} (target at most 2)")
    print(f"show of one trace in the big store: best {min(show_times) * 1000:.1f} ms, "
          f"worst {max(show_times) * 1000:.1f} ms (target under 1 s)")
    print(f"show --list, a page of 100: best {min(page_times) * 1000:.1f} ms; every trace (what --list read "
          f"before it paged): best {min(every_times) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
