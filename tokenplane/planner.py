"""Capacity plan of a whole spec: per (region, pool) memory, latency, queueing and cost.

``plan(spec)`` is what ``tokenplane plan`` prints and what the policies check.
It never imports pulumi. All the arithmetic is in ``tokenplane.capacity``; this
module only decides which numbers go in.

Predictions "at peak" assume the pool runs at its configured ``max_replicas``
(the most the autoscaler can reach). ``replicas_needed`` is the fewest replicas
that keep utilization under the pool's target and every class within its SLO.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tokenplane import capacity as cap
from tokenplane.catalog import GIB
from tokenplane.pool_model import memory, node_for, nodes_for, prefix_kept_share, replica_model
from tokenplane.spec import PlatformSpec, Pool, Region, WorkloadClass
from tokenplane.traffic import Spill, route
from tokenplane.transformer import ModelKind

MAX_REPLICAS_SEARCHED = 100_000  # beyond this a pool is not a sizing problem but a design one
PREFILL_INTERFERENCE_SHARE = 0.05  # above this share of steps carrying prefill, P95 ITL sees a chunk
FIXED_POINT_STEPS = 50  # the batch fixed point converges in under 10 steps on every example spec


@dataclass(frozen=True)
class ClassPrediction:
    ttft_p50_ms: float
    ttft_p95_ms: float
    e2e_p95_ms: float
    max_concurrency: float
    slo_ttft_p95_ms: float | None
    slo_e2e_p95_ms: float | None
    rps: float


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

    @property
    def ttft_p95_ms(self) -> float:
        return max((c.ttft_p95_ms for c in self.classes.values()), default=0.0)

    @property
    def service_rps(self) -> float:
        return self.service_rps_per_replica * self.max_replicas


@dataclass(frozen=True)
class PlanViolation:
    kind: str  # memory | stability | slo | capacity | quota | budget | unrouted
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


def plan(spec: PlatformSpec) -> Plan:
    """Size every (region, pool) of the spec and list what does not hold."""
    traffic = route(spec)
    result = Plan(spec.platform.name, [], traffic.spills, budget_usd_per_hour=spec.budget.max_usd_per_hour)
    for region in spec.regions:
        for placement in region.pools:
            load = traffic.loads[(region.name, placement.pool)]
            pool_plan, problems, warnings = _plan_pool(spec, region, spec.pool(placement.pool), load.per_class)
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
    result.worst_case_usd_per_hour, result.worst_case_scenario = worst_case_spend(spec, result.pools)
    result.violations.extend(_region_checks(spec, result))
    result.warnings.extend(_dr_checks(spec, result))
    result.notes.append(limits_note(spec))
    return result


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
    spec: PlatformSpec, region: Region, pool: Pool, per_class: dict[WorkloadClass, float]
) -> tuple[PoolPlan, list[PlanViolation], list[PlanViolation]]:
    """One pool's plan, its violations, and its advisory warnings."""
    placement = next(pl for pl in region.pools if pl.pool == pool.name)
    model = replica_model(spec, pool)
    mem = memory(spec, pool)
    node = node_for(pool)
    lam = sum(per_class.values())
    # A pool with no traffic (a DR standby) is sized for the classes' platform-wide mix.
    weights = per_class or {c: spec.workload_classes[c].share for c in pool.classes if c in spec.workload_classes}
    shapes = [
        cap.RequestShape(spec.workload_classes[c].prompt_tokens.mean, spec.workload_classes[c].output_tokens.mean, w)
        for c, w in weights.items()
    ]
    encoder = model.arch.kind is ModelKind.ENCODER
    shape = cap.mean_shape(shapes) if shapes else cap.RequestShape(1, 1)
    if encoder:
        shape = cap.RequestShape(min(shape.prompt_tokens, model.arch.max_position_embeddings), 0, shape.weight)
    prefix_kept = prefix_kept_share(spec, pool)
    slots = pool.engine.max_num_seqs if encoder else cap.batch_slots(pool.engine.max_num_seqs, mem.kv_tokens, shape)
    mu = (
        cap.embedding_throughput(model, shape.prompt_tokens)
        if encoder
        else cap.replica_throughput(model, shape, batch=slots, prefill_tokens=shape.prompt_tokens * prefix_kept)
    )
    problems: list[PlanViolation] = []
    warnings: list[PlanViolation] = []
    pm = _PoolModel(spec, pool, model, mem, shape, per_class, lam, mu, slots, prefix_kept)
    at_max = _predict(pm, placement.max_replicas)
    needed = _replicas_needed(pm, placement.min_replicas)
    rho = cap.utilization(lam, mu * placement.max_replicas)
    where = f"pool {pool.name} in {region.name}"
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
                f"{where}: needs {needed} replicas to meet its SLOs at rho <= {pool.autoscaling.target_utilization} "
                f"but max_replicas={placement.max_replicas}; raise max_replicas to {needed}",
                region.name,
                pool.name,
            )
        )
    for cls, pred in at_max.classes.items():
        slo = pred.slo_ttft_p95_ms
        if slo is None or pred.rps <= 0 or pred.ttft_p95_ms <= slo or rho >= 1:
            continue
        if needed > placement.max_replicas:
            fix = f"raise max_replicas to {needed}"
        else:  # queueing is not the cause: prefill of a P95 prompt alone is too slow here
            fix = "queueing is not the cause: use a faster GPU, a higher tensor_parallel, or relax the SLO"
        problems.append(
            PlanViolation(
                "slo",
                f"{where}: class {cls} P95 TTFT {pred.ttft_p95_ms:.0f} ms exceeds its SLO of {slo:.0f} ms at "
                f"max_replicas={placement.max_replicas}; {fix}",
                region.name,
                pool.name,
            )
        )
    for cls, pred in at_max.classes.items():
        e2e = pred.slo_e2e_p95_ms
        if e2e is not None and pred.rps > 0 and rho < 1 and pred.e2e_p95_ms > e2e:
            problems.append(
                PlanViolation(
                    "slo",
                    f"{where}: class {cls} P95 end-to-end {pred.e2e_p95_ms:.0f} ms exceeds its SLO of {e2e:.0f} ms "
                    f"(P95 output at {at_max.itl_p50_s * 1000:.0f} ms per token); raise the SLO, lower the class's "
                    "output_tokens, or use speculative decoding or a faster GPU",
                    region.name,
                    pool.name,
                )
            )
    context = shape.prompt_tokens + shape.output_tokens / 2
    kv_usage = at_max.batch * context / mem.kv_tokens if mem.kv_tokens and lam > 0 and rho < 1 else 0.0
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
    nodes_needed = nodes_for(pool, needed)
    nodes_max = nodes_for(pool, placement.max_replicas)
    price = spec.instance_price(node.name)
    tokens_per_s = lam * (shape.prompt_tokens + shape.output_tokens)
    provider_name, provider_price = _provider_price(spec, pool, shape)
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
            min_replicas=placement.min_replicas,
            max_replicas=placement.max_replicas,
            replicas_needed=needed,
            utilization=rho,
            queue_wait_mean_ms=at_max.wait.mean_s * 1000,
            queue_wait_p95_ms=at_max.wait.p95_s * 1000,
            itl_p50_ms=at_max.itl_p50_s * 1000,
            itl_p95_ms=at_max.itl_p95_s * 1000,
            kv_usage=kv_usage,
            classes=at_max.classes,
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
        ),
        problems,
        warnings,
    )


@dataclass(frozen=True)
class _AtLoad:
    """A pool's queueing and latency at one replica count."""

    wait: cap.QueueWait
    itl_p50_s: float
    itl_p95_s: float
    batch: float  # sequences running per replica (Little's law)
    classes: dict[str, ClassPrediction]


@dataclass(frozen=True)
class _PoolModel:
    """Everything about one pool at one region's peak that does not depend on the replica count."""

    spec: PlatformSpec
    pool: Pool
    model: cap.ReplicaModel
    mem: cap.MemoryPlan
    shape: cap.RequestShape
    per_class: dict[WorkloadClass, float]
    lam: float  # arrival rate, req/s
    mu: float  # one replica's service rate, req/s
    slots: int  # batch slots per replica
    prefix_kept: float


def _predict(pm: _PoolModel, replicas: int) -> _AtLoad:
    """Queueing and latency at ``replicas`` replicas under arrival rate ``lam``."""
    spec, pool, model, mem, shape = pm.spec, pm.pool, pm.model, pm.mem, pm.shape
    per_class, lam, mu, slots, prefix_kept = pm.per_class, pm.lam, pm.mu, pm.slots, pm.prefix_kept
    servers = replicas * slots
    wait = cap.queue_wait(lam, mu / slots, servers) if lam > 0 else cap.QueueWait(0, 0, 0, 0)
    lam_rep = lam / replicas if replicas else math.inf
    encoder = model.arch.kind is ModelKind.ENCODER
    context = shape.prompt_tokens + shape.output_tokens / 2
    per_token = cap.prefill_seconds_per_token(model, context=int(shape.prompt_tokens / 2))
    prefill_share = min(0.95, lam_rep * shape.prompt_tokens * prefix_kept * per_token / model.pp)
    batch = 1.0
    itl = 0.0
    prefill = cap.prefill_seconds(model, int(shape.prompt_tokens * prefix_kept))
    for _ in range(FIXED_POINT_STEPS):  # Little's law: batch = lambda_rep x time a request spends in the batch
        itl = cap.inter_token_seconds(model, max(1, math.ceil(batch)), mean_context=context) / (1 - prefill_share)
        previous, batch = batch, min(float(slots), max(1.0, lam_rep * (prefill + shape.output_tokens * itl)))
        if abs(batch - previous) < 0.01:
            break
    itl_p50 = 0.0 if encoder else itl
    chunk = 0
    if prefill_share > PREFILL_INTERFERENCE_SHARE:
        chunk = max(0, pool.engine.max_num_batched_tokens - math.ceil(batch))
    itl_p95 = 0.0 if encoder else itl_p50 + min(chunk, shape.prompt_tokens) * per_token
    preds: dict[str, ClassPrediction] = {}
    for cls in pool.classes:
        cs = spec.workload_classes.get(cls)
        if cs is None:
            continue
        p50_prompt = int(cs.prompt_tokens.quantile(0.5) * prefix_kept)
        p95_prompt = int(cs.prompt_tokens.quantile(0.95) * prefix_kept)
        if encoder:
            p50_prompt = min(p50_prompt, model.arch.max_position_embeddings)
            p95_prompt = min(p95_prompt, model.arch.max_position_embeddings)
        ttft50 = wait.p50_s + cap.prefill_seconds(model, p50_prompt) + itl_p50
        ttft95 = wait.p95_s + cap.prefill_seconds(model, p95_prompt) + itl_p95
        longest = cs.prompt_tokens.max + (0 if encoder else cs.output_tokens.max)
        preds[cls.value] = ClassPrediction(
            ttft_p50_ms=ttft50 * 1000,
            ttft_p95_ms=ttft95 * 1000,
            e2e_p95_ms=cap.e2e_seconds(ttft95, itl_p50, int(cs.output_tokens.quantile(0.95))) * 1000,
            max_concurrency=cap.max_concurrency(mem.kv_tokens, longest) if mem.kv_tokens else float(slots),
            slo_ttft_p95_ms=cs.ttft_p95_ms,
            slo_e2e_p95_ms=cs.e2e_p95_ms,
            rps=per_class.get(cls, 0.0),
        )
    return _AtLoad(wait, itl_p50, itl_p95, batch, preds)


def _replicas_needed(pm: _PoolModel, floor: int) -> int:
    """Fewest replicas with rho <= target and every loaded class within its TTFT SLO."""
    if pm.lam <= 0:
        return floor
    n = max(floor, 1, math.ceil(pm.lam / (pm.mu * pm.pool.autoscaling.target_utilization)))
    while n < MAX_REPLICAS_SEARCHED:
        at = _predict(pm, n)
        late = [p for p in at.classes.values() if p.rps > 0 and p.slo_ttft_p95_ms and p.ttft_p95_ms > p.slo_ttft_p95_ms]
        if not late:
            return n
        # Once waits are ~0 a missed SLO is the pool's speed, which more replicas cannot fix.
        if at.wait.p95_s == 0:
            return n
        n = max(n + 1, math.ceil(n * 1.1))
    return n


def _provider_price(spec: PlatformSpec, pool: Pool, shape: cap.RequestShape) -> tuple[str | None, float | None]:
    """The first provider on the tier's fallback chain, priced for the pool's request mix."""
    if spec.is_embedding(pool):
        return None, None  # providers here are chat models; an embedding price would not compare
    for target in spec.routing.fallbacks.get(pool.tier, []):
        provider = spec.provider(target)
        if provider is not None and pool.tier in provider.models:
            m = provider.models[pool.tier]
            return provider.name, cap.blended_price_per_million(m.input_usd_per_1m, m.output_usd_per_1m, shape)
    return None, None


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
