"""Providers: every resource is created in its own region, through that region's provider and cluster."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.components.conftest import enclosing_regions, of_type, rendered, spec
from tokenplane.proof.render import RenderResult
from tokenplane.spec import PlatformSpec, RegionRole

AWS_PROVIDER = "pulumi:providers:aws"
K8S_PROVIDER = "pulumi:providers:kubernetes"
EXAMPLES = ["dev", "byteion"]


def provider_cloud_regions(result: RenderResult) -> dict[str, str]:
    """AWS provider URN -> the cloud region it targets."""
    return {p.urn: str(p.inputs.get("region")) for p in of_type(result, AWS_PROVIDER)}


def home_region(platform: PlatformSpec) -> str:
    return next((r.name for r in platform.regions if r.role is RegionRole.PRIMARY), platform.regions[0].name)


def registry_bucket_region(platform: PlatformSpec, name: str) -> str | None:
    """The region a registry bucket (or one of its settings) is named for, if the name is one."""
    prefix = f"{platform.platform.name}-registry-"
    for region in sorted(platform.regions, key=lambda r: len(r.name), reverse=True):
        stem = prefix + region.name
        if name == stem or name.startswith(f"{stem}-"):
            return region.name
    return None


def test_serving_image_repository_is_the_stacks_own_in_every_region(byteion: RenderResult) -> None:
    platform = spec("byteion")
    targets = provider_cloud_regions(byteion)
    repos = [
        r
        for r in byteion.resources
        if r.type == "aws:ecr/repository:Repository" and not str(r.inputs.get("name", "")).endswith("/vllm-openai")
    ]  # the vLLM mirror's repositories have their own test (test_vllm_mirror.py)
    where = sorted(targets.get(r.provider or "", "") for r in repos)
    assert where == sorted(r.cloud_region for r in platform.regions), f"repositories in {where}"
    for r in repos:
        assert r.inputs["name"] == "byteion/tokenplane-serving", f"{r.urn} is named {r.inputs['name']!r}"
    assert not [r for r in byteion.resources if r.type.startswith("aws:ecr/replicationConfiguration")], (
        "an ECR replication configuration is one per registry: a second stack would overwrite it"
    )


@pytest.mark.parametrize("name", EXAMPLES)
def test_each_region_has_exactly_one_aws_provider(name: str) -> None:
    platform, result = spec(name), rendered(name)
    targets = Counter(provider_cloud_regions(result).values())
    assert targets == Counter(r.cloud_region for r in platform.regions), (
        f"AWS providers target {dict(targets)}; expected one per spec region "
        f"({[p.urn for p in of_type(result, AWS_PROVIDER)]})"
    )


@pytest.mark.parametrize("name", EXAMPLES)
def test_each_aws_provider_targets_its_regions_cloud_region(name: str) -> None:
    platform, result = spec(name), rendered(name)
    by_name = {f"{platform.platform.name}-{r.name}-aws": r for r in platform.regions}
    for provider in of_type(result, AWS_PROVIDER):
        region = by_name.get(provider.name)
        assert region is not None, f"{provider.urn} is not named for a spec region ({sorted(by_name)})"
        assert provider.inputs.get("region") == region.cloud_region, (
            f"{provider.urn} targets {provider.inputs.get('region')}, not {region.name}'s {region.cloud_region}"
        )


@pytest.mark.parametrize("name", EXAMPLES)
def test_each_region_has_exactly_one_kubernetes_provider(name: str) -> None:
    platform, result = spec(name), rendered(name)
    regions = enclosing_regions(result, platform)
    providers = of_type(result, K8S_PROVIDER)
    per_region = Counter(regions[p.urn] for p in providers)
    assert per_region == Counter(r.name for r in platform.regions), (
        f"Kubernetes providers per region: {dict(per_region)} ({[p.urn for p in providers]})"
    )


def test_every_aws_resource_in_a_region_uses_that_regions_provider(byteion: RenderResult) -> None:
    platform = spec("byteion")
    targets = provider_cloud_regions(byteion)
    regions = enclosing_regions(byteion, platform)
    checked = 0
    for r in byteion.resources:
        region = regions[r.urn]
        if not r.type.startswith("aws:") or region is None:
            continue
        expected = platform.region(region).cloud_region
        assert targets.get(r.provider or "") == expected, (
            f"{r.urn} sits under Region {region} but its provider {r.provider} targets "
            f"{targets.get(r.provider or '')}, not {expected}"
        )
        assert r.region == region, f"{r.urn} is attributed to {r.region}, not to its Region component's {region}"
        checked += 1
    assert checked > 0, "no AWS resource sits under a Region component"


def test_registry_buckets_are_created_in_the_region_they_serve(byteion: RenderResult) -> None:
    platform = spec("byteion")
    targets = provider_cloud_regions(byteion)
    buckets = [r for r in byteion.resources if r.type.startswith("aws:s3/bucket")]
    named_for = {r.urn: registry_bucket_region(platform, r.name) for r in buckets}
    assert {region for region in named_for.values() if region} == {r.name for r in platform.regions}, (
        f"registry buckets and their settings are named for {sorted(filter(None, named_for.values()))}"
    )
    for r in buckets:
        region = named_for[r.urn]
        if region is None:  # the replication config, on the home bucket
            continue
        expected = platform.region(region).cloud_region
        assert targets.get(r.provider or "") == expected, (
            f"{r.urn} belongs to {region}'s registry bucket but its provider targets "
            f"{targets.get(r.provider or '')}, not {expected}"
        )


def test_global_aws_resources_use_the_home_regions_provider(byteion: RenderResult) -> None:
    platform = spec("byteion")
    home = platform.region(home_region(platform)).cloud_region
    targets = provider_cloud_regions(byteion)
    regions = enclosing_regions(byteion, platform)
    global_resources = [
        r
        for r in byteion.resources
        if r.type.startswith("aws:")
        and regions[r.urn] is None
        and registry_bucket_region(platform, r.name) is None
        and r.type != "aws:ecr/repository:Repository"  # one per region, checked below
    ]
    assert {r.type for r in global_resources} >= {
        "aws:route53/record:Record",  # in the spec's delegated zone (a prerequisite, not created here)
        "aws:s3/bucketObjectv2:BucketObjectv2",
    }, f"global AWS resources: {sorted({r.type for r in global_resources})}"
    for r in global_resources:
        assert targets.get(r.provider or "") == home, (
            f"{r.urn} is global but its provider targets {targets.get(r.provider or '')}, not the home region {home}"
        )


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_kubernetes_resource_uses_the_cluster_of_its_own_region(name: str) -> None:
    platform, result = spec(name), rendered(name)
    regions = enclosing_regions(result, platform)
    clusters = {p.urn: regions[p.urn] for p in of_type(result, K8S_PROVIDER)}
    resources = [r for r in result.resources if r.type.startswith("kubernetes:") and r.custom]
    assert resources, "no Kubernetes resources rendered"
    for r in resources:
        assert r.provider in clusters, f"{r.urn} uses {r.provider}, which is not a region's Kubernetes provider"
        assert clusters[r.provider] == regions[r.urn], (
            f"{r.urn} sits under Region {regions[r.urn]} but is applied to {clusters[r.provider]}'s cluster"
        )


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_invoke_goes_through_an_explicit_aws_provider(name: str) -> None:
    result = rendered(name)
    providers = {p.urn for p in of_type(result, AWS_PROVIDER)}
    assert result.calls, "the render recorded no invokes"
    for token, provider in result.calls:
        assert provider, f"invoke {token} carries no provider: it would run in the CLI's default region"
        assert provider in providers, f"invoke {token} goes through {provider}, not one of the platform's providers"
