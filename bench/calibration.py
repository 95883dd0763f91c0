"""A fixed pure-Python workload timed in each benchmark run: the machine's speed at that moment.

The development VM's speed moves by 30-50 % over minutes (other tenants, frequency), so an
absolute figure means little without it: a run whose calibration took 1.5x the quiet time
ran on a machine 1.5x slower. Ratios measured in the same run need no correction.
"""

from __future__ import annotations

import time


def _workload() -> int:
    """Dicts, strings, floats and small tuples, as a converter or reader does them."""
    total = 0
    table: dict = {}
    for i in range(60_000):
        key = f"glidein.attr.{i % 97}"
        fields = {"@name": key, "value": str(i * 1.5), "n": i}
        table[key] = (float(fields["value"]), fields["n"] // 3, key.upper())
        total += len(fields["value"]) + len(table)
    return total


def calibrate(repeat: int = 5) -> float:
    """Best of ``repeat`` CPU times of the workload, in milliseconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        _workload()
        best = min(best, time.process_time() - start)
    return best * 1000.0
