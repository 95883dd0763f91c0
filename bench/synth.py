"""Write synthetic glideins as a glidein table (Parquet, what `glidein-tracing analyze` reads)
and/or as traces in a store directory (what `show` reads), for trying, testing and benchmarking.

A seeded generator (glidein_tracing.testing.synth, documented there and in
docs/analysis.md) with realistic distributions: queue waits, validation scripts that take
time and sometimes fail, jobs, idle gaps, and shutdowns by the given GLIDEIN_Max_Idle /
GLIDEIN_Max_Tail / retire time. The same seed gives the same traces.

The table rows come from the numpy generator (glidein_tracing.testing.synth_table, a million
glideins in seconds), the traces from the span generator (glidein_tracing.testing.synth): the
same model and knobs, not the same glideins.

Example:
  python -m bench.synth --glideins 100000 --seed 7 --table /tmp/synth-table
  glidein-tracing analyze /tmp/synth-table --whatif --html report.html
"""

from __future__ import annotations

import argparse
import sys

from glidein_tracing.core.progress import bar, on_terminal
from glidein_tracing.testing.synth import SynthConfig, write_store
from glidein_tracing.testing.synth_table import write_table


def add_arguments(parser):
    parser.add_argument("--glideins", type=int, default=1000, help="how many glideins (default %(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default %(default)s)")
    parser.add_argument("--store", help="store directory to write traces to (appends new files)")
    parser.add_argument("--table", help="glidein table directory to write Parquet rows to (adds files)")
    parser.add_argument("--days", type=float, default=7.0, help="days the submissions spread over (default 7)")
    parser.add_argument("--entries", type=int, default=8, help="entries (default %(default)s)")
    parser.add_argument("--sites", type=int, default=4, help="sites (default %(default)s)")
    parser.add_argument("--max-idle", type=float, default=1200.0, help="GLIDEIN_Max_Idle in force (s)")
    parser.add_argument("--max-tail", type=float, default=400.0, help="GLIDEIN_Max_Tail in force (s)")
    parser.add_argument("--retire", type=float, default=21600.0, help="GLIDEIN_Retire_Time in force (s)")
    parser.add_argument("--retire-spread", type=float, default=1800.0, help="GLIDEIN_Retire_Time_Spread (s)")
    parser.add_argument("--validation-failure-rate", type=float, default=0.03)
    parser.add_argument("--job-failure-rate", type=float, default=0.05)
    parser.add_argument("--kill-rate", type=float, default=0.02, help="share ended by the site (SIGTERM)")
    parser.add_argument("--skew-rate", type=float, default=0.0, help="share of nodes with a skewed clock")
    parser.add_argument("--fragment-rate", type=float, default=0.0,
                        help="share of traces whose Factory spans are written much later")
    parser.add_argument("--idle-tail-entry", type=int, metavar="N",
                        help="give entry N (0-based) a long idle tail: its jobs stop coming after a short run of quick "
                             "ones, so most of its 16-core glideins idle out their whole Max_Tail (a planted waste "
                             "the what-if must find)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar (there is none off a terminal)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.glideins < 0:
        parser.error("--glideins must be >= 0")
    if not args.store and not args.table:
        parser.error("give --table DIR and/or --store DIR")
    for name in ("validation_failure_rate", "job_failure_rate", "kill_rate", "skew_rate", "fragment_rate"):
        if not 0.0 <= getattr(args, name) <= 1.0:
            parser.error(f"--{name.replace('_', '-')} must be between 0 and 1")
    cfg = SynthConfig(glideins=args.glideins, seed=args.seed, entries=args.entries, sites=args.sites,
                      max_idle=args.max_idle, max_tail=args.max_tail, retire=args.retire,
                      retire_spread=args.retire_spread, validation_failure_rate=args.validation_failure_rate,
                      job_failure_rate=args.job_failure_rate, kill_rate=args.kill_rate, skew_rate=args.skew_rate,
                      fragment_rate=args.fragment_rate, period_s=args.days * 86400.0,
                      idle_tail_entry=args.idle_tail_entry)
    shown = on_terminal(args.quiet)
    if args.table:
        with bar(cfg.glideins, desc=f"table {args.table}", unit="glidein", enabled=shown, unit_scale=True) as done:
            counts = write_table(cfg, args.table, progress=done)
        print(f"wrote {counts['glideins']} glideins ({counts['jobs']} jobs, {counts['files']} files) to {args.table}")
    if args.store:
        with bar(cfg.glideins, desc=f"store {args.store}", unit="glidein", enabled=shown, unit_scale=True) as done:
            counts = write_store(cfg, args.store, progress=done)
        print(f"wrote {counts['glideins']} glideins ({counts['spans']} spans, {counts['lines']} lines) to {args.store}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
