"""A class's SLO attainment over the whole platform: what its pools attain, and what providers and nowhere serve.

A pool is sized (and ``plan --verify`` judges it) on the class's requests it receives. The class's
target is over all its requests, so its attainment over the platform weighs each pool's attainment by
the requests the pool gets (``tokenplane.model.traffic``: the routing mix, the fallbacks and the
regions), counts a provider's requests as met or missed at its stated latency
(``tokenplane.model.provider_slo.missing_share``, as the workbench serves them) and a request no chain
serves as missed. The planner feeds it the pool model's attainments at ``replicas_needed`` (its
verdict), ``plan --verify`` the simulated ones (its platform-level report): the same weighting, so that
they disagree only where the pools do.

Why the planner needs it: on byteion every pool met class A's 500 ms TTFT target while APAC sent its
large tier, 2% of class A, to anthropic (stated TTFT 600 ms), and ``tokenplane simulate`` measured class
A at 97.7% over the platform against its 99%. No replica count changes a provider's latency.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tokenplane.model.provider_slo import missing_share
from tokenplane.model.traffic import TrafficPlan
from tokenplane.spec import PlatformSpec, Provider, Tier, WorkloadClass

PoolAttainments = Mapping[tuple[str, str], Mapping[str, float | None]]  # (region, pool) -> class name -> attainment


@dataclass(frozen=True)
class ProviderShare:
    """One class's requests that one provider serves, and the share of them its stated latency misses."""

    provider: Provider
    rps: float
    missing: float  # of those requests, the share past the class's SLO (``missing_share``)
    routes: tuple[tuple[str, Tier], ...]  # the (region, tier) pairs whose chain reaches it

    @property
    def missed_rps(self) -> float:
        return self.rps * self.missing


@dataclass(frozen=True)
class ClassOverPlatform:
    """One class's requests over the platform at peak (cache hits excluded), by where they go."""

    cls: WorkloadClass
    target: float  # the class's slo_attainment
    ttft_slo_ms: float
    pooled_rps: float
    pooled_met_rps: float  # the pools' requests within the SLO, at the attainments given
    providers: tuple[ProviderShare, ...]
    unrouted_rps: float

    @property
    def provider_rps(self) -> float:
        return sum(p.rps for p in self.providers)

    @property
    def provider_missed_rps(self) -> float:
        return sum(p.missed_rps for p in self.providers)

    @property
    def rps(self) -> float:
        return self.pooled_rps + self.provider_rps + self.unrouted_rps

    @property
    def attainment(self) -> float:
        met = self.pooled_met_rps + self.provider_rps - self.provider_missed_rps
        return met / self.rps if self.rps > 0 else 1.0

    @property
    def met(self) -> bool:
        return self.attainment >= self.target

    @property
    def pooled_attainment(self) -> float | None:
        return self.pooled_met_rps / self.pooled_rps if self.pooled_rps > 0 else None

    def share(self, rps: float) -> float:
        """``rps`` of this class as a share of all its requests."""
        return rps / self.rps if self.rps > 0 else 0.0

    @property
    def ceiling(self) -> float:
        """The most the class attains were every pool's request to meet its SLO: no replica count lifts it."""
        return 1.0 - self.share(self.provider_missed_rps + self.unrouted_rps)

    def message(self) -> str:
        """Why the class misses its target over the platform, and what fixes it (the plan's ``slo`` violation)."""
        c = self.cls.value
        parts = [
            f"class {c} meets its SLO for {self.attainment:.2%} of its requests over the platform, below its "
            f"slo_attainment {self.target:.2%}"
        ]
        if self.pooled_attainment is not None:
            parts.append(
                f"its pools meet it for {self.pooled_attainment:.2%} of the {self.share(self.pooled_rps):.2%} they serve"
            )
        slow = [p for p in self.providers if p.missing > 0]
        parts += [f"{self._lost(p)}" for p in slow]
        if self.unrouted_rps > 0:
            parts.append(
                f"{self.share(self.unrouted_rps):.2%} reach no pool and no provider (the `unrouted` violation)"
            )
        text = "; ".join(parts)
        if slow or self.unrouted_rps > 0:
            text += (
                f". No replica count fixes what providers and nowhere serve: however many replicas the pools get, "
                f"class {c} attains at most {self.ceiling:.2%}"
            )
        fixes = [
            f"put a provider faster than {self.ttft_slo_ms:.0f} ms first in routing.fallbacks.{tier.value} "
            f"or add a {tier.value} pool serving class {c} in {region}"
            for region, tier in sorted({rt for p in slow for rt in p.routes})
        ]
        if self.ceiling >= self.target:
            fixes.append("raise the max_replicas of the pools that miss it (their own violations name them)")
        fixes.append(f"relax workload_classes.{c}.ttft_p95_ms or slo_attainment")
        return f"{text}. Fix: {'; '.join(fixes)}"

    def _lost(self, p: ProviderShare) -> str:
        name, latency = p.provider.name, p.provider.latency
        where = ", ".join(f"{region} tier {tier.value}" for region, tier in p.routes)
        if p.missing >= 1.0:
            why = (
                f"stated TTFT {latency.ttft_ms:.0f} ms > class {self.cls.value}'s ttft_p95_ms {self.ttft_slo_ms:.0f} ms"
            )
            return f"{name} ({why}, from {where}) serves {self.share(p.rps):.2%}, all of them missed"
        why = f"stated {latency.tokens_per_second:g} tok/s streams {p.missing:.0%} of them past e2e_p95_ms"
        return f"{name} ({why}, from {where}) serves {self.share(p.rps):.2%}, {self.share(p.missed_rps):.2%} missed"

    def note(self) -> str:
        """A class within its target that still loses requests to slow providers (the plan's ``slo`` warning)."""
        lost = "; ".join(self._lost(p) for p in self.providers if p.missing > 0)
        return (
            f"class {self.cls.value} meets its SLO for {self.attainment:.2%} of its requests over the platform "
            f"(slo_attainment {self.target:.2%}), but providers too slow for it miss "
            f"{self.share(self.provider_missed_rps):.2%} of its requests, out of the {1 - self.target:.2%} it may "
            f"miss, whatever the pools' replicas: {lost}"
        )


def over_platform(
    spec: PlatformSpec, traffic: TrafficPlan, pools: PoolAttainments
) -> dict[WorkloadClass, ClassOverPlatform]:
    """Every class with a TTFT SLO and traffic, weighed over the platform with ``pools``' attainments.

    ``pools`` gives each loaded pool's attainment per class; a class missing from a pool's mapping, or
    None, is one the pool's model does not judge and counts as met.

    Raises:
        KeyError: a loaded pool of a class with an SLO has no entry in ``pools`` (judge every loaded pool).
    """
    providers = {p.name: p for p in spec.providers}
    found: dict[WorkloadClass, ClassOverPlatform] = {}
    for cls, cls_spec in spec.workload_classes.items():
        if cls_spec.ttft_p95_ms is None:
            continue
        pooled = pooled_met = 0.0
        for key, load in traffic.loads.items():
            rps = load.per_class.get(cls, 0.0)
            if rps <= 0 or spec.is_embedding(load.pool):
                continue  # an embedding call is not one of the class's requests
            attained = pools[key].get(cls.value)
            pooled += rps
            pooled_met += rps * (1.0 if attained is None else attained)
        shares: list[ProviderShare] = []
        for name in dict.fromkeys(s.provider for s in traffic.spills if s.cls is cls):
            spills = [s for s in traffic.spills if s.cls is cls and s.provider == name]
            provider = providers[name]
            routes = tuple(dict.fromkeys((s.region, s.tier) for s in spills))
            shares.append(
                ProviderShare(provider, sum(s.rps for s in spills), missing_share(cls_spec, provider), routes)
            )
        unrouted = sum(u.rps for u in traffic.unrouted if u.cls is cls)
        if pooled + sum(p.rps for p in shares) + unrouted > 0:
            found[cls] = ClassOverPlatform(
                cls, cls_spec.slo_attainment, cls_spec.ttft_p95_ms, pooled, pooled_met, tuple(shares), unrouted
            )
    return found
