"""The gateway's priority shedding, as one formula for the gateway's simulation and the planner.

A level is admitted only while the pool's utilization (its arrival rate over its ready replicas'
service rate) stays under that level's ``queues.priorities[level].shed_at_utilization``, counting every
higher level first. The planner asks it at the peak with the planned replicas: a pool planned at a
utilization above a level's threshold turns part of that level away at the gateway at every peak. On
byteion the batch pools are planned at ρ 0.90 (``target_utilization: 0.9``) while the batch level sheds
above 0.85, so `tokenplane simulate` turns away about 6% of class D at peak (93.5-93.9% served over
three seeds) where the plan sized them all in.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from tokenplane.model.pool_performance import ClassMix
from tokenplane.spec import PlatformSpec, Priority

F64 = npt.NDArray[np.float64]


def admit_fractions(arrivals: F64, service_rps: F64, shed_at: F64) -> F64:
    """Per level and window, the share of arrivals admitted.

    Args:
        arrivals: requests per second seen in the previous window, shape (levels, windows),
            levels in priority order (highest first).
        service_rps: the pool's service rate in each window, shape (windows,).
        shed_at: each level's ``shed_at_utilization``, shape (levels,).

    Returns:
        Fractions in [0, 1], shape (levels, windows).
    """
    fractions = np.ones_like(arrivals)
    higher = np.zeros(arrivals.shape[1])
    for level in range(arrivals.shape[0]):
        room = np.maximum(shed_at[level] * service_rps - higher, 0.0)
        rate = arrivals[level]
        with np.errstate(divide="ignore", invalid="ignore"):
            fractions[level] = np.where(rate > 0, np.minimum(1.0, room / rate), 1.0)
        higher = higher + np.minimum(rate, room)
    return fractions


def shed_at_peak(spec: PlatformSpec, mix: list[ClassMix], service_rps: float) -> dict[Priority, float]:
    """The share of each priority level's peak arrivals the gateway turns away at ``service_rps`` (levels shed only)."""
    levels = list(Priority)
    rates = np.array([[sum(c.rps * c.levels[i] for c in mix)] for i in range(len(levels))])
    shed_at = np.array(
        [spec.queues.priorities[lv].shed_at_utilization if lv in spec.queues.priorities else np.inf for lv in levels]
    )
    admitted = admit_fractions(rates, np.array([service_rps]), shed_at)[:, 0]
    return {lv: float(1 - a) for lv, a, r in zip(levels, admitted, rates[:, 0], strict=True) if r > 0 and a < 1}
