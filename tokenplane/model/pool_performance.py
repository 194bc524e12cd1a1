"""How one replica of a pool performs under a request mix: capacity, concurrency, iteration time and TTFT.

The planner sizes pools with it, the workbench's ``--verify`` checks it, and the
gateway's admission permits come from its concurrency. It models the replica the
way the simulated engine (``tokenplane.sim.engine``, ``serving.engine``) runs it,
from the same iteration costs (``pool_model.PoolTiming``), so that whatever the
per-step latency model says, both sides price the same steps:

- **Concurrency is bounded by KV blocks, for the actual token distribution.** A
  sequence holds its prompt plus the tokens it has produced so far, growing by
  one per iteration; by Little's law the batch holds ``lambda x tau x E[sum over
  its decode iterations of its context]`` KV tokens on average, and (the batch
  being an M/G/inf population) a variance ``lambda x tau x E[sum of context^2]``.
  A load is feasible when the mean stays under the KV cache and ``max_num_seqs``
  (the replica's saturated throughput ``mu``), and healthy when the mean plus
  ``z`` standard deviations does (otherwise admissions block and sequences are
  preempted and recomputed, as the engine does).
- **Chunked prefill and the per-iteration token budget.** Each iteration decodes
  the batch (``D``) and then prefills queued prompts, at most
  ``max_num_batched_tokens - batch`` tokens of them; a prompt's first token comes
  out of the iteration that finishes it. The mean iteration is
  ``tau = D / (1 - lambda x E[prefill seconds])``.
- **TTFT is a distribution, not a mean plus a queue.** Backlog chains step from
  arrival to arrival (gaps Gamma(n): a least-request balancer over ``n`` replicas
  deals each about every n-th arrival, as the workbench's sampled replicas are fed),
  carrying the rest of the iteration in progress and the prompt tokens (and their
  prefill seconds) queued for the next ones; each iteration prefills at most the
  budget of the queue. They run side by side with numpy from a fixed seed, so the
  same spec always gives the same plan. A request waits for the iteration it
  arrived in, then for the prompts ahead of it at its priority or above, budget by
  budget (less what higher levels bring while it waits), then for its own prompt's
  chunks, which go first once started; its first token comes out of the iteration
  that finishes its own prompt, shared with what arrived after it and fits. A class
  sent at several levels is a mixture of their TTFTs. Each chain holds its own
  batch and KV level from the batch's M/G/inf spread, since the batch moves on the
  scale of a request's life and the queue on the scale of iterations. The server's
  per-request term is priced on the batch of the iteration that finishes the prompt:
  the chain's batch, joined by the prompts prefilled before it, less the lives ended
  meanwhile (``first_token_batch``). Attainment is the share of a class's requests
  whose TTFT is within its P95 SLO.

- **Preemption at saturation.** Where the KV cache binds, a saturated replica admits
  greedily and preempts what its batch outgrows (``tokenplane.model.preemption``); the
  recompute is prefill on top of the requests' own, so ``mu`` is below the fluid
  fixed point's (5-11% on the example specs' chat and batch pools). The victim is the one
  the pool's scheduling policy picks (``PoolTiming.priority_scheduling``, as rendered): the
  newest sequence under FCFS, the lowest level's latest arrival under vLLM's priority policy.

- **Waiting for KV room below saturation.** Where prompts are a large share of the cache, an
  arrival also waits while the head of the queue does not fit what the batch leaves, for the
  batch's next finishes (``tokenplane.model.kv_stall``); a pool whose cache cannot bind skips it.

What it leaves out, on purpose: per-replica imbalance beyond the balancer's
round robin, preemption below saturation (rare at the planned replicas: under 0.1% of
requests on the issue-28 RAG pool), and prefix-cache hit variance (every prompt gets the
expected hit rate, as in the simulator).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

from tokenplane.model import backlog_chains, batch_spread, kv_stall, preemption
from tokenplane.model.backlog_chains import CHAINS
from tokenplane.model.pricing_cache import PricingCache
from tokenplane.model.scheduling import priority_levels
from tokenplane.pool_model import PoolTiming, prefix_kept_share, timing
from tokenplane.spec import PlatformSpec, Pool, Priority, WorkloadClass

F64 = npt.NDArray[np.float64]

WASTE_TOKENS = 7.5  # a sequence's last KV block is half empty on average (BLOCK_SIZE 16); the engine's WASTE_TOKENS
LEVELS = 4  # priority levels, critical first (``spec.Priority`` order)
PROMPT_POINTS = 129  # quantile points a class's uniform prompt range is priced at (at 33 the top one was the 98.5th
# percentile: with attention's quadratic cost a long-context P95 lies up there, 0.9% short on byteion's us-east pool)
SEED = 20_260_315  # fixed: a plan is a function of its spec
FIXED_POINT_STEPS = 200
SATURATION_STEPS = 40  # bisection steps for the saturated arrival rate (relative precision ~1e-12 of its bracket)
MAX_PREFILL_SHARE = 0.98  # beyond this the fixed point is unstable: the replica prefills forever


@dataclass(frozen=True)
class ClassMix:
    """One workload class as the pool sees it: its arrival rate, its token ranges and its SLO.

    Prompts and outputs are uniform over ``[lo, hi]`` (integers), as the spec documents and the
    simulator draws them. ``levels`` is the share of its requests at each priority level, critical first.
    """

    name: str
    rps: float
    prompt: tuple[int, int]
    output: tuple[int, int]
    ttft_slo_s: float | None
    attainment: float
    levels: tuple[float, ...] = (0.0, 1.0, 0.0, 0.0)
    # How long a request may queue at each level before admission sheds it (``Queues.max_wait_s``): a shed
    # request misses its SLO however soon its first token would have come.
    max_wait_s: tuple[float, ...] = (math.inf,) * LEVELS


def _power_sum(lo: int, hi: int, k: int) -> int:
    """sum of i**k for the integers lo..hi (k = 1, 2, 3), exactly: Faulhaber's formulas, differenced."""

    def upto(n: int) -> int:  # sum over 0..n; zero at n = -1 for each k, so lo = 0 needs no case
        if k == 1:
            return n * (n + 1) // 2
        if k == 2:
            return n * (n + 1) * (2 * n + 1) // 6
        return (n * (n + 1) // 2) ** 2

    return upto(hi) - upto(lo - 1)


@dataclass(frozen=True)
class _Moments:
    """Per-request expectations the fixed point and the chains need, over the pool's mix."""

    decode_iterations: float  # E[output - 1]: iterations a request decodes after its first token
    kv_token_iterations: float  # E[sum over its decode iterations of the KV tokens it holds]
    kv_square_iterations: float  # E[sum of the square of those]: the batch's KV variance per arrival
    prefill_tokens: float  # E[tokens to prefill] after prefix-cache hits
    prefill_s: float  # E[prefill seconds]


@dataclass(frozen=True)
class Operating:
    """A replica at one arrival rate: the fluid fixed point of its continuous batching loop."""

    rps: float  # arrivals per replica per second
    iteration_s: float  # tau, the mean iteration (decode + its share of prefill)
    decode_s: float  # D, the decode part of an iteration at the mean batch and context
    batch: float  # sequences decoding, mean
    kv_tokens: float  # KV tokens held, mean
    kv_sd: float  # their standard deviation
    prefill_share: float  # share of the replica's time spent prefilling
    feasible: bool  # a finite fixed point within max_num_seqs and the KV cache (means)

    @property
    def itl_s(self) -> float:
        """Mean time between a sequence's tokens: one iteration (speculation is in ``decode_s``)."""
        return self.iteration_s


@dataclass(frozen=True)
class ClassLatency:
    name: str
    ttft_p50_s: float
    ttft_p95_s: float
    ttft_p99_s: float
    attainment: float | None  # share within the SLO; None: the class has none
    wait_mean_s: float  # TTFT less the request's own prefill iteration: what it spends queued behind others
    wait_p95_s: float


@dataclass(frozen=True)
class Health:
    """What a replica count gives a pool: load, headroom and each class's TTFT."""

    operating: Operating
    rho: float  # arrivals / saturated throughput
    kv_headroom_ok: bool  # mean + z sd of the KV held fits the cache
    slots_ok: bool  # mean + z sd of the batch fits max_num_seqs
    classes: dict[str, ClassLatency]
    targets: dict[str, float]  # each class's attainment target
    itl_p95_s: float  # the 95th percentile of the gaps between a sequence's tokens (iterations, by count)


class ReplicaPerformance:
    """One replica of a pool under a fixed mix of classes; ask it at any arrival rate.

    Args:
        timing: the pool's iteration costs (``pool_model.timing``), the ones the engines step by.
        classes: the classes the pool serves, with their pool-wide rates (only the mix matters here).
        prefix_kept: share of prompt tokens still prefilled after engine prefix-cache hits.
        z: standard deviations of headroom the KV cache and ``max_num_seqs`` keep at the planned load;
            by default the normal quantile of the strictest class's attainment target.
    """

    def __init__(
        self,
        timing: PoolTiming,
        classes: list[ClassMix],
        *,
        prefix_kept: float,
        z: float | None = None,
        cache: PricingCache | None = None,
    ) -> None:
        if not classes:
            raise ValueError("a pool performance model needs at least one class")
        self.timing = timing
        self.classes = classes
        self.prefix_kept = prefix_kept
        total = sum(c.rps for c in classes)
        # A pool with no traffic (a DR standby) is modelled with its classes in equal measure.
        self.weights = np.array([c.rps / total if total > 0 else 1 / len(classes) for c in classes])
        strictest = max((c.attainment for c in classes if c.ttft_slo_s is not None), default=0.99)
        self.z = NormalDist().inv_cdf(strictest) if z is None else z
        self._class_grids = [self._prefill_points(c) for c in classes]
        self.moments = self._moments()
        # KV tokens a queued prompt will hold per token it still has to prefill (prefix-cache hits hold KV too).
        mean_prompt = float(
            sum(w * (c.prompt[0] + c.prompt[1]) / 2 for w, c in zip(self.weights, self.classes, strict=True))
        )
        self._kv_per_prefill_token = mean_prompt / max(self.moments.prefill_tokens, 1e-9)
        self._saturation: float | None = None
        self._fluid: float | None = None
        self._prepriced: dict[tuple[float, int], tuple[dict[str, ClassLatency], float]] = {}  # by ``prefetch``
        self._health: dict[tuple[float, int], Health] = {}
        self._cache = cache
        self._keyer: Callable[..., str] | None = None

    # --- the mix -----------------------------------------------------------------------------

    def _prefill_points(self, c: ClassMix) -> tuple[F64, F64]:
        """Equally likely (prefill tokens, prefill seconds) points of a class's prompts."""
        lo, hi = c.prompt
        q = (np.arange(PROMPT_POINTS) + 0.5) / PROMPT_POINTS
        prompt = np.floor(lo + q * (hi - lo + 1))
        prefill = np.maximum(1.0, np.ceil(prompt * self.prefix_kept))
        cached = prompt - prefill
        cost = self.timing.prefill
        seconds = cost.per_token_s * prefill + cost.per_pair_s * (prefill * cached + prefill * prefill / 2)
        return prefill, seconds

    def _moments(self) -> _Moments:
        """The mix's expectations in closed form: sums of powers over each class's uniform integer ranges.

        Each sum is an exact integer, so a mean over prompts or decode iterations is the one numpy's mean of
        the range gives (its partial sums are exact too), without the arrays: on a warm plan, building these
        ranges for every pool was a third of the planner's time.
        """
        dec = kv = kv2 = tok = sec = 0.0
        encoder = self.timing.encoder
        for weight, c, (prefill, seconds) in zip(self.weights, self.classes, self._class_grids, strict=True):
            p_lo, p_hi = c.prompt
            o_lo, o_hi = (0, 0) if encoder else c.output
            # Decode iterations n = output - 1 (uniform integer); context at decode iteration j is P + 1 + j + waste.
            n_lo, n_hi = max(o_lo - 1, 0), max(o_hi - 1, 0)
            count = n_hi - n_lo + 1
            n1, n2, n3 = (_power_sum(n_lo, n_hi, k) for k in (1, 2, 3))
            prompts = p_hi - p_lo + 1
            e_p, e_p2 = _power_sum(p_lo, p_hi, 1) / prompts, _power_sum(p_lo, p_hi, 2) / prompts
            base = 1 + WASTE_TOKENS
            # sum_{j<n} (P + base + j) = n (P + base) + n(n-1)/2 ; squares expanded the same way, then averaged over n.
            s1 = (n1 * (e_p + base) + (n2 - n1) / 2) / count
            s2 = (
                n1 * (e_p2 + 2 * e_p * base + base**2) + (e_p + base) * (n2 - n1) + (2 * n3 - 3 * n2 + n1) / 6
            ) / count
            dec += weight * (n1 / count)
            kv += weight * s1
            kv2 += weight * s2
            tok += weight * float(prefill.mean())
            sec += weight * float(seconds.mean())
        return _Moments(dec, kv, kv2, tok, sec)

    @functools.cached_property
    def _prefill_grid(self) -> tuple[F64, F64]:
        """The pool's prompt mix as equally likely (prefill tokens, prefill seconds) points, for the chains.

        Each class's points repeated in proportion to its weight; built only when a TTFT is priced (a warm
        plan reads its pricings from the cache and never needs them).
        """
        repeats = [max(1, round(weight * 1000)) for weight in self.weights]
        total = sum(len(prefill) * r for (prefill, _), r in zip(self._class_grids, repeats, strict=True))
        # Written in place (``np.repeat`` per class, then a concatenation, touched twice the fresh memory).
        tokens, seconds = np.empty(total), np.empty(total)
        at = 0
        for (prefill, secs), r in zip(self._class_grids, repeats, strict=True):
            end = at + len(prefill) * r
            tokens[at:end].reshape(len(prefill), r)[:] = prefill[:, None]
            seconds[at:end].reshape(len(prefill), r)[:] = secs[:, None]
            at = end
        return tokens, seconds

    @functools.cached_property
    def _grid_moments(self) -> tuple[float, float, float]:
        """The prompt grid's mean tokens, and its prefill seconds' mean and variance: the same for every pricing."""
        grid, grid_s = self._prefill_grid
        return float(grid.mean()), float(np.mean(grid_s)), float(np.var(grid_s))

    # --- the fluid fixed point ---------------------------------------------------------------

    def _decode_s(self, batch: float, kv_tokens: float) -> float:
        t = self.timing
        if batch <= 0:
            return t.overhead_s
        b = min(batch, t.max_num_seqs)
        lo = math.floor(b)
        hi = min(lo + 1, t.max_num_seqs)
        frac = b - lo
        memory = t.memory_s[lo] * (1 - frac) + t.memory_s[hi] * frac
        compute = t.compute_s[lo] * (1 - frac) + t.compute_s[hi] * frac
        return (max(memory + t.kv_s_per_token * kv_tokens, compute) + t.overhead_s) * t.speculation

    def _decode_s_array(self, batch: F64, kv_tokens: F64) -> F64:
        """``_decode_s`` over arrays, element by element (the same operations, so the same doubles)."""
        t = self.timing
        memory_s, compute_s = np.asarray(t.memory_s), np.asarray(t.compute_s)
        b = np.minimum(batch, t.max_num_seqs)
        lo = np.floor(b)
        frac = b - lo
        lo_i = lo.astype(np.int64)
        hi_i = np.minimum(lo_i + 1, t.max_num_seqs)
        memory = memory_s[lo_i] * (1 - frac) + memory_s[hi_i] * frac
        compute = compute_s[lo_i] * (1 - frac) + compute_s[hi_i] * frac
        step: F64 = (np.maximum(memory + t.kv_s_per_token * kv_tokens, compute) + t.overhead_s) * t.speculation
        return np.where(batch <= 0, t.overhead_s, step)

    def operating(self, rps: float) -> Operating:
        """The replica's fixed point at ``rps`` arrivals per second."""
        m, t = self.moments, self.timing
        share = rps * m.prefill_s
        if share >= MAX_PREFILL_SHARE:
            return Operating(rps, math.inf, math.inf, math.inf, math.inf, math.inf, share, False)
        tau = self._tau(rps, share, early=False)
        batch = rps * tau * m.decode_iterations
        kv = rps * tau * m.kv_token_iterations
        kv_sd = math.sqrt(max(rps * tau * m.kv_square_iterations, 0.0))
        feasible = batch <= t.max_num_seqs and kv <= t.kv_tokens and math.isfinite(tau)
        if t.encoder and self._saturation is not None:
            feasible = feasible and rps <= self._saturation
        decode = self._decode_s(batch, kv)
        return Operating(rps, tau, decode, batch, kv, kv_sd, share, feasible)

    def _tau(self, rps: float, share: float, *, early: bool) -> float:
        """The fixed point's mean iteration, iterated up from an empty batch; ``early``: inf once past the cache.

        The iteration only rises (a larger batch or context never shortens a decode step), so once
        its batch or KV passes the cache the fixed point's does too: the saturation search stops there.
        """
        m, t = self.moments, self.timing
        tau = self._decode_s(0.0, 0.0) / (1 - share)
        for _ in range(FIXED_POINT_STEPS):
            batch = rps * tau * m.decode_iterations
            kv = rps * tau * m.kv_token_iterations
            if early and (batch > t.max_num_seqs or kv > t.kv_tokens):
                return math.inf
            if batch > t.max_num_seqs * 4 or kv > t.kv_tokens * 4:
                break  # far past the cache: infeasible, and the iteration would only diverge
            new = self._decode_s(batch, kv) / (1 - share)
            if abs(new - tau) <= 1e-9 * tau:
                tau = new
                break
            tau = new
        return tau

    def _feasible(self, rps: float) -> bool:
        """``operating(rps).feasible``, the same answer, without iterating to a fixed point past the cache."""
        m, t = self.moments, self.timing
        share = rps * m.prefill_s
        if share >= MAX_PREFILL_SHARE:
            return False
        tau = self._tau(rps, share, early=True)
        return (
            rps * tau * m.decode_iterations <= t.max_num_seqs
            and rps * tau * m.kv_token_iterations <= t.kv_tokens
            and math.isfinite(tau)
        )

    def saturation_rps(self) -> float:
        """Requests per second one replica completes at most, its preemptions' recompute paid.

        The fluid fixed point saturates where the batch reaches the KV cache or the slots. When the
        KV cache is what binds, a saturated replica also preempts (``tokenplane.model.preemption``), and
        each preemption's recompute is prefill on top of the requests' own: with ``X = rps x tau``
        fixed by the full cache, ``rps = X / (D + X x (prefill seconds + recompute seconds))``.
        """
        if self._saturation is None and self.timing.encoder:
            self._saturation = self._encoder_saturation()
        if self._saturation is None:
            fluid = self.fluid_saturation_rps()
            thrash = self.saturation_preemptions()
            if thrash > 0:
                op = self.operating(fluid)
                x = fluid * op.iteration_s
                self._saturation = x / (op.decode_s + x * (self.moments.prefill_s + thrash * self._recompute_s()))
            else:
                self._saturation = fluid
        return self._saturation

    def fluid_saturation_rps(self) -> float:
        """The largest arrival rate whose fluid fixed point fits the KV cache and ``max_num_seqs`` (bisection)."""
        if self._fluid is None:
            if self._cache is None:
                self._fluid = self._bisect_fluid()
            else:
                key = self._pricing_key(self._cache)("fluid")
                self._fluid = float(self._cache.get_or_compute(key, self._bisect_fluid))
        return self._fluid

    def _bisect_fluid(self) -> float:
        top = MAX_PREFILL_SHARE / self.moments.prefill_s if self.moments.prefill_s > 0 else 1e9
        lo, hi = 0.0, top
        for _ in range(SATURATION_STEPS):
            mid = (lo + hi) / 2
            if self._feasible(mid):
                lo = mid
            else:
                hi = mid
        return lo

    def saturation_preemptions(self) -> float:
        """Preemptions per completed request of a saturated replica: none unless the KV cache binds first."""
        t = self.timing
        if t.encoder or not math.isfinite(t.kv_tokens):
            return 0.0
        op = self.operating(self.fluid_saturation_rps())
        if op.batch + 1 > t.max_num_seqs:  # the slots bind: admission waits for a slot, not for KV
            return 0.0
        held, weights = self._held_points()
        victims = self._victims(op.batch) if t.priority_scheduling else None
        return preemption.per_request(
            op.batch, self.moments.decode_iterations, held, weights, waste=WASTE_TOKENS, victims=victims
        )

    def _held_points(self) -> tuple[F64, F64]:
        """A just-admitted sequence's KV tokens (its whole prompt and first token) as weighted points of the mix."""
        q = (np.arange(PROMPT_POINTS) + 0.5) / PROMPT_POINTS
        held = [np.floor(lo + q * (hi - lo + 1)) + 1 for lo, hi in (c.prompt for c in self.classes)]
        weights = [np.full(PROMPT_POINTS, w / PROMPT_POINTS) for w in self.weights]
        return np.concatenate(held), np.concatenate(weights)

    def _victims(self, batch: float) -> tuple[F64, F64]:
        """What a sequence the priority policy preempts holds at saturation (``preemption.priority_victims``)."""
        held, _ = self._held_points()  # every class's points; a level weighs them by its own classes
        levels: list[tuple[float, float, F64, F64]] = []
        for level in range(LEVELS):
            shares = np.array([w * c.levels[level] for w, c in zip(self.weights, self.classes, strict=True)])
            share = float(shares.sum())
            if share <= 0:
                levels.append((0.0, 0.0, np.zeros(0), np.zeros(0)))
                continue
            within = shares / share
            weights = np.repeat(within / PROMPT_POINTS, PROMPT_POINTS)
            decode = float(
                sum(x * max((c.output[0] + c.output[1]) / 2 - 1, 0) for x, c in zip(within, self.classes, strict=True))
            )
            levels.append((share, decode, held, weights))
        return preemption.priority_victims(batch, self.moments.decode_iterations, levels)

    def _recompute_s(self) -> float:
        """Prefill seconds of one preempted sequence's recompute: its whole context, no prefix-cache hit.

        Under FCFS that is the newest sequence (a just-admitted prompt of the mix); under vLLM's priority
        policy the lowest level's latest arrival, with what it has decoded since (``_victims``).
        """
        if self.timing.priority_scheduling and not self.timing.encoder:
            held, weights = self._victims(self.operating(self.fluid_saturation_rps()).batch)
        else:
            held, weights = self._held_points()
        cost = self.timing.prefill
        return float(np.sum(weights * (cost.per_token_s * held + cost.per_pair_s * held * held / 2)))

    def _encoder_saturation(self) -> float:
        """An encoder keeps no KV cache: saturated, each iteration embeds ``max_num_seqs`` prompts or the budget.

        For a small embedder the per-iteration overhead, not the FLOPs, is most of the time.
        """
        t, m = self.timing, self.moments
        per_iteration = max(1.0, min(float(t.max_num_seqs), t.token_budget / max(m.prefill_tokens, 1.0)))
        return per_iteration / (t.overhead_s + per_iteration * m.prefill_s)

    def concurrency(self) -> float:
        """Sequences one replica holds at once at saturation: ``max_num_seqs``, or fewer when KV binds."""
        sat = self.operating(self.fluid_saturation_rps() if not self.timing.encoder else self.saturation_rps())
        return min(float(self.timing.max_num_seqs), max(1.0, sat.batch))

    # --- TTFT --------------------------------------------------------------------------------

    def headroom(self, rps: float) -> tuple[Operating, bool, bool]:
        """The operating point, and whether the KV cache and ``max_num_seqs`` keep ``z`` sd of headroom there."""
        op = self.operating(rps)
        t = self.timing
        kv_ok = not math.isfinite(t.kv_tokens) or op.kv_tokens + self.z * op.kv_sd <= t.kv_tokens
        slots_ok = op.batch + self.z * math.sqrt(max(op.batch, 0.0)) <= t.max_num_seqs
        return op, kv_ok, slots_ok

    def health(self, rps: float, *, replicas: int = 1) -> Health:
        """Everything the planner checks at ``rps`` arrivals per replica with ``replicas`` of them in the pool.

        The replica count shapes each replica's arrivals: a least-request balancer over ``n``
        replicas deals a replica about every n-th arrival of the pool, so its gaps are
        Gamma(n) (the workbench's ``sim.arrivals.Replicas`` assumes the same), far more regular
        than a Poisson stream once ``n`` is more than a few.
        """
        key = (rps, replicas)
        if key in self._health:  # the planner asks again at the count it settles on
            return self._health[key]
        op, kv_ok, slots_ok = self.headroom(rps)
        sat = self.saturation_rps()
        rho = rps / sat if sat > 0 else math.inf
        classes, itl_p95 = self._priced_ttft(op, max(1, replicas)) if op.feasible else (self._unbounded(), math.inf)
        health = Health(op, rho, kv_ok, slots_ok, classes, {c.name: c.attainment for c in self.classes}, itl_p95)
        self._health[key] = health
        return health

    def prefetch(self, points: Sequence[tuple[float, int]]) -> None:
        """Price ``health``'s TTFT at several (arrivals per replica, replicas) at once, before they are asked.

        Their chains share one loop (``backlog_chains``: the same answers as one at a time, for
        less than their sum); a point the pricing cache already holds is left to it.
        """
        todo: list[tuple[Operating, int]] = []
        for rps, replicas in dict.fromkeys(points):
            n = max(1, replicas)
            if (rps, replicas) in self._health or (rps, n) in self._prepriced:
                continue
            op = self.operating(rps)
            cached = self._cache is not None and self._cache.holds(self._pricing_key(self._cache)(self.z, op, n))
            if op.feasible and not cached:
                todo.append((op, n))
        for decoding in (True, False):  # an encoder's pool never decodes at any rate, so this is one group
            group = [(op, n) for op, n in todo if (op.batch > 0) == decoding]
            if group:
                for (op, n), answer in zip(group, self._ttft_many(group), strict=True):
                    self._prepriced[(op.rps, n)] = answer

    def _priced_ttft(self, op: Operating, replicas: int) -> tuple[dict[str, ClassLatency], float]:
        """``_ttft``, computed ahead by ``prefetch`` or read from the pricing cache where one was given."""
        ready = self._prepriced.pop((op.rps, replicas), None)
        if self._cache is None:
            return ready if ready is not None else self._ttft(op, replicas)

        def compute() -> list[Any]:
            classes, itl = ready if ready is not None else self._ttft(op, replicas)
            return [[astuple(c) for c in classes.values()], itl]

        key = self._pricing_key(self._cache)(self.z, op, replicas)
        rows, itl = self._cache.get_or_compute(key, compute)
        return {row[0]: ClassLatency(*row) for row in rows}, float(itl)

    def _pricing_key(self, cache: PricingCache) -> Callable[..., str]:
        """The cache key of a question about this pool: its inputs are printed once, then each question's own."""
        if self._keyer is None:
            self._keyer = cache.keyer(self.timing, self.classes, self.prefix_kept)
        return self._keyer

    def _unbounded(self) -> dict[str, ClassLatency]:
        return {
            c.name: ClassLatency(
                c.name, math.inf, math.inf, math.inf, 0.0 if c.ttft_slo_s is not None else None, math.inf, math.inf
            )
            for c in self.classes
        }

    def _ttft(self, op: Operating, replicas: int) -> tuple[dict[str, ClassLatency], float]:
        """Each class's TTFT distribution at the operating point (``_ttft_many`` of that one point)."""
        return self._ttft_many([(op, replicas)])[0]

    def _ttft_many(self, points: Sequence[tuple[Operating, int]]) -> list[tuple[dict[str, ClassLatency], float]]:
        """Each class's TTFT distribution at each operating point, from the backlog chains (``backlog_chains``).

        The chains step from arrival to arrival (gaps Gamma(``replicas``) of mean ``1 / rps``),
        carrying what an arrival finds. What an arrival finds is then an arrival's view, not a
        random instant's: with a balancer's regular arrivals the two differ by a factor of two in
        the tail. The points' chains run in one loop, each point on its own stream: every answer
        is the one the point gets alone. They must agree on whether the replica decodes.
        """
        t = self.timing
        decoding = points[0][0].batch > 0
        if any((op.batch > 0) != decoding for op, _ in points):
            raise ValueError("points priced together must all decode, or none")
        chains: list[backlog_chains.Point] = []
        batches: list[F64] = []
        for op, replicas in points:
            rng = np.random.default_rng(SEED)
            # The batch's population moves on the scale of a request's life (seconds), the prefill queue on
            # the scale of iterations: each chain holds its own batch and KV level, so a busy stretch of a larger
            # batch (longer decode steps) is in the tail. The batch is drawn from continuous batching's
            # birth-death chain (``batch_spread``: a larger or heavier batch's slower steps keep its sequences
            # longer, wider than M/G/inf's sqrt(b) wherever the step grows with the batch or its KV); its KV is the
            # batch's mean contexts and a shift of its mix (the contexts' own spread), which the batch's chain is
            # conditioned on.
            normals = rng.standard_normal((3, CHAINS))
            batch, kv = self._batch_and_kv(op, replicas, normals) if decoding else (np.zeros(CHAINS), np.zeros(CHAINS))
            budget = np.maximum(1.0, t.token_budget - np.round(batch))
            chains.append(backlog_chains.Point(rng, op.rps, replicas, self._decode_s_array(batch, kv), budget))
            batches.append(batch)
        # Prefill in an iteration is priced as the engines price it (``PrefillCost.in_iteration``): its compute, or
        # the weight reads the decode batch has not paid (all of them on an idle replica; an MoE's untouched experts).
        # Each chain's batch is fixed: its own reads are priced once.
        beside = t.prefill.beside(np.concatenate(batches) if len(batches) > 1 else batches[0])
        grid, grid_s = self._prefill_grid
        reads = backlog_chains.run(chains, beside, grid, grid_s, decoding=decoding)
        return [
            self._ttft_from(op, point, batch, found)
            for (op, _), point, batch, found in zip(points, chains, batches, reads, strict=True)
        ]

    def _ttft_from(
        self, op: Operating, point: backlog_chains.Point, batch: F64, found: backlog_chains.Reads
    ) -> tuple[dict[str, ClassLatency], float]:
        """Each class's TTFT distribution, and the ITL's P95, from what the point's arrivals found."""
        t, m = self.timing, self.moments
        rng, decode, budget = point.rng, point.decode, point.budget
        decoding = op.batch > 0
        per_token = m.prefill_s / m.prefill_tokens  # seconds per prefill token over the mix, attention included
        full = decode + t.prefill.beside(batch).at(per_token * budget, budget)  # the whole budget on an average mix
        grid, grid_s = self._prefill_grid
        mean_tokens = self._grid_moments[0]
        lam = op.rps
        n = max(1, point.replicas)
        level_rate = np.zeros(LEVELS)
        for weight, c in zip(self.weights, self.classes, strict=True):
            level_rate += weight * lam * np.array(c.levels)
        r_s, c_s, q_s, qs_s = found.residual, found.current, found.queued, found.queued_s
        samples = len(r_s)
        reads = samples // CHAINS
        decode, budget, full = np.tile(decode, reads), np.tile(budget, reads), np.tile(full, reads)
        batch = np.tile(batch, reads)
        tiled = t.prefill.beside(batch)
        stalls = self._stall_states(op, samples, n)
        # Lives ending per second in each chain: its batch over a life at its own decode step.
        life_s = m.decode_iterations * op.iteration_s * decode / max(op.decode_s, 1e-12)
        depart = batch / np.maximum(life_s, 1e-12)
        # Apart from the chains' stream, so that a pool whose cache never binds keeps its numbers exactly.
        stall_rng = np.random.default_rng(kv_stall.SEED + 1)
        out: dict[str, ClassLatency] = {}
        for c, (prefill, seconds) in zip(self.classes, self._class_grids, strict=True):
            ttft = np.zeros(samples)
            wait = np.zeros(samples)
            mass = 0.0
            met = 0.0  # the share within the SLO and not shed at the level's deadline
            server = np.zeros(samples)
            # A class sent at several priority levels is a mixture of their TTFTs: each sample takes one level's
            # (averaging the levels' samples instead would shrink the tail: a P95 5-7% short on dev's pools).
            active = [level for level, share in enumerate(c.levels) if share > 0]
            chosen = _mixture(rng, [c.levels[level] for level in active], samples) if len(active) > 1 else None
            for index, level in enumerate(active):
                share = c.levels[level]
                ahead_share = float(level_rate[: level + 1].sum()) / lam if lam > 0 else 1.0
                jump_rate = float(level_rate[:level].sum())  # above it: overtake it while it waits
                own = rng.integers(0, len(prefill), samples)
                # While it waits, each iteration serves the budget less what higher levels bring meanwhile; once
                # its own prefill starts, its chunks come first (the engine finishes a started prompt before it
                # admits another), so they get the whole budget.
                usable = np.maximum(budget - jump_rate * full * mean_tokens, budget * 0.05)
                ahead, ahead_s = q_s * ahead_share, qs_s * ahead_share
                waiting = ahead / usable  # iterations, in fractions, before its own prefill starts
                own_tokens, own_s = prefill[own], seconds[own]
                work = waiting + own_tokens / budget
                rounds = np.maximum(np.ceil(work) - 1, 0)
                # Its first token comes out of iteration rounds + 1: each decodes, and between them they prefill
                # what is ahead of it, what higher levels bring while it waits (the budget they take), its own
                # prompt, and what arrived after it and fits the last one's room.
                jumped = np.minimum(rounds, waiting) * (budget - usable)  # tokens of higher levels that overtook it
                jump_s = jumped * per_token
                room = np.maximum(budget * (rounds + 1 - work), 0.0)
                behind, behind_s = _arrived(rng, lam, r_s + rounds * full, grid, grid_s, n)
                fill = np.where(behind > 0, np.minimum(behind, room), 0.0)
                fill_s = np.where(behind > 0, behind_s * np.minimum(1.0, room / np.maximum(behind, 1e-9)), 0.0)
                # Its rounds + 1 iterations prefill all of that, each priced as the engines do (compute or reads).
                its = rounds + 1
                rows = ahead + own_tokens + jumped + fill
                spent = its * tiled.at((ahead_s + own_s + jump_s + fill_s) / its, rows / its)
                elapsed = its * decode + spent
                # Prompt tokens of others that finish before its last iteration (its own chunks fill the rest).
                joined = c_s + np.minimum(ahead + jumped, rounds * budget)
                if stalls is not None:  # the queue ahead and its own context must fit what the batch leaves
                    need = ahead * self._kv_per_prefill_token + own_tokens / self.prefix_kept + 1 + WASTE_TOKENS
                    stall = stalls.stall_s(need)
                    # What arrived since the stall began (as long ago, on average, as it has left to run) queued
                    # ahead of it at its level and above: their prefill, a budget an iteration, comes first.
                    built, built_s = _arrived(stall_rng, lam, stall, grid, grid_s, n)
                    elapsed = elapsed + stall + ahead_share * (built_s + np.ceil(built / budget) * decode)
                    joined = joined + ahead_share * built
                first = r_s + elapsed  # its first token, before the server's own work
                level_wait = first - decode - own_s
                # The server's floor and its work for the requests decoding beside it: the engines' own term
                # (``PoolTiming.first_token_server_s``), on the batch of the iteration that finishes its prompt.
                # That is the chain's batch (as the request found it) grown by the prompts prefilled before that
                # iteration, the one in progress and those ahead of it, and shrunk by the lives that ended
                # meanwhile: a request that queues long sees the batch its queue has grown.
                last = decode + spent / its
                ended = np.maximum(first - last, 0.0) * depart
                # An encoder's prompts never decode: its batch stays empty.
                at_first = first_token_batch(batch, joined / mean_tokens, ended) if decoding else batch
                level_server = self.timing.first_token_server_s(at_first)
                if chosen is None:
                    ttft, wait, server = first, level_wait, level_server
                else:
                    mine = chosen == index
                    ttft[mine] = first[mine]
                    wait[mine] = level_wait[mine]
                    server[mine] = level_server[mine]
                mass += share
                if c.ttft_slo_s is not None:
                    kept = (first + level_server <= c.ttft_slo_s) & (level_wait <= c.max_wait_s[level])
                    met += share * float(kept.mean())
            ttft = ttft + server
            p50, p95, p99 = sample_quantiles(ttft, (0.5, 0.95, 0.99))
            att = None if c.ttft_slo_s is None else met / max(mass, 1e-12)
            out[c.name] = ClassLatency(c.name, p50, p95, p99, att, float(wait.mean()), *sample_quantiles(wait, (0.95,)))
        itl_p95 = 0.0
        if decoding:
            values = np.concatenate([found.lengths, decode[:CHAINS]])
            weights = np.concatenate(
                [np.ones(len(values) - CHAINS), np.full(CHAINS, max(found.decode_only, 1.0) / CHAINS)]
            )
            (itl_p95,) = _weighted_quantiles(values, weights, (0.95,))
        return out, itl_p95

    def _batch_and_kv(self, op: Operating, replicas: int, normals: F64) -> tuple[F64, F64]:
        """The batch and its KV tokens for three rows of standard-normal draws (``batch_spread``).

        The first ranks the batch within its chain, the second shifts every step (the mix's KV and
        prefill share over a life), the third is the KV's own part of that shift's complement.
        """
        t, m = self.timing, self.moments
        count, shift, rest = normals
        context = op.kv_tokens / op.batch  # a sequence's mean KV tokens
        own_sd = math.sqrt(max(op.kv_sd**2 - op.batch * context**2, 0.0))  # the contexts' spread, less the count's
        sizes = np.arange(1, t.max_num_seqs + 1, dtype=np.float64)
        mean_step = self._decode_s(op.batch, op.kv_tokens)
        kv_share_sd = self._decode_s(op.batch, op.kv_tokens + own_sd) / mean_step - 1
        # The prefill share over a life (its decode iterations at the mean iteration): the seconds that
        # arrivals bring, a renewal stream's compound sum (Gamma(n) gaps: ca2 = 1 / n).
        ca2 = 1.0 / max(1, replicas)
        life_s = max(m.decode_iterations * op.iteration_s, 1e-9)
        _, mean_s, var_s = self._grid_moments
        per_arrival = var_s + ca2 * mean_s**2
        share_sd = math.sqrt(max(op.rps * per_arrival / life_s, 0.0))
        shift_sd = batch_spread.step_shift(kv_share_sd, op.prefill_share, share_sd)
        lives = [
            (w, max(c.output[0] - 1, 0), max(c.output[1] - 1, 0))
            for w, c in zip(self.weights, self.classes, strict=True)
        ]
        batch = batch_spread.draws(
            self._decode_s_array(sizes, sizes * context),
            op.batch,
            batch_spread.renewal_factor(ca2, lives),
            shift_sd,
            count,
            shift,
        )
        kv_part = min(kv_share_sd / shift_sd, 1.0) if shift_sd > 0 else 0.0  # the KV's correlation with the shift
        own = kv_part * shift + math.sqrt(1 - kv_part**2) * rest
        return batch, np.maximum(context * batch + own * own_sd, 0.0)

    def _stall_states(self, op: Operating, samples: int, replicas: int) -> kv_stall.BatchStates | None:
        """Independent draws of the batch an arrival finds, for its wait for KV room (``kv_stall``); None: no cache binds."""
        t = self.timing
        if t.encoder or not math.isfinite(t.kv_tokens) or op.batch <= 0:
            return None
        longest = max(c.prompt[1] for c in self.classes) + 1 + WASTE_TOKENS
        if op.kv_tokens + kv_stall.GATE_SD * op.kv_sd + 2 * longest <= t.kv_tokens:
            return None  # the cache never binds here: the draws would cost time to find no stall
        shapes = [
            kv_stall.ClassShape(float(w), c.prompt, (max(c.output[0] - 1, 0), max(c.output[1] - 1, 0)))
            for w, c in zip(self.weights, self.classes, strict=True)
        ]
        replica = kv_stall.Replica(
            op.rps, replicas, op.decode_s, op.iteration_s, t.kv_tokens, WASTE_TOKENS, self.prefix_kept, t.prefill
        )
        return kv_stall.draw(shapes, replica, samples=samples, decode_s=self._decode_s_array)


def first_token_batch(found: F64, joined: F64, ended: F64) -> F64:
    """The batch decoding beside a first token: the one the request found, plus who joined, less who ended since.

    The simulated engine adds the server's per-request work on the batch of the iteration that
    finishes the prompt; a request that queued long sees the batch its queue grew (every prompt
    ahead of it decodes by then), which widens the server term's tail together with the wait.
    """
    return np.maximum(found + joined - ended, 0.0)


def _mixture(rng: np.random.Generator, shares: list[float], samples: int) -> npt.NDArray[np.int64]:
    """For each sample, the index of the component it is drawn from, with probabilities ``shares``."""
    cumulative = np.cumsum(shares) / sum(shares)
    picked = np.searchsorted(cumulative, rng.random(samples), side="right")
    return np.minimum(picked, len(shares) - 1).astype(np.int64)


def _arrived(
    rng: np.random.Generator, rps: float, spans: F64, grid: F64, grid_s: F64, replicas: int
) -> tuple[F64, F64]:
    """Prompt tokens and prefill seconds of the arrivals that follow one arrival within each of ``spans``.

    The arrivals after a given one form a renewal stream with Gamma(``replicas``) gaps of mean
    ``1 / rps`` (Poisson at one replica, a steady beat at many), counted exactly: the gaps are drawn.
    """
    if rps <= 0:
        return np.zeros(len(spans)), np.zeros(len(spans))
    counts = np.zeros(len(spans), dtype=np.int64)
    clock = rng.gamma(replicas, 1 / (replicas * rps), len(spans))
    live = np.flatnonzero(clock <= spans)
    while len(live):  # one more arrival for every span it still falls in: ~E[count] + 1 draws per span
        counts[live] += 1
        clock[live] += rng.gamma(replicas, 1 / (replicas * rps), len(live))
        live = live[clock[live] <= spans[live]]
    owner = np.repeat(np.arange(len(spans)), counts)
    pick = rng.integers(0, len(grid), int(counts.sum()))
    tokens: F64 = np.bincount(owner, weights=grid[pick], minlength=len(spans)).astype(np.float64)
    seconds: F64 = np.bincount(owner, weights=grid_s[pick], minlength=len(spans)).astype(np.float64)
    return tokens, seconds


def sample_quantiles(values: F64, qs: tuple[float, ...]) -> tuple[float, ...]:
    """``np.quantile(values, qs)`` (its linear method), the same doubles, for a third of its time on these samples.

    numpy's own steps (numpy/lib/_function_base_impl.py, ``_quantile``): the virtual index
    ``(n - 1) q``, its floor and the next (the last value past the end), a partition that puts
    them in place, a NaN if the partition's last is one, and ``_lerp``'s interpolation from the
    nearer end. The pool model asks 144 of these a plan, where numpy's checks and ``np.unique``
    of the partition points were most of the time; ``tests/model/test_sample_quantiles.py``
    holds this to ``np.quantile`` bit for bit.
    """
    n = len(values)
    q = np.asarray(qs, dtype=np.float64)
    virtual = (n - 1) * q
    previous = np.floor(virtual)
    following = previous + 1
    above = virtual >= n - 1
    previous[above] = -1
    following[above] = -1
    prev_i, next_i = previous.astype(np.intp), following.astype(np.intp)
    gamma = virtual - prev_i
    part = np.partition(values, sorted({0, n - 1, *(prev_i % n).tolist(), *(next_i % n).tolist()}))
    if np.isnan(part[-1]):
        return tuple(math.nan for _ in qs)
    a, b = part[prev_i], part[next_i]
    diff = b - a
    out = a + diff * gamma
    np.subtract(b, diff * (1 - gamma), out=out, where=gamma >= 0.5)
    return tuple(float(x) for x in out)


def _weighted_quantiles(values: F64, weights: F64, qs: tuple[float, ...]) -> tuple[float, ...]:
    order = np.argsort(values)
    cum = np.cumsum(weights[order])
    cum /= cum[-1]
    return tuple(float(values[order][min(int(np.searchsorted(cum, q)), len(values) - 1)]) for q in qs)


# --- from the spec -------------------------------------------------------------------------------


def class_mix(spec: PlatformSpec, region: str, pool: Pool, per_class: dict[WorkloadClass, float]) -> list[ClassMix]:
    """The classes a pool serves in a region, at their routed rates (every served class, loaded or not)."""
    encoder = spec.is_embedding(pool)
    cap_tokens = spec.model(pool.model).resolved_architecture().max_position_embeddings
    mix: list[ClassMix] = []
    for cls in pool.classes:
        cs = spec.workload_classes.get(cls)
        if cs is None:
            continue
        prompt = (cs.prompt_tokens.min, cs.prompt_tokens.max)
        if encoder:  # the embedder cuts what it is sent to its positions, as the simulator does
            prompt = (min(prompt[0], cap_tokens), min(prompt[1], cap_tokens))
        mix.append(
            ClassMix(
                name=cls.value,
                rps=per_class.get(cls, 0.0),
                prompt=prompt,
                output=(cs.output_tokens.min, cs.output_tokens.max),
                ttft_slo_s=None if cs.ttft_p95_ms is None else cs.ttft_p95_ms / 1000,
                attainment=cs.slo_attainment,
                levels=priority_levels(spec, region, cls),
                max_wait_s=tuple(spec.queues.max_wait_s(level, cs.ttft_p95_ms) for level in Priority),
            )
        )
    return mix


def for_pool(
    spec: PlatformSpec,
    region: str,
    pool: Pool,
    per_class: dict[WorkloadClass, float],
    *,
    pool_timing: PoolTiming | None = None,
    cache: PricingCache | None = None,
) -> ReplicaPerformance | None:
    """A pool's replica model in a region at its routed mix; None when it serves no class the spec defines.

    ``pool_timing``: the pool's ``pool_model.timing``, when the caller already has it (it is the same
    in every region, and tabulating it costs one decode-step pricing per batch size).
    """
    mix = class_mix(spec, region, pool, per_class)
    if not mix:
        return None
    costs = timing(spec, pool) if pool_timing is None else pool_timing
    return ReplicaPerformance(costs, mix, prefix_kept=prefix_kept_share(spec, pool), cache=cache)
