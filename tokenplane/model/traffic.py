"""Where peak traffic goes: region -> workload class -> tier -> pool or provider.

The planner and the workbench simulator both start from these arrival rates,
so that they disagree only about dynamics, never about routing; the gateway's
router walks the same ``tokenplane.routes``, and a test runs a generated
workload through it to hold it to this split.

Peak RPS splits by region (``traffic_share``), then by class (``share``), then
by tier (``Routes.split``: a routing rule that matches on classes alone pins a
class to one tier, otherwise the class follows ``routing.mix``). Exact and
semantic cache hits never reach a pool. A (region, class, tier) goes to the
first hop of ``Routes.chain``: the tier's pools in the region that serve the
class, else the first fallback that serves it (another tier's pools in the
region, or an external provider), as an unpinned tenant's request would at the
gateway (``tokenplane.routes`` states what the mix and residency mean there).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from tokenplane.routes import Routes
from tokenplane.spec import ClassSpec, PlatformSpec, Pool, Region, Tier, WorkloadClass


@dataclass
class PoolLoad:
    """Arrival rate per class at one pool in one region."""

    region: Region
    pool: Pool
    per_class: dict[WorkloadClass, float] = field(default_factory=dict)

    @property
    def rps(self) -> float:
        return sum(self.per_class.values())


@dataclass(frozen=True)
class Spill:
    """Traffic a region sends to an external provider because no local pool serves it."""

    region: str
    cls: WorkloadClass
    tier: Tier
    provider: str
    rps: float


@dataclass(frozen=True)
class Unrouted:
    region: str
    cls: WorkloadClass
    tier: Tier
    rps: float
    chain: tuple[str, ...]


@dataclass
class TrafficPlan:
    loads: dict[tuple[str, str], PoolLoad]  # (region, pool)
    spills: list[Spill]
    unrouted: list[Unrouted]


def cache_pass_through(spec: PlatformSpec, cls: WorkloadClass) -> float:
    """Fraction of a class's requests that miss the exact and semantic caches."""
    through = 1.0
    if spec.cache.exact.enabled and cls is not WorkloadClass.D:
        through *= 1 - spec.cache.exact.expected_hit_rate
    if spec.cache.semantic.enabled and cls in spec.cache.semantic.classes:
        through *= 1 - spec.cache.semantic.expected_hit_rate
    return through


def route(spec: PlatformSpec) -> TrafficPlan:
    """Peak arrival rates per (region, pool), the spills to providers, and what no chain serves."""
    loads: dict[tuple[str, str], PoolLoad] = {
        (r.name, pl.pool): PoolLoad(r, spec.pool(pl.pool)) for r in spec.regions for pl in r.pools
    }
    spills: list[Spill] = []
    unrouted: list[Unrouted] = []
    for region in spec.regions:
        region_rps = spec.platform.peak_rps * region.traffic_share
        if region_rps <= 0:
            continue
        routes = Routes(spec, region.name)
        for cls, cls_spec in spec.workload_classes.items():
            cls_rps = region_rps * cls_spec.share * cache_pass_through(spec, cls)
            for tier, fraction in routes.split(cls).items():
                rps = cls_rps * fraction
                if rps <= 0:
                    continue
                hops = routes.chain(tier, cls)
                if not hops:
                    unrouted.append(Unrouted(region.name, cls, tier, rps, routes.steps(tier)))
                elif hops[0].provider:
                    spills.append(Spill(region.name, cls, tier, hops[0].name, rps))
                else:
                    # The first hop's tier serves it all, spread over that tier's pools by their max replicas.
                    pools = [h.name for h in hops if not h.provider and h.tier is hops[0].tier]
                    weights = [routes.max_replicas[p] for p in pools]
                    for pool, weight in zip(pools, weights, strict=True):
                        per_class = loads[(region.name, pool)].per_class
                        per_class[cls] = per_class.get(cls, 0.0) + rps * weight / sum(weights)
    _add_embedding_load(spec, loads)
    return TrafficPlan(loads, spills, unrouted)


def _add_embedding_load(spec: PlatformSpec, loads: dict[tuple[str, str], PoolLoad]) -> None:
    """Every request of a semantic-cached class is embedded once, before the cache lookup."""
    semantic = spec.cache.semantic
    if not semantic.enabled:
        return
    for region in spec.regions:
        region_rps = spec.platform.peak_rps * region.traffic_share
        embedders = [spec.pool(pl.pool) for pl in region.pools if spec.is_embedding(spec.pool(pl.pool))]
        if semantic.embedding_pool is not None:
            embedders = [p for p in embedders if p.name == semantic.embedding_pool]
        if not embedders or region_rps <= 0:
            continue
        by_class: dict[WorkloadClass, float] = defaultdict(float)
        for cls in semantic.classes:
            cls_spec = spec.workload_classes.get(cls)
            if cls_spec is not None:
                by_class[cls] += region_rps * cls_spec.share / len(embedders)
        for pool in embedders:
            loads[(region.name, pool.name)].per_class.update(by_class)


def class_spec(spec: PlatformSpec, cls: WorkloadClass) -> ClassSpec:
    return spec.workload_classes[cls]
