"""How long an arrival waits for KV room below saturation: the stall a KV-filling prompt mix builds.

The engine (``tokenplane.sim.engine``, as vLLM's scheduler) admits the head of its waiting
queue only when the head's whole context fits what the running batch leaves free of the KV
cache (less one iteration's growth); otherwise every request behind it waits too, while the
batch decodes, until enough sequences finish. With prompts that are a large share of the
cache (a RAG mix: 12k-token prompts against 150k tokens of cache), this happens well below
saturation: the batch's KV spread has a long right tail, and a stall lasts until the next
finishes, a few hundred milliseconds each. The fluid point and the backlog chains of
``tokenplane.model.pool_performance`` do not see it (its mean and ``z`` standard deviations
fit the cache), so before this module a RAG pool's planner predicted 99.99% attainment where
the simulator gave 98.9% at the same replica count (issue 28).

The batch an arrival finds is drawn by walking back through the replica's earlier arrivals
(``draw``): each is still decoding while the decode iterations since its prefill are fewer than
its output. The clock is what makes the batch's spread: iterations pass slower after a burst of
long prompts (their prefill takes the replica's time) and when the batch and its context are
large (a decode step reads the KV cache), and both make the batch larger still. Taken with the
fixed point's steady clock, the batch is the M/G/inf population, whose KV spread (23k tokens on
the RAG pool at 30 replicas) is a quarter short of the simulated engine's (31.6k); with the
prefill bursts and a draw's decode step taken halfway between the fixed point's and its own (the
batch built up over the window its sequences span) it is 29.8k, its 90th and 99th percentiles
110k and 149k against the engine's 120k and 150k. The cache holds the oldest sequences first;
what does not fit waits in the queue, ahead of the arrival.

Each drawn batch then gives exactly when room appears: the context grows by one token per
sequence per iteration, and a sequence frees its whole context at its last iteration. An
arrival whose queue ahead (at its priority and above) plus its own context needs more room
than the batch leaves waits, decoding only, for the first finish after which it fits; what
arrives meanwhile queues ahead of it (``pool_performance`` adds its prefill). On the RAG pool
class A's attainment, planned against the simulator's mean over six seeds: 97.1% / 97.0% at
28 replicas, 98.4% / 98.3% at 29, 99.05% / 99.0% at 30, 99.6% / 99.4% at 31, 99.8% / 99.7% at
32 (class B's is 0.2-0.9 points pessimistic below 31, where the backlog a stall builds is
priced as if it had waited as long as it has left). Preemption in the tail is left out: at the planned counts it is rarer still (under 0.1%
of requests on the RAG pool at its planned count).

States are drawn from their own seeded stream, so that a pool whose cache never binds gets
exactly the numbers it had without this term.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tokenplane.model.capacity import PrefillCost

F64 = npt.NDArray[np.float64]
SEED = 20_260_316  # fixed and apart from the chains' stream: a plan is a function of its spec
# A pool whose batch's mean KV plus this many of its M/G/inf standard deviations and two of its longest prompts
# fits the cache never stalls for room (the bursts widen the spread by a third to a half: 23k to 31.6k tokens on
# the RAG pool at its count), and is not drawn: it keeps the plan fast, and its numbers exactly as they were.
GATE_SD = 5.0
CLOCK_STEPS = 4  # a draw's clock and batch settle in a few steps (the iteration rises by a third over the cache)


@dataclass(frozen=True)
class ClassShape:
    """One class of the mix: its share of arrivals and its uniform token ranges."""

    weight: float
    prompt: tuple[int, int]
    decode_iterations: tuple[int, int]  # output - 1: the iterations it decodes after its first token


@dataclass(frozen=True)
class Replica:
    """What the draws need of the replica at its operating point."""

    rps: float  # arrivals per second
    replicas: int  # the balancer deals every n-th arrival of the pool: gaps Gamma(n) of mean 1 / rps
    decode_s: float  # the fixed point's decode part of an iteration
    iteration_s: float  # and the whole of it (prefill included): the walk back is about rps x tau per iteration
    kv_tokens: float
    waste: float  # the half-empty last block each sequence also holds (``WASTE_TOKENS``)
    prefix_kept: float  # share of a prompt still prefilled after prefix-cache hits
    prefill: PrefillCost


@dataclass(frozen=True)
class BatchStates:
    """Independent draws of the running batch an arrival finds, as the KV room each finish leaves.

    Flat over the draws' finishes, sorted by draw and then by the iteration the finish comes at:
    ``room`` is the room (as the engine's admission counts it) right after the finish, ``at`` its
    iteration, ``owner`` its draw. ``room0`` is each draw's room on arrival, ``decode_s`` its
    decode-only iteration.
    """

    owner: npt.NDArray[np.int64]
    room: F64
    at: F64
    room0: F64
    decode_s: F64
    kv_tokens: float
    queued: F64  # KV the draw's arrivals that the cache could not hold wait for, ahead of the arrival

    def stall_s(self, need: F64) -> F64:
        """Seconds each draw's arrival waits, decoding only, before ``need`` KV tokens fit (0 when they do)."""
        # Once every sequence has finished, the whole cache is free: a need past it waits for that.
        need = np.minimum(need + self.queued, self.kv_tokens)
        fits = self.room >= need[self.owner]
        owners, first = np.unique(self.owner[fits], return_index=True)  # sorted by owner: the earliest finish
        iterations = np.zeros(len(need))
        iterations[owners] = self.at[fits][first]
        iterations[self.room0 >= need] = 0.0
        stall: F64 = iterations * self.decode_s
        return stall


def draw(
    classes: list[ClassShape], replica: Replica, *, samples: int, decode_s: Callable[[F64, F64], F64]
) -> BatchStates:
    """``samples`` independent batches of the replica at its operating point, and the room each finish leaves.

    Each draw walks back from the arrival through the replica's earlier arrivals (gaps Gamma(n)
    of mean ``1 / rps``, as the balancer deals them), each of the mix with its own prompt and
    output. An earlier arrival's age in iterations is the time since it came, less the prefill
    seconds of the arrivals after it (the time the replica spent prefilling them, not decoding),
    over the decode iteration: on average ``t / tau``, the fixed point's clock, but slower after
    a burst of long prompts, which is what widens the batch's KV spread past the M/G/inf one of a
    steady clock (23k tokens on the RAG pool at its count; 32k with the prefill bursts, 31.6k in
    the simulated engine). It is in the batch while its age is under its decode iterations (and
    not negative: still queued, which the chains' queue ahead accounts for).

    Args:
        classes: the mix, by arrival share.
        replica: the replica at its operating point.
        samples: draws (one per TTFT sample of the chains).
        decode_s: a decode iteration's seconds at (batch, KV tokens), element by element.
    """
    rng = np.random.default_rng(SEED)
    weights = np.array([c.weight for c in classes], dtype=np.float64)
    weights = weights / weights.sum() if weights.sum() > 0 else np.full(len(classes), 1 / len(classes))
    longest = max(c.decode_iterations[1] for c in classes)
    # Enough earlier arrivals to pass the longest decode: rps x tau per iteration, and six of their spreads.
    span = replica.rps * (longest + 1) * replica.iteration_s
    width = max(1, math.ceil(span + 6 * math.sqrt(span) + 4))
    n = max(1, replica.replicas)
    ago = np.cumsum(rng.gamma(n, 1 / (n * replica.rps), (samples, width)), axis=1)
    picked = np.minimum(
        np.searchsorted(np.cumsum(weights), rng.random((samples, width)), side="right"), len(classes) - 1
    )
    prompt = np.zeros((samples, width))
    iterations = np.zeros((samples, width))
    for index, c in enumerate(classes):
        mine = picked == index
        k = int(mine.sum())
        p_lo, p_hi = c.prompt
        n_lo, n_hi = c.decode_iterations
        prompt[mine] = p_lo + np.floor(rng.random(k) * (p_hi - p_lo + 1))
        iterations[mine] = n_lo + np.floor(rng.random(k) * (n_hi - n_lo + 1))
    prefill = np.maximum(1.0, np.ceil(prompt * replica.prefix_kept))
    cost = replica.prefill
    seconds = cost.per_token_s * prefill + cost.per_pair_s * (prefill * (prompt - prefill) + prefill * prefill / 2)
    # Seconds the replica spent decoding since it came: less its own prefill and that of the arrivals after it.
    decoding = ago - np.cumsum(seconds, axis=1)
    # A decode iteration is longer the larger the batch and its context: the draw's own batch sets its clock,
    # which sets its batch (a fixed point per draw, from the operating point's iteration).
    step = np.full(samples, replica.decode_s)
    for _ in range(CLOCK_STEPS):
        present, context, queued = _admitted(decoding / step[:, None], prompt, iterations, replica)
        now = decode_s(present.sum(axis=1).astype(np.float64), np.where(present, context, 0.0).sum(axis=1))
        step = (replica.decode_s + now) / 2
    present, context, queued = _admitted(decoding / step[:, None], prompt, iterations, replica)
    age = context - prompt - 1
    owner = np.broadcast_to(np.arange(samples)[:, None], (samples, width))[present]
    held = context[present]
    left = (iterations - age)[present]  # it finishes at iteration ``left``
    order = np.lexsort((left, owner))
    owner, held, left = owner[order], held[order], left[order]
    count = np.bincount(owner, minlength=samples)
    total = np.bincount(owner, weights=held, minlength=samples)
    starts = np.cumsum(count) - count
    rank = np.arange(len(owner)) - starts[owner]  # finishes before this one in its draw
    freed = np.cumsum(held) - (np.cumsum(total) - total)[owner]  # its draw's context freed up to and with it
    alive = count[owner] - rank - 1
    room = replica.kv_tokens - (total[owner] - freed) - alive * left - alive * (replica.waste + 1)
    room0 = replica.kv_tokens - total - count * (replica.waste + 1)
    decode = decode_s(count.astype(np.float64), total.astype(np.float64))
    return BatchStates(owner.astype(np.int64), room, left, room0, decode, replica.kv_tokens, queued)


def _admitted(
    iterations_ago: F64, prompt: F64, iterations: F64, replica: Replica
) -> tuple[npt.NDArray[np.bool_], F64, F64]:
    """Which earlier arrivals a draw's batch holds, their contexts, and the KV the rest still wait for.

    An arrival is decoding while its age (whole iterations) is under its decode iterations and not
    negative. The cache holds the oldest of them first: those past it are not in the batch but wait
    in the queue (the engine admits in arrival order while the next fits), ahead of the draw's
    arrival with their whole context.
    """
    age = np.floor(iterations_ago)
    alive = (age >= 0) & (age < iterations)
    context = prompt + 1 + age  # the engine's context of a joined sequence: prompt, first token, decode
    need = np.where(alive, context + replica.waste + 1, 0.0)
    held = np.cumsum(need[:, ::-1], axis=1)[:, ::-1]  # the columns run newest first: oldest first from the end
    present = alive & (held <= replica.kv_tokens)
    queued: F64 = np.where(alive & ~present, prompt + 1 + replica.waste, 0.0).sum(axis=1)
    return present, context, queued
