"""Fine log-binned histograms: how the analysis keeps a distribution, in constant memory.

A value v > 0 falls in bin ``floor(log10(v) * BINS_PER_DECADE)`` (the bin key's SQL,
``bin_sql``, is the statistics' aggregate's: table/aggregates.py): bins 1.006 % wide, so a
percentile read from the histogram (its rank placed linearly inside its bin) is within 1.01 % of
the exact one (``quantile_cont``'s), at any number of rows. DuckDB's ``histogram()`` counts the
bins per (entry, site) in the one scan that computes everything else (or a file's rollup holds
them); per entry, per site and overall are sums of those (``merged``), so no value is held and
nothing is scanned twice. 23 fine bins make one plot bin (10 per decade) exactly. Zero has its
own bin; negative values mirror the positive ones (bin keys order as the values do).
"""

from __future__ import annotations

import numpy as np

from ..table.aggregates import BINS_PER_DECADE, OFFSET

PLOT_BINS_PER_DECADE = 10         # divides BINS_PER_DECADE: a plot bin is 23 fine bins
RELATIVE_ERROR = 10 ** (1 / BINS_PER_DECADE) - 1      # a bin's width / its lower edge (1.006 %)


def bounds(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The value interval [low, high) of each bin key."""
    keys = np.asarray(keys, dtype=np.int64)
    magnitude = np.abs(keys) - OFFSET
    low = np.power(10.0, magnitude / BINS_PER_DECADE)
    high = np.power(10.0, (magnitude + 1) / BINS_PER_DECADE)
    sign = np.sign(keys)
    return (np.where(sign > 0, low, np.where(sign < 0, -high, 0.0)),
            np.where(sign > 0, high, np.where(sign < 0, -low, 0.0)))


def percentiles(low: np.ndarray, high: np.ndarray, counts: np.ndarray, qs) -> list:
    """``quantile_cont``'s percentiles (linear between order statistics) of values known by bins
    [low, high) in increasing order; an order statistic is placed linearly by its rank inside its
    bin (exact where low == high)."""
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    if not n:
        return [None] * len(qs)
    ends = np.cumsum(counts)

    def order_statistic(rank: int) -> float:
        i = int(np.searchsorted(ends, rank, side="right"))
        position = (rank - (ends[i] - counts[i]) + 0.5) / counts[i]
        return float(low[i] + (high[i] - low[i]) * position)
    out = []
    for q in qs:
        h = (n - 1) * q
        below = int(np.floor(h))
        value = order_statistic(below)
        if h > below:
            value += (h - below) * (order_statistic(below + 1) - value)
        out.append(value)
    return out


def log_percentiles(keys, counts, qs) -> list:
    low, high = bounds(keys)
    return percentiles(low, high, counts, qs)


def plot_bins(keys, counts) -> tuple[list, list]:
    """The positive values' histogram at PLOT_BINS_PER_DECADE: (bin lower edges, counts)."""
    keys, counts = np.asarray(keys, dtype=np.int64), np.asarray(counts, dtype=np.int64)
    positive = keys > 0
    coarse = np.floor_divide(keys[positive] - OFFSET, BINS_PER_DECADE // PLOT_BINS_PER_DECADE)
    edges, where = np.unique(coarse, return_inverse=True)
    sums = np.bincount(where, weights=counts[positive], minlength=len(edges))
    return [float(10 ** (e / PLOT_BINS_PER_DECADE)) for e in edges], [int(c) for c in sums]


def merged(keys, counts, owners) -> dict:
    """Sum histograms given as entries (bin or value key, its count), each entry of an owner (an
    integer code): owner -> (keys in increasing order, counts)."""
    keys = np.asarray(keys)
    counts = np.rint(np.asarray(counts, dtype=float)).astype(np.int64)
    names, rows = np.unique(np.asarray(owners, dtype=np.int64), return_inverse=True)
    order = np.lexsort((keys, rows))
    keys, counts, rows = keys[order], counts[order], rows[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = (keys[1:] != keys[:-1]) | (rows[1:] != rows[:-1])
    starts = np.flatnonzero(first)
    keys, rows = keys[starts], rows[starts]
    counts = np.add.reduceat(counts, starts) if len(starts) else counts
    cuts = np.flatnonzero(np.diff(rows)) + 1
    return {int(names[part_rows[0]]): (part_keys, part_counts) for part_keys, part_counts, part_rows
            in zip(np.split(keys, cuts), np.split(counts, cuts), np.split(rows, cuts)) if len(part_rows)}
