"""How often a replica whose KV cache binds preempts at saturation: the thrash the fluid model leaves out.

A saturated replica (a queue that never empties) admits waiting prompts greedily, as vLLM's
scheduler and the simulated engine (``tokenplane.sim.engine``) do: whenever a sequence finishes,
it admits from the head of the queue while the next prompt fits, keeping room for one more
iteration of the running batch and no more. The batch then grows by one token per sequence per
iteration; when it outgrows what admission left over before the next sequence finishes, the
newest sequence is preempted and later recomputed from scratch (its prompt and what it has
produced, with no prefix-cache hit). The recompute is prefill work a request pays on top of its
own, so the saturated throughput is below the fluid fixed point's (by 5-11% on the example
specs' chat and batch pools). It is a renewal argument over admission rounds:

- At saturation the batch holds ``B`` sequences decoding ``E[n]`` iterations each, so
  ``c = B / E[n]`` finish per iteration, about as a Poisson stream: an iteration ends without
  a finish with probability ``q = exp(-c)``, and the iterations until one that ends with a
  finish are geometric.
- An admission round (an iteration with a finish) stops at the first prompt that does not
  fit: laid end to end, the queue's prompts put the free space's edge inside a prompt chosen
  in proportion to its KV need, uniformly within it, so the leftover ``L`` is uniform on
  ``[0, need)`` of a size-biased need. Growth of ``B`` per iteration outruns it, and the round
  ends in a preemption, when the next finish is more than ``L / B`` iterations away (and the
  round's own iteration did not end with one): ``P1 = q E[q ** floor(L / B)]``.
- A preemption frees the newest sequence's ``held`` tokens (its prompt, plus one) less the
  iteration's shortfall (uniform on ``[0, B)``); the next finish may again be too far away:
  ``P2 = E[q ** floor((held - shortfall) / B)]`` (at least one more iteration either way).
  A round's preemptions are ``P1 / (1 - P2)``, and there are ``(1 - q) / c`` rounds per finish.
- That is FCFS's victim. A pool that serves several levels runs vLLM's priority policy
  (``tokenplane.model.scheduling``), which preempts the lowest level's latest arrival instead
  (``priority_victims``): what it frees in ``P2``, and what its recompute costs, are that
  sequence's prompt and what it has decoded. On a pool that mixes a long batch class with a
  short interactive one the recompute is several times FCFS's and ``mu`` 8% lower (verify's mixed
  pool: the planner's mu 0.944 against the engine's 0.934, where FCFS's model gave 1.028).

Against the engine's saturated replica (``plan --verify``'s mu run, two seeds) it gives the
preemptions per completed request within about 15%, a little high: 0.26 against 0.22-0.23 on
minimal's chat pool, 0.42 against 0.40 on byteion's batch pool, 0.105 against 0.10 on its
large-reasoning pool, 0.016 against 0.015-0.017 on long-context; and the saturated mu within
0-1.3% (20,000 completions, six seeds, sd under 1%), where the fluid fixed point alone was 5-11%
high. A replica whose ``max_num_seqs`` binds before its KV cache does not preempt, and neither
does an encoder.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]


def per_request(
    batch: float,
    decode_iterations: float,
    held: F64,
    weights: F64,
    *,
    waste: float,
    victims: tuple[F64, F64] | None = None,
) -> float:
    """Preemptions per completed request of a KV-bound replica at saturation.

    Args:
        batch: sequences decoding at saturation (the KV cache full).
        decode_iterations: ``E[n]``, iterations a request decodes after its first token.
        held: KV tokens a just-admitted sequence holds (its prompt and first token), as points of the mix.
        weights: each point's probability (summing to 1).
        waste: the half-empty last block every sequence also holds (``WASTE_TOKENS``).
        victims: what a preempted sequence holds (points, probabilities) when it is not the newest one
            (vLLM's priority policy: ``priority_victims``); None: the newest, ``held``.
    """
    if batch < 1 or decode_iterations <= 0 or not len(held):
        return 0.0
    c = batch / decode_iterations
    q = math.exp(-c)
    need = held + waste  # what admission asks of the free space
    leftover = _uniform_power(q, need, batch)
    p1 = q * float(np.sum(weights * need * leftover) / np.sum(weights * need))
    freed, freed_weights = (held, weights) if victims is None else victims
    p2 = float(np.sum(freed_weights * _shortfall_power(q, freed, batch)))
    if p2 >= 1:
        return math.inf
    return (1 - q) / c * p1 / (1 - p2)


def priority_victims(
    batch: float, decode_iterations: float, levels: list[tuple[float, float, F64, F64]]
) -> tuple[F64, F64]:
    """What the sequence vLLM's priority policy preempts holds, as points and probabilities.

    The policy preempts the running sequence of the lowest level, and of that level the latest
    arrival (``tokenplane.sim.engine._victim``), so the recompute falls on the lowest level
    present and costs what that sequence holds then: its prompt, its first token and what it has
    decoded since, not a just-admitted prompt of the whole mix (the newest sequence, which FCFS
    preempts). At saturation the batch holds about ``batch x s_l`` sequences of level ``l`` (its
    share ``s_l`` of the batch: arrivals times decode iterations), as a Poisson count, so the victim
    is of level ``l`` when one of it runs and none of a lower level does. Its level's admissions come
    ``c x w_l`` an iteration (``c = batch / E[n]`` finish, and as many are admitted); the latest of
    them came about ``1 / (c x w_l)`` iterations ago, and no longer than its life allows (a lone one
    is halfway through its decode on average): ``1 / (c x w_l + 2 / E[n_l])``.

    Args:
        batch: sequences decoding at saturation.
        decode_iterations: ``E[n]`` over the mix.
        levels: per priority level, critical first: (its share of arrivals ``w_l``, its ``E[n_l]``,
            its prompts plus the first token as points, their probabilities within the level).
    """
    c = batch / decode_iterations if decode_iterations > 0 else 0.0
    in_batch = np.array([w * n for w, n, _, _ in levels])
    in_batch = in_batch / in_batch.sum() if in_batch.sum() > 0 else in_batch
    points: list[F64] = []
    probabilities: list[F64] = []
    lower = 0.0  # the batch share of the levels below the one at hand
    for index in range(len(levels) - 1, -1, -1):
        w, n, held, weights = levels[index]
        if w <= 0 or not len(held):
            continue
        chance = (1 - math.exp(-batch * in_batch[index])) * math.exp(-batch * lower)
        lower += in_batch[index]
        age = 1 / (c * w + 2 / max(n, 1.0)) if c > 0 else n / 2
        points.append(held + age)
        probabilities.append(weights * chance)
    if not points:
        return np.zeros(0), np.zeros(0)
    held_all, chances = np.concatenate(points), np.concatenate(probabilities)
    total = float(chances.sum())
    return held_all, chances / total if total > 0 else chances


def _uniform_power(q: float, span: F64, step: float) -> F64:
    """``E[q ** floor(L / step)]`` for ``L`` uniform on ``[0, span)``, per span: whole steps, then the rest."""
    whole = np.floor(span / step)
    rest = span - whole * step
    total: F64 = (step * (1 - q**whole) / (1 - q) + rest * q**whole) / np.maximum(span, 1e-12)
    return total


def _shortfall_power(q: float, held: F64, step: float) -> F64:
    """``E[q ** floor((held - d) / step)]`` for ``d`` uniform on ``[0, step)``: one step less when ``d`` passes the rest.

    With less than a step left the next iteration preempts again for sure (probability 1).
    """
    whole = np.floor(held / step)
    rest = held - whole * step
    share = rest / step
    below: F64 = np.where(whole >= 1, q ** np.maximum(whole - 1, 0), 1.0)
    return share * q**whole + (1 - share) * below
