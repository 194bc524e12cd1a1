"""GlobalRouting: Route53 names that keep each jurisdiction's traffic inside it, and fail over within it."""

from __future__ import annotations

import functools
from collections import defaultdict
from typing import Any

import pytest
import yaml

from tests.components.conftest import k8s_objects, mock_id, named, of_type, rendered, spec
from tokenplane.components.global_routing import region_host
from tokenplane.load import load_spec_text
from tokenplane.proof.render import RenderedResource, RenderResult, render
from tokenplane.spec import PlatformSpec, RegionRole

RECORD = "aws:route53/record:Record"
HEALTH_CHECK = "aws:route53/healthCheck:HealthCheck"
POLICIES = ("failoverRoutingPolicies", "latencyRoutingPolicies", "geolocationRoutingPolicies")
# What Route53 geolocation should send to each of byteion's jurisdictions.
BYTEION_GEO = {
    "US": {("country", "US")},
    "EU": {("continent", "EU")},
    "APAC": {("continent", "AS"), ("continent", "OC")},
}
SECONDARIES = _dr.secondaries if (_dr := spec("byteion").dr) else {}  # primary region -> its DR region


def byteion_domain() -> str:
    """byteion's domain, which the spec sets (a spec without one renders no global routing)."""
    domain = spec("byteion").platform.domain
    if domain is None:
        raise AssertionError("stacks/byteion.yaml sets no platform.domain")
    return domain


def records(result: RenderResult, name: str) -> list[RenderedResource]:
    return [r for r in of_type(result, RECORD) if r.inputs.get("name") == name]


def policy_of(record: RenderedResource) -> str:
    return next((p.removesuffix("RoutingPolicies") for p in POLICIES if record.inputs.get(p)), "simple")


def resolve(result: RenderResult, name: str) -> set[str]:
    """Every hostname outside the zone that ``name`` can resolve to, following CNAMEs through the zone."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for r in of_type(result, RECORD):
        by_name[r.inputs["name"]].extend(r.inputs.get("records") or [])
    seen, pending, leaves = set(), [name], set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        if current in by_name:
            pending.extend(by_name[current])
        else:
            leaves.add(current)
    return leaves


def test_jurisdiction_names_route_only_to_regions_of_that_jurisdiction(byteion: RenderResult) -> None:
    platform, domain = spec("byteion"), byteion_domain()
    for jurisdiction in BYTEION_GEO:
        latency = records(byteion, f"{jurisdiction.lower()}.{domain}")
        targets = {t for r in latency for t in r.inputs["records"]}
        expected = {
            region_host(r.name, domain)
            for r in platform.regions
            if r.jurisdiction.value == jurisdiction and r.role is RegionRole.PRIMARY
        }
        assert targets == expected, f"{[r.urn for r in latency]} send {jurisdiction} traffic to {sorted(targets)}"
        assert {policy_of(r) for r in latency} == {"latency"}, f"{[r.urn for r in latency]} are not latency records"


@pytest.mark.parametrize("primary", sorted(SECONDARIES))
def test_primary_region_name_fails_over_to_its_dr_secondary(byteion: RenderResult, primary: str) -> None:
    endpoints = byteion.outputs["gateway_endpoints"]
    secondary = SECONDARIES[primary]
    found = {
        r.inputs["failoverRoutingPolicies"][0]["type"]: (r.inputs["records"], r.urn)
        for r in records(byteion, region_host(primary, byteion_domain()))
    }
    assert {role: targets for role, (targets, _) in found.items()} == {
        "PRIMARY": [endpoints[primary]],
        "SECONDARY": [endpoints[secondary]],
    }, f"{[urn for _, urn in found.values()]} fail {primary} over as {found}"


@pytest.mark.parametrize("primary", sorted(SECONDARIES))
def test_failover_records_are_health_checked_against_their_own_target(byteion: RenderResult, primary: str) -> None:
    checks = {c.inputs["fqdn"]: mock_id(c) for c in of_type(byteion, HEALTH_CHECK)}
    for record in records(byteion, region_host(primary, byteion_domain())):
        [target] = record.inputs["records"]
        assert record.inputs.get("healthCheckId") == checks.get(target), (
            f"{record.urn} points at {target} but is health-checked by {record.inputs.get('healthCheckId')}"
        )


def test_api_name_geolocates_each_jurisdiction_and_defaults_to_latency(byteion: RenderResult) -> None:
    domain = spec("byteion").platform.domain
    geo: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for record in records(byteion, f"api.{domain}"):
        [target] = record.inputs["records"]
        [policy] = record.inputs.get("geolocationRoutingPolicies") or [{}]
        geo[target] |= {(k, v) for k, v in policy.items() if k in ("country", "continent")}
    expected = {f"{j.lower()}.{domain}": locations for j, locations in BYTEION_GEO.items()}
    expected[f"latency.{domain}"] = {("country", "*")}
    assert dict(geo) == expected, f"api.{domain} geolocates {dict(geo)}"


def test_every_regions_gateway_is_health_checked(byteion: RenderResult) -> None:
    checks = of_type(byteion, HEALTH_CHECK)
    fqdns = sorted(c.inputs["fqdn"] for c in checks)
    assert fqdns == sorted(byteion.outputs["gateway_endpoints"].values()), f"{[c.urn for c in checks]} check {fqdns}"
    for check in checks:
        assert (check.inputs.get("type"), check.inputs.get("resourcePath")) == ("HTTPS", "/readyz"), f"{check.urn}"


@pytest.mark.parametrize("name", ["dev", "byteion", "minimal"])
def test_each_dns_name_uses_one_routing_policy(name: str) -> None:
    """Route53 rejects a simple record next to others of the same name, and mixed routing policies."""
    by_name: dict[str, list[RenderedResource]] = defaultdict(list)
    for r in of_type(rendered(name), RECORD):
        by_name[r.inputs["name"]].append(r)
    for dns_name, group in by_name.items():
        policies = {policy_of(r) for r in group}
        assert len(policies) == 1 and (policies != {"simple"} or len(group) == 1), (
            f"{dns_name} has conflicting record sets {[(r.urn, policy_of(r)) for r in group]}"
        )


@pytest.mark.parametrize("name", ["dev", "byteion", "minimal"])
def test_no_dns_record_points_at_its_own_name(name: str) -> None:
    for r in of_type(rendered(name), RECORD):
        assert r.inputs["name"] not in r.inputs.get("records", []), f"{r.urn} is a CNAME to itself ({r.inputs['name']})"


# --- residency: an EU-only tenant served by pools placed only in the EU ---------------------------

EU_POOLS = ("eu-chat", "eu-rag")
MODEL: dict[str, Any] = {
    "version": "v1",
    "preset": "qwen2.5-7b",
    "tokenizer": "Qwen/Qwen2.5-7B-Instruct",
    "prompt_contract": "chat-v1",
    "sha256": "5f1a9c0e2b7d4c38a6e1f0b9d2c7a4e6f8b1d3c5a7e9f0b2d4c6e8a0b1c3d5e7",
}
CLASS_A = {"share": 1.0, "prompt_tokens": {"min": 50, "max": 1000}, "output_tokens": {"min": 20, "max": 400}}
RESIDENCY = {
    # A domain with its delegated zone: global DNS (the jurisdiction names) exists only with one.
    "platform": {
        "name": "resid",
        "environment": "dev",
        "peak_rps": 10,
        "domain": "llm.acme-ai.com",
        "hosted_zone_id": "Z05ACMEAI0LLM00000001",
    },
    "budget": {"max_usd_per_hour": 200},
    "regions": [
        {
            "name": "us-east",
            "cloud_region": "us-east-1",
            "azs": ["us-east-1a", "us-east-1b"],
            "jurisdiction": "US",
            "traffic_share": 0.6,
            "pools": [{"pool": "chat", "min_replicas": 1, "max_replicas": 2}],
        },
        {
            "name": "eu-west",
            "cloud_region": "eu-west-1",
            "azs": ["eu-west-1a", "eu-west-1b", "eu-west-1c"],
            "jurisdiction": "EU",
            "traffic_share": 0.4,
            "pools": [{"pool": p, "min_replicas": 1, "max_replicas": 3} for p in EU_POOLS],
        },
    ],
    "models": [
        {**MODEL, "name": "chat-model", "uri": "s3://m/chat/v1/"},
        {**MODEL, "name": "eu-model", "uri": "s3://m/eu/v1/"},
    ],
    "pools": [
        {"name": "chat", "tier": "small", "model": "chat-model", "gpu": "L4", "classes": ["A"]},
        # A warm pool adds the prefetch DaemonSet, one more per-pool object that must stay in the EU.
        {
            "name": "eu-chat",
            "tier": "small",
            "model": "eu-model",
            "gpu": "L4",
            "classes": ["A"],
            "autoscaling": {"warm_pool": 1},
        },
        {"name": "eu-rag", "tier": "medium", "model": "eu-model", "gpu": "L4", "classes": ["A"]},
    ],
    "workload_classes": {"A": CLASS_A},
    "tenants": [
        {"name": "us-co", "rpm": 100, "tpm": 100000, "allowed_tiers": ["small"], "api_key_secret": "env://US_KEY"},
        {
            "name": "eu-co",
            "residency": "EU",
            "rpm": 100,
            "tpm": 100000,
            "allowed_tiers": ["small", "medium"],
            "api_key_secret": "env://EU_KEY",
        },
    ],
    "routing": {"mix": {"small": 0.8, "medium": 0.2}},
}


@functools.cache
def residency() -> tuple[PlatformSpec, RenderResult]:
    platform = load_spec_text(yaml.safe_dump(RESIDENCY), filename="residency.yaml")
    return platform, render(platform)


def belongs_to_pool(r: RenderedResource, pool: str) -> bool:
    labels = (r.inputs.get("metadata") or {}).get("labels") or r.inputs.get("labels") or {}
    components = (f"-pool-{pool}", f"-gpu-{pool}")
    in_component = any(r.name.endswith(c) or f"{c}-" in r.name for c in components)
    return labels.get("tokenplane.io/pool") == pool or in_component


@pytest.mark.parametrize("pool", EU_POOLS)
def test_eu_only_pool_has_no_resource_outside_the_eu_region(pool: str) -> None:
    _, result = residency()
    owned = [r for r in result.resources if belongs_to_pool(r, pool)]
    assert {r.type for r in owned} >= {
        "kubernetes:apps/v1:Deployment",
        "aws:eks/nodeGroup:NodeGroup",
        "aws:ec2/launchTemplate:LaunchTemplate",
        "aws:iam/role:Role",
    }, f"{pool} owns only {sorted({r.type for r in owned})}"
    outside = [(r.urn, r.region) for r in owned if r.region != "eu-west"]
    assert not outside, f"EU-only pool {pool} has resources outside eu-west: {outside}"


def test_eu_tenants_hostname_resolves_only_to_eu_gateways() -> None:
    platform, result = residency()
    endpoints = result.outputs["gateway_endpoints"]
    hostname = result.outputs["dns"]["EU"]
    eu_gateways = {endpoints[r.name] for r in platform.regions if r.jurisdiction.value == "EU"}
    reached = resolve(result, hostname)
    assert reached and reached <= eu_gateways, f"{hostname} resolves to {sorted(reached)}; EU gateways: {eu_gateways}"


def test_us_model_gateway_has_no_route_to_eu_only_pools() -> None:
    _, result = residency()
    gateway = named((d for d in k8s_objects(result, "Deployment", "us-east")), "model-gateway")
    env = {e["name"] for c in gateway["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])}
    leaked = {f"POOL_URL_{p.upper().replace('-', '_')}" for p in EU_POOLS} & env
    assert not leaked, f"{gateway['_urn']} routes to EU-only pools through {sorted(leaked)}"
