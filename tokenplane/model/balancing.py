"""Which replica of a pool a request goes to: the one rule the model gateway runs and the simulator models.

A replica's TTFT for a new request is decided by the prompts queued ahead of it
that have not started producing tokens (vLLM prefills them before the newcomer,
a chunk per iteration), not by the sequences already decoding: those slow each
iteration a little but never make a prompt wait for them. So ``PENDING_PREFILL``
sends each request to the replica with the fewest requests sent to it that have
not yet produced their first token, ties broken by outstanding tokens (prompt +
output budget of everything in flight there, what decode load remains), then by
a rotation, so that equally loaded replicas take turns as round-robin would. This
is the signal of llm-d's queue scorer (the engine's waiting-queue length,
``vllm:num_requests_waiting``) and of Envoy's least-request (active requests), read
here at the gateway, per request, without a scrape's lag.

The other policies are kept for comparison (``benchmarks/balancing.py``): what the
planner and ``plan --verify`` price (``ROUND_ROBIN``: every n-th arrival to each
replica) and the model gateway's previous rule (``LEAST_TOKENS``: fewest outstanding
tokens, random ties). In byteion's RAG and long-context pools, outstanding tokens are
mostly running decodes, so ``LEAST_TOKENS`` stacked new prompts behind a replica's
queued prefills and missed class A's TTFT SLO at the planned count (numbers in
``benchmarks/BENCHMARKS.md``).

Prefix affinity: a request with an affinity key prefers the replica that
rendezvous hashing picks for it, so the engine's prefix cache holds its prefix,
as long as that replica has at most ``AFFINITY_SLACK_PREFILLS`` more pending
prefills than the least-loaded one (the same unit as the choice itself).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

# A cached prefix saves its prefill; waiting behind one more prompt's prefill is still cheaper than
# recomputing the prefix elsewhere, and waiting behind two is not.
AFFINITY_SLACK_PREFILLS = 1


class BalancePolicy(enum.StrEnum):
    """How a pool's arrivals are spread over its replicas."""

    PENDING_PREFILL = "pending-prefill"  # deployed: fewest requests before their first token
    ROUND_ROBIN = "round-robin"  # what the planner prices
    LEAST_TOKENS = "least-tokens"  # the model gateway's rule before session 12


DEPLOYED = BalancePolicy.PENDING_PREFILL


@dataclass(frozen=True, slots=True)
class Load:
    """What the gateway knows about one candidate replica when a request arrives.

    Attributes:
        pending: requests sent to it that have not yet produced their first token.
        outstanding: prompt + output budget of every request in flight on it.
    """

    pending: int
    outstanding: int


def choose(
    loads: Sequence[Load],
    *,
    turn: int,
    preferred: int | None = None,
    policy: BalancePolicy = DEPLOYED,
    slack: int = AFFINITY_SLACK_PREFILLS,
) -> int:
    """The index into ``loads`` of the replica the next request goes to.

    Args:
        loads: The candidates (replicas neither excluded nor behind an open breaker), in a fixed order.
        turn: The rotation's position: among equally loaded candidates, the first at or after
            ``turn % len(loads)`` wins; the caller advances it after each choice.
        preferred: The candidate rendezvous hashing picks for the request's affinity key, if any.
        policy: The rule; ``LEAST_TOKENS`` ignores ``pending`` and ``ROUND_ROBIN`` both loads.
        slack: How many more pending prefills than the least-loaded candidate ``preferred`` may have.

    Raises:
        ValueError: ``loads`` is empty (the caller decides what no candidate means).
    """
    n = len(loads)
    if n == 0:
        raise ValueError("choose() needs at least one candidate replica; the caller handles none")
    start = turn % n
    rotation = [(start + k) % n for k in range(n)]
    if policy is BalancePolicy.ROUND_ROBIN:
        return start
    if policy is BalancePolicy.LEAST_TOKENS:
        least_tokens = min(load.outstanding for load in loads)
        if preferred is not None and loads[preferred].outstanding - least_tokens <= slack:
            return preferred
        return next(i for i in rotation if loads[i].outstanding == least_tokens)
    least = min(load.pending for load in loads)
    if preferred is not None and loads[preferred].pending - least <= slack:
        return preferred
    return min(rotation, key=lambda i: (loads[i].pending, loads[i].outstanding))
