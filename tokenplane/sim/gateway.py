"""The gateway's part in the simulation: priority shedding, provider failover and balancing over replicas.

Shedding follows ``queues.priorities``: a level is admitted only while the pool's
utilization (its recent arrival rate over its ready replicas' service rate, from
the capacity model) stays under that level's ``shed_at_utilization``, counting
every higher level first. So when a pool is overloaded the batch level goes
first, then normal, then high; critical last. The rate is measured over the
``SHED_WINDOWS`` windows before the current one, as a real rate estimator lags.

Balancing deals the admitted arrivals round-robin over the ready replicas (``deal``), so that each
replica sees every n-th arrival of its pool: what the planner prices (``pool_performance``: gaps
Gamma(n)), what ``plan --verify`` and the sampled fidelities feed their replicas
(``arrivals.Replicas``). The model gateway instead chooses per request with
``tokenplane.model.balancing.choose`` (``DEPLOYED``: fewest pending prefills, ties by rotation).
``SimConfig.balance`` runs that same function here per request on the replicas' state at each
arrival (``balance``), and ``SimConfig.model_gateways`` splits the requests among several model
gateway processes, each choosing on what it sent itself and sharing the replicas with the others as
the deployed ones do (``SimConfig.sharing``).

Measured (``benchmarks/balancing.py``: byteion's eu-west pools alone with classes A and B at the
rate planned to 32 or 128 replicas, 120 s, seeds 0-2; class A's TTFT and E2E SLOs, 99% target):

- One process running the deployed rule meets what dealing meets, or more: medium-rag 99.54-99.79%
  against 99.24-99.73% dealt on 32 replicas, 99.58-99.63% against 99.37-99.48% on 128;
  large-reasoning 99.43-99.67% against 99.29-99.55%, and 99.49-99.55% against 99.47-99.52%;
  medium-rag at byteion's own count, 413, 99.50-99.54% against 99.28-99.33%. So
  dealing stays the default here, and for one process the planner's round-robin pricing holds. The
  rule it replaced (fewest outstanding tokens, mostly running decodes rather than the prefills a
  new prompt waits behind) met 79.1-89.6%.
- But prod runs several model gateway processes (``components.gateway.replica_bounds``: at least
  three; byteion's eu-west 4 to 12, us-east 8 to 24), each seeing only what it sent. Class A then
  meets, whatever the rule, 93.3-96.3% (medium-rag) and 92.2-96.3% (large-reasoning) with three,
  93.4-94.7% and 90.9-94.1% with four, 91.4-92.2% and 86.7-91.0% with eight (128 replicas); at
  413 replicas, three processes meet 91.9-96.8% (medium-rag). Each
  process's own pending counts are mostly zero, and independent rotations add up to arrivals far
  less regular than one. The planner's pricing does not hold for what is deployed.
- Giving each process its own share of the replicas recovers it with the deployed rule. Dealt as
  every k-th replica (``Sharing.STRIDE``, measured only): 98.92-99.62% over 3, 4 and 8 processes
  (medium-rag on 413 replicas, three processes: 99.43-99.51%). What the model gateway runs
  (``Sharing.SPILL``, the default here, so ``model_gateways`` above 1 simulates what is deployed):
  each process owns the replicas that rendezvous hashing with bounded loads gives it among its
  peers (``tokenplane.model.balancing.owners``) and spills over every replica only when each of
  its own has a pending prefill it sent. medium-rag, 128 replicas, seeds 0-1, class A: three
  processes 99.47-99.62% with requests spread evenly, 99.40-99.51% / 99.36-99.38% / 98.98-99.25%
  with shares drawn from a Dirichlet(100 / 30 / 10) (``SimConfig.gateway_skew``: the AI gateway's
  keep-alive connections pinned per connection make the shares uneven; c connections spread
  about as a Dirichlet((c - 1) / k)); eight processes 99.19-99.40% even, 98.97-99.02% at
  Dirichlet(100), 97.92-98.44% at Dirichlet(30), 92.2-95.4% at Dirichlet(10); at Dirichlet(1)
  70.6-96.3% (three) and 72.5-81.2% (eight). At byteion's own count (413 replicas), three
  processes: 99.48-99.52% even, 99.13-99.30% at Dirichlet(30). So it meets 99% where the processes' shares of the
  requests match their shares of the replicas, and the more processes, the less unevenness it
  takes to miss: a process with more than its share of requests keeps its own replicas at one
  pending prefill each, and its spill lands on replicas whose owners do not know of it. Plain
  rendezvous ownership (binomial counts, 16 +- 4 of 128 over 8) met 98.16-98.24% even at eight.
  So the shares are made even at their source: the AI gateway and the batch workers deal their
  requests one each in turn over the model gateway's processes, read from its headless Service
  (``serving.modelgw.peers``), and what is deployed is the even rows (``gateway_skew=None``).
- Reading every replica's waiting queue every 250 ms and adding the process's own sends since
  (``Sharing.SCRAPE``, what llm-d's scorer reads) met 91.7-93.6% evenly spread and 92.8-97.2%
  at Dirichlet(1): no better than choosing blind, since the rule's value is the regularity of
  one rotation per replica, which a lagged count of mostly empty queues does not give.

A per-request choice on a 15 s-old count herds (the request fidelity's old water-fill: 98.3%
against 98.9%), and dealing at random met 87.7%: what TTFT pays for is the regularity of each
replica's arrivals.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from tokenplane.model.admission import admit_fractions
from tokenplane.model.balancing import BalancePolicy, Load, Sharing, choose, owned
from tokenplane.sim.engine import Engine

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

__all__ = ["admit_fractions", "balance", "choose", "deal"]  # the shedding formula is the planner's too

SHED_WINDOW_S = 1.0  # the shedding decision is taken per window of arrivals
SHED_WINDOWS = 5  # the rate is averaged over this many windows: 1 s alone is Poisson noise at tens of req/s


def deal(replicas: I64, count: int, turn: int) -> tuple[I64, int]:
    """The replica of each of ``count`` arrivals, in order, dealt round-robin from the rotation's ``turn``.

    Returns the replicas and the turn the next arrival takes. A replica that became ready joins the
    rotation with its next turn, as every other one (no catch-up burst onto it).
    """
    n = len(replicas)
    if n == 0 or count <= 0:
        return np.zeros(0, dtype=np.int64), turn
    dealt: I64 = replicas[(turn + np.arange(count)) % n]
    return dealt, (turn + count) % n


SCRAPE_S = 0.25  # how often a model gateway process reads every replica's waiting queue (``Sharing.SCRAPE``)


def balance(
    engine: Engine,
    pool: int,
    ids: I64,
    segments: list[tuple[int, I64]],
    turns: list[int],
    policy: BalancePolicy,
    via: I64 | None = None,
    *,
    sharing: Sharing = Sharing.INDEPENDENT,
    scrape_s: float = SCRAPE_S,
) -> None:
    """Send each request to the replica the model gateway's rule picks on the pool's state at its arrival.

    ``choose`` is the model gateway's own function (``serving.modelgw.balancer``), run per request:
    the pool's candidate replicas are advanced to the arrival, read (``Engine.loads``), and the
    request is queued on the one chosen. With several model gateway processes (``via``), each
    chooses on what it sent itself, with its own rotation, as the deployed ones do: none sees
    the others' requests. Prefix affinity is not modelled: the simulator has no prompt
    prefixes, only each pool's prefix-cache hit share.

    Args:
        engine: The engine holding the requests ``ids`` (in arrival order).
        pool: The pool's index.
        ids: The engine ids of the pool's admitted requests of this period.
        segments: Consecutive runs of ``ids``: (how many, the ready replicas while they arrive).
        turns: Each model gateway process's rotation (ties, and round-robin); advanced in place.
        policy: The rule.
        via: The model gateway process of each of ``ids``; ``None``: one process sends them all.
        sharing: How the processes share the replicas (``tokenplane.model.balancing.Sharing``):
            ``STRIDE``: process ``g`` of ``k`` sends only to every k-th ready replica from the ``g``-th;
            ``SPILL``: each prefers the replicas it owns by rendezvous hashing (``owned``, process ``g``
            named ``str(g)`` and replica ``str(slot)``) and spills over all of them when each of its own
            has a pending prefill it sent; ``SCRAPE``: each reads every replica's pending prefills (all
            processes' requests) every ``scrape_s``, staggered, and adds its own sends since.
        scrape_s: The period of ``SCRAPE``'s reads.
    """
    req = engine.req
    arrival, sent_by, first = req.arrival, req.via, req.first
    tokens = policy is BalancePolicy.LEAST_TOKENS  # the only rule that reads them; summing them is the cost
    by = [0] * len(ids) if via is None else via.tolist()
    k = len(turns)
    names = [str(g) for g in range(k)]
    # SCRAPE: each process's last read (time, pending per slot) and what it sent since; a period starts
    # with a fresh read (request ids are renumbered between periods).
    read_at = [-math.inf] * k
    read: list[dict[int, int]] = [{} for _ in range(k)]
    since: list[list[tuple[int, int]]] = [[] for _ in range(k)]
    at = 0
    for count, replicas in segments:
        ready = replicas.tolist()
        own = [(ready[g::k] or ready) if sharing is Sharing.STRIDE else ready for g in range(k)]
        mask = [owned([str(s) for s in ready], names, g) for g in names] if sharing is Sharing.SPILL else None
        for rid, g in zip(ids[at : at + count].tolist(), by[at : at + count], strict=True):
            sent_by[rid] = g
            slots = own[g]
            t = arrival[rid]
            if sharing is Sharing.SCRAPE:
                if t >= read_at[g] + scrape_s:
                    tick = g * scrape_s / k
                    tick += math.floor((t - tick) / scrape_s) * scrape_s
                    engine.advance(slots, tick)
                    read[g] = dict(
                        zip(slots, (load.pending for load in engine.loads(slots, tokens=False)), strict=True)
                    )
                    read_at[g], since[g] = tick, []
                engine.advance(slots, t)
                extra = dict.fromkeys(slots, 0)
                for sent, slot in since[g]:
                    if not first[sent] <= t:  # NaN: no first token yet
                        extra[slot] = extra.get(slot, 0) + 1
                loads = [Load(read[g].get(s, 0) + extra[s], 0) for s in slots]
            else:
                engine.advance(slots, t)
                loads = engine.loads(slots, via=None if via is None else g, tokens=tokens)
            slot = slots[choose(loads, turn=turns[g], policy=policy, own=None if mask is None else mask[g])]
            engine.send(pool, rid, slot)
            if sharing is Sharing.SCRAPE:
                since[g].append((rid, slot))
            turns[g] += 1
        at += count
