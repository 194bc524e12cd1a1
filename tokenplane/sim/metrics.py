"""From the run's streaming accounts to what the workbench reports: percentiles, goodput, cost and the audit.

Latency is measured from the request's arrival at the gateway: TTFT to its first
token, E2E to its last, queue delay to its admission into a batch, and ITL as
its own mean gap between tokens. Requests still running at the end are counted
as in flight and left out of the percentiles. SLO attainment is the share of
resolved requests (served or shed) that were served within their class's TTFT
and E2E SLOs (batch: within its deadline); goodput is those per second.
Percentiles come from ``tokenplane.sim.sketch``'s histograms: each is within
``sketch.ALPHA`` (0.5%) of the exact order statistic, relatively.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from tokenplane.errors import SpecError
from tokenplane.sim import sketch
from tokenplane.sim.autoscale import Scaler, Signals
from tokenplane.sim.engine import SERVED, SHED_GATEWAY
from tokenplane.sim.tally import SHED_REASONS, Outcome, Tally
from tokenplane.sim.workload import Requests, SimConfig, rate_multiplier
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


def _percentiles(hist: sketch.Histograms, group: int, prefix: str) -> dict[str, float | None]:
    if hist.total(group) <= 0:
        return {f"{prefix}_p{q}_ms": None for q in PERCENTILES}
    found = hist.quantiles(group, list(PERCENTILES)) * 1000
    return {f"{prefix}_p{q}_ms": round(float(v), 3) for q, v in zip(PERCENTILES, found, strict=True)}


def _latency(tally: Tally, group: int, duration_s: float) -> dict[str, Any]:
    """Latency, queueing, sheds and SLO attainment of one group of requests."""
    c = {k: float(v[group]) for k, v in tally.count.items()}
    queued = c["queue_n"] > 0
    return {
        "requests": round(c["requests"]),
        "served": round(c["served"]),
        "in_flight": round(c["in_flight"]),
        **_percentiles(tally.ttft, group, "ttft"),
        **_percentiles(tally.itl, group, "itl"),
        **_percentiles(tally.e2e, group, "e2e"),
        "queue_mean_ms": round(c["queue_sum"] / c["queue_n"] * 1000, 3) if queued else None,
        "queue_p95_ms": round(float(tally.queue.quantiles(group, [95])[0]) * 1000, 3) if queued else None,
        "shed": round(c["shed"]),
        **{key: round(c[key]) for key in SHED_REASONS},
        "slo_attainment": round(c["met"] / c["resolved"], 5) if c["resolved"] > 0 else None,
        "goodput_rps": round(c["met"] / duration_s, 3),
    }


def _by_class(result: SimResult, group_of: Any) -> dict[str, dict[str, Any]]:
    tally = result.tally
    out: dict[str, dict[str, Any]] = {}
    for ci, cls in enumerate(result.spec.workload_classes):
        group = group_of(ci)
        if tally.count["requests"][group] > 0:
            out[cls.value] = _latency(tally, group, result.config.duration_s)
    return out


def queue_depth(result: SimResult, rows: I64, times: F64) -> I64:
    """Requests waiting for admission at each instant, from a traced run's per-request outcomes."""
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
    tally, spec, config = result.tally, result.spec, result.config
    hours = config.duration_s / 3600
    times = tally.queue_times
    pools: list[dict[str, Any]] = []
    audit: list[dict[str, Any]] = []
    timeline: dict[str, dict[str, list[float]]] = {}
    pool_usd_total = 0.0
    tokens_total = 0.0
    for setup in result.pools:
        index = setup.index
        records = setup.timeline
        usd = _pool_cost(records)
        pool_usd_total += usd
        tokens = float(tally.pool_tokens[index])
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
                "requests": round(float(tally.pool_requests[index])),
                "failover": round(float(tally.pool_failover[index])),
                "preemptions": round(float(tally.pool_preemptions[index])),
                "classes": _by_class(result, lambda ci, p=index: tally.pool_group(p, ci)),
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
            "queue_depth": [round(float(x), 1) for x in tally.queue_depth(index)],
        }
    providers, provider_usd = _providers(result)
    tokens_total += sum(p["tokens"] for p in providers)
    total_usd = pool_usd_total + provider_usd
    return {
        "platform": spec.platform.name,
        "config": {
            "rps": result.rps,
            "duration_s": config.duration_s,
            "profile": config.profile.value,
            "bursts": [f"{_clock(b.at_s)}x{b.factor:g}/{b.duration_s:g}s" for b in config.bursts],
            "burst_at_s": [b.at_s for b in config.bursts],
            "burst_s": [b.duration_s for b in config.bursts],
            "fidelity": config.fidelity.value,
            "start": _clock(config.start_s),
            "seed": config.seed,
            "initial": config.initial.value,
            "balance": config.balance.value,
            "model_gateways": config.model_gateways,
            "sharing": config.sharing.value,
            "gateway_skew": config.gateway_skew,
        },
        "requests": {
            **{key: round(value) for key, value in tally.totals.items()},
            "simulated": tally.simulated,
            "peak_held": result.peak_held,
            "simulated_per_wall_second": round(tally.simulated / result.wall_seconds, 1)
            if result.wall_seconds
            else None,
        },
        "fidelity": fidelity(result),
        "classes": _by_class(result, tally.platform_group),
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


def _providers(result: SimResult) -> tuple[list[dict[str, Any]], float]:
    tally, spec = result.tally, result.spec
    tiers = list(Tier)
    out: list[dict[str, Any]] = []
    total = 0.0
    for pi, provider in enumerate(spec.providers):
        if tally.provider_requests[pi] <= 0:
            continue
        usd = 0.0
        for ti, tier in enumerate(tiers):
            model = provider.models.get(tier)
            if model is None:
                continue
            usd += (
                tally.provider_prompt[pi, ti] * model.input_usd_per_1m
                + tally.provider_output[pi, ti] * model.output_usd_per_1m
            ) / 1e6
        total += usd
        out.append(
            {
                "provider": provider.name,
                "requests": round(float(tally.provider_requests[pi])),
                "failover": round(float(tally.provider_failover[pi])),
                "tokens": round(float(tally.provider_tokens[pi])),
                "usd": round(float(usd), 4),
                "classes": _by_class(result, lambda ci, p=pi: tally.provider_group(p, ci)),
            }
        )
    return out, float(total)


def fidelity(result: SimResult) -> dict[str, Any]:
    """What the numbers rest on: every request, sampled replicas, or replayed steady stretches too."""
    from tokenplane.sim.stretches import DETAIL_EVERY, REPLAY_PERIODS, detail_plan

    config = result.config
    mode = config.fidelity.value
    detailed = detail_plan(config, result.epochs, mode == "aggregate")
    simulated = result.periods_simulated if mode == "aggregate" else len(detailed)
    notes = {
        "request": "every request simulated on every replica",
        "sampled": (
            f"per-pool model: the autoscaler, shedding, replicas and cost follow every arrival; latency from "
            f"{config.sample_replicas} replica(s) per pool simulated request by request, fed their share"
        ),
        "aggregate": (
            f"per-pool model as in sampled ({config.sample_replicas} replica(s) per pool), and only "
            f"{simulated} of {len(detailed)} periods simulated (around bursts, rate changes and scale events, "
            f"and one in {DETAIL_EVERY} of a steady stretch); the others replay the mean of the last "
            f"{REPLAY_PERIODS} simulated ones, scaled to their arrivals"
        ),
    }
    return {
        "mode": mode,
        "sample_replicas_per_pool": config.sample_replicas if mode != "request" else None,
        "periods_simulated": simulated,
        "periods": len(detailed),
        "percentile_relative_accuracy": sketch.ALPHA,
        "chosen": config.fidelity_reason or "asked for (--fidelity)",
        "note": f"{mode} ({config.fidelity_reason}): {notes[mode]}" if config.fidelity_reason else notes[mode],
    }


def _finite(value: float) -> float | None:
    return round(value, 4) if math.isfinite(value) else None


def _clock(seconds: float) -> str:
    day, rest = divmod(int(seconds), 86_400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}"
    return f"day {day} {text}" if day else text


CDF_POINTS = 2000  # quantiles per class in the report's CDFs: a smooth curve, a small SVG


def ttft_ms_by_class(result: SimResult) -> dict[str, list[float]]:
    """TTFT quantiles (ms) of served platform requests per class (cache hits aside), for plotting CDFs."""
    tally = result.tally
    curves: dict[str, list[float]] = {}
    for ci, cls in enumerate(result.spec.workload_classes):
        group = tally.platform_group(ci)
        served = tally.ttft.total(group)
        if served > 0:
            grid = np.linspace(0, 100, max(2, min(CDF_POINTS, round(served))))
            curves[cls.value] = [float(v) * 1000 for v in tally.ttft.quantiles(group, grid)]
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
    slot0: int  # its first engine slot
    slots: int  # engine slots: every replica at request level, the sampled ones otherwise
    sampled: bool
    failover: int  # provider index for overflow of non-batch levels, -1 if none may take it
    shed_at: F64
    kept_share: float  # of a prompt's tokens left to prefill after prefix-cache hits
    recent: I64  # arrivals per level in the last ``SHED_WINDOWS`` windows, for the shedding rate
    timeline: list[EpochRecord] = field(default_factory=list)
    signals: Signals | None = None  # what the autoscaler read last; a steady stretch holds it
    ttft_samples: int = 0  # first tokens behind the last simulated period's P95 TTFT
    turn: int = 0  # the balancer's place in its round-robin over the ready replicas (request fidelity)
    turns: list[int] = field(default_factory=list)  # each model gateway process's, when they choose per request
    shares: F64 = field(default_factory=lambda: np.zeros(0))  # of the pool's requests per process (``gateway_skew``)
    dealt: int = 0  # requests dealt over the processes so far (``gateway_dealt``)
    requests: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # trace rows routed here

    def targets(self, at: float) -> tuple[I64, float]:
        """Engine slots that take new requests at ``at``, and the share of the pool's arrivals they get."""
        if not self.sampled:
            return np.array(self.scaler.dispatchable(at), dtype=np.int64), 1.0
        ready = self.scaler.dispatchable_count(at)
        active = min(self.slots, ready)
        return np.arange(self.slot0, self.slot0 + active, dtype=np.int64), active / ready if ready else 1.0


@dataclass
class SimResult:
    """What a run produced: the config, the streaming accounts, the timelines and the wall time."""

    spec: PlatformSpec
    config: SimConfig
    rps: float
    tally: Tally
    pools: list[PoolSetup]
    epochs: list[float]
    wall_seconds: float
    replica_iterations: int
    periods_simulated: int = 0  # at aggregate fidelity, the periods simulated request by request
    peak_held: int = 0  # the most requests the engine held at once (at a period's end): what memory follows
    trace: tuple[Requests, Outcome] | None = None

    @property
    def requests(self) -> Requests:
        """Every request of the run, by arrival (``SimConfig.trace`` only)."""
        return self._trace()[0]

    @property
    def outcome(self) -> Outcome:
        """What happened to each of ``requests`` (``SimConfig.trace`` only)."""
        return self._trace()[1]

    def _trace(self) -> tuple[Requests, Outcome]:
        if self.trace is None:
            raise SpecError("per-request outcomes are kept only with SimConfig(trace=True); use summary() otherwise")
        return self.trace

    def summary(self) -> dict[str, Any]:
        """The run as plain data: what ``--json`` prints; see ``tokenplane.sim.metrics.summarize``."""
        return summarize(self)
