"""Where a request may go: the tier split, the failover chain and its one provider filter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tokenplane.routes import Routes
from tokenplane.spec import Jurisdiction, PlatformSpec, Tier, WorkloadClass

SpecData = dict[str, Any]
Load = Callable[[SpecData], PlatformSpec]


def test_class_only_rule_pins_the_class_to_its_tier(dev_data: SpecData, load_data: Load) -> None:
    spec = load_data(dev_data)  # dev.yaml: batch-to-small matches classes [D] only
    assert Routes(spec, "local").split(WorkloadClass.D) == {Tier.SMALL: 1.0}


def test_class_without_a_class_only_rule_follows_the_mix(dev_data: SpecData, load_data: Load) -> None:
    spec = load_data(dev_data)  # free-plan-small matches tenant plans, so it pins no class
    assert Routes(spec, "local").split(WorkloadClass.A) == spec.routing.mix


def test_rule_matching_classes_and_more_does_not_pin_the_class(dev_data: SpecData, load_data: Load) -> None:
    dev_data["routing"]["rules"] = [
        {"name": "long-b", "match": {"classes": ["B"], "min_context_tokens": 4000}, "tier": "large"}
    ]
    spec = load_data(dev_data)
    assert Routes(spec, "local").split(WorkloadClass.B) == spec.routing.mix


def test_the_chain_is_the_tier_then_its_fallbacks_in_order(dev_data: SpecData, load_data: Load) -> None:
    routes = Routes(load_data(dev_data), "local")  # dev.yaml: small -> medium -> openai
    hops = routes.chain(Tier.SMALL, WorkloadClass.A)
    assert [(h.name, h.tier, h.provider) for h in hops] == [
        ("small", Tier.SMALL, False),
        ("medium", Tier.MEDIUM, False),
        ("openai", Tier.SMALL, True),
    ]


def test_an_unpinned_tenants_overflow_may_leave_the_regions_jurisdiction(dev_data: SpecData, load_data: Load) -> None:
    routes = Routes(load_data(dev_data), "local")  # an EU region; openai lists only US
    assert routes.region.jurisdiction is Jurisdiction.EU
    provider = routes.first_provider(Tier.SMALL)
    assert provider is not None and provider.name == "openai"


def test_a_pinned_tenants_chain_holds_no_provider_outside_its_jurisdiction(dev_data: SpecData, load_data: Load) -> None:
    routes = Routes(load_data(dev_data), "local")
    assert routes.first_provider(Tier.SMALL, residency=Jurisdiction.EU) is None
    assert all(not h.provider for h in routes.chain(Tier.SMALL, residency=Jurisdiction.EU))
    assert routes.first_provider(Tier.SMALL, residency=Jurisdiction.US) is not None


def test_a_tier_the_tenant_may_not_use_is_skipped_on_the_way(dev_data: SpecData, load_data: Load) -> None:
    routes = Routes(load_data(dev_data), "local")
    hops = routes.chain(Tier.SMALL, WorkloadClass.A, allowed={Tier.SMALL})
    assert [h.name for h in hops] == ["small", "openai"]


def test_a_provider_without_a_key_here_is_left_out(dev_data: SpecData, load_data: Load) -> None:
    routes = Routes(load_data(dev_data), "local", providers=[])
    assert routes.first_provider(Tier.SMALL) is None


def test_pools_whose_context_is_too_short_drop_out(dev_data: SpecData, load_data: Load) -> None:
    routes = Routes(load_data(dev_data), "local")
    longest = max(p.engine.max_model_len for p in routes.chat_pools)
    assert routes.serving(Tier.SMALL, WorkloadClass.A, needed=longest + 1) == ()
    assert [h.name for h in routes.chain(Tier.SMALL, WorkloadClass.A, needed=longest + 1)] == ["openai"]


def test_the_mix_among_allowed_tiers_drops_the_others_largest_first(dev_data: SpecData, load_data: Load) -> None:
    routes = Routes(load_data(dev_data), "local")  # 0.7 / 0.2 / 0.1
    assert list(routes.mix_among({Tier.LARGE, Tier.MEDIUM})) == [Tier.MEDIUM, Tier.LARGE]
    assert list(routes.mix_among(set())) == [Tier.SMALL, Tier.MEDIUM, Tier.LARGE]
