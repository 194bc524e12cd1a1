"""The workbench: a discrete-event simulation of a spec's whole platform over a day or a minute.

``simulate(spec, SimConfig(...))`` walks time in autoscaler periods of
``EVALUATION_S``. Each period it draws that period's arrivals
(``tokenplane.sim.arrivals``), the gateway sheds by priority and fails over to
providers (``tokenplane.sim.gateway``), the balancer deals the rest round-robin
over the ready replicas (or, with ``SimConfig.balance``, runs the model gateway's own
``choose`` per request), and every replica of every pool runs continuous batching
iteration by iteration (``tokenplane.sim.engine``), timed by
``tokenplane.model.capacity`` only. At the end of the period each pool's autoscaler
reads its signals and starts or drains replicas (``tokenplane.sim.autoscale``),
every request resolved so far is added to the run's streaming accounts
(``tokenplane.sim.tally``) and forgotten. What a run holds is one period's
arrivals plus what is in flight, whatever its length.

Three fidelities (``Fidelity``), stated in the output:

- ``request``: every request of the traffic is simulated on every replica.
- ``sampled``: a per-pool model sampled at request level. The autoscaler, the
  gateway's shedding, the replica counts and the cost follow the whole pool and
  every arrival (counted, not drawn); only ``sample_replicas`` replicas per pool
  are simulated request by request, each fed every n-th arrival of its pool as
  the round-robin balancer deals them over ``n`` ready replicas
  (``tokenplane.sim.arrivals.Replicas``), and each of their requests stands for
  ``n / sample_replicas`` in the latency and cost accounts.
- ``aggregate``: sampled, and steady stretches replayed (``tokenplane.sim.stretches``):
  around bursts, rate changes and scale events every period is simulated; in a
  steady stretch one in eight, and the others add the last simulated periods'
  accounts scaled to their own arrivals, while the autoscaler runs on every one.

A day at 10,000 RPS then costs what a few replicas per pool cost, for a fraction
of its periods. What the sampled fidelities leave out: a draining replica's tail
  (it stops costing one period after it is set draining).

What is left out at every fidelity, on purpose: the gateway's own latency and the
embedding call's latency are not added to a chat request's TTFT (embedding calls
are simulated as load on the embedding pools); tenants' rate limits, quotas and
allowed tiers are not applied (routing follows ``tokenplane.routes`` for an
unpinned tenant, as the planner does, overflow included); cache hits are answered at once; the simulated clock is each
region's local time and day 0 is a Monday; providers have unlimited capacity
and their latency from the spec, without jitter.
"""

from __future__ import annotations

import gc
import itertools
import math
import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from tokenplane.errors import SpecError
from tokenplane.model.planner import Plan, PoolPlan, plan
from tokenplane.pool_model import PoolTiming, node_for, prefix_kept_share, replicas_per_node, timing
from tokenplane.routes import Routes
from tokenplane.sim import gateway, metrics
from tokenplane.sim.arrivals import Replicas, Streams, Window, draw
from tokenplane.sim.autoscale import EVALUATION_S, ReplicaState, Scaler, Signals
from tokenplane.sim.budget import check_memory
from tokenplane.sim.engine import COLLECT_REQUESTS, SHED_GATEWAY, Engine, RequestState
from tokenplane.sim.metrics import PoolSetup, SimResult
from tokenplane.sim.stretches import Replayer, detail_plan
from tokenplane.sim.tally import Outcome, Tally, settle
from tokenplane.sim.workload import (
    LEVELS,
    SAMPLE_REPLICAS,
    Fidelity,
    Initial,
    Kind,
    Requests,
    SimConfig,
    placements,
)
from tokenplane.spec import PlatformSpec, Tier

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

OTHER_SHARE = 0.05  # share of cache hits, provider and unrouted requests drawn when sampling: each is one formula

Progress = Callable[[float, int], None]  # (simulated seconds done, requests simulated so far)

# The workbench's public names: the entry, and the run's config and result (defined beside what uses them).
__all__ = ["Fidelity", "Initial", "PoolSetup", "Progress", "SimConfig", "SimResult", "simulate"]


def simulate(spec: PlatformSpec, config: SimConfig, *, progress: Progress | None = None) -> SimResult:
    """Run the platform of ``spec`` under the traffic of ``config``; see the module docstring.

    Raises:
        SpecError: the run would not fit this machine's memory (with the estimate and what to change).
    """
    planned = plan(spec)  # sizes every pool once: the memory estimate and the run both read it
    check_memory(spec, config, planned=planned)
    # A run allocates millions of small tuples while it holds lists of many requests; the
    # cyclic collector would rescan those lists again and again and find no cycle in them.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _simulate(spec, config, progress, planned)
    finally:
        if collecting:
            gc.enable()


class _Run:
    """The state of one run between periods: the engine, the requests in flight and the accounts."""

    def __init__(self, spec: PlatformSpec, config: SimConfig, rps: float, planned: Plan) -> None:
        self.spec, self.config, self.rps = spec, config, rps
        self.streams = Streams.build(spec)
        self.replicas = Replicas(self.streams.pools, max([config.sample_replicas, 1]))
        self.planned = planned
        self.setups, params = _setup_pools(spec, self.planned.pools, config)
        empty = RequestState([], [], [], [], [], [], [])
        self.engine = Engine(params, [s.slots for s in self.setups], empty, np.zeros(0))
        self.rng = np.random.default_rng(config.seed)
        self.tally = Tally(spec, len(self.setups), metrics.sample_times(config.duration_s))
        self.live = _empty_requests()  # the engine's requests, by id
        self.failover_of = np.array([s.failover for s in self.setups] or [-1], dtype=np.int64)
        self.pool_tier = np.array([list(Tier).index(s.tier) for s in self.setups] or [0], dtype=np.int64)
        slos = [spec.workload_classes[c].ttft_p95_ms for c in spec.workload_classes]
        self.deadline = np.array([[spec.queues.max_wait_s(level, slo) for level in LEVELS] for slo in slos])
        self.trace: list[tuple[Requests, Outcome]] = []
        self.simulated = 0
        self.held = 0  # requests the engine held after the last collection
        self.periods_simulated = 0
        self.peak_held = 0  # the most requests the engine held at the end of a period

    def uniform(self, n: int) -> F64:
        """Draws for the gateway's shedding and the sampled replicas' share, from the run's seeded generator."""
        draws: F64 = self.rng.random(n)
        return draws

    def account(self, reqs: Requests, out: Outcome) -> None:
        settle(self.spec, reqs, out, self.failover_of, self.pool_tier)
        self.tally.add(reqs, out)
        if self.config.trace:
            self.trace.append((reqs, out))

    def shed_now(self, reqs: Requests) -> None:
        """Account requests shed at the gateway on arrival."""
        out = _fresh_outcome(len(reqs))
        out.shed[:] = SHED_GATEWAY
        out.done[:] = reqs.arrival
        self.account(reqs, out)

    def collect(self, final: bool) -> None:
        """Account every resolved request (every one at the end) and drop it from the engine."""
        req = self.engine.req
        done = np.array(req.done, dtype=np.float64)
        resolved = np.ones(len(done), dtype=np.bool_) if final else np.isfinite(done)
        rows = np.flatnonzero(resolved)
        if len(rows):
            out = Outcome(
                admitted=np.array(req.admitted, dtype=np.float64)[rows],
                first=np.array(req.first, dtype=np.float64)[rows],
                done=done[rows],
                shed=np.array(req.shed, dtype=np.int64)[rows],
                preemptions=np.array(req.preemptions, dtype=np.int64)[rows],
                failover=np.zeros(len(rows), dtype=np.bool_),
            )
            self.account(self.live.take(rows), out)
        if not final:
            keep = np.flatnonzero(~resolved)
            self.engine.compact(keep)
            self.live = self.live.take(keep)


def _simulate(spec: PlatformSpec, config: SimConfig, progress: Progress | None, planned: Plan) -> SimResult:
    started = time.perf_counter()
    rps = config.rps if config.rps is not None else spec.platform.peak_rps
    run = _Run(spec, config, rps, planned)
    engine, setups = run.engine, run.setups
    start_rate = rps * float(
        metrics.rate_at(config, np.array([config.start_s + min(config.duration_s, EVALUATION_S) / 2]))[0]
    )
    for setup, pool_plan in zip(setups, run.planned.pools, strict=True):
        if config.initial is Initial.SETTLED:
            share = pool_plan.arrival_rps / spec.platform.peak_rps
            count = max(setup.scaler.capacity_replicas(start_rate * share), setup.scaler.floor(config.start_s))
        else:
            count = setup.scaler.floor(config.start_s)
        slots = setup.scaler.settle(count)
        if setup.sampled:
            slots = list(range(setup.slot0, setup.slot0 + setup.slots))  # always on; fed while ready replicas exist
        for slot in slots:
            engine.start(slot, 0.0)
    epochs = _epoch_ends(config.duration_s)
    other = OTHER_SHARE if config.fidelity is not Fidelity.REQUEST else 1.0
    aggregate = config.fidelity is Fidelity.AGGREGATE
    detailed = detail_plan(config, epochs, aggregate)
    replayer = Replayer(run.tally, len(setups))
    paused_at: float | None = None  # where the engine stopped when a steady stretch began
    restless = False  # the last period saw a scale event or a moving TTFT: simulate the next one
    t0 = 0.0
    for t1, detail in zip(epochs, detailed, strict=True):
        rate = float(metrics.rate_at(config, np.array([config.start_s + (t0 + t1) / 2]))[0])
        if detail or not replayer.ready or restless:
            if paused_at is not None:
                engine.warp(t0 - paused_at)
                run.live.arrival += t0 - paused_at
                paused_at = None
            if aggregate:
                replayer.begin()
            counts = _simulated_period(run, t0, t1, other)
            run.peak_held = max(run.peak_held, len(engine.req))
            if aggregate:
                run.collect(final=False)  # every resolved request in this period's accounts, before a warp
                replayer.end(counts, rate)
                restless = replayer.unsettled(*_pool_state_now(setups))
                run.periods_simulated += 1
            elif len(engine.req) > run.held + COLLECT_REQUESTS:
                run.collect(final=False)
                run.held = len(engine.req)
        else:
            if paused_at is None:
                paused_at = t0
            replayer.replay(_steady_period(run, t0, t1), rate)
            restless = replayer.scaled(_pool_state_now(setups)[0])
        if progress is not None:
            progress(t1, run.simulated)
        t0 = t1
    replayer.flush()
    run.collect(final=True)
    trace = _trace(run) if config.trace else None
    run.tally.simulated = run.simulated
    return SimResult(
        spec=spec,
        config=config,
        rps=rps,
        tally=run.tally,
        pools=setups,
        epochs=epochs,
        wall_seconds=time.perf_counter() - started,
        replica_iterations=engine.iterations,
        periods_simulated=run.periods_simulated,
        peak_held=run.peak_held,
        trace=trace,
    )


def _pool_state_now(setups: list[PoolSetup]) -> tuple[F64, F64, I64]:
    """Each pool's ready replicas, P95 TTFT and the first tokens behind it, at the end of the last period."""
    last = [s.timeline[-1] for s in setups]
    return (
        np.array([r.ready for r in last], dtype=np.float64),
        np.array([r.ttft_p95_s for r in last]),
        np.array([s.ttft_samples for s in setups], dtype=np.int64),
    )


def _simulated_period(run: _Run, t0: float, t1: float, other: float) -> F64:
    """One period at request level (on every replica, or on the sampled ones); returns each pool's arrivals."""
    engine, setups, config = run.engine, run.setups, run.config
    shares = np.array([s.targets(t0)[1] for s in setups] or [1.0])
    ready = np.array([s.scaler.dispatchable_count(t0) for s in setups] or [0], dtype=np.int64)
    slots = np.array([s.slots for s in setups] or [0], dtype=np.int64)
    dealt = (run.replicas, ready, slots) if config.fidelity is not Fidelity.REQUEST else None
    window = _draw(run, t0, t1, keep=run.streams.keep_shares(shares, other), dealt=dealt)
    reqs = window.requests
    run.simulated += len(reqs)
    off = np.flatnonzero(reqs.kind != int(Kind.POOL))
    if len(off):
        run.account(reqs.take(off), _fresh_outcome(len(off)))
    plans = [
        _gateway(run, s, reqs, window.slot, window.counts[s.index], t0, t1, float(shares[s.index])) for s in setups
    ]
    rows = np.concatenate([rows for rows, _, _ in plans] or [np.zeros(0, dtype=np.int64)])
    first = engine.add_requests(_pool_state(run, reqs.take(rows)), reqs.arrival[rows])
    run.live = _concat(run.live, reqs.take(rows))
    at = first
    for setup, (mine, slots, segments) in zip(setups, plans, strict=True):
        ids = np.arange(at, at + len(mine), dtype=np.int64)
        if segments:
            k = config.model_gateways
            if k > 1 and config.gateway_skew is not None and not len(setup.shares):
                setup.shares = run.rng.dirichlet([config.gateway_skew] * k)
            if k == 1:
                via = None
            elif config.gateway_dealt:
                via = (setup.dealt + np.arange(len(ids), dtype=np.int64)) % k
                setup.dealt += len(ids)
            elif len(setup.shares):
                via = run.rng.choice(k, len(ids), p=setup.shares).astype(np.int64)
            else:
                via = run.rng.integers(0, k, len(ids), dtype=np.int64)
            setup.turns = setup.turns or [0] * k
            gateway.balance(
                engine,
                setup.index,
                ids,
                segments,
                setup.turns,
                config.balance,
                via,
                sharing=config.sharing,
            )
        else:
            engine.dispatch(setup.index, ids, slots)
        at += len(mine)
    engine.run_until(t1)
    arrived: F64 = window.counts.sum(axis=(1, 2)).astype(np.float64)
    for setup in setups:
        setup.signals = _close_epoch(engine, setup, int(arrived[setup.index]), config, t0, t1)
    return arrived


def _draw(run: _Run, t0: float, t1: float, *, keep: F64, dealt: tuple[Replicas, I64, I64] | None = None) -> Window:
    """The period's arrivals under the run's traffic shape (``arrivals.draw`` with the config's settings)."""
    config = run.config
    return draw(
        run.streams,
        run.rng,
        rps=run.rps,
        t0=t0,
        t1=t1,
        start_s=config.start_s,
        profile=config.profile,
        bursts=config.bursts,
        keep=keep,
        dealt=dealt,
    )


def _steady_period(run: _Run, t0: float, t1: float) -> F64:
    """One period of a steady stretch: arrivals counted, the autoscaler run on them, no request simulated."""
    config = run.config
    window = _draw(run, t0, t1, keep=np.zeros(len(run.streams)))
    arrived: F64 = window.counts.sum(axis=(1, 2)).astype(np.float64)
    for setup in run.setups:
        setup.recent = np.concatenate([setup.recent, window.counts[setup.index]], axis=1)[:, -gateway.SHED_WINDOWS :]
        setup.signals = _close_epoch(run.engine, setup, int(arrived[setup.index]), config, t0, t1, held=setup.signals)
    return arrived


def _trace(run: _Run) -> tuple[Requests, Outcome]:
    reqs = _empty_requests()
    for part, _ in run.trace:
        reqs = _concat(reqs, part)
    out = Outcome.concat([o for _, o in run.trace]) if run.trace else _fresh_outcome(0)
    order = np.argsort(reqs.arrival, kind="stable")
    reqs, out = reqs.take(order), out.take(order)
    for setup in run.setups:
        setup.requests = np.flatnonzero(reqs.origin == setup.index)
    return reqs, out


def _fresh_outcome(n: int) -> Outcome:
    return Outcome(
        admitted=np.full(n, np.nan),
        first=np.full(n, np.nan),
        done=np.full(n, np.nan),
        shed=np.zeros(n, dtype=np.int64),
        preemptions=np.zeros(n, dtype=np.int64),
        failover=np.zeros(n, dtype=np.bool_),
    )


def _empty_requests() -> Requests:
    i = np.zeros(0, dtype=np.int64)
    return Requests(np.zeros(0), i, i, i, i, i, i, i, i, np.zeros(0, dtype=np.bool_), i, np.zeros(0, dtype=np.float64))


def _concat(a: Requests, b: Requests) -> Requests:
    return a.concat(b) if len(a) else b


def _epoch_ends(duration_s: float) -> list[float]:
    count = math.ceil(duration_s / EVALUATION_S - 1e-9)
    return [min(duration_s, (k + 1) * EVALUATION_S) for k in range(count)]


def _setup_pools(
    spec: PlatformSpec, planned: list[PoolPlan], config: SimConfig
) -> tuple[list[PoolSetup], list[PoolTiming]]:
    setups: list[PoolSetup] = []
    params: list[PoolTiming] = []
    shed_at = np.array(
        [
            spec.queues.priorities[level].shed_at_utilization if level in spec.queues.priorities else math.inf
            for level in LEVELS
        ]
    )
    sampled = config.fidelity is not Fidelity.REQUEST
    if sampled and config.sample_replicas < 1:
        raise SpecError(f"sample_replicas {config.sample_replicas} must be at least 1, e.g. {SAMPLE_REPLICAS}")
    first = slot0 = 0
    for index, ((region_name, pool_name), pool_plan) in enumerate(zip(placements(spec), planned, strict=True)):
        region = spec.region(region_name)
        pool = spec.pool(pool_name)
        placement = next(pl for pl in region.pools if pl.pool == pool_name)
        node = node_for(pool)
        encoder = spec.is_embedding(pool)
        params.append(timing(spec, pool))
        scaler = Scaler(
            first=first,
            min_replicas=placement.min_replicas,
            max_replicas=placement.max_replicas,
            spec=pool.autoscaling,
            service_rps_per_replica=pool_plan.service_rps_per_replica,
            sized_rps_per_replica=pool_plan.sized_rps_per_replica,
            replicas_per_node=replicas_per_node(pool),
            gpus_per_replica=pool.gpus_per_replica,
            gpus_per_node=node.gpus,
            usd_per_node_hour=spec.instance_price(node.name),
        )
        # An embedding call's latency is not on a chat request's path: one sampled encoder is enough.
        per_pool = 1 if encoder else config.sample_replicas
        slots = min(per_pool, placement.max_replicas) if sampled else placement.max_replicas
        setups.append(
            PoolSetup(
                index=index,
                region=region_name,
                name=pool_name,
                tier=pool.tier,
                encoder=encoder,
                scaler=scaler,
                slot0=slot0,
                slots=slots,
                sampled=sampled,
                failover=_failover_provider(spec, region_name, pool.tier),
                shed_at=shed_at,
                kept_share=prefix_kept_share(spec, pool),
                recent=np.zeros((len(LEVELS), gateway.SHED_WINDOWS), dtype=np.int64),
            )
        )
        first += placement.max_replicas
        slot0 += slots
    return setups, params


def _failover_provider(spec: PlatformSpec, region_name: str, tier: Tier) -> int:
    """The index of the first provider on the tier's chain (``Routes.first_provider``): where overflow goes."""
    provider = Routes(spec, region_name).first_provider(tier)
    return -1 if provider is None else spec.providers.index(provider)


def _pool_state(run: _Run, reqs: Requests) -> RequestState:
    """The engine's per-request inputs: prompt tokens to hold and to prefill after prefix-cache hits."""
    kept = np.array([s.kept_share for s in run.setups] or [1.0])[np.maximum(reqs.dest, 0)]
    prefill = np.maximum(1, np.ceil(reqs.prompt * kept)).astype(np.int64)
    # The gateway's queue deadline (the level's max wait, or the class's TTFT SLO when sooner), per (class, level).
    return RequestState(
        arrival=reqs.arrival.tolist(),
        priority=reqs.priority.tolist(),
        context=reqs.prompt.tolist(),
        prefill=prefill.tolist(),
        cached=(reqs.prompt - prefill).tolist(),
        tokens=reqs.output.tolist(),
        max_wait=run.deadline[reqs.cls, reqs.priority].tolist(),
    )


def _trailing_rate(counts: I64, windows: I64) -> F64:
    """Arrivals per second per level over the ``SHED_WINDOWS`` windows before each window (the first sees itself).

    ``counts`` holds the ``SHED_WINDOWS`` windows before the period, then the period's own.
    """
    cumulative = np.concatenate([np.zeros((counts.shape[0], 1)), np.cumsum(counts, axis=1)], axis=1)
    end = np.clip(windows, 1, counts.shape[1])
    start = np.maximum(end - gateway.SHED_WINDOWS, 0)
    rate: F64 = (cumulative[:, end] - cumulative[:, start]) / ((end - start) * gateway.SHED_WINDOW_S)
    return rate


Segments = list[tuple[int, I64]]  # runs of a pool's rows, each with the replicas ready while they arrive


def _gateway(
    run: _Run, setup: PoolSetup, reqs: Requests, slot_of: I64, counts: I64, t0: float, t1: float, share: float
) -> tuple[I64, I64, Segments]:
    """Shed by priority at the gateway, then deal the rest round-robin over the ready replicas (``gateway.deal``).

    Returns the window's rows that go to the engine and the slot of each. Under a per-request
    policy (``SimConfig.balance``) the slots are left to ``gateway.balance`` (-1 here) and the
    segments say which replicas were ready for which rows. Shed requests are
    accounted here; in sampled mode, requests beyond the share the sampled replicas get
    when more replicas become ready are dropped (their weight is carried by the others).
    """
    scaler = setup.scaler
    history = setup.recent
    seen = np.concatenate([history, counts], axis=1)
    setup.recent = seen[:, -gateway.SHED_WINDOWS :]
    rids = np.flatnonzero((reqs.kind == int(Kind.POOL)) & (reqs.dest == setup.index))
    empty = np.zeros(0, dtype=np.int64)
    segments: Segments = []
    if len(rids) == 0:
        return empty, empty, segments
    base = math.floor(t0 / gateway.SHED_WINDOW_S + 1e-9)
    window = np.minimum((reqs.arrival[rids] // gateway.SHED_WINDOW_S).astype(np.int64) - base, counts.shape[1] - 1)
    first, last = int(window[0]), int(window[-1])
    windows = np.arange(first, last + 1)
    # A run's first window sees itself; later ones the SHED_WINDOWS before them, across periods.
    lead = gateway.SHED_WINDOWS if base > 0 else 0
    rate = _trailing_rate(seen[:, gateway.SHED_WINDOWS - lead :], windows + lead)
    ready = np.array(scaler.dispatchable_counts([(base + w) * gateway.SHED_WINDOW_S for w in windows.tolist()]))
    fractions = gateway.admit_fractions(rate, ready * scaler.service_rps_per_replica, setup.shed_at)
    admitted = run.uniform(len(rids)) < fractions[reqs.priority[rids], window - first]
    if not admitted.all():
        run.shed_now(reqs.take(rids[~admitted]))
        rids = rids[admitted]
    cuts = [t0, *scaler.ready_times(t0, t1), t1]
    times = reqs.arrival[rids]
    rows: list[I64] = []
    slots: list[I64] = []
    for a, b in itertools.pairwise(cuts):
        lo, hi = np.searchsorted(times, [a, b])
        part = rids[lo:hi]
        replicas, now = setup.targets(a)
        if len(part) == 0:
            continue
        if len(replicas) == 0:  # nothing ready (scaled to zero): the gateway turns them away
            run.shed_now(reqs.take(part))
            continue
        if setup.sampled and now < share:
            part = part[run.uniform(len(part)) < now / share]
            reqs.weight[part] = 1.0 / now
        if len(part) and slot_of[part[0]] >= 0:  # dealt to the sampled replicas when drawn
            rows.append(part)
            slots.append(setup.slot0 + slot_of[part])
            continue
        if not run.config.per_request:
            dealt, setup.turn = gateway.deal(replicas, len(part), setup.turn)
        else:  # chosen per request on the replicas' state at each arrival, once they are in the engine
            dealt = np.full(len(part), -1, dtype=np.int64)
            segments.append((len(part), replicas))
        rows.append(part)
        slots.append(dealt)
    if not rows:
        return empty, empty, segments
    return np.concatenate(rows), np.concatenate(slots), segments


def _close_epoch(
    engine: Engine,
    setup: PoolSetup,
    arrived: int,
    config: SimConfig,
    t0: float,
    t1: float,
    held: Signals | None = None,
) -> Signals:
    """Record the period, read the signals, and let the autoscaler act for the next one.

    ``held``: in a steady stretch the engine is not run, so the queue, KV and TTFT signals are
    those of the last simulated period; the arrival rate is this period's.
    """
    scaler = setup.scaler
    counters = engine.counters[setup.index]
    ready_count = scaler.dispatchable_count(t1)
    ready, share = setup.targets(t1)
    if held is None:
        setup.ttft_samples = len(counters.ttfts)
        kv = float(engine.kv_usage(ready).mean()) if len(ready) else 0.0
        waiting_age = t1 - counters.waiting_arrival_sum / counters.waiting if counters.waiting > 0 else 0.0
        admitted_wait = counters.admitted_wait_sum / counters.admitted if counters.admitted else 0.0
        ttft_p95 = float(np.percentile(counters.ttfts, 95)) if counters.ttfts else 0.0
        signals = Signals(arrived / (t1 - t0), max(admitted_wait, waiting_age), kv, ttft_p95)
    else:
        signals = Signals(arrived / (t1 - t0), held.queue_wait_s, held.kv_usage, held.ttft_p95_s)
        kv, ttft_p95 = held.kv_usage, held.ttft_p95_s
    draining = scaler.count(ReplicaState.DRAINING)
    setup.timeline.append(
        metrics.EpochRecord(
            t_s=t1,
            ready=ready_count,
            starting=scaler.pending(t1),
            draining=draining,
            arrival_rps=signals.arrival_rps,
            service_rps=ready_count * scaler.service_rps_per_replica,
            waiting=round(counters.waiting / share) if share > 0 else counters.waiting,
            kv_usage=kv,
            queue_wait_s=signals.queue_wait_s,
            ttft_p95_s=ttft_p95,
            usd_per_hour=scaler.usd_per_hour(),
        )
    )
    counters.signals_reset()
    for slot in range(scaler.first, scaler.first + scaler.max_replicas) if draining else ():
        if scaler.state[slot - scaler.first] is ReplicaState.DRAINING:
            if setup.sampled:
                scaler.drained(slot)  # its tail is not simulated: it stops a period after it was set draining
            elif engine.idle(slot):
                scaler.drained(slot)
                engine.stop(slot)
    started, _, _ = scaler.step(t1, config.start_s + t1, signals)
    if not setup.sampled:
        for slot in started:
            engine.start(slot, scaler.ready_at[slot - scaler.first])
    return signals
