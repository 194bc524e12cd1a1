"""The gateway routes what the planner sized: a generated workload's shares per tier and per provider agree.

The planner splits each class's peak traffic with ``tokenplane.model.traffic.route``; the gateway's router
decides one request at a time. Both read ``tokenplane.routes``, and this runs a generated workload
(classes drawn by the planner's shares after the caches, prompt lengths across each class's range,
batch jobs as the Batch API sends them) through the router as an unpinned tenant that names no tier
and sends no signals, the traffic the planner forecasts, and compares where each request would first
go with where the planner's rates go. Expected counts are conditioned on the class the router gave
each request, so the only noise is the router's own (none, with the mix's round-robin; a random draw
would be binomial, and the tolerance allows for that).
"""

from __future__ import annotations

import math
import random
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable

import pytest

from tests.serving.conftest import ROOT
from tokenplane.load import load_spec
from tokenplane.model.traffic import TrafficPlan, cache_pass_through, route
from tokenplane.routes import Routes
from tokenplane.serving.errors import ServingError
from tokenplane.serving.gateway.requests import parse
from tokenplane.serving.gateway.routing import RequestSignals, Router, classify
from tokenplane.serving.tokens import ESTIMATE
from tokenplane.serving.types import Endpoint, TargetKind
from tokenplane.spec import Jurisdiction, PlatformSpec, Provider, Tenant, Tier, WorkloadClass

REQUESTS_PER_REGION = 2000
REFUSED = "refused"
LONG_WORD_TOKENS = 100  # the estimate counts a word as its length / 4: long words keep 120k-token prompts cheap
LONG_WORD = "abcd" * LONG_WORD_TOKENS
Destination = str  # "pool tier small", "provider openai", or REFUSED
MakeRouter = Callable[[PlatformSpec, str], Router]


def _planned(spec: PlatformSpec, traffic: TrafficPlan, region: str) -> dict[WorkloadClass, dict[Destination, float]]:
    """Per class, the share of the planner's rate that reaches each destination."""
    rates: dict[WorkloadClass, defaultdict[Destination, float]] = {}
    for (name, _), load in traffic.loads.items():
        if name != region or spec.is_embedding(load.pool):
            continue
        for cls, rps in load.per_class.items():
            rates.setdefault(cls, defaultdict(float))[f"pool tier {load.pool.tier.value}"] += rps
    for spill in traffic.spills:
        if spill.region == region:
            rates.setdefault(spill.cls, defaultdict(float))[f"provider {spill.provider}"] += spill.rps
    for miss in traffic.unrouted:
        if miss.region == region:
            rates.setdefault(miss.cls, defaultdict(float))[REFUSED] += miss.rps
    return {cls: {d: r / sum(c.values()) for d, r in c.items()} for cls, c in rates.items()}


def _first_stop(router: Router, tenant: Tenant, cls: WorkloadClass, prompt: int, output: int) -> tuple[str, str]:
    """(the class the router gives the request, the destination of its first target)."""
    text = (LONG_WORD + " ") * (prompt // LONG_WORD_TOKENS) + "word " * (prompt % LONG_WORD_TOKENS)
    body = {"model": "auto", "messages": [{"role": "user", "content": text}], "max_tokens": output}
    request = parse(Endpoint.CHAT, body, ESTIMATE)
    batch = cls is WorkloadClass.D  # class D arrives through the Batch API
    try:
        chosen = router.route(tenant, request, signals=RequestSignals(), batch=batch)
    except ServingError:
        return classify(router.spec, request.prompt_tokens, batch=batch).value, REFUSED
    first = chosen.targets[0]
    where = f"pool tier {first.tier.value}" if first.kind is TargetKind.POOL else f"provider {first.name}"
    return chosen.workload_class.value, where


def disagreements(
    spec: PlatformSpec,
    region: str,
    make_router: MakeRouter,
    *,
    seed: int,
    only: WorkloadClass | None = None,
    requests: int = REQUESTS_PER_REGION,
) -> list[str]:
    """Each destination whose routed count leaves the planner's expectation by more than noise."""
    rng = random.Random(seed)
    router = make_router(spec, region)
    tenant = _unpinned()
    planned = _planned(spec, route(spec), region)
    classes = [c for c in spec.workload_classes if c in planned and only in (None, c)]
    weights = [spec.workload_classes[c].share * cache_pass_through(spec, c) for c in classes]
    seen: Counter[tuple[str, str]] = Counter()
    for cls in rng.choices(classes, weights=weights, k=requests):
        c = spec.workload_classes[cls]
        prompt = rng.randint(c.prompt_tokens.min, c.prompt_tokens.max)
        seen[_first_stop(router, tenant, cls, prompt, c.output_tokens.max)] += 1
    per_class: Counter[str] = Counter()
    for (cls_name, _), n in seen.items():
        per_class[cls_name] += n
    expected: defaultdict[str, float] = defaultdict(float)
    for cls_name, n in per_class.items():
        for where, share in planned.get(WorkloadClass(cls_name), {REFUSED: 1.0}).items():
            expected[where] += n * share
    observed: Counter[str] = Counter()
    for (_, where), n in seen.items():
        observed[where] += n
    found = []
    for where in sorted(set(expected) | set(observed)):
        p = expected[where] / requests
        noise = 4 * math.sqrt(requests * p * (1 - p)) + len(per_class)  # binomial, + 1 per class's turns
        if abs(observed[where] - expected[where]) > noise:
            found.append(f"{region}: {where} planned {expected[where]:.0f}, routed {observed[where]}")
    return found


def _unpinned() -> Tenant:
    """A tenant the planner's forecast describes: no residency, every tier, a plan no rule matches."""
    return Tenant(name="forecast", plan="standard", rpm=10**6, tpm=10**9, api_key_secret="env://FORECAST_KEY")


def _router(spec: PlatformSpec, region: str) -> Router:
    return Router(spec, region)


SPECS = {name: load_spec(ROOT / "stacks" / f"{name}.yaml") for name in ("dev", "byteion")}
CASES = [(name, r.name) for name, spec in SPECS.items() for r in spec.regions if r.traffic_share > 0]


@pytest.mark.parametrize(("stack", "region"), CASES)
def test_the_gateway_routes_a_workload_as_the_planner_split_it(stack: str, region: str) -> None:
    spec = SPECS[stack]
    assert disagreements(spec, region, _router, seed=zlib.crc32(region.encode())) == []


class LargestShareRouter(Router):
    """The gateway before routes: every unmatched ``auto`` request to the tier with the largest share."""

    def _mix_turn(self, cls: WorkloadClass, tenant: Tenant) -> Tier:
        return next(iter(self.routes.mix_among(tenant.allowed_tiers)))


class RegionJurisdictionRoutes(Routes):
    """The workbench before routes: a provider must list the region's jurisdiction, whoever the tenant is."""

    def admits(self, provider: Provider, tier: Tier, residency: Jurisdiction | None) -> bool:
        return super().admits(provider, tier, residency) and self.region.jurisdiction in provider.jurisdictions


def _region_jurisdiction_router(spec: PlatformSpec, region: str) -> Router:
    router = Router(spec, region)
    router.routes = RegionJurisdictionRoutes(spec, region)
    return router


def test_the_comparison_fires_on_the_largest_share_gateway() -> None:
    spec = SPECS["dev"]
    found = disagreements(spec, "local", LargestShareRouter, seed=7)
    assert any("pool tier small" in f for f in found) and any("pool tier large" in f for f in found), found


def test_the_comparison_fires_when_overflow_keeps_to_the_regions_jurisdiction() -> None:
    # byteion's ap-southeast (APAC) runs no large pool: class C goes to openai (the large tier's first fallback),
    # which lists only US.
    spec = SPECS["byteion"]
    found = disagreements(spec, "ap-southeast", _region_jurisdiction_router, seed=7, only=WorkloadClass.C, requests=200)
    assert any("provider openai" in f for f in found), found


def test_the_routers_targets_are_the_routes_hops() -> None:
    spec = SPECS["dev"]
    hops = Routes(spec, "local").chain(Tier.SMALL, WorkloadClass.A)
    request = parse(Endpoint.CHAT, {"model": "small", "messages": [{"role": "user", "content": "hi"}]}, ESTIMATE)
    targets = Router(spec, "local").route(_unpinned(), request, signals=RequestSignals()).targets
    assert [(t.name, t.tier, t.kind is TargetKind.PROVIDER) for t in targets] == [
        (h.name, h.tier, h.provider) for h in hops
    ]
