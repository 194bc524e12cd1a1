"""The workbench: a discrete-event simulation of a spec's whole platform over a day or a minute.

``simulate(spec, SimConfig(...))`` draws every request of the run up front
(``tokenplane.sim.workload``), then walks time in autoscaler periods of
``EVALUATION_S``. In each period the gateway sheds by priority and fails over
to providers (``tokenplane.sim.gateway``), a least-request balancer queues the
rest on the ready replicas, and every replica of every pool runs continuous
batching iteration by iteration (``tokenplane.sim.engine``), timed by
``tokenplane.capacity`` only. At the end of the period each pool's autoscaler
reads its signals and starts or drains replicas (``tokenplane.sim.autoscale``).
``tokenplane.sim.metrics`` turns the per-request times into percentiles,
goodput, cost and the lambda < mu audit.

What is left out, on purpose: the gateway's own latency and the embedding
call's latency are not added to a chat request's TTFT (embedding calls are
simulated as load on the embedding pools); tenants' rate limits, quotas and
allowed tiers are not applied (routing follows ``routing.mix`` and the rules, as
the planner does); cache hits are answered at once; the simulated clock is each
region's local time and day 0 is a Monday; providers have unlimited capacity
and their latency from the spec, without jitter.
"""

from __future__ import annotations

import gc
import itertools
import math
import time

import numpy as np
import numpy.typing as npt

from tokenplane.planner import PoolPlan, plan
from tokenplane.pool_model import PoolTiming, node_for, prefix_kept_share, replicas_per_node, timing
from tokenplane.sim import gateway, metrics
from tokenplane.sim.autoscale import EVALUATION_S, ReplicaState, Scaler, Signals
from tokenplane.sim.engine import SHED_GATEWAY, SHED_UNROUTED, Engine, RequestState
from tokenplane.sim.metrics import PoolSetup, SimResult
from tokenplane.sim.workload import (
    LEVELS,
    Initial,
    Kind,
    Requests,
    SimConfig,
    placements,
    routing,
    sample,
)
from tokenplane.spec import PlatformSpec, Priority, Tier

__all__ = ["Initial", "PoolSetup", "SimConfig", "SimResult", "simulate"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


def simulate(spec: PlatformSpec, config: SimConfig) -> SimResult:
    """Run the platform of ``spec`` under the traffic of ``config``; see the module docstring."""
    # A run allocates millions of small tuples while it holds lists of a million requests; the
    # cyclic collector would rescan those lists again and again and find no cycle in them.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _simulate(spec, config)
    finally:
        if collecting:
            gc.enable()


def _simulate(spec: PlatformSpec, config: SimConfig) -> SimResult:
    started = time.perf_counter()
    rng = np.random.default_rng(config.seed)
    rps = config.rps if config.rps is not None else spec.platform.peak_rps
    routes = routing(spec)
    reqs = sample(
        spec,
        rng,
        rps=rps,
        duration_s=config.duration_s,
        start_s=config.start_s,
        profile=config.profile,
        bursts=config.bursts,
        routes=routes,
    )
    planned = plan(spec)
    setups, params = _setup_pools(spec, reqs, planned.pools)
    state = _request_state(spec, reqs, setups)
    engine = Engine(params, [s.scaler.max_replicas for s in setups], state, reqs.arrival)
    uniform = rng.random(len(reqs))  # the gateway's shedding draws, fixed by the seed
    start_rate = rps * float(
        metrics.rate_at(config, np.array([config.start_s + min(config.duration_s, EVALUATION_S) / 2]))[0]
    )
    for setup, pool_plan in zip(setups, planned.pools, strict=True):
        if config.initial is Initial.SETTLED:
            share = pool_plan.arrival_rps / spec.platform.peak_rps
            count = max(setup.scaler.capacity_replicas(start_rate * share), setup.scaler.floor(config.start_s))
        else:
            count = setup.scaler.floor(config.start_s)
        for slot in setup.scaler.settle(count):
            engine.start(slot, 0.0)
    outcome_shed = np.zeros(len(reqs), dtype=np.int64)
    outcome_shed[reqs.kind == int(Kind.UNROUTED)] = SHED_UNROUTED
    failover = np.zeros(len(reqs), dtype=np.bool_)
    epochs = _epoch_ends(config.duration_s)
    arrival_counts = {s.index: _level_counts(reqs, s.requests, config.duration_s) for s in setups}
    t0 = 0.0
    for t1 in epochs:
        for setup in setups:
            _gateway_and_dispatch(engine, setup, reqs, uniform, arrival_counts[setup.index], t0, t1)
        engine.run_until(t1)
        for setup in setups:
            _close_epoch(engine, setup, reqs, config, t0, t1)
        t0 = t1
    for setup in setups:
        shed = setup.requests[np.asarray(state.shed, dtype=np.int64)[setup.requests] == SHED_GATEWAY]
        if setup.failover >= 0:
            moved = shed[reqs.priority[shed] != LEVELS.index(Priority.BATCH)]
            reqs.kind[moved] = int(Kind.PROVIDER)
            reqs.dest[moved] = setup.failover
            reqs.tier[moved] = list(Tier).index(setup.tier)
            failover[moved] = True
    outcome = metrics.Outcome.collect(state, outcome_shed, failover, reqs, spec)
    return SimResult(
        spec=spec,
        config=config,
        rps=rps,
        requests=reqs,
        outcome=outcome,
        pools=setups,
        epochs=epochs,
        wall_seconds=time.perf_counter() - started,
        replica_iterations=engine.iterations,
    )


def _epoch_ends(duration_s: float) -> list[float]:
    count = math.ceil(duration_s / EVALUATION_S - 1e-9)
    return [min(duration_s, (k + 1) * EVALUATION_S) for k in range(count)]


def _setup_pools(
    spec: PlatformSpec, reqs: Requests, planned: list[PoolPlan]
) -> tuple[list[PoolSetup], list[PoolTiming]]:
    setups: list[PoolSetup] = []
    params: list[PoolTiming] = []
    shed_at = np.array(
        [
            spec.queues.priorities[level].shed_at_utilization if level in spec.queues.priorities else math.inf
            for level in LEVELS
        ]
    )
    pool_of = reqs.dest
    pool_requests = reqs.kind == int(Kind.POOL)
    for index, ((region_name, pool_name), pool_plan) in enumerate(zip(placements(spec), planned, strict=True)):
        region = spec.region(region_name)
        pool = spec.pool(pool_name)
        placement = next(pl for pl in region.pools if pl.pool == pool_name)
        node = node_for(pool)
        encoder = spec.is_embedding(pool)
        params.append(timing(spec, pool))
        scaler = Scaler(
            first=sum(s.scaler.max_replicas for s in setups),
            min_replicas=placement.min_replicas,
            max_replicas=placement.max_replicas,
            spec=pool.autoscaling,
            service_rps_per_replica=pool_plan.service_rps_per_replica,
            replicas_per_node=replicas_per_node(pool),
            gpus_per_replica=pool.gpus_per_replica,
            gpus_per_node=node.gpus,
            usd_per_node_hour=spec.instance_price(node.name),
        )
        setups.append(
            PoolSetup(
                index=index,
                region=region_name,
                name=pool_name,
                tier=pool.tier,
                encoder=encoder,
                scaler=scaler,
                requests=np.flatnonzero(pool_requests & (pool_of == index)),
                failover=_failover_provider(spec, region_name, pool.tier),
                shed_at=shed_at,
            )
        )
    return setups, params


def _failover_provider(spec: PlatformSpec, region_name: str, tier: Tier) -> int:
    """The first provider on the tier's chain that may process this region's data: where overflow goes."""
    jurisdiction = spec.region(region_name).jurisdiction
    for target in spec.routing.fallbacks.get(tier, []):
        provider = spec.provider(target)
        if provider is not None and tier in provider.models and jurisdiction in provider.jurisdictions:
            return spec.providers.index(provider)
    return -1


def _request_state(spec: PlatformSpec, reqs: Requests, setups: list[PoolSetup]) -> RequestState:
    """The engine's per-request inputs: prompt tokens to hold and to prefill after prefix-cache hits."""
    kept = np.ones(len(reqs))
    for setup in setups:
        kept[setup.requests] = prefix_kept_share(spec, spec.pool(setup.name))
    prefill = np.maximum(1, np.ceil(reqs.prompt * kept)).astype(np.int64)
    # The gateway's queue deadline (the level's max wait, or the class's TTFT SLO when sooner), per (class, level).
    slos = [spec.workload_classes[c].ttft_p95_ms for c in spec.workload_classes]
    deadline = np.array([[spec.queues.max_wait_s(level, slo) for level in LEVELS] for slo in slos])
    return RequestState(
        arrival=reqs.arrival.tolist(),
        priority=reqs.priority.tolist(),
        context=reqs.prompt.tolist(),
        prefill=prefill.tolist(),
        cached=(reqs.prompt - prefill).tolist(),
        tokens=reqs.output.tolist(),
        max_wait=deadline[reqs.cls, reqs.priority].tolist(),
    )


def _level_counts(reqs: Requests, rids: I64, duration_s: float) -> I64:
    windows = max(1, math.ceil(duration_s / gateway.SHED_WINDOW_S))
    window = np.minimum((reqs.arrival[rids] // gateway.SHED_WINDOW_S).astype(np.int64), windows - 1)
    counts: I64 = np.bincount(reqs.priority[rids] * windows + window, minlength=len(LEVELS) * windows).reshape(
        len(LEVELS), windows
    )
    return counts


def _trailing_rate(counts: I64, windows: I64) -> F64:
    """Arrivals per second per level over the ``SHED_WINDOWS`` windows before each window (the first sees itself)."""
    cumulative = np.concatenate([np.zeros((counts.shape[0], 1)), np.cumsum(counts, axis=1)], axis=1)
    end = np.clip(windows, 1, counts.shape[1])
    start = np.maximum(end - gateway.SHED_WINDOWS, 0)
    rate: F64 = (cumulative[:, end] - cumulative[:, start]) / ((end - start) * gateway.SHED_WINDOW_S)
    return rate


def _gateway_and_dispatch(
    engine: Engine, setup: PoolSetup, reqs: Requests, uniform: F64, counts: I64, t0: float, t1: float
) -> None:
    """Shed by priority at the gateway, then queue the rest on replicas, least-loaded first."""
    arrival = reqs.arrival[setup.requests]
    lo, hi = np.searchsorted(arrival, [t0, t1])
    rids = setup.requests[lo:hi]
    if len(rids) == 0:
        return
    scaler = setup.scaler
    window = (reqs.arrival[rids] // gateway.SHED_WINDOW_S).astype(np.int64)
    first, last = int(window[0]), int(window[-1])
    windows = np.arange(first, last + 1)
    rate = _trailing_rate(counts, windows)
    ready = np.array([len(scaler.dispatchable(w * gateway.SHED_WINDOW_S)) for w in windows.tolist()])
    fractions = gateway.admit_fractions(rate, ready * scaler.service_rps_per_replica, setup.shed_at)
    admitted = uniform[rids] < fractions[reqs.priority[rids], window - first]
    if not admitted.all():
        shed = rids[~admitted]
        for rid in shed.tolist():
            engine.req.shed[rid] = SHED_GATEWAY
            engine.req.done[rid] = engine.req.arrival[rid]
        rids = rids[admitted]
    cuts = [t0, *scaler.ready_times(t0, t1), t1]
    times = reqs.arrival[rids]
    assigned: dict[int, int] = {}
    for a, b in itertools.pairwise(cuts):
        lo, hi = np.searchsorted(times, [a, b])
        part = rids[lo:hi]
        replicas = np.array(scaler.dispatchable(a), dtype=np.int64)
        if len(part) == 0:
            continue
        if len(replicas) == 0:  # nothing ready (scaled to zero): the gateway turns them away
            for rid in part.tolist():
                engine.req.shed[rid] = SHED_GATEWAY
                engine.req.done[rid] = engine.req.arrival[rid]
            continue
        load = engine.outstanding(replicas) + np.array([assigned.get(r, 0) for r in replicas.tolist()], dtype=np.int64)
        quota = gateway.water_fill(load, len(part))
        for r, q in zip(replicas.tolist(), quota.tolist(), strict=True):
            assigned[r] = assigned.get(r, 0) + q
        engine.dispatch(setup.index, part, gateway.interleave(replicas, quota))


def _close_epoch(engine: Engine, setup: PoolSetup, reqs: Requests, config: SimConfig, t0: float, t1: float) -> None:
    """Record the period, read the signals, and let the autoscaler act for the next one."""
    scaler = setup.scaler
    counters = engine.counters[setup.index]
    arrival = reqs.arrival[setup.requests]
    arrived = int(np.searchsorted(arrival, t1) - np.searchsorted(arrival, t0))
    ready = np.array(scaler.dispatchable(t1), dtype=np.int64)
    kv = float(engine.kv_usage(ready).mean()) if len(ready) else 0.0
    waiting_age = t1 - counters.waiting_arrival_sum / counters.waiting if counters.waiting > 0 else 0.0
    admitted_wait = counters.admitted_wait_sum / counters.admitted if counters.admitted else 0.0
    ttft_p95 = float(np.percentile(counters.ttfts, 95)) if counters.ttfts else 0.0
    signals = Signals(
        arrival_rps=arrived / (t1 - t0),
        queue_wait_s=max(admitted_wait, waiting_age),
        kv_usage=kv,
        ttft_p95_s=ttft_p95,
    )
    setup.timeline.append(
        metrics.EpochRecord(
            t_s=t1,
            ready=len(ready),
            starting=scaler.pending(t1),
            draining=scaler.count(ReplicaState.DRAINING),
            arrival_rps=signals.arrival_rps,
            service_rps=len(ready) * scaler.service_rps_per_replica,
            waiting=counters.waiting,
            kv_usage=kv,
            queue_wait_s=signals.queue_wait_s,
            ttft_p95_s=ttft_p95,
            usd_per_hour=scaler.usd_per_hour(),
        )
    )
    counters.signals_reset()
    for slot in range(scaler.first, scaler.first + scaler.max_replicas):
        if scaler.state[slot - scaler.first] is ReplicaState.DRAINING and engine.idle(slot):
            scaler.drained(slot)
            engine.stop(slot)
    started, _, _ = scaler.step(t1, config.start_s + t1, signals)
    for slot in started:
        engine.start(slot, scaler.ready_at[slot - scaler.first])
