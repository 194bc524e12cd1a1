"""Arrivals drawn one window at a time, as independent Poisson streams, so a day never sits in memory.

A request's region, class, destination and priority are independent given the
region and class, so the traffic splits into one Poisson stream per cell
(region, class, destination column, priority level), each with its share of
``rps``. Embedding calls are streams of their own, to the embedding pools, at
``route``'s calls per request. A window's arrivals are drawn per 1-second bin
and cell, then only the requests that are kept are given their lengths and
times: at request level every one; in sampled mode a share of each pool's
stream (the share its sampled replicas serve), and each kept request carries
``weight = 1 / share``. The rest are only counted, per pool, level and bin,
because the gateway's shedding and the autoscaler read the full arrival rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tokenplane.sim.workload import (
    ARRIVAL_BIN_S,
    LEVELS,
    Burst,
    Kind,
    Profile,
    Requests,
    placements,
    priority_mix,
    rate_multiplier,
    routing,
)
from tokenplane.spec import PlatformSpec, Tier

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Window:
    """One window's draw: the kept requests, and every arrival counted per (pool, level, 1-second bin)."""

    requests: Requests
    counts: I64  # (placements, levels, bins): all arrivals to each pool, kept or not
    slot: I64  # per request: the sampled replica (0..) of a pool fed by ``Replicas``; -1 for the others


@dataclass
class Streams:
    """Every cell's share of ``rps`` and what its requests look like; built once per run."""

    share: F64
    region: I64
    cls: I64
    level: I64
    kind: I64
    dest: I64
    tier: I64
    pool: I64  # placement index for streams to a pool, -1 otherwise
    embedding: npt.NDArray[np.bool_]
    prompt_lo: I64
    prompt_hi: I64
    prompt_cap: I64  # embedding calls are cut to the embedder's max_position_embeddings
    output_lo: I64
    output_hi: I64
    pools: int

    @classmethod
    def build(cls, spec: PlatformSpec) -> Streams:
        routes = routing(spec)
        mix = priority_mix(spec)
        regions, classes = spec.regions, list(spec.workload_classes)
        keys = placements(spec)
        region_p = np.array([r.traffic_share for r in regions], dtype=np.float64)
        region_p = region_p / region_p.sum()
        class_p = np.array([spec.workload_classes[c].share for c in classes], dtype=np.float64)
        class_p = class_p / class_p.sum()
        max_tokens = [spec.architecture(spec.pool(name)).max_position_embeddings for _, name in keys]
        tiers = list(Tier)
        rows: list[tuple[float, int, int, int, int, int, int, int, bool, int]] = []
        for ri in range(len(regions)):
            for ci in range(len(classes)):
                base = region_p[ri] * class_p[ci]
                for col in range(routes.table.shape[2]):
                    p = routes.table[ri, ci, col]
                    if p <= 0:
                        continue
                    if col == routes.cache_column:
                        kind, dest, tier, pool = Kind.CACHE, -1, -1, -1
                    elif col == routes.unrouted_column:
                        kind, dest, tier, pool = Kind.UNROUTED, -1, -1, -1
                    else:
                        d = routes.destinations[col]
                        kind, dest = d.kind, d.index
                        tier = tiers.index(d.tier) if d.tier is not None else -1
                        pool = d.index if d.kind is Kind.POOL else -1
                    for li in range(len(LEVELS)):
                        if mix[ri, ci, li] > 0:
                            rows.append(
                                (base * p * mix[ri, ci, li], ri, ci, li, int(kind), dest, tier, pool, False, -1)
                            )
                for pi in np.flatnonzero(routes.embed[ri, ci]).tolist():
                    for li in range(len(LEVELS)):
                        if mix[ri, ci, li] > 0:
                            share = base * routes.embed[ri, ci, pi] * mix[ri, ci, li]
                            rows.append((share, ri, ci, li, int(Kind.POOL), pi, -1, pi, True, max_tokens[pi]))
        column = list(zip(*rows, strict=True)) if rows else [()] * 10
        cls_of = np.array(column[2], dtype=np.int64)
        wl = [spec.workload_classes[c] for c in classes]
        lo_p = np.array([w.prompt_tokens.min for w in wl], dtype=np.int64)
        hi_p = np.array([w.prompt_tokens.max for w in wl], dtype=np.int64)
        lo_o = np.array([w.output_tokens.min for w in wl], dtype=np.int64)
        hi_o = np.array([w.output_tokens.max for w in wl], dtype=np.int64)
        embedding = np.array(column[8], dtype=np.bool_)
        cap = np.array(column[9], dtype=np.int64)
        return cls(
            share=np.array(column[0], dtype=np.float64),
            region=np.array(column[1], dtype=np.int64),
            cls=cls_of,
            level=np.array(column[3], dtype=np.int64),
            kind=np.array(column[4], dtype=np.int64),
            dest=np.array(column[5], dtype=np.int64),
            tier=np.array(column[6], dtype=np.int64),
            pool=np.array(column[7], dtype=np.int64),
            embedding=embedding,
            prompt_lo=lo_p[cls_of],
            prompt_hi=hi_p[cls_of],
            prompt_cap=np.where(embedding, cap, np.iinfo(np.int64).max),
            output_lo=np.where(embedding, 0, lo_o[cls_of]),
            output_hi=np.where(embedding, 0, hi_o[cls_of]),
            pools=len(keys),
        )

    def __len__(self) -> int:
        return len(self.share)

    def keep_shares(self, pool_share: F64, other_share: float) -> F64:
        """Each cell's kept share: its pool's (sampled replicas over ready ones), or ``other_share`` off the pools."""
        return np.where(self.pool >= 0, pool_share[np.maximum(self.pool, 0)], other_share)


class Replicas:
    """Each sampled replica's own arrivals: every n-th arrival of its pool, as the balancer deals them.

    The balancer deals arrivals round-robin over ``n`` ready replicas (``gateway.deal``), so a
    replica sees every ``n``-th arrival of the pool: in the pool's operational time (the expected
    arrivals so far, ``Lambda(t)``) its gaps are Gamma(n, 1), not the Poisson gaps of random
    thinning, which would bunch arrivals on one replica and overstate its queueing. Each replica
    keeps its next arrival's operational time between windows.
    """

    def __init__(self, pools: int, slots: int) -> None:
        self.next = np.full((pools, slots), np.nan)  # operational time of each replica's next arrival
        self.clock = np.zeros(pools)  # the pool's operational time at the window's start

    def draw(self, rng: np.random.Generator, pool: int, n: int, active: int, edges: F64, rates: F64) -> tuple[F64, I64]:
        """Arrival times in the window and the replica of each, for ``active`` replicas of ``n``.

        ``edges``: the bins' bounds (seconds); ``rates``: the pool's expected arrivals per bin.
        """
        op = self.clock[pool] + np.concatenate([[0.0], np.cumsum(rates)])
        end = op[-1]
        times: list[F64] = []
        slots: list[I64] = []
        for j in range(active):
            start = self.next[pool, j]
            if not math.isfinite(start):  # a fresh replica: its first arrival is a uniform share of a gap in
                start = op[0] + rng.gamma(n) * rng.random()
            count = max(4, math.ceil((end - start) / n + 4 * math.sqrt(max(end - start, 0.0) / n + 1)))
            points = start + np.concatenate([[0.0], np.cumsum(rng.gamma(n, size=count))])
            while points[-1] < end:  # rare: a long draw ran short
                points = np.concatenate([points, points[-1] + np.cumsum(rng.gamma(n, size=count))])
            inside = points[points < end]
            self.next[pool, j] = points[len(inside)]
            times.append(np.interp(inside, op, edges))
            slots.append(np.full(len(inside), j, dtype=np.int64))
        self.next[pool, active:] = np.nan  # replicas left idle start afresh when fed again
        self.clock[pool] = end
        return (np.concatenate(times), np.concatenate(slots)) if times else (np.zeros(0), np.zeros(0, dtype=np.int64))

    def skip(self, pool: int, expected: float) -> None:
        """A window with nothing drawn for the pool: its operational time moves on, the replicas start afresh."""
        self.clock[pool] += expected
        self.next[pool] = np.nan


def draw(
    streams: Streams,
    rng: np.random.Generator,
    *,
    rps: float,
    t0: float,
    t1: float,
    start_s: float,
    profile: Profile,
    bursts: tuple[Burst, ...],
    keep: F64,
    dealt: tuple[Replicas, I64, I64] | None = None,
) -> Window:
    """The arrivals in ``[t0, t1)`` (seconds after the start), keeping share ``keep[cell]`` of each stream.

    Bins are ``ARRIVAL_BIN_S`` long and start on whole multiples of it from the run's start.
    ``dealt``: (the sampled replicas, each pool's ready replicas ``n``, each pool's sampled ones);
    a pool with ``n`` above its sampled replicas gets its requests from ``Replicas`` (its cells'
    ``keep`` is ignored), each weighing ``n / sampled``.
    """
    first = math.floor(t0 / ARRIVAL_BIN_S + 1e-9)
    bins = max(1, math.ceil(t1 / ARRIVAL_BIN_S - 1e-9) - first)
    starts = np.maximum((first + np.arange(bins, dtype=np.float64)) * ARRIVAL_BIN_S, t0)
    ends = np.minimum(starts + ARRIVAL_BIN_S, t1)
    ends[:-1] = np.minimum(ends[:-1], starts[1:])
    widths = np.maximum(ends - starts, 0.0)
    rates = rps * rate_multiplier(profile, bursts, start_s + starts + widths / 2) * widths  # (bins,)
    expected = streams.share[:, None] * rates[None, :]  # (cells, bins)
    kept = rng.poisson(expected * keep[:, None])
    counts = np.zeros((streams.pools, len(LEVELS), bins), dtype=np.int64)
    to_pool = streams.pool >= 0
    if to_pool.any():
        # What was not kept is only counted: pools' sums of independent Poisson streams are Poisson.
        rest = np.zeros((streams.pools, len(LEVELS), bins), dtype=np.float64)
        np.add.at(rest, (streams.pool[to_pool], streams.level[to_pool]), expected[to_pool] * (1 - keep[to_pool, None]))
        np.add.at(counts, (streams.pool[to_pool], streams.level[to_pool]), kept[to_pool])
        counts += rng.poisson(rest)
    dealt_pools = np.zeros(streams.pools, dtype=np.bool_)
    if dealt is not None:
        replicas, ready, sampled = dealt
        dealt_pools = ready > sampled
        kept[dealt_pools[np.maximum(streams.pool, 0)] & to_pool] = 0
    flat = kept.ravel()
    index = np.repeat(np.arange(len(flat), dtype=np.int64), flat)
    cell, bin_ = np.divmod(index, bins)
    arrival = starts[bin_] + rng.random(len(index)) * widths[bin_]
    slot = np.full(len(index), -1, dtype=np.int64)
    weight = 1.0 / keep[cell]
    if dealt is not None:
        edges = np.concatenate([starts, ends[-1:]])
        extra_t, extra_cell, extra_slot, extra_w = [arrival], [cell], [slot], [weight]
        for pool in range(streams.pools):
            mine = np.flatnonzero(streams.pool == pool)
            expected_pool = expected[mine].sum(axis=0)
            if not dealt_pools[pool]:
                replicas.skip(pool, float(expected_pool.sum()))
                continue
            n, k = int(ready[pool]), int(sampled[pool])
            times, slots = replicas.draw(rng, pool, n, k, edges, expected_pool)
            p = streams.share[mine] / streams.share[mine].sum()
            picked = mine[
                np.minimum(np.searchsorted(np.cumsum(p), rng.random(len(times)), side="right"), len(mine) - 1)
            ]
            extra_t.append(times)
            extra_cell.append(picked)
            extra_slot.append(slots)
            extra_w.append(np.full(len(times), n / k))
        arrival, cell = np.concatenate(extra_t), np.concatenate(extra_cell)
        slot, weight = np.concatenate(extra_slot), np.concatenate(extra_w)
    n = len(arrival)
    order = np.argsort(arrival, kind="stable")
    arrival, cell, slot, weight = arrival[order], cell[order], slot[order], weight[order]
    lo, hi = streams.prompt_lo[cell], streams.prompt_hi[cell]
    prompt = np.minimum(lo + np.floor(rng.random(n) * (hi - lo + 1)).astype(np.int64), streams.prompt_cap[cell])
    lo_o, hi_o = streams.output_lo[cell], streams.output_hi[cell]
    output = lo_o + np.floor(rng.random(n) * (hi_o - lo_o + 1)).astype(np.int64)
    requests = Requests(
        arrival=arrival,
        region=streams.region[cell],
        cls=streams.cls[cell],
        kind=streams.kind[cell],
        dest=streams.dest[cell],
        tier=streams.tier[cell],
        prompt=prompt,
        output=output,
        priority=streams.level[cell],
        embedding=streams.embedding[cell],
        origin=streams.pool[cell],
        weight=weight,
    )
    return Window(requests, counts, slot)
