"""Where a request may go in one region: the tier split of a class, the failover chain, the pools that hold it.

This is the one reader of ``routing.mix``, ``routing.rules`` and ``routing.fallbacks``. The planner's
traffic (``tokenplane.model.traffic``), the provider price it compares a pool against, the workbench's
overflow, the spec's residency rule and the AI gateway's router each build a ``Routes`` for a region and
ask it; none walks the spec's routing section again. A ``Routes`` is pure: built once from the spec and
a region, it holds no per-request state (the gateway's router keeps that: the signals it matches, its
memo of chains, its place in the mix).

Two decisions are made here, once, and everything above follows them:

**What ``routing.mix`` means.** It is the share of a class's requests each tier serves, for every class
that no class-only routing rule pins to a tier. The planner sizes the pools with it, and the gateway
enforces it: a ``model: auto`` request that no routing rule matches is given the next tier of a smooth
weighted round-robin over the mix (among the tiers the tenant may use), kept per class, so that the
tiers' shares of those requests stay within one request of the mix over any window. The mix is not a
forecast of what clients name: a request that names a tier or a model, or that a signal rule (task type,
complexity, context length, plan, latency SLO) matches, goes where it says, and is a departure from the
mix that the planner does not forecast.

**What residency means.** The jurisdiction that filters a provider is the tenant's. A tenant pinned to
one (``tenants[].residency``) never reaches a provider that does not list it, and a gateway outside that
jurisdiction refuses its requests. An unpinned tenant's overflow may go to any provider on the chain,
whatever the region's jurisdiction: a region's jurisdiction decides which tenants it serves, not where an
unpinned tenant's prompts may go (pin the tenant to keep them in). The planner and the workbench size for
unpinned traffic (they know no tenants); the spec rule checks each pinned tenant's chains in its
jurisdiction's regions with the same ``chain``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from types import MappingProxyType

from tokenplane.spec import Jurisdiction, PlatformSpec, Pool, Provider, RoutingRule, Tier, WorkloadClass

ALL_TIERS = frozenset(Tier)
TIER_NAMES = frozenset(t.value for t in Tier)
SUM_TOLERANCE = 1e-6  # shares written as decimals (0.7 + 0.2 + 0.1) do not sum to exactly 1 in floating point

Loc = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Hop:
    """One step of a failover chain: a pool of the region, or an external provider.

    ``tier`` is the tier whose model the hop serves: a pool's own tier; for a provider, the requested
    tier (``providers[].models[tier]``).
    """

    name: str
    tier: Tier
    provider: bool = False


class Routes:
    """Where one region's requests may go; built once per spec and region.

    Args:
        spec: The platform spec. Its references need not all resolve (the spec rules build one while
            checking them): a placement of an unknown pool and a fallback to an unknown name are left out.
        region: The region's name.
        providers: The providers this deployment holds a key for (None: every one in the spec). A provider
            without a key is left out of every chain, as the model gateway would skip it.
    """

    def __init__(self, spec: PlatformSpec, region: str, *, providers: Collection[str] | None = None) -> None:
        self.region = spec.region(region)
        pools = {p.name: p for p in spec.pools}
        models = {m.name for m in spec.models}
        placed = [pools[pl.pool] for pl in self.region.pools if pl.pool in pools]
        # A pool of an unknown model counts as a chat pool: the spec rules report the model once, not twice.
        encoders = {p.name for p in placed if p.model in models and spec.is_embedding(p)}
        self.chat_pools: tuple[Pool, ...] = tuple(p for p in placed if p.name not in encoders)
        self.embedding_pools: tuple[Pool, ...] = tuple(p for p in placed if p.name in encoders)
        self.max_replicas = MappingProxyType({pl.pool: pl.max_replicas for pl in self.region.pools})
        self.mix = MappingProxyType(dict(spec.routing.mix))
        self.rules: tuple[RoutingRule, ...] = tuple(spec.routing.rules)
        self._pins = {cls: tier for cls in WorkloadClass if (tier := _pin(self.rules, cls)) is not None}
        self._steps = {tier: (tier.value, *spec.routing.fallbacks.get(tier, [])) for tier in Tier}
        keyed = None if providers is None else frozenset(providers)
        self._providers = {p.name: p for p in spec.providers if keyed is None or p.name in keyed}
        # A chain depends on a request's length only through which pools' contexts hold it: these cut
        # lengths into buckets that share a chain (the router memoises per bucket).
        self.context_cuts: tuple[int, ...] = tuple(sorted({p.engine.max_model_len for p in self.chat_pools}))

    def split(self, cls: WorkloadClass) -> dict[Tier, float]:
        """The tier split of a class: all of it to the tier a class-only rule pins it to, else the mix."""
        pinned = self._pins.get(cls)
        return {pinned: 1.0} if pinned is not None else dict(self.mix)

    def mix_among(self, allowed: Collection[Tier]) -> dict[Tier, float]:
        """The mix's positive shares among ``allowed``, largest first (all of them if none is allowed)."""
        shares = {t: s for t, s in self.mix.items() if s > 0 and t in allowed} or {
            t: s for t, s in self.mix.items() if s > 0
        }
        return dict(sorted(shares.items(), key=lambda item: -item[1]))

    def steps(self, tier: Tier) -> tuple[str, ...]:
        """The tier's chain as the spec writes it: the tier, then its fallbacks (for messages)."""
        return self._steps[tier]

    def serving(self, tier: Tier, cls: WorkloadClass | None = None, needed: int = 0) -> tuple[Pool, ...]:
        """The region's chat pools of ``tier`` that serve ``cls`` (any class: None) with ``needed`` tokens."""
        return tuple(
            p
            for p in self.chat_pools
            if p.tier is tier and (cls is None or cls in p.classes) and p.engine.max_model_len >= needed
        )

    def chain(
        self,
        tier: Tier,
        cls: WorkloadClass | None = None,
        *,
        residency: Jurisdiction | None = None,
        allowed: Collection[Tier] = ALL_TIERS,
        needed: int = 0,
    ) -> tuple[Hop, ...]:
        """The failover chain for a request of ``tier`` and ``cls`` needing ``needed`` tokens of context.

        The tier's own pools first, then each fallback in order: another tier's pools (when the tenant may
        use that tier) or a provider (``admits``). A pool or provider appears once.
        """
        hops: list[Hop] = []
        for step in self._steps[tier]:
            if step in TIER_NAMES:
                step_tier = Tier(step)
                if step_tier in allowed:
                    hops.extend(Hop(p.name, step_tier) for p in self.serving(step_tier, cls, needed))
            elif (provider := self._providers.get(step)) is not None and self.admits(provider, tier, residency):
                hops.append(Hop(provider.name, tier, provider=True))
        return tuple(dict.fromkeys(hops))

    def admits(self, provider: Provider, tier: Tier, residency: Jurisdiction | None) -> bool:
        """The one provider filter: it maps the tier's model and may process the tenant's jurisdiction.

        ``residency`` None is an unpinned tenant (see the module's docstring): any jurisdiction.
        """
        return tier in provider.models and (residency is None or residency in provider.jurisdictions)

    def first_provider(self, tier: Tier, *, residency: Jurisdiction | None = None) -> Provider | None:
        """The first provider on the tier's chain: where overflow goes, and the price a pool is compared with."""
        for hop in self.chain(tier, residency=residency):
            if hop.provider:
                return self._providers[hop.name]
        return None


def _pin(rules: tuple[RoutingRule, ...], cls: WorkloadClass) -> Tier | None:
    """The tier of the first rule that matches on classes alone and names ``cls``."""
    for rule in rules:
        m = rule.match
        others = (m.task_types, m.min_complexity, m.min_context_tokens, m.tenant_plans, m.max_latency_slo_ms)
        if m.classes and cls in m.classes and all(v is None for v in others):
            return rule.tier
    return None


def problems(spec: PlatformSpec) -> Iterator[tuple[Loc, str]]:
    """The routing section's own mistakes, as (path, message): the spec rules report them.

    A fallback that names neither a tier of the mix nor a provider, a tier falling back to itself, a
    rule's or tenant's tier with no share in the mix, and shares that do not sum to 1.
    """
    routing = spec.routing
    tiers = {t.value for t in routing.mix}
    providers = {p.name for p in spec.providers}
    known = f"known: {', '.join(sorted(providers))}" if providers else "none are defined"
    for tier, chain in routing.fallbacks.items():
        for i, target in enumerate(chain):
            if target not in tiers and target not in providers:
                yield (
                    ("routing", "fallbacks", tier.value, i),
                    f"fallback {target!r} is neither a tier in routing.mix ({', '.join(sorted(tiers))}) nor a "
                    f"provider ({known})",
                )
            if target == tier.value:
                yield ("routing", "fallbacks", tier.value, i), f"tier {tier.value} falls back to itself"
    for i, rule in enumerate(routing.rules):
        if rule.tier.value not in tiers:
            yield (
                ("routing", "rules", i, "tier"),
                f"tier {rule.tier.value} has no share in routing.mix; add it (a share of 0 is fine)",
            )
    for t_i, tenant in enumerate(spec.tenants):
        for tier in tenant.allowed_tiers:
            if tier.value not in tiers:
                yield (
                    ("tenants", t_i, "allowed_tiers"),
                    f"tier {tier.value} is not in routing.mix ({', '.join(sorted(tiers))})",
                )
    total = sum(routing.mix.values())
    if abs(total - 1) > SUM_TOLERANCE:
        shares = ", ".join(f"{t.value}={s}" for t, s in routing.mix.items())
        yield ("routing", "mix"), f"shares sum to {total:g} ({shares}); they must sum to 1"
