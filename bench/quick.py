"""``--quick``: a benchmark's smallest run that still goes through each of its parts and prints
its figures. tests/test_benches.py runs every benchmark so, which keeps a benchmark from
breaking unnoticed; the figures of a quick run are too small to mean anything.
"""

from __future__ import annotations

import argparse


def parse_args(parser: argparse.ArgumentParser, argv=None, **sizes) -> argparse.Namespace:
    """``parser``'s arguments with a ``--quick`` option added; with ``--quick``, ``sizes`` are
    the defaults (an option given on the command line still wins)."""
    parser.add_argument("--quick", action="store_true",
                        help="a small run that only checks the benchmark runs (the test suite's): "
                             + ", ".join(f"--{name.replace('_', '-')} {value}" for name, value in sizes.items()))
    args = parser.parse_args(argv)
    if args.quick:
        parser.set_defaults(**sizes)
        args = parser.parse_args(argv)
    return args
