"""Where peak traffic goes: rules pin classes to tiers, caches absorb hits, fallbacks spill."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenplane.model.traffic import Spill, TrafficPlan, cache_pass_through, route
from tokenplane.spec import PlatformSpec, Tier, WorkloadClass

SpecData = dict[str, Any]
Load = Callable[[SpecData], PlatformSpec]


def _without_large_pool(data: SpecData) -> None:
    """Drop the large pool; the EU tenant keeps only the tiers the EU region still serves."""
    data["pools"] = [p for p in data["pools"] if p["name"] != "large"]
    for region in data["regions"]:
        region["pools"] = [pl for pl in region["pools"] if pl["pool"] != "large"]
    for tenant in data["tenants"]:
        if tenant.get("residency") == "EU":
            tenant["allowed_tiers"] = ["small", "medium"]


def _demand(spec: PlatformSpec) -> float:
    """Requests per second that miss the caches: what pools and providers must absorb."""
    return sum(
        spec.platform.peak_rps * r.traffic_share * c.share * cache_pass_through(spec, cls)
        for r in spec.regions
        for cls, c in spec.workload_classes.items()
    )


def _served(spec: PlatformSpec, traffic: TrafficPlan) -> float:
    to_pools = sum(load.rps for load in traffic.loads.values() if not spec.is_embedding(load.pool))
    return to_pools + sum(s.rps for s in traffic.spills) + sum(u.rps for u in traffic.unrouted)


def test_pinned_class_reaches_only_pools_of_its_tier(dev_data: SpecData, load_data: Load) -> None:
    spec = load_data(dev_data)
    traffic = route(spec)
    with_d = {pool for (_, pool), load in traffic.loads.items() if load.per_class.get(WorkloadClass.D, 0) > 0}
    assert with_d == {"small"}
    expected = (
        spec.platform.peak_rps
        * spec.workload_classes[WorkloadClass.D].share
        * cache_pass_through(spec, WorkloadClass.D)
    )
    assert math.isclose(traffic.loads[("local", "small")].per_class[WorkloadClass.D], expected)


def test_batch_class_skips_the_exact_cache(dev_data: SpecData, load_data: Load) -> None:
    spec = load_data(dev_data)
    assert cache_pass_through(spec, WorkloadClass.D) == 1.0
    assert math.isclose(cache_pass_through(spec, WorkloadClass.A), (1 - 0.1) * (1 - 0.05))


def test_traffic_to_pools_adds_up_to_peak_after_caches(dev_data: SpecData, load_data: Load) -> None:
    spec = load_data(dev_data)
    traffic = route(spec)
    assert not traffic.spills
    assert not traffic.unrouted
    assert math.isclose(_served(spec, traffic), _demand(spec))


def test_traffic_to_pools_and_providers_adds_up_to_peak_after_caches(dev_data: SpecData, load_data: Load) -> None:
    _without_large_pool(dev_data)
    spec = load_data(dev_data)
    traffic = route(spec)
    assert traffic.spills
    assert math.isclose(_served(spec, traffic), _demand(spec))


@settings(deadline=None, max_examples=25)
@given(
    peak=st.floats(min_value=0.1, max_value=10_000),
    a=st.integers(min_value=1, max_value=98),
    b=st.integers(min_value=1, max_value=98),
)
def test_traffic_is_conserved_for_any_peak_and_class_split(
    dev_data_pristine: SpecData, peak: float, a: int, b: int
) -> None:
    data = copy.deepcopy(dev_data_pristine)
    b = min(b, 99 - a)
    data["platform"]["peak_rps"] = peak
    shares = {"A": a / 100, "B": b / 100, "D": (100 - a - b) / 100}
    for cls, share in shares.items():
        data["workload_classes"][cls]["share"] = share
    spec = PlatformSpec.model_validate(data)
    assert math.isclose(_served(spec, route(spec)), _demand(spec), rel_tol=1e-9)


def test_fallback_to_a_provider_records_a_spill(dev_data: SpecData, load_data: Load) -> None:
    _without_large_pool(dev_data)
    spec = load_data(dev_data)
    traffic = route(spec)
    pass_a = cache_pass_through(spec, WorkloadClass.A)
    expected = spec.platform.peak_rps * spec.workload_classes[WorkloadClass.A].share * pass_a * 0.1  # large = 10%
    spill_a = next(s for s in traffic.spills if s.cls is WorkloadClass.A)
    assert spill_a == Spill("local", WorkloadClass.A, Tier.LARGE, "openai", spill_a.rps)
    assert math.isclose(spill_a.rps, expected)


def test_fallback_to_another_tier_serves_locally_before_any_provider(dev_data: SpecData, load_data: Load) -> None:
    # Without a small pool, small traffic follows small: [medium, openai] and stays on the medium pool.
    dev_data["pools"] = [p for p in dev_data["pools"] if p["name"] != "small"]
    dev_data["regions"][0]["pools"] = [pl for pl in dev_data["regions"][0]["pools"] if pl["pool"] != "small"]
    # Class D is served only by the small pool, so drop it from the workload.
    del dev_data["workload_classes"]["D"]
    dev_data["workload_classes"]["A"]["share"] = 0.75
    dev_data["routing"]["rules"] = []
    for tenant in dev_data["tenants"]:
        if tenant.get("residency") == "EU":
            tenant["allowed_tiers"] = ["medium", "large"]
    spec = load_data(dev_data)
    traffic = route(spec)
    assert not traffic.spills
    assert not traffic.unrouted
    assert math.isclose(traffic.loads[("local", "medium")].rps + traffic.loads[("local", "large")].rps, _demand(spec))


def test_tier_without_pool_or_fallback_is_unrouted(dev_data: SpecData, load_data: Load) -> None:
    _without_large_pool(dev_data)
    del dev_data["routing"]["fallbacks"]["large"]
    spec = load_data(dev_data)
    traffic = route(spec)
    assert {(u.cls, u.tier, u.chain) for u in traffic.unrouted} == {
        (WorkloadClass.A, Tier.LARGE, ("large",)),
        (WorkloadClass.B, Tier.LARGE, ("large",)),
    }


def test_embedding_pool_embeds_every_semantic_cached_request(dev_data: SpecData, load_data: Load) -> None:
    spec = load_data(dev_data)
    embed = route(spec).loads[("local", "embed")]
    classes = spec.cache.semantic.classes
    expected = sum(spec.platform.peak_rps * spec.workload_classes[c].share for c in classes)
    assert set(embed.per_class) == set(classes)
    assert math.isclose(embed.rps, expected)
