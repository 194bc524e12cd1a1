"""Stages 9 and 10: the workload class from the token estimate, then tier -> pools -> failover chain.

Where a request may go is ``tokenplane.routes.Routes``, built once when the gateway starts, the same
object the planner and the workbench size with: the tier split, the failover chain and its one provider
filter, the pools whose context holds a request. The router keeps only what is per request: matching a
request's signals against the routing rules, the memo of chains it has built, and its turn in the mix.

What a client may put in ``model``:
- ``auto``: the spec's routing rules decide the tier (task type, complexity, context length, plan,
  latency SLO); with no rule matching, the mix does: the request gets the next tier of a smooth weighted
  round-robin over ``routing.mix`` among the tiers its tenant may use, kept per class, so that each
  tier's share of those requests is the share the planner sized for, within one request;
- a tier name (``small``, ``medium``, ``large``);
- a registry model (``small-chat`` or ``small-chat-v1``): the tier of the pools that run it.

Residency is absolute: a tenant pinned to a jurisdiction is never given a target outside it, whatever
the fallback chain says, and a gateway in another jurisdiction refuses its prompts instead of
forwarding them. An unpinned tenant's overflow may reach any provider on the chain, whatever this
region's jurisdiction (``tokenplane.routes`` says why).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection
from dataclasses import dataclass

from tokenplane.routes import TIER_NAMES, Routes
from tokenplane.serving.errors import ContextTooLong, NotFound, PermissionDenied
from tokenplane.serving.gateway.requests import ParsedRequest
from tokenplane.serving.types import Endpoint, Target, TargetKind
from tokenplane.spec import PlatformSpec, RoutingRule, Tenant, Tier, WorkloadClass

AUTO = "auto"
COMPLEXITY_TOKENS = 4000  # without a client hint, a prompt this long counts as complexity 1.0


@dataclass(frozen=True, slots=True)
class RequestSignals:
    """What the routing rules match on, besides the tenant and the class."""

    task_type: str | None = None
    complexity: float | None = None  # 0..1; None: estimated from the prompt length
    latency_slo_ms: float | None = None  # None: the class's TTFT SLO


@dataclass(frozen=True, slots=True)
class Route:
    tier: Tier
    workload_class: WorkloadClass
    targets: tuple[Target, ...]
    rule: str | None  # the routing rule that chose the tier, if any

    @property
    def primary_pool(self) -> str | None:
        first = self.targets[0]
        return first.name if first.kind is TargetKind.POOL else None


def classify(spec: PlatformSpec, prompt_tokens: int, *, batch: bool = False) -> WorkloadClass:
    """The class whose prompt range holds the estimate (batch jobs are D); between ranges, the nearest."""
    if batch and WorkloadClass.D in spec.workload_classes:
        return WorkloadClass.D
    online = [(c, s) for c, s in spec.workload_classes.items() if c is not WorkloadClass.D]
    if not online:
        return next(iter(spec.workload_classes))

    def distance(item: tuple[WorkloadClass, object]) -> int:
        cls_spec = spec.workload_classes[item[0]]
        low, high = cls_spec.prompt_tokens.min, cls_spec.prompt_tokens.max
        return max(low - prompt_tokens, 0, prompt_tokens - high)

    return min(online, key=distance)[0]


class Router:
    """Routes one region's requests; built once from the spec."""

    def __init__(self, spec: PlatformSpec, region: str, *, providers: Collection[str] | None = None) -> None:
        """``providers``: the external providers this deployment holds a key for (None: every one in the spec).

        A provider without a key is left out of every chain, as the model gateway would skip it: then a
        request that only such a provider could serve (say, longer than every pool's context) is the
        client's 400 naming the limit, not a 503 that no retry can ever turn into an answer.
        """
        self.spec = spec
        self.routes = Routes(spec, region, providers=providers)
        self.region = self.routes.region
        self._chat_pools = self.routes.chat_pools
        self._embedding_pools = self.routes.embedding_pools
        self._aliases: dict[str, Tier] = {t.value: t for t in Tier}
        for pool in spec.pools:
            if spec.is_embedding(pool):
                continue
            model = spec.model(pool.model)
            self._aliases.setdefault(model.name, pool.tier)
            self._aliases.setdefault(model.ref, pool.tier)
        self._embedding_models = {
            name: pool
            for pool in self._embedding_pools
            for name in (spec.model(pool.model).name, spec.model(pool.model).ref)
        }
        # Bounded by the spec: one entry per (tenant, tier, class, context bucket), and one turn per (class,
        # set of allowed tiers).
        self._chains: dict[tuple[str, Tier, WorkloadClass, int], tuple[Target, ...]] = {}
        self._turns: dict[tuple[WorkloadClass, frozenset[Tier]], MixTurns] = {}

    def model_names(self) -> list[str]:
        """What ``GET /v1/models`` lists: ``auto``, the tiers, the registry models served here."""
        tiers = [t.value for t in Tier if any(p.tier is t for p in self._chat_pools)]
        models = sorted(n for n in self._aliases if n not in TIER_NAMES)
        return [AUTO, *tiers, *models, *sorted(self._embedding_models)]

    def route(self, tenant: Tenant, request: ParsedRequest, *, signals: RequestSignals, batch: bool = False) -> Route:
        """Pick the tier and build the failover chain; raise a 4xx ``ServingError`` naming the reason."""
        self._check_residency(tenant)
        cls = classify(self.spec, request.prompt_tokens, batch=batch)
        if request.endpoint is Endpoint.EMBEDDINGS:
            return self._embedding_route(request, cls)
        tier, rule = self._tier(tenant, request, cls, signals)
        if tier not in tenant.allowed_tiers:
            allowed = ", ".join(t.value for t in tenant.allowed_tiers)
            raise PermissionDenied(
                f"tenant '{tenant.name}' may not use tier {tier.value}; its plan allows {allowed} "
                f"(ask for model 'auto' or one of those tiers)",
                param="model",
            )
        needed = request.prompt_tokens + (request.explicit_max_tokens or 1)
        targets = self._chain(tenant, tier, cls, needed)
        if not targets:
            longest = max((p.engine.max_model_len for p in self._chat_pools), default=0)
            if longest and needed > longest:
                raise ContextTooLong(
                    f"this request needs {needed} tokens ({request.prompt_tokens} in the prompt, "
                    f"{request.explicit_max_tokens or 1} to generate); the longest context served here is "
                    f"{longest} tokens. Shorten the prompt or lower max_tokens",
                    param="messages",
                )
            raise PermissionDenied(
                f"no pool or provider in {tier.value}'s failover chain may serve tenant '{tenant.name}'"
                + (f" within {tenant.residency.value}" if tenant.residency else "")
                + f" for a class-{cls.value} request of {needed} tokens",
                param="model",
            )
        return Route(tier, cls, targets, rule)

    def _check_residency(self, tenant: Tenant) -> None:
        if tenant.residency is not None and tenant.residency is not self.region.jurisdiction:
            domain = self.spec.platform.domain
            # Without a domain there is no jurisdiction name to point at: only the region's own gateways.
            where = f"{tenant.residency.value.lower()}.{domain}" if domain else f"a gateway in {tenant.residency.value}"
            raise PermissionDenied(
                f"tenant '{tenant.name}' is pinned to {tenant.residency.value}, and this gateway is in "
                f"{self.region.jurisdiction.value} ({self.region.name}); send its requests to {where}",
            )

    def _tier(
        self, tenant: Tenant, request: ParsedRequest, cls: WorkloadClass, signals: RequestSignals
    ) -> tuple[Tier, str | None]:
        if request.model != AUTO:
            tier = self._aliases.get(request.model)
            if tier is None:
                raise NotFound(
                    f"model '{request.model}' does not exist here; choose one of: {', '.join(self.model_names())}",
                    param="model",
                    code="model_not_found",
                )
            return tier, None
        for rule in self.routes.rules:
            if self._matches(rule, tenant, request, cls, signals):
                return rule.tier, rule.name
        return self._mix_turn(cls, tenant), None

    def _mix_turn(self, cls: WorkloadClass, tenant: Tenant) -> Tier:
        """An unmatched ``auto`` request's tier: the class's next turn in the mix, among the tenant's tiers."""
        key = (cls, frozenset(tenant.allowed_tiers))
        turns = self._turns.get(key)
        if turns is None:
            turns = self._turns[key] = MixTurns(self.routes.mix_among(key[1]))
        return turns.next()

    def _matches(
        self, rule: RoutingRule, tenant: Tenant, request: ParsedRequest, cls: WorkloadClass, signals: RequestSignals
    ) -> bool:
        m = rule.match
        if m.classes is not None and cls not in m.classes:
            return False
        if m.task_types is not None and signals.task_type not in m.task_types:
            return False
        if m.min_complexity is not None:
            complexity = signals.complexity
            if complexity is None:
                complexity = min(1.0, request.prompt_tokens / COMPLEXITY_TOKENS)
            if complexity < m.min_complexity:
                return False
        if m.min_context_tokens is not None and request.prompt_tokens < m.min_context_tokens:
            return False
        if m.tenant_plans is not None and tenant.plan not in m.tenant_plans:
            return False
        if m.max_latency_slo_ms is not None:
            slo = signals.latency_slo_ms
            if slo is None:
                slo = self.spec.workload_classes[cls].ttft_p95_ms
            if slo is None or slo > m.max_latency_slo_ms:
                return False
        return True

    def _chain(self, tenant: Tenant, tier: Tier, cls: WorkloadClass, needed: int) -> tuple[Target, ...]:
        key = (tenant.name, tier, cls, bisect_left(self.routes.context_cuts, needed))
        chain = self._chains.get(key)
        if chain is None:
            chain = self._chains[key] = self._build_chain(tenant, tier, cls, needed)
        return chain

    def _build_chain(self, tenant: Tenant, tier: Tier, cls: WorkloadClass, needed: int) -> tuple[Target, ...]:
        hops = self.routes.chain(tier, cls, residency=tenant.residency, allowed=tenant.allowed_tiers, needed=needed)
        return tuple(Target(TargetKind.PROVIDER if h.provider else TargetKind.POOL, h.name, h.tier) for h in hops)

    def _embedding_route(self, request: ParsedRequest, cls: WorkloadClass) -> Route:
        pool = self._embedding_models.get(request.model)
        if pool is None and request.model == AUTO and self._embedding_pools:
            pool = self._embedding_pools[0]
        if pool is None:
            raise NotFound(
                f"embedding model '{request.model}' does not exist here; choose one of: "
                f"{', '.join(sorted(self._embedding_models)) or '(none: this region runs no embedding pool)'}",
                param="model",
                code="model_not_found",
            )
        return Route(pool.tier, cls, (Target(TargetKind.POOL, pool.name, pool.tier),), None)


class MixTurns:
    """Smooth weighted round-robin over a mix's shares (nginx's upstream balancing).

    Each turn adds every tier's share to its credit, gives the turn to the tier with the most credit
    (ties: the larger share, listed first) and takes the total back from it. Over any run of n turns a
    tier's count stays within one of n x its share: no randomness, so a small window already holds the
    mix, and no clock.
    """

    def __init__(self, shares: dict[Tier, float]) -> None:
        if not shares:
            raise ValueError("a mix needs at least one tier with a positive share")
        self._shares = shares
        self._total = sum(shares.values())
        self._credit = dict.fromkeys(shares, 0.0)

    def next(self) -> Tier:
        for tier, share in self._shares.items():
            self._credit[tier] += share
        chosen = max(self._credit, key=self._credit.__getitem__)
        self._credit[chosen] -= self._total
        return chosen
