"""Which replica of a pool a request goes to: the one rule the model gateway runs and the simulator models.

A replica's TTFT for a new request is decided by the prompts queued ahead of it
that have not started producing tokens (vLLM prefills them before the newcomer,
a chunk per iteration), not by the sequences already decoding: those slow each
iteration a little but never make a prompt wait for them. So ``PENDING_PREFILL``
sends each request to the replica with the fewest requests sent to it that have
not yet produced their first token, ties broken by a rotation: at the planned count
most replicas have none pending, and among them the rule deals round-robin, so each
replica's arrivals stay as regular as the planner prices them (Gamma(n) gaps), while
a replica that fell behind is skipped until its prefills clear. This is the signal
of llm-d's queue scorer (the engine's waiting-queue length, ``vllm:num_requests_waiting``)
read here at the gateway, per request, without a scrape's lag. Breaking the ties by
outstanding tokens instead (the decode load left) herded the arrivals onto the replicas
whose decodes had just ended: byteion's medium-rag on 128 replicas met class A's TTFT
SLO 99.29-99.35% that way, 99.58-99.63% with the rotation, 99.37-99.48% dealt
round-robin (``benchmarks/balancing.py``, three seeds).

The other policies are kept for comparison (``benchmarks/balancing.py``): what the
planner and ``plan --verify`` price (``ROUND_ROBIN``: every n-th arrival to each
replica) and the model gateway's previous rule (``LEAST_TOKENS``: fewest outstanding
tokens, ties by rotation). In byteion's RAG and long-context pools, outstanding tokens are
mostly running decodes, so ``LEAST_TOKENS`` stacked new prompts behind a replica's
queued prefills and missed class A's TTFT SLO at the planned count (numbers in
``benchmarks/BENCHMARKS.md``).

Each model gateway process applies the rule to what it sent itself: it knows nothing of the
others' requests. With the three processes prod runs, each one's own pending counts are mostly
zero, the rule reduces to three independent rotations, and their sum is far less regular than
one rotation (``SimConfig.model_gateways``; numbers in ``tokenplane.sim.gateway``). So the
processes share the replicas (``Sharing``, ``DEPLOYED_SHARING``): each owns those that rendezvous
hashing with bounded loads gives it among its peers (``owners``), where it alone sends and so
knows every pending prefill, and ``choose(own=...)`` stays among them while one has none pending,
spilling over every replica only when each of its own has one.

Prefix affinity: a request with an affinity key prefers the replica that
rendezvous hashing picks for it, so the engine's prefix cache holds its prefix,
as long as that replica has at most ``AFFINITY_SLACK_PREFILLS`` more pending
prefills than the least-loaded one (the same unit as the choice itself).
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

# A cached prefix saves its prefill; waiting behind one more prompt's prefill is still cheaper than
# recomputing the prefix elsewhere, and waiting behind two is not.
AFFINITY_SLACK_PREFILLS = 1


class BalancePolicy(enum.StrEnum):
    """How a pool's arrivals are spread over its replicas."""

    PENDING_PREFILL = "pending-prefill"  # deployed: fewest requests before their first token, then rotation
    ROUND_ROBIN = "round-robin"  # what the planner prices
    LEAST_TOKENS = "least-tokens"  # the model gateway's rule before session 12


DEPLOYED = BalancePolicy.PENDING_PREFILL


class Sharing(enum.StrEnum):
    """How several model gateway processes share a pool's replicas (each knows only what it sent)."""

    INDEPENDENT = "independent"  # each chooses among every replica
    STRIDE = "stride"  # each sends only to every k-th replica (measured, not deployable: k and g must be known)
    SPILL = "spill"  # deployed: each prefers the replicas it owns by rendezvous hashing, spills when all are pending
    SCRAPE = "scrape"  # each reads every replica's waiting queue every few 100 ms and adds its own sends since


DEPLOYED_SHARING = Sharing.SPILL


def rendezvous_weight(key: str, member: str) -> int:
    """Highest-random-weight hashing: ``key`` goes to the member with the largest weight."""
    digest = hashlib.blake2b(f"{key}\0{member}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def owners(replicas: Sequence[str], peers: Sequence[str]) -> list[str]:
    """The peer that owns each of ``replicas``: rendezvous hashing with bounded loads.

    Each replica goes to the peer with the highest rendezvous weight for it that holds fewer than
    ceil(n / k) replicas yet, the replicas taken in an order of their own hash. Plain rendezvous
    hashing gives the peers binomial counts (128 replicas over 8 peers: 16 +- 4), and a peer that
    owns fewer replicas than its share of the requests keeps them all pending and spills; the bound
    evens the counts and still moves few replicas when a peer joins or leaves (``owned``). Every peer
    computes the same split from the same two lists, without talking to the others.
    """
    distinct = sorted(set(peers))
    if not distinct:
        raise ValueError("owners() needs at least one peer")
    cap = -(-len(replicas) // len(distinct))
    held = dict.fromkeys(distinct, 0)
    owner = [""] * len(replicas)
    for i in sorted(range(len(replicas)), key=lambda i: (rendezvous_weight(replicas[i], ""), replicas[i])):
        ranked = sorted(distinct, key=lambda peer: rendezvous_weight(replicas[i], peer), reverse=True)
        peer = next(p for p in ranked if held[p] < cap)
        held[peer] += 1
        owner[i] = peer
    return owner


def owned(replicas: Sequence[str], peers: Sequence[str], me: str) -> list[bool]:
    """Which of ``replicas`` the model gateway process ``me`` owns among ``peers`` (itself included).

    A lone process (no peers, or only itself), or one not among its peers (a lookup that has not
    seen it yet), owns every replica.
    """
    if len(set(peers)) <= 1 or me not in peers:
        return [True] * len(replicas)
    return [owner == me for owner in owners(replicas, peers)]


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
    own: Sequence[bool] | None = None,
) -> int:
    """The index into ``loads`` of the replica the next request goes to.

    Args:
        loads: The candidates (replicas neither excluded nor behind an open breaker), in a fixed order.
        turn: The rotation's position: among equally loaded candidates, the first at or after
            ``turn % len(loads)`` wins; the caller advances it after each choice.
        preferred: The candidate rendezvous hashing picks for the request's affinity key, if any.
        policy: The rule; ``PENDING_PREFILL`` reads only ``pending``, ``LEAST_TOKENS`` only ``outstanding``
            and ``ROUND_ROBIN`` neither.
        slack: How many more pending prefills than the least-loaded candidate ``preferred`` may have.
        own: Which candidates this process owns (``owned``): while one of them has no pending prefill,
            the choice stays among them; when all have one, it spills over every candidate.

    Raises:
        ValueError: ``loads`` is empty (the caller decides what no candidate means).
    """
    if own is not None:
        mine = [i for i, load in enumerate(loads) if own[i]]
        if any(loads[i].pending == 0 for i in mine) and len(mine) < len(loads):
            hint = mine.index(preferred) if preferred in mine else None
            pick = choose([loads[i] for i in mine], turn=turn, preferred=hint, policy=policy, slack=slack)
            return mine[pick]
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
    return next(i for i in rotation if loads[i].pending == least)
