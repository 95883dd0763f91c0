"""Benchmark: a large declared-downtime feed, parsed once, then read back from its cache.

Writes a CSV of N rows (default 1,000,000: 5,000 sites, 5-minute windows) and reads it with
``read_downtimes`` as the forwarder does at start: the first start parses it, the later ones
(same bytes) read it back from the cache beside the ledger. Timed in the same run:

- parse: the first start (cache empty);
- cached: each later start (three of them), the index built each time.

    python -m bench.bench_downtimes [--rows 1000000]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from bench import quick

from glidein_tracing.failure_rules.downtimes import read_downtimes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = quick.parse_args(parser, argv, rows=1000)
    with tempfile.TemporaryDirectory() as tmp:
        feed = Path(tmp) / "downtimes.csv"
        with open(feed, "w") as out:
            out.write("target,start,end,reason,class\n")
            for i in range(args.rows):
                start = 1780000000 + i * 600
                out.write(f"site{i % 5000},{start},{start + 300},maintenance {i},scheduled\n")
        cache = Path(tmp) / "downtime-cache"
        timings = []
        for _ in range(4):
            started = time.perf_counter()
            downtimes, problems = read_downtimes([feed], cache)
            timings.append(time.perf_counter() - started)
            assert len(downtimes) == args.rows and not problems
        print(f"{args.rows:,} rows, {feed.stat().st_size / 1e6:.1f} MB: parse {timings[0]:.2f} s, "
              f"cached {min(timings[1:]):.2f}-{max(timings[1:]):.2f} s "
              f"(x{timings[0] / max(timings[1:]):.1f}); peak RSS "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
