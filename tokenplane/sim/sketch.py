"""Fixed-size latency histograms with a stated relative accuracy, filled a million values at a time.

This is DDSketch's logarithmic mapping (Masson, Rim and Lee, VLDB 2019): value
``v > 0`` falls in bucket ``ceil(log(v) / log(gamma))`` with ``gamma = (1 + ALPHA) /
(1 - ALPHA)``, and a quantile is answered with its bucket's midpoint
``2 gamma^k / (gamma + 1)``, which is within ``ALPHA`` of the true value's order
statistic, relatively. The buckets span ``MIN_VALUE_S`` to ``MAX_VALUE_S``, so one
histogram is a fixed array, whatever the number of requests or the simulated time.

Why not the ``ddsketch`` or ``hdrhistogram`` packages: both record one value per
Python call (about a microsecond each), and a day at 10,000 RPS records billions.
Here a whole batch of requests goes in with one ``np.bincount``, per group (pool x
class) at once, with a weight per value (a sampled request stands for several).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

ALPHA = 0.005  # relative accuracy of every quantile: 0.5%, well inside what the SLO tables print
MIN_VALUE_S = 1e-6  # a microsecond: anything shorter (a zero queue wait) is counted as zero
MAX_VALUE_S = 1e7  # 115 days: longer than any run; larger values are clamped to the last bucket
GAMMA = (1 + ALPHA) / (1 - ALPHA)
_LOG_GAMMA = math.log(GAMMA)
_KEY_MIN = math.ceil(math.log(MIN_VALUE_S) / _LOG_GAMMA)
_KEY_MAX = math.ceil(math.log(MAX_VALUE_S) / _LOG_GAMMA)
BUCKETS = _KEY_MAX - _KEY_MIN + 2  # bucket 0 holds zeros (values under MIN_VALUE_S); 1.. the logarithmic keys


def bucket_of(values: F64) -> I64:
    """The bucket of each value (non-negative, seconds)."""
    with np.errstate(divide="ignore"):
        keys = np.ceil(np.log(np.maximum(values, MIN_VALUE_S / 2)) / _LOG_GAMMA)
    buckets: I64 = np.clip(keys - _KEY_MIN + 1, 0, BUCKETS - 1).astype(np.int64)
    buckets[values < MIN_VALUE_S] = 0
    return buckets


def bucket_value(buckets: I64 | npt.NDArray[np.intp]) -> F64:
    """The value a bucket answers with: the midpoint that keeps the relative error under ``ALPHA``."""
    keys = np.asarray(buckets, dtype=np.float64) + _KEY_MIN - 1
    values: F64 = 2 * GAMMA**keys / (GAMMA + 1)
    values[np.asarray(buckets) == 0] = 0.0
    return values


class Histograms:
    """One log-bucket histogram per group: ``counts[g, b]`` is the weight of group ``g``'s values in bucket ``b``."""

    def __init__(self, groups: int) -> None:
        self.counts = np.zeros((groups, BUCKETS), dtype=np.float64)

    def add(self, groups: I64, values: F64, weights: F64 | None = None) -> None:
        """Record ``values[i]`` in group ``groups[i]`` with weight ``weights[i]`` (1 when omitted)."""
        if len(values) == 0:
            return
        flat = groups * BUCKETS + bucket_of(values)
        # Only the buckets hit: a batch touches a few thousand of the groups x BUCKETS cells.
        cells, index = np.unique(flat, return_inverse=True)
        self.counts.reshape(-1)[cells] += np.bincount(index, weights=weights, minlength=len(cells))

    def total(self, group: int) -> float:
        return float(self.counts[group].sum())

    def quantiles(self, group: int, qs: F64 | list[float]) -> F64:
        """The ``qs`` quantiles (0..100) of one group; NaN when it is empty.

        A quantile is the value of the bucket holding the ``q``-th share of the weight
        (the lower of two order statistics, as a rank), within ``ALPHA`` relatively.
        """
        row = self.counts[group]
        cumulative = np.cumsum(row)
        total = cumulative[-1] if len(cumulative) else 0.0
        q = np.asarray(qs, dtype=np.float64)
        if total <= 0:
            return np.full(len(q), np.nan)
        # The first bucket whose cumulative weight reaches the rank; the epsilon absorbs float sums,
        # and the floor keeps q=0 off the empty buckets below the smallest value.
        rank = np.clip(q / 100 * total, total * 1e-9, total) * (1 - 1e-12)
        found = np.searchsorted(cumulative, rank, side="left")
        return bucket_value(np.minimum(found, BUCKETS - 1))
