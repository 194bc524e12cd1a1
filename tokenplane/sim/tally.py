"""Streaming accounts of a run: every resolved request is added once, in batches, then forgotten.

Requests are grouped by where they were served and their class: per pool and
class, per provider and class, and per class over the whole platform (the
requests that reach a pool, a provider or nowhere; cache hits are left out of
latency as before). Each group keeps counters and fixed-size latency histograms
(``tokenplane.sim.sketch``), so what a run holds does not grow with its length:
only the timeline's per-interval counters do, by a few numbers per period.
A sampled request counts with its weight, the requests of the full traffic it
stands for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tokenplane.sim.engine import SERVED, SHED_DEADLINE, SHED_GATEWAY, SHED_TOO_LONG, SHED_UNROUTED
from tokenplane.sim.sketch import Histograms
from tokenplane.sim.workload import LEVELS, Kind, Requests
from tokenplane.spec import PlatformSpec, Priority, Tier

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B8 = npt.NDArray[np.bool_]

SHED_REASONS = {
    "shed_gateway": SHED_GATEWAY,
    "shed_deadline": SHED_DEADLINE,
    "shed_too_long": SHED_TOO_LONG,
    "unrouted": SHED_UNROUTED,
}


@dataclass
class Outcome:
    """Per-request times (seconds from the start; NaN where it never happened) and shed reasons."""

    admitted: F64
    first: F64
    done: F64
    shed: I64
    preemptions: I64
    failover: B8

    @classmethod
    def concat(cls, parts: list[Outcome]) -> Outcome:
        return cls(
            admitted=np.concatenate([p.admitted for p in parts]),
            first=np.concatenate([p.first for p in parts]),
            done=np.concatenate([p.done for p in parts]),
            shed=np.concatenate([p.shed for p in parts]),
            preemptions=np.concatenate([p.preemptions for p in parts]),
            failover=np.concatenate([p.failover for p in parts]),
        )

    def take(self, rows: I64 | npt.NDArray[np.intp]) -> Outcome:
        return Outcome(
            self.admitted[rows],
            self.first[rows],
            self.done[rows],
            self.shed[rows],
            self.preemptions[rows],
            self.failover[rows],
        )


def settle(spec: PlatformSpec, reqs: Requests, out: Outcome, failover_of: I64, pool_tier: I64) -> None:
    """Finish what the engine does not decide, in place: cache hits, providers, unrouted and failover.

    A request shed at a pool's gateway goes to the pool's failover provider (``failover_of[pool]``,
    -1 for none) unless it is batch; it then counts as that provider's, priced at the pool's tier.
    """
    pool_rows = reqs.kind == int(Kind.POOL)
    target = np.where(pool_rows, failover_of[np.maximum(reqs.dest, 0)], -1)
    moved = pool_rows & (out.shed == SHED_GATEWAY) & (target >= 0) & (reqs.priority != LEVELS.index(Priority.BATCH))
    if moved.any():
        reqs.tier[moved] = pool_tier[reqs.dest[moved]]
        reqs.kind[moved] = int(Kind.PROVIDER)
        reqs.dest[moved] = target[moved]
        out.failover |= moved
    unrouted = reqs.kind == int(Kind.UNROUTED)
    out.shed[unrouted] = SHED_UNROUTED
    out.done[unrouted] = reqs.arrival[unrouted]
    cache = reqs.kind == int(Kind.CACHE)
    out.first[cache] = out.done[cache] = reqs.arrival[cache]
    provider = reqs.kind == int(Kind.PROVIDER)
    out.shed[provider] = SERVED
    out.admitted[provider] = np.nan
    ttft = np.array([p.latency.ttft_ms / 1000 for p in spec.providers] or [0.0])
    gap = np.array([1 / p.latency.tokens_per_second for p in spec.providers] or [0.0])
    which = reqs.dest[provider]
    out.first[provider] = reqs.arrival[provider] + ttft[which]
    out.done[provider] = out.first[provider] + np.maximum(reqs.output[provider] - 1, 0) * gap[which]


class Tally:
    """Counters and histograms per group; see the module docstring. ``add`` takes settled requests."""

    def __init__(self, spec: PlatformSpec, pools: int, queue_times: F64) -> None:
        self.spec = spec
        self.classes = len(spec.workload_classes)
        self.pools = pools
        self.providers = len(spec.providers)
        c = self.classes
        groups = (pools + self.providers + 1) * c
        self.groups = groups
        self.count: dict[str, F64] = {
            k: np.zeros(groups)
            for k in ("requests", "served", "in_flight", "shed", "met", "resolved", "queue_sum", "queue_n")
        }
        for k in SHED_REASONS:
            self.count[k] = np.zeros(groups)
        self.ttft, self.itl, self.e2e, self.queue = (Histograms(groups) for _ in range(4))
        limits_ttft, limits_e2e = [], []
        for cls in spec.workload_classes.values():
            limits_ttft.append(cls.ttft_p95_ms / 1000 if cls.ttft_p95_ms else math.inf)
            e2e = cls.e2e_p95_ms / 1000 if cls.e2e_p95_ms else math.inf
            if cls.deadline_hours:
                e2e = min(e2e, cls.deadline_hours * 3600)
            limits_e2e.append(e2e)
        self.limit_ttft, self.limit_e2e = np.array(limits_ttft), np.array(limits_e2e)
        self.pool_requests = np.zeros(pools)
        self.pool_failover = np.zeros(pools)
        self.pool_preemptions = np.zeros(pools)
        self.pool_tokens = np.zeros(pools)
        tiers = len(Tier)
        self.provider_requests = np.zeros(self.providers)
        self.provider_failover = np.zeros(self.providers)
        self.provider_tokens = np.zeros(self.providers)
        self.provider_prompt = np.zeros((self.providers, tiers))
        self.provider_output = np.zeros((self.providers, tiers))
        self.queue_times = queue_times
        self.enter = np.zeros((pools, len(queue_times)))
        self.leave = np.zeros((pools, len(queue_times)))
        self.totals: dict[str, float] = dict.fromkeys(
            ("total", "platform", "embedding_calls", "cache_hits", "to_pools", "to_providers", "failover", "shed"), 0.0
        )
        self.totals["in_flight"] = 0.0
        self.simulated = 0  # request objects drawn, for the speed figure (not weighted)

    def pool_group(self, pool: int, cls: int) -> int:
        return pool * self.classes + cls

    def provider_group(self, provider: int, cls: int) -> int:
        return (self.pools + provider) * self.classes + cls

    def platform_group(self, cls: int) -> int:
        return (self.pools + self.providers) * self.classes + cls

    def add(self, reqs: Requests, out: Outcome) -> None:
        """Account a batch of settled requests (resolved ones, or those still in flight at the end)."""
        n = len(reqs)
        if n == 0:
            return
        w = reqs.weight
        c = self.classes
        chat = ~reqs.embedding
        cache = reqs.kind == int(Kind.CACHE)
        served = (out.shed == SERVED) & np.isfinite(out.done)
        in_flight = (out.shed == SERVED) & ~np.isfinite(out.done)
        t = self.totals
        t["total"] += float(w.sum())
        t["platform"] += float(w[chat].sum())
        t["embedding_calls"] += float(w[~chat].sum())
        t["cache_hits"] += float(w[chat & cache].sum())
        pooled = reqs.kind == int(Kind.POOL)
        t["to_pools"] += float(w[chat & pooled].sum())
        provider = reqs.kind == int(Kind.PROVIDER)
        t["to_providers"] += float(w[chat & provider].sum())
        t["failover"] += float(w[out.failover].sum())
        t["shed"] += float(w[chat & (out.shed != SERVED)].sum())
        t["in_flight"] += float(w[chat & in_flight].sum())
        # Pools: every request routed there, failed over or not; latency of those it kept.
        self._pool_origin(reqs, out, np.flatnonzero(reqs.origin >= 0))
        rows = np.flatnonzero(pooled)
        self._groups(reqs, out, rows, reqs.dest[rows] * c + reqs.cls[rows], served, in_flight)
        kept = rows[served[rows]]
        self.pool_tokens += np.bincount(
            reqs.dest[kept], weights=(w[kept] * (reqs.prompt[kept] + reqs.output[kept])), minlength=self.pools
        )
        rows = np.flatnonzero(provider & served)
        self._groups(reqs, out, rows, (self.pools + reqs.dest[rows]) * c + reqs.cls[rows], served, in_flight)
        which = reqs.dest[rows]
        self.provider_requests += np.bincount(which, weights=w[rows], minlength=self.providers)
        self.provider_failover += np.bincount(which, weights=w[rows] * out.failover[rows], minlength=self.providers)
        tokens = (reqs.prompt[rows] + reqs.output[rows]) * w[rows]
        self.provider_tokens += np.bincount(which, weights=tokens, minlength=self.providers)
        cells = which * len(Tier) + np.maximum(reqs.tier[rows], 0)
        size = self.providers * len(Tier)
        self.provider_prompt += np.bincount(cells, weights=reqs.prompt[rows] * w[rows], minlength=size).reshape(
            self.provider_prompt.shape
        )
        self.provider_output += np.bincount(cells, weights=reqs.output[rows] * w[rows], minlength=size).reshape(
            self.provider_output.shape
        )
        rows = np.flatnonzero(chat & ~cache)
        self._groups(reqs, out, rows, (self.pools + self.providers) * c + reqs.cls[rows], served, in_flight)

    def _pool_origin(self, reqs: Requests, out: Outcome, rows: I64) -> None:
        """Per pool: requests routed to it (failed over ones included), failovers, preemptions, queue depth."""
        w = reqs.weight[rows]
        origin = reqs.origin[rows]
        self.pool_requests += np.bincount(origin, weights=w, minlength=self.pools)
        self.pool_failover += np.bincount(origin, weights=w * out.failover[rows], minlength=self.pools)
        self.pool_preemptions += np.bincount(origin, weights=w * out.preemptions[rows], minlength=self.pools)
        entered = rows[(out.shed[rows] != SHED_GATEWAY) & ~out.failover[rows]]
        into = origin[(out.shed[rows] != SHED_GATEWAY) & ~out.failover[rows]]
        we = reqs.weight[entered]
        points = len(self.queue_times)
        at = np.searchsorted(self.queue_times, reqs.arrival[entered], side="left")
        self.enter += np.bincount(into * (points + 1) + at, weights=we, minlength=self.pools * (points + 1)).reshape(
            self.pools, points + 1
        )[:, :points]
        admitted, done, shed = out.admitted[entered], out.done[entered], out.shed[entered]
        leave = np.where(np.isfinite(admitted), admitted, np.where(shed != SERVED, done, np.inf))
        at = np.searchsorted(self.queue_times, leave, side="left")
        self.leave += np.bincount(into * (points + 1) + at, weights=we, minlength=self.pools * (points + 1)).reshape(
            self.pools, points + 1
        )[:, :points]

    def _groups(self, reqs: Requests, out: Outcome, rows: I64, group: I64, served: B8, in_flight: B8) -> None:
        if len(rows) == 0:
            return
        g = self.groups
        w = reqs.weight[rows]
        arrival = reqs.arrival[rows]
        ok = served[rows]
        shed = out.shed[rows]
        cnt = self.count
        cnt["requests"] += np.bincount(group, weights=w, minlength=g)
        cnt["served"] += np.bincount(group, weights=w * ok, minlength=g)
        cnt["in_flight"] += np.bincount(group, weights=w * in_flight[rows], minlength=g)
        cnt["shed"] += np.bincount(group, weights=w * (shed != SERVED), minlength=g)
        for key, reason in SHED_REASONS.items():
            cnt[key] += np.bincount(group, weights=w * (shed == reason), minlength=g)
        ttft_all = out.first[rows] - arrival
        e2e_all = out.done[rows] - arrival
        cls = reqs.cls[rows]
        with np.errstate(invalid="ignore"):
            met = ok & (ttft_all <= self.limit_ttft[cls]) & (e2e_all <= self.limit_e2e[cls])
        cnt["met"] += np.bincount(group, weights=w * met, minlength=g)
        cnt["resolved"] += np.bincount(group, weights=w * (ok | (shed != SERVED)), minlength=g)
        sg, sw = group[ok], w[ok]
        self.ttft.add(sg, ttft_all[ok], sw)
        self.e2e.add(sg, e2e_all[ok], sw)
        tokens = reqs.output[rows][ok]
        multi = tokens > 1
        itl = (out.done[rows][ok] - out.first[rows][ok])[multi] / (tokens[multi] - 1)
        self.itl.add(sg[multi], itl, sw[multi])
        admitted = out.admitted[rows][ok]
        queued = np.isfinite(admitted)
        wait = (admitted - arrival[ok])[queued]
        self.queue.add(sg[queued], wait, sw[queued])
        cnt["queue_sum"] += np.bincount(sg[queued], weights=wait * sw[queued], minlength=g)
        cnt["queue_n"] += np.bincount(sg[queued], weights=sw[queued], minlength=g)

    def _parts(self) -> list[tuple[F64, str]]:
        """The additive arrays a steady stretch replays, with what scales them (queue depth is held, not replayed)."""
        return [
            *((a, "group") for a in self.count.values()),
            *((h.counts, "group") for h in (self.ttft, self.itl, self.e2e, self.queue)),
            *((a, "pool") for a in (self.pool_requests, self.pool_failover, self.pool_preemptions, self.pool_tokens)),
            *(
                (a, "platform")
                for a in (
                    self.provider_requests,
                    self.provider_failover,
                    self.provider_tokens,
                    self.provider_prompt,
                    self.provider_output,
                )
            ),
        ]

    def snapshot(self) -> tuple[list[F64], dict[str, float]]:
        return [a.copy() for a, _ in self._parts()], dict(self.totals)

    def since(self, snap: tuple[list[F64], dict[str, float]]) -> tuple[list[F64], dict[str, float]]:
        """What was added after ``snap``: one period's accounts, to replay."""
        arrays, totals = snap
        now = self._parts()
        return [a - b for (a, _), b in zip(now, arrays, strict=True)], {
            k: v - totals[k] for k, v in self.totals.items()
        }

    def replay(self, delta: tuple[list[F64], dict[str, float]], pool_ratio: F64, ratio: float) -> None:
        """Add a period's accounts again, each pool's scaled by ``pool_ratio`` and the rest by ``ratio``.

        A steady stretch is served as the last simulated period was, at this period's arrivals.
        """
        arrays, totals = delta
        per_group = np.full(self.groups, ratio)
        per_group[: self.pools * self.classes] = np.repeat(pool_ratio, self.classes)
        for (target, scope), add in zip(self._parts(), arrays, strict=True):
            scale: F64 | float
            if scope == "group":
                scale = per_group[:, None] if add.ndim == 2 else per_group
            else:
                scale = pool_ratio if scope == "pool" else ratio
            np.add(target, add * scale, out=target)  # in place: target is the tally's own array
        for k, v in totals.items():
            self.totals[k] += v * ratio

    def queue_depth(self, pool: int) -> F64:
        """Requests waiting for admission at each of ``queue_times``: entered past the gateway, not yet in a batch."""
        depth: F64 = np.cumsum(self.enter[pool]) - np.cumsum(self.leave[pool])
        return depth
