"""Capacity plan of a whole spec: per (region, pool) memory, latency, queueing and cost.

``plan(spec)`` is what ``tokenplane plan`` prints and what the policies check.
It never imports pulumi. Memory and cost come from ``tokenplane.model.capacity``; a
pool's throughput, concurrency and latency from ``tokenplane.model.pool_performance``
(KV-bounded continuous batching, the model ``plan --verify`` checks against the
simulator); this module only decides which numbers go in.

Predictions "at peak" assume the pool runs at its configured ``max_replicas``
(the most the autoscaler can reach). ``replicas_needed`` is the fewest replicas
that keep utilization under the pool's target, the batch within the KV cache
with headroom, and each class's share of requests within its TTFT SLO at its
``slo_attainment``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from tokenplane.catalog import GIB
from tokenplane.model import capacity as cap
from tokenplane.model.admission import shed_at_peak
from tokenplane.model.plan_workers import share_out
from tokenplane.model.platform_attainment import ClassOverPlatform, PoolAttainments, over_platform
from tokenplane.model.pool_performance import Health, ReplicaPerformance, class_mix, for_pool
from tokenplane.model.pricing_cache import PricingCache
from tokenplane.model.replica_search import MAX_REPLICAS_SEARCHED, first_holding, first_meeting
from tokenplane.model.sizing import IMAGE_VLLM
from tokenplane.model.traffic import Spill, TrafficPlan, route
from tokenplane.model.vllm_memory import parse_version, version_warning
from tokenplane.pool_model import (
    PoolTiming,
    engine_release,
    memory,
    node_for,
    nodes_for,
    replica_requests,
    timing,
)
from tokenplane.routes import Routes
from tokenplane.spec import PlatformSpec, Pool, Priority, Region, WorkloadClass

# The planner sizes for this share of a class's allowed misses (1 - slo_attainment) and keeps the rest, 0.5
# points at 99%, for what the pool model leaves out (preemption below saturation, replicas' uneven load) and for
# the simulator's own spread, against which ``plan --verify`` holds it. Why that is enough, measured at 99% on the
# issue-28 RAG pool, the hardest case (prompts a twelfth of the KV cache; ``kv_stall`` prices their stalls): at
# the planned count the model is 0.22 points above the simulator's mean over six seeds, the seeds spread with an
# sd of 0.22 points (stalls miss requests in bursts: about 2.7 binomial standard errors), and ``--verify`` passes a
# class within two binomial standard errors (0.16 points at 10,000 judged requests). A plan then fails its own
# verification only past 0.22 + 2 x 0.22 - 0.16 = 0.50 points: two of the simulator's sds. The example specs'
# pools are nearer the model: within 0.12 points on every class of dev, minimal and byteion's SLO-bound pools.
PLANNED_MISS_SHARE = 0.5
MISS_FLOOR = 1e-12  # a class with no modelled miss: its log distance to the target stays finite for the search


def sizing_target(slo_attainment: float) -> float:
    """The attainment the planner sizes a class for: half its miss budget spent, e.g. 99.5% for 99%."""
    return 1 - (1 - slo_attainment) * PLANNED_MISS_SHARE


@dataclass(frozen=True)
class ClassPrediction:
    ttft_p50_ms: float
    ttft_p95_ms: float
    e2e_p95_ms: float
    max_concurrency: float
    slo_ttft_p95_ms: float | None
    slo_e2e_p95_ms: float | None
    rps: float
    attainment: float | None = None  # share of the class's requests within its TTFT SLO (None: no SLO or no load)


@dataclass
class PoolPlan:
    region: str
    jurisdiction: str
    name: str
    tier: str
    isolation: str
    gpu: str
    instance_type: str
    tp: int
    pp: int
    gpus_per_replica: int
    weights_gib: float
    kv_gib: float
    kv_tokens: int
    kv_bytes_per_token: int
    batch_slots: int
    arrival_rps: float  # lambda
    service_rps_per_replica: float  # mu of one replica
    sized_rps_per_replica: float  # arrivals per replica the plan holds: lam / replicas_needed, else mu x target
    min_replicas: int
    max_replicas: int
    replicas_needed: int
    utilization: float  # rho at max replicas
    queue_wait_mean_ms: float
    queue_wait_p95_ms: float
    itl_p50_ms: float
    itl_p95_ms: float
    kv_usage: float  # share of the KV cache the running batch holds at peak
    classes: dict[str, ClassPrediction]
    nodes_needed: int
    nodes_max: int
    gpus_needed: int
    gpus_max: int
    usd_per_hour: float  # at replicas_needed
    usd_per_hour_max: float
    usd_per_hour_min: float
    usd_per_million_tokens: float  # effective, at the load actually served
    provider_usd_per_million_tokens: float | None
    provider: str | None
    calibration: str | None = None  # the calibration file the pool's timing was measured in; None: the datasheet
    # The server's work per other request in flight that the pool is priced with, and whether its calibration
    # file measured it (False: the datasheet's constant, also kept by a file written before it was measured).
    api_per_stream_ms: float = 0.0
    api_per_stream_measured: bool = False
    # Each API server process's busy share at the planned peak (``capacity.api_server_busy``), and the count the
    # load needs under ``capacity.API_SERVER_BUSY_MAX`` (None: no count is enough).
    api_server_busy: float = 0.0
    api_servers_needed: int | None = 1
    at_needed: Health | None = field(default=None, repr=False)  # the pool model at replicas_needed, for --verify

    @property
    def ttft_p95_ms(self) -> float:
        return max((c.ttft_p95_ms for c in self.classes.values()), default=0.0)

    @property
    def service_rps(self) -> float:
        return self.service_rps_per_replica * self.max_replicas


@dataclass(frozen=True)
class PlanViolation:
    kind: str  # memory | stability | slo | capacity | quota | budget | unrouted | cost
    message: str
    region: str | None = None
    pool: str | None = None


@dataclass
class Plan:
    platform: str
    pools: list[PoolPlan]
    spills: list[Spill]
    violations: list[PlanViolation] = field(default_factory=list)
    warnings: list[PlanViolation] = field(default_factory=list)
    budget_usd_per_hour: float = 0.0
    worst_case_usd_per_hour: float = 0.0
    worst_case_scenario: str = "normal"
    notes: list[str] = field(default_factory=list)  # facts of the deployment a reader must know, not problems
    # Each class with a TTFT SLO over the whole platform, at the pools' replicas_needed: the class's own verdict.
    platform_attainment: dict[WorkloadClass, ClassOverPlatform] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.violations

    def summary(self) -> dict[str, float | int | str | bool]:
        served = [p for p in self.pools if p.arrival_rps > 0]
        return {
            "platform": self.platform,
            "pools": len(self.pools),
            "regions": len({p.region for p in self.pools}),
            "peak_rps_to_pools": round(sum(p.arrival_rps for p in self.pools), 3),
            "peak_rps_to_providers": round(sum(s.rps for s in self.spills), 3),
            "gpus_needed": sum(p.gpus_needed for p in self.pools),
            "gpus_max": sum(p.gpus_max for p in self.pools),
            "usd_per_hour": round(sum(p.usd_per_hour for p in self.pools), 2),
            "usd_per_hour_max": round(self.worst_case_usd_per_hour, 2),
            "worst_case_scenario": self.worst_case_scenario,
            "budget_usd_per_hour": self.budget_usd_per_hour,
            "max_utilization": round(max((p.utilization for p in served), default=0.0), 4),
            "ok": self.ok,
        }


def plan(spec: PlatformSpec, *, cache: PricingCache | None = None, workers: int = 1) -> Plan:
    """Size every (region, pool) of the spec and list what does not hold.

    ``cache``: where the pool model keeps its TTFT pricings between runs (the same numbers, read
    back); ``workers``: processes that size the pools (``plan_workers``: forked, the same plan).
    """
    traffic = route(spec)
    result = Plan(spec.platform.name, [], traffic.spills, budget_usd_per_hour=spec.budget.max_usd_per_hour)
    timings: dict[str, PoolTiming] = {}  # a pool's iteration costs are the same in every region it runs in

    def size(region: Region, name: str) -> tuple[PoolPlan, list[PlanViolation], list[PlanViolation]]:
        pool = spec.pool(name)
        if pool.name not in timings:
            timings[pool.name] = timing(spec, pool)
        return _plan_pool(spec, region, pool, traffic.loads[(region.name, name)].per_class, timings[pool.name], cache)

    placed = [(region, placement.pool) for region in spec.regions for placement in region.pools]
    sized = share_out([functools.partial(size, region, name) for region, name in placed], workers)
    for pool_plan, problems, warnings in sized:
        result.pools.append(pool_plan)
        result.violations.extend(problems)
        result.warnings.extend(warnings)
    for miss in traffic.unrouted:
        result.violations.append(
            PlanViolation(
                "unrouted",
                f"{miss.rps:.1f} req/s of class {miss.cls.value} tier {miss.tier.value} in region {miss.region} has no "
                f"pool and no provider along {' -> '.join(miss.chain)}; place a {miss.tier.value} pool serving class "
                f"{miss.cls.value} there or add a provider to routing.fallbacks.{miss.tier.value}",
                region=miss.region,
            )
        )
    # A class the pools all serve within its SLO can still miss over the platform, by what providers serve.
    result.platform_attainment = over_platform(spec, traffic, planned_attainments(result.pools))
    for over in result.platform_attainment.values():
        if not over.met:
            result.violations.append(PlanViolation("slo", over.message()))
        elif over.provider_missed_rps > 0:
            result.warnings.append(PlanViolation("slo", over.note()))
    result.warnings.extend(_admission_checks(spec, result, traffic))
    result.warnings.extend(_release_checks(spec))
    result.worst_case_usd_per_hour, result.worst_case_scenario = worst_case_spend(spec, result.pools)
    result.violations.extend(_region_checks(spec, result))
    result.warnings.extend(_dr_checks(spec, result))
    result.warnings.extend(_idle_gpu_warnings(spec, result))
    result.notes.append(limits_note(spec))
    return result


def planned_attainments(pools: list[PoolPlan]) -> PoolAttainments:
    """Each pool's attainment per class in the pool model at ``replicas_needed`` (none where it has no model)."""
    found: dict[tuple[str, str], dict[str, float | None]] = {}
    for p in pools:
        classes = p.at_needed.classes if p.at_needed is not None else {}
        found[(p.region, p.name)] = {name: c.attainment for name, c in classes.items()}
    return found


def _admission_checks(spec: PlatformSpec, result: Plan, traffic: TrafficPlan) -> list[PlanViolation]:
    """Pools planned above a priority level's ``shed_at_utilization``: the gateway sheds part of it at every peak."""
    found: list[PlanViolation] = []
    for pp in result.pools:
        if pp.arrival_rps <= 0 or pp.replicas_needed <= 0:
            continue
        pool = spec.pool(pp.name)
        mix = class_mix(spec, pp.region, pool, traffic.loads[(pp.region, pp.name)].per_class)
        service = pp.service_rps_per_replica * pp.replicas_needed
        for level, share in shed_at_peak(spec, mix, service).items():
            threshold = spec.queues.priorities[level].shed_at_utilization
            classes = ", ".join(c.name for c in mix if c.levels[list(Priority).index(level)] > 0)
            found.append(
                PlanViolation(
                    "capacity",
                    f"{pp.region}/{pp.name}: planned at ρ {pp.arrival_rps / service:.2f} at peak "
                    f"({pp.replicas_needed} replicas), over queues.priorities.{level.value}.shed_at_utilization "
                    f"{threshold:g}: the gateway turns away {share:.1%} of its {level.value} requests (class "
                    f"{classes}) at every peak. Raise that threshold above the pool's utilization, or lower "
                    f"pools[{spec.pools.index(pool)}].autoscaling.target_utilization below {threshold:g}",
                    pp.region,
                    pp.name,
                )
            )
    return found


def _release_checks(spec: PlatformSpec) -> list[PlanViolation]:
    """A warning per pool whose vLLM release is outside those the memory model covers (its KV cache may differ)."""
    found: list[PlanViolation] = []
    for index, pool in enumerate(spec.pools):
        release = engine_release(pool)
        if pool.engine.vllm_version is not None and parse_version(release) != parse_version(IMAGE_VLLM):
            # The components deploy the pinned image whatever the field says: the sizing would be another engine's.
            found.append(
                PlanViolation(
                    "memory",
                    f"pools[{index}].engine.vllm_version: pool {pool.name} is sized as vLLM {release}, but the image "
                    f"tokenplane deploys runs vLLM {IMAGE_VLLM}; set it to {IMAGE_VLLM} or pin the image to that "
                    "release",
                    pool=pool.name,
                )
            )
        note = version_warning(release)
        if note is not None:
            found.append(
                PlanViolation(
                    "memory",
                    f"pools[{index}].engine.vllm_version: pool {pool.name}: {note}; its KV cache and every figure "
                    "sized from it are this model's, not that release's",
                    pool=pool.name,
                )
            )
    return found


def _idle_gpu_warnings(spec: PlatformSpec, result: Plan) -> list[PlanViolation]:
    """Pools on a default node that leaves GPUs idle at their warm replicas, where a cheaper node fits."""
    from tokenplane.model.node_fit import idle_on_default_node

    pools = {p.name: p for p in spec.pools}
    out = []
    for pp in result.pools:
        idle = idle_on_default_node(pools[pp.name], pp.min_replicas)
        if idle is not None:
            out.append(
                PlanViolation("cost", idle.message(f"{pp.region}/{pp.name}", pools[pp.name]), pp.region, pp.name)
            )
    return out


def limits_note(spec: PlatformSpec) -> str:
    """How far a tenant's limits reach: each region counts them in its own Redis (``platform.limits_scope``)."""
    reach: dict[str, list[str]] = {}
    for tenant in spec.tenants:
        regions = [r.name for r in spec.regions if tenant.residency in (None, r.jurisdiction)]
        reach.setdefault(", ".join(regions), []).append(tenant.name)
    per = "; ".join(f"{', '.join(t)}: {len(r.split(', '))} ({r})" for r, t in reach.items()) or "no tenants"
    return (
        "rate limits and quotas are counted per region, in each region's Redis (limits_scope: region): a tenant "
        f"may use its rpm, tpm and monthly quota once in every region whose gateway it reaches; regions per "
        f"tenant: {per}"
    )


def _plan_pool(
    spec: PlatformSpec,
    region: Region,
    pool: Pool,
    per_class: dict[WorkloadClass, float],
    costs: PoolTiming,
    cache: PricingCache | None = None,
) -> tuple[PoolPlan, list[PlanViolation], list[PlanViolation]]:
    """One pool's plan, its violations, and its advisory warnings."""
    placement = next(pl for pl in region.pools if pl.pool == pool.name)
    mem = memory(spec, pool)
    node = node_for(pool)
    lam = sum(per_class.values())
    # A pool with no traffic (a DR standby) is priced for the classes' platform-wide mix.
    weights = per_class or {c: spec.workload_classes[c].share for c in pool.classes if c in spec.workload_classes}
    shapes = [
        cap.RequestShape(spec.workload_classes[c].prompt_tokens.mean, spec.workload_classes[c].output_tokens.mean, w)
        for c, w in weights.items()
    ]
    shape = cap.mean_shape(shapes) if shapes else cap.RequestShape(1, 1)
    perf = for_pool(spec, region.name, pool, weights, pool_timing=costs, cache=cache)
    problems: list[PlanViolation] = []
    warnings: list[PlanViolation] = []
    where = f"pool {pool.name} in {region.name}"
    mu = perf.saturation_rps() if perf is not None else 0.0
    slots = round(perf.concurrency()) if perf is not None else pool.engine.max_num_seqs
    start = _search_start(perf, lam, pool, placement.min_replicas) if perf is not None else None
    if perf is not None and lam > 0:  # the two counts every search asks first, priced together
        first = [(lam / placement.max_replicas, placement.max_replicas)]
        perf.prefetch(first + ([(lam / start, start)] if start is not None else []))
    at_max = (
        perf.health(lam / placement.max_replicas, replicas=placement.max_replicas)
        if perf is not None and lam > 0
        else None
    )
    needed = (
        _replicas_needed(perf, lam, placement.min_replicas, placement.max_replicas, start)
        if perf is not None
        else placement.min_replicas
    )
    at_needed = perf.health(lam / needed, replicas=needed) if perf is not None and lam > 0 and needed > 0 else None
    rho = cap.utilization(lam, mu * placement.max_replicas)
    if lam > 0 and rho >= 1:
        problems.append(
            PlanViolation(
                "stability",
                f"{where}: lambda={lam:.1f} req/s >= mu={mu * placement.max_replicas:.1f} req/s at max_replicas="
                f"{placement.max_replicas} (rho={rho:.2f}); the queue grows by {lam - mu * placement.max_replicas:.1f} "
                f"req/s. Raise max_replicas to at least {needed}",
                region.name,
                pool.name,
            )
        )
    elif needed > placement.max_replicas:
        problems.append(
            PlanViolation(
                "capacity",
                f"{where}: needs {needed} replicas to meet its SLOs (each class's slo_attainment within its TTFT SLO) "
                f"at rho <= {pool.autoscaling.target_utilization} but max_replicas={placement.max_replicas}; "
                f"raise max_replicas to {needed}",
                region.name,
                pool.name,
            )
        )
    classes = _predictions(spec, pool, mem, per_class, at_max)
    if at_max is not None and rho < 1:
        for cls, pred in classes.items():
            got = at_max.classes[cls].attainment
            target = at_max.targets[cls]
            if got is None or pred.rps <= 0 or got >= target:
                continue
            if needed > placement.max_replicas:
                fix = f"raise max_replicas to {needed}"
            else:  # queueing is not the cause: prefill of a long prompt alone is too slow here
                fix = "queueing is not the cause: use a faster GPU, a higher tensor_parallel, or relax the SLO"
            problems.append(
                PlanViolation(
                    "slo",
                    f"{where}: class {cls} meets its TTFT SLO of {pred.slo_ttft_p95_ms:.0f} ms for {got:.2%} of "
                    f"requests (P95 TTFT {pred.ttft_p95_ms:.0f} ms), below its slo_attainment {target:.2%}, at "
                    f"max_replicas={placement.max_replicas}; {fix}",
                    region.name,
                    pool.name,
                )
            )
        for cls, pred in classes.items():
            e2e = pred.slo_e2e_p95_ms
            if e2e is not None and pred.rps > 0 and pred.e2e_p95_ms > e2e:
                problems.append(
                    PlanViolation(
                        "slo",
                        f"{where}: class {cls} P95 end-to-end {pred.e2e_p95_ms:.0f} ms exceeds its SLO of {e2e:.0f} ms "
                        f"(P95 output at {at_max.operating.itl_s * 1000:.0f} ms per token); raise the SLO, lower the "
                        "class's output_tokens, or use speculative decoding or a faster GPU",
                        region.name,
                        pool.name,
                    )
                )
    busy, servers = _api_server(pool, at_needed, encoder=spec.is_embedding(pool))
    if servers is None or servers > pool.engine.api_server_count:
        problems.append(
            PlanViolation(
                "server",
                f"{where}: each of its replicas' {pool.engine.api_server_count} API server process(es) is "
                f"{busy:.0%} busy at the planned peak (capacity.api_server_busy: admitting {lam / needed:.1f} req/s, "
                + (
                    f"returning vectors, no stream), above {cap.API_SERVER_BUSY_MAX:.0%}: every request waits behind it"
                    if spec.is_embedding(pool)
                    else f"streaming {_streamed(at_needed):,.0f} tokens/s), above "
                    f"{cap.API_SERVER_BUSY_MAX:.0%}: every first token and every chunk waits behind it"
                )
                + ", past the latencies planned. "
                + (
                    f"Set engine.api_server_count: {servers}"
                    if servers is not None
                    else "No server count keeps up with its steps: lower max_num_seqs or use a larger model"
                ),
                region.name,
                pool.name,
            )
        )
    cores = replica_requests(pool).cpu
    if pool.engine.api_server_count + 1 > cores:
        warnings.append(
            PlanViolation(
                "server",
                f"{where}: engine.api_server_count={pool.engine.api_server_count} server processes and the engine core "
                f"need {pool.engine.api_server_count + 1} cores, but a replica's pod requests {cores} on "
                f"{node.name}; they share them and the server falls behind. Use an instance type with more vCPUs "
                "per GPU",
                region.name,
                pool.name,
            )
        )
    kv_usage = 0.0
    if at_max is not None and rho < 1 and mem.kv_tokens and at_max.operating.feasible:
        kv_usage = at_max.operating.kv_tokens / mem.kv_tokens
    threshold = pool.autoscaling.signals.kv_cache_usage
    if threshold is not None and kv_usage > threshold:
        warnings.append(
            PlanViolation(
                "memory",
                f"{where}: the running batch holds {kv_usage:.0%} of the KV cache at peak, above the scale-out "
                f"signal kv_cache_usage={threshold}; the autoscaler will not settle. Use kv_cache_dtype: fp8, a "
                "higher tensor_parallel, or a larger GPU",
                region.name,
                pool.name,
            )
        )
    waits = [c for c in at_max.classes.values()] if at_max is not None else []
    rates = [per_class.get(WorkloadClass(c.name), 0.0) for c in waits]
    wait_mean = sum(c.wait_mean_s * r for c, r in zip(waits, rates, strict=True)) / lam if lam > 0 else 0.0
    wait_p95 = max((c.wait_p95_s for c, r in zip(waits, rates, strict=True) if r > 0), default=0.0)
    nodes_needed = nodes_for(pool, needed)
    nodes_max = nodes_for(pool, placement.max_replicas)
    price = spec.instance_price(node.name)
    tokens_per_s = lam * (shape.prompt_tokens + shape.output_tokens)
    provider_name, provider_price = _provider_price(Routes(spec, region.name), pool, shape)
    encoder = spec.is_embedding(pool)
    return (
        PoolPlan(
            region=region.name,
            jurisdiction=region.jurisdiction.value,
            name=pool.name,
            tier=pool.tier.value,
            isolation=pool.isolation.value,
            gpu=pool.gpu,
            instance_type=node.name,
            tp=pool.tensor_parallel,
            pp=pool.pipeline_parallel,
            gpus_per_replica=pool.gpus_per_replica,
            weights_gib=mem.weights / GIB,
            kv_gib=max(mem.kv_available, 0.0) / GIB,
            kv_tokens=mem.kv_tokens,
            kv_bytes_per_token=mem.kv_bytes_per_token,
            batch_slots=slots,
            arrival_rps=lam,
            service_rps_per_replica=mu,
            # Where the floor decides replicas_needed, the pool could carry more per replica: mu at the target.
            sized_rps_per_replica=lam / needed
            if lam > 0 and needed > placement.min_replicas
            else mu * pool.autoscaling.target_utilization,
            min_replicas=placement.min_replicas,
            max_replicas=placement.max_replicas,
            replicas_needed=needed,
            utilization=rho,
            queue_wait_mean_ms=wait_mean * 1000,
            queue_wait_p95_ms=wait_p95 * 1000,
            itl_p50_ms=0.0 if encoder or at_max is None else at_max.operating.itl_s * 1000,
            itl_p95_ms=0.0 if encoder or at_max is None else at_max.itl_p95_s * 1000,
            kv_usage=kv_usage,
            classes=classes,
            nodes_needed=nodes_needed,
            nodes_max=nodes_max,
            gpus_needed=nodes_needed * node.gpus,
            gpus_max=nodes_max * node.gpus,
            usd_per_hour=nodes_needed * price,
            usd_per_hour_max=nodes_max * price,
            usd_per_hour_min=nodes_for(pool, placement.min_replicas) * price,
            usd_per_million_tokens=cap.usd_per_million_tokens(nodes_needed * price, tokens_per_s),
            provider_usd_per_million_tokens=provider_price,
            provider=provider_name,
            calibration=pool.calibration,
            api_per_stream_ms=costs.api_per_stream_s * 1000,
            api_per_stream_measured=costs.api_per_stream_measured,
            api_server_busy=busy,
            api_servers_needed=servers,
            at_needed=at_needed,
        ),
        problems,
        warnings,
    )


def _streamed(health: Health | None) -> float:
    """Tokens a second one replica streams at ``health``'s operating point: a token a sequence a step."""
    if health is None or not health.operating.feasible or health.operating.iteration_s <= 0:
        return 0.0
    return health.operating.batch / health.operating.iteration_s


def _api_server(pool: Pool, health: Health | None, *, encoder: bool) -> tuple[float, int | None]:
    """Each API server process's busy share at ``health`` with the pool's count, and the count it needs.

    An encoder streams no tokens: its server admits requests and returns their vectors. An infeasible
    operating point (the pool cannot carry its load) is the stability check's to report.
    """
    if health is None or not health.operating.feasible:
        return 0.0, 1
    op = health.operating
    batch, step = (0.0, math.inf) if encoder else (op.batch, op.iteration_s)
    busy = cap.api_server_busy(
        arrivals_per_s=op.rps, iteration_s=step, batch=batch, servers=pool.engine.api_server_count
    )
    return busy, cap.api_servers_needed(arrivals_per_s=op.rps, iteration_s=step, batch=batch)


def _predictions(
    spec: PlatformSpec, pool: Pool, mem: cap.MemoryPlan, per_class: dict[WorkloadClass, float], at: Health | None
) -> dict[str, ClassPrediction]:
    """Each class's latency at one load (None: no traffic, reported as zero)."""
    encoder = spec.is_embedding(pool)
    preds: dict[str, ClassPrediction] = {}
    for cls in pool.classes:
        cs = spec.workload_classes.get(cls)
        if cs is None:
            continue
        lat = at.classes.get(cls.value) if at is not None else None
        ttft50 = lat.ttft_p50_s if lat else 0.0
        ttft95 = lat.ttft_p95_s if lat else 0.0
        itl = 0.0 if encoder or at is None else at.operating.itl_s
        longest = cs.prompt_tokens.max + (0 if encoder else cs.output_tokens.max)
        preds[cls.value] = ClassPrediction(
            ttft_p50_ms=ttft50 * 1000,
            ttft_p95_ms=ttft95 * 1000,
            e2e_p95_ms=cap.e2e_seconds(ttft95, itl, int(cs.output_tokens.quantile(0.95))) * 1000,
            max_concurrency=cap.max_concurrency(mem.kv_tokens, longest)
            if mem.kv_tokens
            else float(pool.engine.max_num_seqs),
            slo_ttft_p95_ms=cs.ttft_p95_ms,
            slo_e2e_p95_ms=cs.e2e_p95_ms,
            rps=per_class.get(cls, 0.0),
            attainment=lat.attainment if lat else None,
        )
    return preds


def _replicas_needed(perf: ReplicaPerformance, lam: float, floor: int, priced: int, start: int | None) -> int:
    """Fewest replicas within the utilization target, the KV and slot headroom, and every class's attainment.

    When even an idle replica misses a class's target (its prompts alone prefill too slowly),
    more replicas cannot help: the answer is then the fewest that meet everything else.
    ``priced``: a count whose health the caller has already asked for (the pool's ``max_replicas``),
    tried first as the upper end of the search: it is free. ``start``: ``_search_start``'s answer.
    """
    if lam <= 0:
        return floor
    if start is None:
        return MAX_REPLICAS_SEARCHED
    return first_meeting(lambda count: _standing(perf.health(lam / count, replicas=count)), start, priced)


def _search_start(perf: ReplicaPerformance, lam: float, pool: Pool, floor: int) -> int | None:
    """The fewest replicas within the utilization target and the KV and slot headroom: where the TTFT search starts.

    None when there is no search: no traffic, or a replica that completes nothing.
    """
    mu = perf.saturation_rps()
    if lam <= 0 or mu <= 0:
        return None
    n = max(floor, 1, math.ceil(lam / (mu * pool.autoscaling.target_utilization)))

    def fits(count: int) -> bool:  # the fluid conditions: cheap, no TTFT distribution
        op, kv_ok, slots_ok = perf.headroom(lam / count)
        return op.feasible and kv_ok and slots_ok

    return first_holding(fits, n)


def _standing(health: Health) -> tuple[bool, float]:
    """Whether every class reaches its sizing target, and how far the worst one is from it.

    The distance is log(misses / misses allowed) (> 0: short of it). Misses fall about
    geometrically as replicas are added, so it is close to linear in the count, which is what
    the search interpolates; the decision itself is the plain comparison.
    """
    meets, worst = True, -math.inf
    for c in health.classes.values():
        if c.attainment is None:
            continue
        target = sizing_target(health.targets[c.name])
        meets = meets and c.attainment >= target
        worst = max(worst, math.log(max(1 - c.attainment, MISS_FLOOR) / (1 - target)))
    return meets, worst


def _provider_price(routes: Routes, pool: Pool, shape: cap.RequestShape) -> tuple[str | None, float | None]:
    """The first provider on the tier's failover chain, priced for the pool's request mix."""
    if any(p.name == pool.name for p in routes.embedding_pools):
        return None, None  # providers here are chat models; an embedding price would not compare
    provider = routes.first_provider(pool.tier)
    if provider is None:
        return None, None
    m = provider.models[pool.tier]
    return provider.name, cap.blended_price_per_million(m.input_usd_per_1m, m.output_usd_per_1m, shape)


def worst_case_spend(spec: PlatformSpec, pools: list[PoolPlan]) -> tuple[float, str]:
    """The most the platform can spend per hour, and in which scenario.

    Normally primaries may reach max replicas while DR regions idle at their
    warm minimum. When a primary fails it stops billing and its secondary may
    scale to max. Both never happen at once, so the cap is the worst scenario.
    """
    primaries = {r.name for r in spec.regions if r.role.value == "primary"}

    def spend(failed: str | None) -> float:
        secondary = spec.dr.secondaries.get(failed) if spec.dr and failed else None
        total = 0.0
        for p in pools:
            if p.region == failed:
                continue
            at_max = p.region in primaries or p.region == secondary
            total += p.usd_per_hour_max if at_max else p.usd_per_hour_min
        return total

    scenarios = {"normal peak": spend(None)} | {f"{r} failed over": spend(r) for r in sorted(primaries)}
    worst = max(scenarios, key=lambda k: scenarios[k])
    return scenarios[worst], worst


def _region_checks(spec: PlatformSpec, result: Plan) -> list[PlanViolation]:
    problems: list[PlanViolation] = []
    for region in spec.regions:
        if region.gpu_quota is None:
            continue
        used = sum(p.gpus_max for p in result.pools if p.region == region.name)
        if used > region.gpu_quota:
            problems.append(
                PlanViolation(
                    "quota",
                    f"region {region.name}: {used} GPUs at max replicas exceed gpu_quota={region.gpu_quota}; request a "
                    "service-quota increase or lower max_replicas",
                    region.name,
                )
            )
    spend, scenario = result.worst_case_usd_per_hour, result.worst_case_scenario
    if spend > spec.budget.max_usd_per_hour:
        problems.append(
            PlanViolation(
                "budget",
                f"${spend:,.0f}/h at max replicas ({scenario}) exceeds budget.max_usd_per_hour="
                f"${spec.budget.max_usd_per_hour:,.0f}; lower max_replicas, route more to the small tier, or raise the cap",
            )
        )
    return problems


def _replicas_for(arrival_rps: float, pool_plan: PoolPlan, pool: Pool) -> int:
    return math.ceil(arrival_rps / (pool_plan.service_rps_per_replica * pool.autoscaling.target_utilization))


def _dr_checks(spec: PlatformSpec, result: Plan) -> list[PlanViolation]:
    """Advisory: can each DR secondary carry its primary's peak for critical pools?"""
    if spec.dr is None:
        return []
    warnings: list[PlanViolation] = []
    by_key = {(p.region, p.name): p for p in result.pools}
    for primary, secondary in spec.dr.secondaries.items():
        for (region, name), pp in by_key.items():
            if region != primary or not spec.pool(name).critical:
                continue
            standby = by_key.get((secondary, name))
            if standby is None:
                warnings.append(
                    PlanViolation(
                        "dr",
                        f"critical pool {name} runs in {primary} but not in its DR region {secondary}",
                        primary,
                        name,
                    )
                )
            elif standby.max_replicas < _replicas_for(pp.arrival_rps, standby, spec.pool(name)):
                share = standby.service_rps / pp.arrival_rps
                warnings.append(
                    PlanViolation(
                        "dr",
                        f"DR region {secondary} can carry {share:.0%} of {primary}'s peak for {name} at max_replicas="
                        f"{standby.max_replicas}; raise it to {_replicas_for(pp.arrival_rps, standby, spec.pool(name))}",
                        secondary,
                        name,
                    )
                )
    return warnings
