"""From per-request times to what the workbench reports: percentiles, goodput, cost and the lambda < mu audit.

Latency is measured from the request's arrival at the gateway: TTFT to its first
token, E2E to its last, queue delay to its admission into a batch, and ITL as
its own mean gap between tokens. Requests still running at the end are counted
as in flight and left out of the percentiles. SLO attainment is the share of
resolved requests (served or shed) that were served within their class's TTFT
and E2E SLOs (batch: within its deadline); goodput is those per second.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from tokenplane.sim.autoscale import Scaler
from tokenplane.sim.engine import SERVED, SHED_DEADLINE, SHED_GATEWAY, SHED_TOO_LONG, SHED_UNROUTED, RequestState
from tokenplane.sim.workload import Kind, Requests, SimConfig, rate_multiplier
from tokenplane.spec import PlatformSpec, Tier

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B8 = npt.NDArray[np.bool_]

PERCENTILES = (50, 95, 99)
TIMELINE_POINTS = 600  # samples of queue depth per pool: enough for a plot, small enough for JSON


def rate_at(config: SimConfig, clock_s: F64) -> F64:
    """The share of peak RPS arriving at each simulated-clock instant."""
    return rate_multiplier(config.profile, config.bursts, clock_s)


@dataclass(frozen=True)
class EpochRecord:
    """One pool at the end of one autoscaler period."""

    t_s: float
    ready: int
    starting: int
    draining: int
    arrival_rps: float  # offered, before shedding
    service_rps: float  # mu: ready replicas x the capacity model's service rate
    waiting: int
    kv_usage: float
    queue_wait_s: float
    ttft_p95_s: float
    usd_per_hour: float

    @property
    def rho(self) -> float:
        if self.service_rps > 0:
            return self.arrival_rps / self.service_rps
        return math.inf if self.arrival_rps > 0 else 0.0


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
    def collect(cls, state: RequestState, unrouted: I64, failover: B8, reqs: Requests, spec: PlatformSpec) -> Outcome:
        admitted = np.asarray(state.admitted, dtype=np.float64)
        first = np.asarray(state.first, dtype=np.float64)
        done = np.asarray(state.done, dtype=np.float64)
        shed = np.asarray(state.shed, dtype=np.int64)
        shed[unrouted == SHED_UNROUTED] = SHED_UNROUTED
        done[unrouted == SHED_UNROUTED] = reqs.arrival[unrouted == SHED_UNROUTED]
        cache = reqs.kind == int(Kind.CACHE)
        first[cache] = done[cache] = reqs.arrival[cache]
        provider = reqs.kind == int(Kind.PROVIDER)
        shed[provider] = SERVED
        admitted[provider] = np.nan
        ttft = np.array([p.latency.ttft_ms / 1000 for p in spec.providers] or [0.0])
        gap = np.array([1 / p.latency.tokens_per_second for p in spec.providers] or [0.0])
        which = reqs.dest[provider]
        first[provider] = reqs.arrival[provider] + ttft[which]
        done[provider] = first[provider] + np.maximum(reqs.output[provider] - 1, 0) * gap[which]
        return cls(admitted, first, done, shed, np.asarray(state.preemptions, dtype=np.int64), failover)


def _percentiles(values: F64, prefix: str, scale: float = 1000.0) -> dict[str, float | None]:
    if len(values) == 0:
        return {f"{prefix}_p{q}_ms": None for q in PERCENTILES}
    found = np.percentile(values, PERCENTILES) * scale
    return {f"{prefix}_p{q}_ms": round(float(v), 3) for q, v in zip(PERCENTILES, found, strict=True)}


def _latency(result: SimResult, rows: I64) -> dict[str, Any]:
    """Latency, queueing, sheds and SLO attainment of a set of requests."""
    reqs, out, spec = result.requests, result.outcome, result.spec
    classes = list(spec.workload_classes)
    arrival = reqs.arrival[rows]
    served = (out.shed[rows] == SERVED) & np.isfinite(out.done[rows])
    shed = out.shed[rows]
    ttft = (out.first[rows] - arrival)[served]
    e2e = (out.done[rows] - arrival)[served]
    tokens = reqs.output[rows][served]
    multi = tokens > 1
    itl = ((out.done[rows] - out.first[rows])[served][multi]) / (tokens[multi] - 1)
    queue = (out.admitted[rows] - arrival)[served & np.isfinite(out.admitted[rows])]
    met = served.copy()
    cls_of = reqs.cls[rows]
    for ci, cls in enumerate(classes):
        c = spec.workload_classes[cls]
        mine = cls_of == ci
        limit_ttft = c.ttft_p95_ms / 1000 if c.ttft_p95_ms else math.inf
        limit_e2e = c.e2e_p95_ms / 1000 if c.e2e_p95_ms else math.inf
        if c.deadline_hours:
            limit_e2e = min(limit_e2e, c.deadline_hours * 3600)
        full_ttft = out.first[rows] - arrival
        full_e2e = out.done[rows] - arrival
        ok = (full_ttft <= limit_ttft) & (full_e2e <= limit_e2e)
        met[mine] &= ok[mine]
    resolved = int(np.count_nonzero(served | (shed != SERVED)))
    return {
        "requests": len(rows),
        "served": int(served.sum()),
        "in_flight": int(np.count_nonzero((shed == SERVED) & ~np.isfinite(out.done[rows]))),
        **_percentiles(ttft, "ttft"),
        **_percentiles(itl, "itl"),
        **_percentiles(e2e, "e2e"),
        "queue_mean_ms": round(float(queue.mean()) * 1000, 3) if len(queue) else None,
        "queue_p95_ms": round(float(np.percentile(queue, 95)) * 1000, 3) if len(queue) else None,
        "shed": int(np.count_nonzero(shed != SERVED)),
        "shed_gateway": int(np.count_nonzero(shed == SHED_GATEWAY)),
        "shed_deadline": int(np.count_nonzero(shed == SHED_DEADLINE)),
        "shed_too_long": int(np.count_nonzero(shed == SHED_TOO_LONG)),
        "unrouted": int(np.count_nonzero(shed == SHED_UNROUTED)),
        "slo_attainment": round(int(met.sum()) / resolved, 5) if resolved else None,
        "goodput_rps": round(int(met.sum()) / result.config.duration_s, 3),
    }


def _by_class(result: SimResult, rows: I64) -> dict[str, dict[str, Any]]:
    classes = list(result.spec.workload_classes)
    out: dict[str, dict[str, Any]] = {}
    for ci, cls in enumerate(classes):
        mine = rows[result.requests.cls[rows] == ci]
        if len(mine):
            out[cls.value] = _latency(result, mine)
    return out


def queue_depth(result: SimResult, rows: I64, times: F64) -> I64:
    """Requests waiting for admission at each instant: arrived past the gateway, not yet in a batch."""
    out, reqs = result.outcome, result.requests
    entered = rows[(out.shed[rows] != SHED_GATEWAY) & ~out.failover[rows]]
    enter = np.sort(reqs.arrival[entered])
    leave = np.where(
        np.isfinite(out.admitted[entered]),
        out.admitted[entered],
        np.where(out.shed[entered] != SERVED, out.done[entered], np.inf),
    )
    leave = np.sort(leave)
    depth: I64 = (np.searchsorted(enter, times, side="right") - np.searchsorted(leave, times, side="right")).astype(
        np.int64
    )
    return depth


def sample_times(duration_s: float) -> F64:
    return np.linspace(0.0, duration_s, min(TIMELINE_POINTS, max(2, math.ceil(duration_s) + 1)))


def _pool_cost(records: list[EpochRecord]) -> float:
    start = 0.0
    usd = 0.0
    for r in records:
        usd += r.usd_per_hour * (r.t_s - start) / 3600
        start = r.t_s
    return usd


def summarize(result: SimResult) -> dict[str, Any]:
    """The run as plain data: what ``--json`` prints and what the tables and the HTML report show."""
    reqs, out, spec, config = result.requests, result.outcome, result.spec, result.config
    hours = config.duration_s / 3600
    chat = ~reqs.embedding
    cache = reqs.kind == int(Kind.CACHE)
    visible = np.flatnonzero(chat & ~cache)
    served = (out.shed == SERVED) & np.isfinite(out.done)
    times = sample_times(config.duration_s)
    pools: list[dict[str, Any]] = []
    audit: list[dict[str, Any]] = []
    timeline: dict[str, dict[str, list[float]]] = {}
    pool_usd_total = 0.0
    tokens_total = 0.0
    for setup in result.pools:
        rows = setup.requests
        records = setup.timeline
        usd = _pool_cost(records)
        pool_usd_total += usd
        own = rows[served[rows] & ~out.failover[rows]]
        tokens = float((reqs.prompt[own] + reqs.output[own]).sum())
        if not setup.encoder:
            tokens_total += tokens
        rho = [r.rho for r in records]
        replicas = [r.ready for r in records]
        lengths = np.diff([0.0, *(r.t_s for r in records)])
        unstable = [r for r in records if r.arrival_rps > 0 and r.rho >= 1]
        unstable_s = sum(float(w) for r, w in zip(records, lengths, strict=True) if r.arrival_rps > 0 and r.rho >= 1)
        waiting = [r.waiting for r in records]
        growth = [(b.waiting - a.waiting) / (b.t_s - a.t_s) for a, b in itertools.pairwise(records)] or [0.0]
        key = f"{setup.region}/{setup.name}"
        pools.append(
            {
                "region": setup.region,
                "pool": setup.name,
                "tier": setup.tier.value,
                "embedding": setup.encoder,
                "requests": len(rows),
                "failover": int(out.failover[rows].sum()),
                "preemptions": int(out.preemptions[rows].sum()),
                "classes": _by_class(result, rows[~out.failover[rows]]),
                "utilization": round(float(np.mean([x for x in rho if math.isfinite(x)] or [0.0])), 4),
                "rho_max": _finite(max(rho, default=0.0)),
                "kv_usage_mean": round(float(np.mean([r.kv_usage for r in records] or [0.0])), 4),
                "kv_usage_max": round(max((r.kv_usage for r in records), default=0.0), 4),
                "replicas": {
                    "start": replicas[0] if replicas else 0,
                    "min": min(replicas, default=0),
                    "max": max(replicas, default=0),
                    "mean": round(float(np.mean(replicas or [0])), 2),
                    "end": replicas[-1] if replicas else 0,
                    "started": setup.scaler.started,
                    "cold_starts": setup.scaler.cold_starts,
                },
                "usd": round(usd, 4),
                "usd_per_hour": round(usd / hours, 3) if hours else 0.0,
                "usd_per_million_tokens": _finite(usd / tokens * 1e6) if tokens else None,
            }
        )
        audit.append(
            {
                "region": setup.region,
                "pool": setup.name,
                "stable": not unstable,
                "unstable_seconds": round(unstable_s, 3),
                "first_unstable_s": unstable[0].t_s if unstable else None,
                "rho_max": _finite(max(rho, default=0.0)),
                "queue_max": max(waiting, default=0),
                "queue_growth_max_rps": round(max(growth), 3),
            }
        )
        timeline[key] = {
            "ready": [float(r.ready) for r in records],
            "starting": [float(r.starting) for r in records],
            "arrival_rps": [round(r.arrival_rps, 3) for r in records],
            "service_rps": [round(r.service_rps, 3) for r in records],
            "rho": [_finite(r.rho) or 0.0 for r in records],
            "waiting": [float(w) for w in waiting],
            "kv_usage": [round(r.kv_usage, 4) for r in records],
            "usd_per_hour": [round(r.usd_per_hour, 3) for r in records],
            "queue_depth": [float(x) for x in queue_depth(result, rows, times)],
        }
    providers, provider_usd = _providers(result, served)
    tokens_total += sum(p["tokens"] for p in providers)
    total_usd = pool_usd_total + provider_usd
    return {
        "platform": spec.platform.name,
        "config": {
            "rps": result.rps,
            "duration_s": config.duration_s,
            "profile": config.profile.value,
            "bursts": [f"{_clock(b.at_s)}x{b.factor:g}/{b.duration_s:g}s" for b in config.bursts],
            "start": _clock(config.start_s),
            "seed": config.seed,
            "initial": config.initial.value,
        },
        "requests": {
            "total": len(reqs),
            "platform": int(chat.sum()),
            "embedding_calls": int((~chat).sum()),
            "cache_hits": int((chat & cache).sum()),
            "to_pools": int((chat & (reqs.kind == int(Kind.POOL)) & ~out.failover).sum()),
            "to_providers": int((chat & (reqs.kind == int(Kind.PROVIDER))).sum()),
            "failover": int(out.failover.sum()),
            "shed": int((chat & (out.shed != SERVED)).sum()),
            "in_flight": int((chat & (out.shed == SERVED) & ~np.isfinite(out.done)).sum()),
            "simulated_per_wall_second": round(len(reqs) / result.wall_seconds, 1) if result.wall_seconds else None,
        },
        "classes": _by_class(result, visible),
        "pools": pools,
        "providers": providers,
        "cost": {
            "usd": round(total_usd, 4),
            "usd_per_hour": round(total_usd / hours, 3) if hours else 0.0,
            "pools_usd_per_hour": round(pool_usd_total / hours, 3) if hours else 0.0,
            "providers_usd_per_hour": round(provider_usd / hours, 3) if hours else 0.0,
            "tokens": int(tokens_total),
            "usd_per_million_tokens": _finite(total_usd / tokens_total * 1e6) if tokens_total else None,
        },
        "audit": audit,
        "timeline": {"t_s": [r.t_s for r in result.pools[0].timeline] if result.pools else [], "pools": timeline},
        "queue_times_s": [round(float(t), 3) for t in times],
        "replica_iterations": result.replica_iterations,
        "wall_seconds": round(result.wall_seconds, 4),
    }


def _providers(result: SimResult, served: B8) -> tuple[list[dict[str, Any]], float]:
    reqs, spec = result.requests, result.spec
    tiers = list(Tier)
    rows_all = np.flatnonzero((reqs.kind == int(Kind.PROVIDER)) & served)
    out: list[dict[str, Any]] = []
    total = 0.0
    for pi, provider in enumerate(spec.providers):
        rows = rows_all[reqs.dest[rows_all] == pi]
        if len(rows) == 0:
            continue
        usd = 0.0
        for ti, tier in enumerate(tiers):
            mine = rows[reqs.tier[rows] == ti]
            model = provider.models.get(tier)
            if model is None or len(mine) == 0:
                continue
            usd += (
                reqs.prompt[mine].sum() * model.input_usd_per_1m + reqs.output[mine].sum() * model.output_usd_per_1m
            ) / 1e6
        total += usd
        out.append(
            {
                "provider": provider.name,
                "requests": len(rows),
                "failover": int(result.outcome.failover[rows].sum()),
                "tokens": int((reqs.prompt[rows] + reqs.output[rows]).sum()),
                "usd": round(float(usd), 4),
                "classes": _by_class(result, rows),
            }
        )
    return out, float(total)


def _finite(value: float) -> float | None:
    return round(value, 4) if math.isfinite(value) else None


def _clock(seconds: float) -> str:
    day, rest = divmod(int(seconds), 86_400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}"
    return f"day {day} {text}" if day else text


CDF_POINTS = 2000  # quantiles per class in the report's CDFs: a smooth curve, a small SVG


def ttft_ms_by_class(result: SimResult) -> dict[str, list[float]]:
    """TTFT quantiles (ms) of served platform requests per class, for plotting CDFs."""
    reqs, out = result.requests, result.outcome
    served = (out.shed == SERVED) & np.isfinite(out.first) & ~reqs.embedding & (reqs.kind != int(Kind.CACHE))
    curves: dict[str, list[float]] = {}
    for ci, cls in enumerate(result.spec.workload_classes):
        values = (out.first - reqs.arrival)[served & (reqs.cls == ci)] * 1000
        if len(values):
            grid = np.linspace(0, 100, min(CDF_POINTS, len(values)))
            curves[cls.value] = [float(v) for v in np.percentile(values, grid)]
    return curves


@dataclass
class PoolSetup:
    """One (region, pool) placement as the run sees it."""

    index: int
    region: str
    name: str
    tier: Tier
    encoder: bool
    scaler: Scaler
    requests: I64  # its requests, by arrival
    failover: int  # provider index for overflow of non-batch levels, -1 if none may take it
    shed_at: F64
    timeline: list[EpochRecord] = field(default_factory=list)


@dataclass
class SimResult:
    """Everything a run produced: the config, the per-request outcomes, the timelines and the wall time."""

    spec: PlatformSpec
    config: SimConfig
    rps: float
    requests: Requests
    outcome: Outcome
    pools: list[PoolSetup]
    epochs: list[float]
    wall_seconds: float
    replica_iterations: int

    def summary(self) -> dict[str, Any]:
        """The run as plain data: what ``--json`` prints; see ``tokenplane.sim.metrics.summarize``."""
        return summarize(self)
