"""The gateway's part in the simulation: priority shedding, provider failover and least-request balancing.

Shedding follows ``queues.priorities``: a level is admitted only while the pool's
utilization (its recent arrival rate over its ready replicas' service rate, from
the capacity model) stays under that level's ``shed_at_utilization``, counting
every higher level first. So when a pool is overloaded the batch level goes
first, then normal, then high; critical last. The rate is measured over the
``SHED_WINDOWS`` windows before the current one, as a real rate estimator lags.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from tokenplane.model.admission import admit_fractions

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

__all__ = ["admit_fractions", "interleave", "water_fill"]  # the shedding formula is the planner's too

SHED_WINDOW_S = 1.0  # the shedding decision is taken per window of arrivals
SHED_WINDOWS = 5  # the rate is averaged over this many windows: 1 s alone is Poisson noise at tens of req/s


def water_fill(load: I64, count: int) -> I64:
    """How many of ``count`` new requests each replica gets so that the least loaded fill up first."""
    n = len(load)
    if n == 0 or count <= 0:
        return np.zeros(n, dtype=np.int64)
    order = np.argsort(load, kind="stable")
    sorted_load = load[order].astype(np.float64)
    # Level after filling the i+1 lightest replicas: (count + their load) / (i + 1); the answer is
    # the last i whose own load is still under that level.
    levels = (count + np.cumsum(sorted_load)) / np.arange(1, n + 1)
    last = int(np.flatnonzero(sorted_load <= levels)[-1])
    level = levels[last]
    share = np.zeros(n)
    share[order[: last + 1]] = level - sorted_load[: last + 1]
    quota = np.floor(share).astype(np.int64)
    rest = count - int(quota.sum())
    if rest > 0:
        quota[np.argsort(-(share - quota), kind="stable")[:rest]] += 1
    return quota


def interleave(replicas: I64, quota: I64) -> I64:
    """A sequence in which each replica appears ``quota`` times, spread evenly (the order arrivals get)."""
    repeated = np.repeat(replicas, quota)
    if len(repeated) == 0:
        return repeated
    starts = np.repeat(np.cumsum(quota) - quota, quota)
    rank = np.arange(len(repeated)) - starts
    key = (rank + 0.5) / np.repeat(quota, quota)
    return repeated[np.argsort(key, kind="stable")]
