"""How far a replica's decode batch spreads about its mean, derived from continuous batching's own dynamics.

A sequence decodes one token an iteration and an iteration of ``k`` sequences takes ``step(k)``,
which grows with ``k`` (each one's KV reads, the larger GEMMs). So the batch drains at
``k / (L * step(k))`` (``L`` tokens a life) while arrivals join at ``lambda``: a busy stretch
slows every sequence in it, which keeps them longer and lets the batch grow further. Three
things set the spread, each derived here, none fitted:

- The feedback: the birth-death chain ``P(k) / P(k - 1) = theta * step(k) / k`` (M/M/inf with a
  state's departure rate ``k / (L * step(k))``, cut at ``max_num_seqs``, where the rest wait)
  has variance ``b / (1 - e)`` near its mean ``b``, ``e`` the step's elasticity in the batch
  (``b * step' / step``). The M/G/inf spread ``sqrt(b)`` is the case ``e = 0``.
- The arrivals and the lives (``renewal_factor``): that chain's noise is Poisson's. A balancer's
  arrivals are regular (Gamma(n) gaps, squared coefficient of variation ``1 / n``) and a
  class's lives are spread uniformly between its output bounds, and the infinite-server
  queue with renewal arrivals has ``Var N = b * (1 + (ca2 - 1) * beta)``, ``beta`` the lives'
  ``integral of P(S > t)^2 dt / E[S]`` (Whitt, "Heavy-traffic approximations for service
  systems with blocking", and the GI/G/inf variance). The chain is tempered by that factor:
  ``P(k) ~ (theta * step(k) / k)^(1 / factor)``, whose variance is ``factor * b / (1 - e)``.
- The mix: what a stretch's sequences hold and what its arrivals bring to prefill move every
  step together, apart from the count (``step_shift``): its KV beyond the mean contexts, and
  its prefill share over a life. That shift is held fixed while the count settles (both move
  on the scale of a life: an upper bound on its effect), so the batch is a mixture of the
  tempered chain over the shift's normal spread.

On byteion's pools at their planned counts the simulator shows, at a first token, sd 6.2 on
batch-catalog (a batch of 67, one class of 100-1,000 tokens: ``sqrt(b)`` said 8.3, the
feedback alone 11.2) and 9.5 on ap-southeast small-chat (a batch of 39, the KV reads of its
2k-8k-token class B most of the step's growth: ``sqrt(b)`` said 6.2). ``theta`` is solved so
that the mixture's mean is the fluid fixed point's batch: the planner's mean stays what its
fixed point says, and only the spread about it comes from here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]

SOLVE_STEPS = 40  # Newton steps on log(theta), kept inside a shrinking bracket: the mean to 1e-6 of a sequence
MEAN_TOLERANCE = 1e-6
LOG_THETA_SPAN = 60.0  # e^-60..e^60 per step-second: any batch from 0 to max_num_seqs is inside
SHIFTS = np.linspace(-3.5, 3.5, 15)  # the step shift's grid, in its sd: half an sd apart, out to 1 in 4,000
MIN_STEP_SCALE = 0.05  # a shift never makes a step shorter than this share of its mean (the grid's far tail)
LIFE_POINTS = 4096  # the lives' survival function is integrated on this many points


def renewal_factor(ca2: float, lives: Sequence[tuple[float, float, float]]) -> float:
    """``1 + (ca2 - 1) * beta``: the batch's variance over its mean without the feedback (GI/G/inf).

    ``ca2``: the arrivals' squared coefficient of variation (1: Poisson; ``1 / n``: a balancer dealing
    every n-th arrival of a Poisson stream). ``lives``: (weight, shortest, longest) of each class's
    decode life in iterations, uniform between the two.
    """
    total = sum(w for w, _, _ in lives)
    if total <= 0:
        return 1.0
    top = max(hi for _, _, hi in lives)
    t = np.linspace(0.0, top, LIFE_POINTS)
    survival = np.zeros(LIFE_POINTS)
    mean = 0.0
    for w, lo, hi in lives:
        survival += w / total * np.clip((hi - t) / max(hi - lo, 1e-9), 0.0, 1.0) * (t >= 0)
        mean += w / total * (lo + hi) / 2
    if mean <= 0:
        return 1.0
    dt = t[1] - t[0] if LIFE_POINTS > 1 else 0.0
    beta = float(np.sum((survival[:-1] ** 2 + survival[1:] ** 2) / 2) * dt) / mean
    return max(1.0 + (ca2 - 1.0) * min(beta, 1.0), 0.0)


def distributions(log_ratio: F64, mean: float, weights: F64, factor: float) -> F64:
    """P(batch = k | row), k = 0..top: each row's tempered chain, their mixture's mean ``mean``.

    ``log_ratio[row, k - 1]``: ``log(step(k) / k)`` in that row. ``weights``: each row's probability.
    ``mean`` must lie in [0, top]: the fixed point's batch, which the planner never asks past
    ``max_num_seqs``.
    """
    top = log_ratio.shape[1]
    if not 0.0 <= mean <= top:
        raise ValueError(f"mean batch {mean} must lie within 0..{top} (max_num_seqs)")
    sizes = np.arange(top + 1, dtype=np.float64)
    temper = 1.0 / max(factor, 1e-3)
    cum = np.concatenate([np.zeros((len(log_ratio), 1)), np.cumsum(log_ratio, axis=1)], axis=1) * temper
    steps = sizes * temper

    def chains(log_theta: float) -> F64:
        log_p = cum + steps * log_theta
        p = np.exp(log_p - log_p.max(axis=1, keepdims=True))
        return p / p.sum(axis=1, keepdims=True)  # type: ignore[no-any-return]

    lo, hi = -LOG_THETA_SPAN, LOG_THETA_SPAN
    x = 0.0
    for _ in range(SOLVE_STEPS):
        p = chains(x)
        row_mean = p @ sizes
        gap = float(weights @ row_mean) - mean
        if abs(gap) < MEAN_TOLERANCE:
            break
        if gap < 0:
            lo = x
        else:
            hi = x
        slope = temper * float(weights @ (p @ sizes**2 - row_mean**2))  # d mean / d log(theta)
        newton = x - gap / slope if slope > 0 else (lo + hi) / 2
        x = newton if lo < newton < hi else (lo + hi) / 2
    return chains(x)


def quantiles(p: F64, u: F64) -> F64:
    """The batch at each probability ``u`` of the distribution ``p``, continuous between whole batches.

    Each whole batch ``k`` holds the probabilities ``[F(k - 1), F(k))``; within it the batch runs
    linearly from ``k - 1/2`` to ``k + 1/2`` (clipped at 0 and the top), so that the planner's
    decode steps (interpolated between batch sizes) see no stairs.
    """
    cdf = np.cumsum(p)
    below = np.concatenate([[0.0], cdf[:-1]])
    k = np.minimum(np.searchsorted(cdf, u, side="right"), len(p) - 1)
    within = (u - below[k]) / np.maximum(p[k], 1e-300)
    out: F64 = np.clip(k - 0.5 + within, 0.0, len(p) - 1).astype(np.float64)
    return out


def draws(step_s: F64, mean: float, factor: float, shift_sd: float, count: F64, shift: F64) -> F64:
    """Batches for standard-normal draws: ``count`` ranks the batch within its chain, ``shift`` picks the chain.

    ``step_s[k - 1]``: the iteration at batch ``k`` (1..top) with its mean contexts; ``factor``:
    ``renewal_factor``; ``shift_sd``: the relative sd of every step's shift (``step_shift``).
    """
    if mean <= 0:
        return np.zeros(len(count))
    grid = SHIFTS if shift_sd > 0 else np.zeros(1)
    weights = np.exp(-(grid**2) / 2)
    weights /= weights.sum()
    top = len(step_s)
    base = np.log(np.maximum(step_s, 1e-300)) - np.log(np.arange(1, top + 1, dtype=np.float64))
    scale = np.log(np.maximum(1.0 + grid * shift_sd, MIN_STEP_SCALE))
    p = distributions(base[None, :] + scale[:, None], min(mean, float(top)), weights, factor)
    row = np.abs(shift[:, None] - grid[None, :]).argmin(axis=1)
    u = 0.5 * (1.0 + _erf(count / math.sqrt(2.0)))
    batch = np.empty(len(count))
    for r in np.flatnonzero(np.bincount(row, minlength=len(grid))):  # the rows drawn (np.unique would import numpy.ma)
        mine = row == r
        batch[mine] = quantiles(p[r], u[mine])
    return batch


def step_shift(kv_share_sd: float, prefill_share: float, prefill_share_sd: float) -> float:
    """The relative sd of every step's time over a life, from the mix: its KV and its prefill share.

    ``kv_share_sd``: the sd of the step's KV reads beyond the mean contexts, relative to the step.
    ``prefill_share`` ``f`` and its sd over a life: a decode iteration's time is ``step / (1 - f)``.
    """
    prefill = prefill_share_sd / max(1.0 - prefill_share, 1e-3)
    return math.sqrt(kv_share_sd**2 + prefill**2)


def _erf(x: F64) -> F64:
    return np.fromiter(map(math.erf, x.tolist()), np.float64, len(x))
