"""Classes whose traffic goes to a provider too slow for their SLO: what sizing pools cannot fix.

The planner sizes each pool so that every class it serves reaches ``slo_attainment``. A class's
requests that a region sends to an external provider (``tokenplane.model.traffic.Spill``: no local
pool serves their tier) are served at the provider's stated latency (``providers[].latency``),
which no replica count changes. The workbench gives them that latency without jitter, so when it is
over the class's ``ttft_p95_ms`` (or the tokens it streams take it past ``e2e_p95_ms``) every one of
them misses, and the class's attainment over the whole platform falls by their share: on byteion,
APAC's large tier goes to anthropic (600 ms) while class A's SLO is 500 ms, 2% of class A, and
``tokenplane simulate`` measured class A at 97.5% against its 99% while every pool met it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tokenplane.model.traffic import Spill, TrafficPlan
from tokenplane.spec import ClassSpec, PlatformSpec, Provider, WorkloadClass


@dataclass(frozen=True)
class ProviderMiss:
    """One class's requests that go to providers too slow for its SLO, as a share of its routed requests."""

    cls: WorkloadClass
    target: float
    share: float  # of the class's requests that reach a pool, a provider or nowhere (cache hits excluded)
    spills: tuple[tuple[Spill, Provider, float], ...]  # each spill, its provider, and the share of it that misses

    @property
    def ceiling(self) -> float:
        """The most the class can attain over the platform, were every pool's request to meet its SLO."""
        return 1.0 - self.share

    def message(self) -> str:
        parts = "; ".join(
            f"{s.rps:.1f} req/s from {s.region} (tier {s.tier.value}) to {p.name}, {_why(s.cls, p, missing)}"
            for s, p, missing in self.spills
        )
        return (
            f"class {self.cls.value}: {self.share:.2%} of its requests go to providers too slow for its SLO ({parts}); "
            f"its attainment over the platform is at most {self.ceiling:.2%} against its slo_attainment "
            f"{self.target:.2%} however many replicas the pools get (`tokenplane simulate` counts them). "
            "Place a pool of that tier in the region, or put a provider fast enough first in routing.fallbacks"
        )


def _why(cls: WorkloadClass, provider: Provider, missing: float) -> str:
    if missing >= 1.0:
        return f"whose TTFT {provider.latency.ttft_ms:.0f} ms is over class {cls.value}'s ttft_p95_ms"
    return f"where {missing:.0%} of them stream past class {cls.value}'s e2e_p95_ms at {provider.latency.tokens_per_second:g} tok/s"


def missing_share(cls_spec: ClassSpec, provider: Provider) -> float:
    """The share of a class's requests that miss its SLO at this provider's latency, as the workbench serves them.

    The workbench (``tokenplane.sim.tally.settle``) gives a provider's request its first token after
    ``ttft_ms`` and the rest at ``tokens_per_second``; output lengths are uniform over the class's range.
    """
    if cls_spec.ttft_p95_ms is None:
        return 0.0
    latency = provider.latency
    if latency.ttft_ms > cls_spec.ttft_p95_ms:
        return 1.0
    if cls_spec.e2e_p95_ms is None:
        return 0.0
    lo, hi = cls_spec.output_tokens.min, cls_spec.output_tokens.max
    # Done at ttft + (output - 1) / rate: outputs above this many tokens finish after e2e_p95_ms.
    longest_ok = 1 + (cls_spec.e2e_p95_ms - latency.ttft_ms) / 1000 * latency.tokens_per_second
    over = hi - max(lo - 1, math.floor(longest_ok))
    return min(1.0, max(0, over) / (hi - lo + 1))


def provider_misses(spec: PlatformSpec, traffic: TrafficPlan) -> list[ProviderMiss]:
    """Every class with an SLO some of whose routed traffic goes to a provider that cannot meet it."""
    routed: dict[WorkloadClass, float] = {}
    for load in traffic.loads.values():
        if spec.is_embedding(load.pool):
            continue  # an embedding call is not one of the class's requests
        for cls, rps in load.per_class.items():
            routed[cls] = routed.get(cls, 0.0) + rps
    for spill in traffic.spills:
        routed[spill.cls] = routed.get(spill.cls, 0.0) + spill.rps
    for lost in traffic.unrouted:  # the workbench counts them in the class, as misses
        routed[lost.cls] = routed.get(lost.cls, 0.0) + lost.rps
    providers = {p.name: p for p in spec.providers}
    found: list[ProviderMiss] = []
    for cls, cls_spec in spec.workload_classes.items():
        slow = [
            (s, providers[s.provider], missing)
            for s in traffic.spills
            if s.cls is cls and (missing := missing_share(cls_spec, providers[s.provider])) > 0
        ]
        if slow and routed.get(cls, 0.0) > 0:
            share = sum(s.rps * missing for s, _, missing in slow) / routed[cls]
            found.append(ProviderMiss(cls, cls_spec.slo_attainment, share, tuple(slow)))
    return found
