"""Routing: the class from the estimate, the tier from rules or the model name, and residency above all."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.serving.conftest import ROOT
from tokenplane.load import load_spec_text
from tokenplane.serving.errors import ContextTooLong, NotFound, PermissionDenied
from tokenplane.serving.gateway.requests import parse
from tokenplane.serving.gateway.routing import MixTurns, RequestSignals, Router, classify
from tokenplane.serving.tokens import ESTIMATE
from tokenplane.serving.types import Endpoint, TargetKind
from tokenplane.spec import Jurisdiction, PlatformSpec, Tenant, Tier, WorkloadClass


def chat(model: str = "auto", text: str = "hello there", **extra: Any):  # type: ignore[no-untyped-def]
    return parse(Endpoint.CHAT, {"model": model, "messages": [{"role": "user", "content": text}], **extra}, ESTIMATE)


def tenant(spec: PlatformSpec, name: str) -> Tenant:
    return next(t for t in spec.tenants if t.name == name)


def with_us_region(data: dict[str, Any]) -> PlatformSpec:
    """The dev spec plus a US region that runs the same pools, and EU providers: a real residency choice."""
    data = copy.deepcopy(data)
    data["regions"][0]["traffic_share"] = 0.5
    us = copy.deepcopy(data["regions"][0])
    us.update(
        name="us", cloud_region="us-east-1", azs=["us-east-1a", "us-east-1b"], jurisdiction="US", traffic_share=0.5
    )
    data["regions"].append(us)
    return load_spec_text(yaml.safe_dump(data), filename="two-regions.yaml")


@pytest.fixture(scope="module")
def dev_data() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text())
    return data


def test_prompt_tokens_pick_the_class_whose_range_holds_them(dev_spec: PlatformSpec) -> None:
    assert classify(dev_spec, 300) is WorkloadClass.A
    assert classify(dev_spec, 5000) is WorkloadClass.B
    assert classify(dev_spec, 1500) is WorkloadClass.A  # between A (<=1000) and B (>=2000): the nearer
    assert classify(dev_spec, 300, batch=True) is WorkloadClass.D


def test_auto_follows_the_mix_and_a_plan_rule_pins_free_to_small(dev_spec: PlatformSpec) -> None:
    router = Router(dev_spec, "local")
    route = router.route(tenant(dev_spec, "demo"), chat(), signals=RequestSignals())
    assert route.tier is Tier.SMALL and route.rule is None
    free = router.route(tenant(dev_spec, "free"), chat(), signals=RequestSignals())
    assert free.tier is Tier.SMALL and free.rule == "free-plan-small"


def test_the_failover_chain_follows_the_spec_fallbacks(dev_spec: PlatformSpec) -> None:
    route = Router(dev_spec, "local").route(tenant(dev_spec, "demo"), chat("small"), signals=RequestSignals())
    assert [str(t) for t in route.targets] == ["pool:small@small", "pool:medium@medium", "provider:openai@small"]


def test_an_eu_tenant_never_gets_a_provider_outside_the_eu(dev_spec: PlatformSpec) -> None:
    route = Router(dev_spec, "local").route(tenant(dev_spec, "acme-eu"), chat("small"), signals=RequestSignals())
    assert [str(t) for t in route.targets] == ["pool:small@small", "pool:medium@medium"]


def test_an_eu_tenant_is_refused_by_a_us_gateway(dev_data: dict[str, Any]) -> None:
    spec = with_us_region(dev_data)
    with pytest.raises(PermissionDenied, match="pinned to EU"):
        Router(spec, "us").route(tenant(spec, "acme-eu"), chat(), signals=RequestSignals())


@settings(max_examples=200, deadline=None)
@given(
    model=st.sampled_from(["auto", "small", "medium", "large", "small-chat", "large-chat-v1"]),
    words=st.integers(min_value=1, max_value=3000),
    region=st.sampled_from(["local", "us"]),
    cls=st.sampled_from([None, "A", "B"]),
)
def test_every_target_of_a_pinned_tenant_is_in_its_jurisdiction(
    dev_data: dict[str, Any], model: str, words: int, region: str, cls: str | None
) -> None:
    spec = _two_regions(dev_data)
    router = Router(spec, region)
    acme = tenant(spec, "acme-eu")
    try:
        route = router.route(acme, chat(model, "word " * words), signals=RequestSignals())
    except (PermissionDenied, ContextTooLong):
        return  # refusing is always allowed; leaving the jurisdiction never is
    assert router.region.jurisdiction is Jurisdiction.EU
    for target in route.targets:
        if target.kind is TargetKind.PROVIDER:
            provider = spec.provider(target.name)
            assert provider is not None and Jurisdiction.EU in provider.jurisdictions, target


_CACHE: dict[int, PlatformSpec] = {}


def _two_regions(data: dict[str, Any]) -> PlatformSpec:
    if id(data) not in _CACHE:
        _CACHE[id(data)] = with_us_region(data)
    return _CACHE[id(data)]


def test_a_tier_the_plan_does_not_allow_is_a_403(dev_spec: PlatformSpec) -> None:
    with pytest.raises(PermissionDenied, match="may not use tier large"):
        Router(dev_spec, "local").route(tenant(dev_spec, "free"), chat("large"), signals=RequestSignals())


def test_an_unknown_model_is_a_404_listing_the_models(dev_spec: PlatformSpec) -> None:
    with pytest.raises(NotFound, match="small-chat") as info:
        Router(dev_spec, "local").route(tenant(dev_spec, "demo"), chat("gpt-9"), signals=RequestSignals())
    assert info.value.code == "model_not_found"


def test_a_prompt_longer_than_every_pool_is_context_too_long(dev_spec: PlatformSpec) -> None:
    request = chat("small", "word " * 20000)
    with pytest.raises(ContextTooLong, match="16384"):  # acme-eu has no provider it may use
        Router(dev_spec, "local").route(tenant(dev_spec, "acme-eu"), request, signals=RequestSignals())


def test_a_prompt_too_long_for_the_pools_goes_to_the_provider_when_allowed(dev_spec: PlatformSpec) -> None:
    route = Router(dev_spec, "local").route(
        tenant(dev_spec, "demo"), chat("small", "word " * 20000), signals=RequestSignals()
    )
    assert [str(t) for t in route.targets] == ["provider:openai@small"]


def test_a_registry_model_name_routes_to_its_tier(dev_spec: PlatformSpec) -> None:
    route = Router(dev_spec, "local").route(tenant(dev_spec, "demo"), chat("large-chat-v1"), signals=RequestSignals())
    assert route.tier is Tier.LARGE and route.primary_pool == "large"


def test_embeddings_route_to_the_embedding_pool(dev_spec: PlatformSpec) -> None:
    request = parse(Endpoint.EMBEDDINGS, {"model": "embedder", "input": "hi"}, ESTIMATE)
    route = Router(dev_spec, "local").route(tenant(dev_spec, "demo"), request, signals=RequestSignals())
    assert [str(t) for t in route.targets] == ["pool:embed@small"]


def test_models_lists_auto_tiers_and_registry_names(dev_spec: PlatformSpec) -> None:
    names = Router(dev_spec, "local").model_names()
    assert names[:4] == ["auto", "small", "medium", "large"]
    assert {"small-chat", "small-chat-v1", "embedder"} <= set(names)


def test_chains_built_once_per_context_bucket_still_follow_each_requests_length(dev_data: dict[str, Any]) -> None:
    """The router keeps each chain it builds; a request of another length must not get a chain built for a
    length on the other side of a pool's context, in either order."""
    data = copy.deepcopy(dev_data)
    next(p for p in data["pools"] if p["name"] == "medium")["engine"]["max_model_len"] = 10240
    spec = load_spec_text(yaml.safe_dump(data), filename="short-medium.yaml")
    router = Router(spec, "local")
    demo = tenant(spec, "demo")

    def pools(max_tokens: int) -> list[str]:
        route = router.route(demo, chat("small", max_tokens=max_tokens), signals=RequestSignals())
        return [t.name for t in route.targets if t.kind is TargetKind.POOL]

    assert pools(6000) == ["small", "medium"]
    assert pools(12000) == ["small"]  # past medium's 10,240: its pool drops out of the chain
    assert pools(10240 - 20) == ["small", "medium"]
    assert pools(11000) == ["small"]


@settings(max_examples=100, deadline=None)
@given(
    weights=st.lists(st.integers(min_value=1, max_value=20), min_size=1, max_size=3),
    turns=st.integers(min_value=1, max_value=300),
)
def test_the_mix_turns_hold_each_share_within_one_request(weights: list[int], turns: int) -> None:
    total = sum(weights)
    shares = {tier: w / total for tier, w in zip(Tier, weights, strict=False)}
    picker = MixTurns(shares)
    counts = Counter(picker.next() for _ in range(turns))
    for tier, share in shares.items():
        assert abs(counts[tier] - turns * share) <= 1 + 1e-9, (tier, counts, shares)
