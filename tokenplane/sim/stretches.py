"""Aggregate fidelity's steady stretches: which periods are simulated, and how the others are accounted.

A period is simulated request by request (on the sampled replicas) around bursts,
when the arrival rate has moved, around scale events (a pool's ready replicas
moved), while a pool's P95 TTFT is still moving (the start's warm-up, a
burst's aftermath), and once in every ``DETAIL_EVERY`` of a steady stretch; the
periods between are replayed: each adds the mean of the last
``REPLAY_PERIODS`` simulated periods' accounts, scaled to its own arrivals (per
pool by its arrivals, the rest by the platform's rate). A mean of several periods,
because one period of a few sampled replicas is a small, noisy sample of the
latency distribution, and a replay multiplies its noise.
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from tokenplane.sim.tally import Tally
from tokenplane.sim.workload import DAY_S, rate_multiplier

if TYPE_CHECKING:
    from tokenplane.sim.workload import SimConfig

F64 = npt.NDArray[np.float64]
Accounts = tuple[list[F64], dict[str, float]]

DETAIL_EVERY = 8  # one period in this many of a steady stretch is simulated, the rest replayed
FIRST_DETAILED = 8  # the first two minutes are simulated: the batches fill and the autoscaler settles
BURST_MARGIN_S = 300.0  # every period within 5 minutes of a burst's start or end is simulated
RATE_STEP = 0.1  # a period whose arrival rate moved 10% from the last simulated one is simulated
REPLAY_PERIODS = 2  # a replayed period adds the mean of this many simulated periods' accounts
SCALE_STEP = 0.25  # a pool whose ready replicas moved 25% since the last simulated period: a scale event
SCALE_MIN = 2  # ... and by two replicas at least: one replica up or down is a small pool's routine
SIGNAL_STEP = 1.0  # a pool whose P95 TTFT doubled or halved between two simulated periods is not steady yet
SIGNAL_SAMPLES = 100  # ... judged only on pools with this many first tokens in the period


def detail_plan(config: SimConfig, epochs: list[float], aggregate: bool) -> list[bool]:
    """Which periods are simulated request by request: every one unless ``aggregate``; see the module docstring."""
    if not aggregate:
        return [True] * len(epochs)
    starts = np.array([0.0, *epochs[:-1]])
    middles = config.start_s + (starts + np.array(epochs)) / 2
    rates = rate_multiplier(config.profile, config.bursts, middles).tolist()
    edges = [b.at_s for b in config.bursts] + [b.at_s + b.duration_s for b in config.bursts]
    plan: list[bool] = []
    last = math.nan
    for k, (t0, rate) in enumerate(zip(starts.tolist(), rates, strict=True)):
        clock = (config.start_s + t0) % DAY_S
        near = any(min(abs(clock - e), DAY_S - abs(clock - e)) <= BURST_MARGIN_S for e in edges)
        moved = not abs(rate - last) <= RATE_STEP * last  # NaN (nothing simulated yet) counts as moved
        detail = k < FIRST_DETAILED or k % DETAIL_EVERY == 0 or near or moved
        if detail:
            last = rate
        plan.append(detail)
    return plan


class Replayer:
    """Keeps the last simulated periods' accounts and adds them for the replayed ones, lazily.

    Replays of the same mean add up, so they are summed as ratios and applied once, when the
    next simulated period begins (before its snapshot) or at the end.
    """

    def __init__(self, tally: Tally, pools: int) -> None:
        self.tally = tally
        self.history: deque[tuple[Accounts, F64, float]] = deque(maxlen=REPLAY_PERIODS)
        self.pending = np.zeros(pools)
        self.pending_platform = 0.0
        self.snap: Accounts | None = None
        self.mean: Accounts | None = None
        self.counts = np.zeros(pools)
        self.rate = 0.0
        self.signals: tuple[F64, F64] | None = None  # ready replicas and P95 TTFT per pool, last simulated period

    @property
    def ready(self) -> bool:
        return self.mean is not None

    def begin(self) -> None:
        """A simulated period starts: apply what is pending, then note where the accounts stand."""
        self.flush()
        self.snap = self.tally.snapshot()

    def end(self, counts: F64, rate: float) -> None:
        """A simulated period (its resolved requests accounted) ends: it joins the mean."""
        if self.snap is None:
            return
        self.history.append((self.tally.since(self.snap), counts, rate))
        self.snap = None
        arrays = [np.sum([h[0][0][i] for h in self.history], axis=0) for i in range(len(self.history[0][0][0]))]
        totals = {k: sum(h[0][1][k] for h in self.history) for k in self.history[0][0][1]}
        self.mean = (arrays, totals)
        self.counts = np.sum([h[1] for h in self.history], axis=0)
        self.rate = sum(h[2] for h in self.history)

    def unsettled(self, ready: F64, ttft: F64, samples: npt.NDArray[np.int64]) -> bool:
        """Whether the pools moved since the last simulated period: a scale event or a TTFT still changing.

        A P95 of a handful of first tokens (a long-context pool's sampled replicas see a few a
        period) moves by chance, so only pools with ``SIGNAL_SAMPLES`` of them count.
        """
        before = self.signals
        scaled = self.scaled(ready)
        self.signals = (ready, ttft)
        if before is None:
            return True
        moved = (np.abs(ttft - before[1]) > SIGNAL_STEP * np.maximum(before[1], 1e-3)) & (samples >= SIGNAL_SAMPLES)
        return scaled or bool(moved.any())

    def scaled(self, ready: F64) -> bool:
        """Whether any pool's ready replicas moved by ``SCALE_STEP`` since the last simulated period."""
        if self.signals is None:
            return True
        before = self.signals[0]
        step = np.abs(ready - before)
        return bool(((step > SCALE_STEP * np.maximum(before, 1)) & (step >= SCALE_MIN)).any())

    def replay(self, counts: F64, rate: float) -> None:
        """A replayed period with ``counts`` arrivals per pool at platform rate ``rate``."""
        self.pending += np.where(self.counts > 0, counts / np.maximum(self.counts, 1e-12), 0.0)
        self.pending_platform += rate / self.rate if self.rate > 0 else 0.0

    def flush(self) -> None:
        if self.mean is not None and (self.pending.any() or self.pending_platform):
            self.tally.replay(self.mean, self.pending, self.pending_platform)
        self.pending = np.zeros_like(self.pending)
        self.pending_platform = 0.0
