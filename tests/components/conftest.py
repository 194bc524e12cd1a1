"""Rendered graphs of the example specs, built once per test session (a render takes seconds)."""

from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import pytest
import yaml

from tests.paths import REPO_ROOT
from tokenplane.load import load_spec, validate_spec
from tokenplane.proof.render import (
    REGION_TYPE,
    RenderedResource,
    RenderResult,
    kubernetes_manifest,
    mock_outputs,
    render,
)
from tokenplane.spec import PlatformSpec

ROOT = REPO_ROOT
# pulumi_aws loads its submodules lazily, and s3 and ec2 warn at import time about their own
# deprecated classes, which tokenplane never uses. Under filterwarnings=error the first render
# would fail on that warning, so load the submodules the components use once, with it silenced.
AWS_SUBMODULES = ("ec2", "ecr", "eks", "elasticache", "iam", "kms", "msk", "route53", "s3")
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"pulumi_aws\.")
    for _submodule in AWS_SUBMODULES:
        getattr(importlib.import_module(f"pulumi_aws.{_submodule}"), "__all__", None)  # attribute access loads it


# A shipped stack with some platform fields changed, by name: "minimal-tls" is minimal with a domain one owns
# (a delegated zone, hence a certificate, TLS on 443 and global DNS), which the shipped minimal leaves out.
TLS_DOMAIN = "llm.acme-ai.com"
TLS_ZONE = "Z05ACMEAI0LLM00000001"
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "minimal-tls": ("minimal", {"domain": TLS_DOMAIN, "hosted_zone_id": TLS_ZONE}),
}


@functools.cache
def spec(name: str) -> PlatformSpec:
    if name in VARIANTS:
        base, platform = VARIANTS[name]
        data = yaml.safe_load((ROOT / "stacks" / f"{base}.yaml").read_text(encoding="utf-8"))
        data["platform"].update(platform)
        return validate_spec(data)
    return load_spec(ROOT / "stacks" / f"{name}.yaml")


@functools.cache
def rendered(name: str) -> RenderResult:
    return render(spec(name))


@pytest.fixture(scope="session")
def dev() -> RenderResult:
    return rendered("dev")


@pytest.fixture(scope="session")
def byteion() -> RenderResult:
    return rendered("byteion")


def of_type(result: RenderResult, type_token: str, region: str | None = None) -> list[RenderedResource]:
    return [r for r in result.resources if r.type == type_token and (region is None or r.region == region)]


def k8s_objects(result: RenderResult, kind: str, region: str | None = None) -> list[dict[str, Any]]:
    """Rendered Kubernetes objects of one kind, as they would be applied."""
    out = []
    for r in result.resources:
        if r.is_kubernetes_object and r.inputs.get("kind") == kind and (region is None or r.region == region):
            manifest = kubernetes_manifest(r)
            manifest["_urn"] = r.urn
            out.append(manifest)
    return out


def named(objects: Iterable[dict[str, Any]], name: str) -> dict[str, Any]:
    matches = [o for o in objects if o["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one object named {name}, found {[o['_urn'] for o in matches]}"
    return matches[0]


def containers(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = deployment["spec"]["template"]["spec"]["containers"]
    return result


Finder = Callable[..., list[RenderedResource]]


def mock_id(resource: RenderedResource) -> str:
    """The ID the mocks gave a resource: what other resources' inputs (``subnetId``, ``bucket``) hold."""
    return mock_outputs(resource.type, resource.name, resource.inputs, "")[0]


def mock_output(resource: RenderedResource, key: str, cloud_region: str = "") -> Any:
    """One output the mocks gave a resource (an ARN, a bucket name), as its dependents received it."""
    return mock_outputs(resource.type, resource.name, resource.inputs, cloud_region)[1][key]


def enclosing_regions(result: RenderResult, platform: PlatformSpec) -> dict[str, str | None]:
    """URN -> the spec region of the nearest Region component above it, found by walking parents.

    Independent of the render's own attribution (which trusts the AWS provider), so tests can
    check that attribution and the provider wiring against the component tree.
    """
    by_urn = {r.urn: r for r in result.resources}
    region_components = {f"{platform.platform.name}-{r.name}": r.name for r in platform.regions}
    out: dict[str, str | None] = {}
    for resource in result.resources:
        current: RenderedResource | None = resource
        found = None
        while current is not None:
            if current.type == REGION_TYPE:
                found = region_components[current.name]
                break
            current = by_urn.get(current.parent or "")
        out[resource.urn] = found
    return out


def placements(platform: PlatformSpec) -> list[tuple[str, str]]:
    """(region name, pool name) for every pool placed in a region."""
    return [(region.name, placement.pool) for region in platform.regions for placement in region.pools]
