"""Stack policies against the rendered example stacks, and against copies of them with one thing broken.

Each failing case starts from ``stacks/dev.yaml`` (or ``stacks/byteion.yaml``,
for DR and residency) and changes one thing in a copy of the rendered graph:
a dropped resource, an edited input, or an edited spec inside the gateways'
ConfigMaps, which is the spec the stack policies read.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from pulumi_policy import StackValidationPolicy

from tests.policies.fixtures import (
    Reported,
    container,
    dropping,
    editing,
    k8s,
    k8s_name,
    k8s_namespace,
    k8s_node,
    kind_of,
    node,
    provider,
    rendered,
    spec,
    stack_reports,
    workload,
)
from tokenplane.policies import stack
from tokenplane.policies.common import GATEWAY_CONFIG_MAPS
from tokenplane.proof.render import RenderedResource, RenderResult

Test = TypeVar("Test", bound=Callable[..., None])
BROKEN: set[str] = set()  # stack policies with a failing case below


def breaks(policy: StackValidationPolicy) -> Callable[[Test], Test]:
    """Mark a test as a failing case of ``policy``; a check at the end wants one for every policy."""

    def mark(test: Test) -> Test:
        BROKEN.add(policy.name)
        return test

    return mark


def messages(found: list[Reported]) -> list[str]:
    return [r.message for r in found]


def gateway_config_map(r: RenderedResource) -> bool:
    return kind_of(r) == "ConfigMap" and k8s_name(r) in GATEWAY_CONFIG_MAPS


def with_spec(graph: RenderResult, change: Callable[[dict[str, Any]], None], *, gateways: int) -> RenderResult:
    """The graph with ``change`` applied to the spec JSON in every gateway ConfigMap (both carry it)."""

    def rewrite(inputs: dict[str, Any]) -> None:
        data = json.loads(inputs["data"]["platform.json"])
        change(data)
        inputs["data"]["platform.json"] = json.dumps(data)

    return editing(graph, gateway_config_map, rewrite, expect=gateways)


def dev() -> RenderResult:
    return rendered("dev")


def byteion() -> RenderResult:
    return rendered("byteion")


def urn_where(graph: RenderResult, predicate: Callable[[RenderedResource], bool]) -> str:
    [urn] = [r.urn for r in graph.resources if predicate(r)]
    return urn


# --- the example stacks pass ------------------------------------------------------------------


@pytest.mark.parametrize("stack_name", ["dev", "byteion"])
@pytest.mark.parametrize("policy", stack.POLICIES, ids=lambda p: p.name)
def test_the_example_stacks_pass_every_stack_policy(policy: StackValidationPolicy, stack_name: str) -> None:
    assert stack_reports(policy, rendered(stack_name)) == []


@pytest.mark.parametrize("policy", stack.POLICIES, ids=lambda p: p.name)
def test_an_empty_stack_passes_every_stack_policy(policy: StackValidationPolicy) -> None:
    assert stack_reports(policy, []) == []


# --- S3 ---------------------------------------------------------------------------------------


def registry_bucket(r: RenderedResource) -> bool:
    return r.type == "aws:s3/bucket:Bucket" and r.name == "dev-registry-local"


def attached_to_registry(resource_type: str) -> Callable[[RenderedResource], bool]:
    bucket = urn_where(dev(), registry_bucket)
    return lambda r: r.type == resource_type and r.property_dependencies.get("bucket") == [bucket]


@breaks(stack.s3_buckets_private_versioned_encrypted)
def test_a_bucket_without_versioning_is_reported_at_the_bucket() -> None:
    graph = dropping(dev(), attached_to_registry("aws:s3/bucketVersioning:BucketVersioning"))
    found = stack_reports(stack.s3_buckets_private_versioned_encrypted, graph)
    assert found == [
        Reported(
            "bucket dev-registry-local lacks BucketVersioning with status Enabled", urn_where(dev(), registry_bucket)
        )
    ]


def test_suspended_versioning_is_not_versioning() -> None:
    def suspend(inputs: dict[str, Any]) -> None:
        inputs["versioningConfiguration"]["status"] = "Suspended"

    graph = editing(dev(), attached_to_registry("aws:s3/bucketVersioning:BucketVersioning"), suspend, expect=1)
    assert messages(stack_reports(stack.s3_buckets_private_versioned_encrypted, graph)) == [
        "bucket dev-registry-local lacks BucketVersioning with status Enabled"
    ]


def test_a_public_access_block_with_one_flag_off_does_not_block() -> None:
    def allow_policies(inputs: dict[str, Any]) -> None:
        inputs["blockPublicPolicy"] = False

    graph = editing(
        dev(), attached_to_registry("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"), allow_policies, expect=1
    )
    [message] = messages(stack_reports(stack.s3_buckets_private_versioned_encrypted, graph))
    assert message.startswith("bucket dev-registry-local lacks a BucketPublicAccessBlock with all four flags true")


def test_a_bucket_without_encryption_config_is_reported() -> None:
    sse = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
    graph = dropping(dev(), attached_to_registry(sse))
    [message] = messages(stack_reports(stack.s3_buckets_private_versioned_encrypted, graph))
    assert "dev-registry-local" in message and "BucketServerSideEncryptionConfiguration" in message


# --- registry replication ---------------------------------------------------------------------


def replication_config(r: RenderedResource) -> bool:
    return r.type == "aws:s3/bucketReplicationConfig:BucketReplicationConfig"


def test_a_stack_without_dr_needs_no_replication() -> None:
    assert spec("dev").dr is None
    assert stack_reports(stack.registry_replicated_to_dr, dev()) == []


@breaks(stack.registry_replicated_to_dr)
def test_dropping_the_replication_config_leaves_every_dr_region_without_weights() -> None:
    graph = dropping(byteion(), replication_config)
    found = messages(stack_reports(stack.registry_replicated_to_dr, graph))
    assert len(found) == 3
    for secondary, cloud, primary in [
        ("us-west", "us-west-2", "us-east"),
        ("eu-central", "eu-central-1", "eu-west"),
        ("ap-northeast", "ap-northeast-1", "ap-southeast"),
    ]:
        assert any(f"to {secondary} ({cloud}), the DR region of {primary}" in m for m in found), found


def test_a_disabled_rule_does_not_replicate_to_its_dr_region() -> None:
    def disable_us_west(inputs: dict[str, Any]) -> None:
        for rule in inputs["rules"]:
            if rule["id"] == "to-us-west":
                rule["status"] = "Disabled"

    graph = editing(byteion(), replication_config, disable_us_west, expect=1)
    found = messages(stack_reports(stack.registry_replicated_to_dr, graph))
    assert len(found) == 1 and "us-west (us-west-2)" in found[0], found


# --- network policies -------------------------------------------------------------------------


@breaks(stack.namespaces_have_network_policy)
def test_a_namespace_without_network_policies_is_reported_at_the_namespace() -> None:
    graph = dropping(dev(), lambda r: kind_of(r) == "NetworkPolicy" and k8s_namespace(r) == "llm-data")
    namespace = urn_where(dev(), lambda r: kind_of(r) == "Namespace" and k8s_name(r) == "llm-data")
    [found] = stack_reports(stack.namespaces_have_network_policy, graph)
    assert found.urn == namespace
    assert found.message.startswith("namespace llm-data has no NetworkPolicy") and "default deny" in found.message


def test_a_network_policy_in_another_cluster_does_not_cover_a_namespace() -> None:
    east, west = provider(name="us-east-k8s"), provider(name="us-west-k8s")
    graph = [
        k8s_node(k8s("Namespace", "llm-serving"), "us-east-ns", via=east),
        k8s_node(k8s("Namespace", "llm-serving"), "us-west-ns", via=west),
        k8s_node(k8s("NetworkPolicy", "default-deny-ingress", "llm-serving"), "us-east-deny", via=east),
    ]
    found = stack_reports(stack.namespaces_have_network_policy, graph)
    assert [r.urn for r in found] == [graph[1].urn]


# --- PodDisruptionBudgets ---------------------------------------------------------------------


@breaks(stack.replicated_workloads_have_pdb)
def test_the_gateway_without_its_pdb_is_reported_at_the_deployment() -> None:
    graph = dropping(dev(), lambda r: kind_of(r) == "PodDisruptionBudget" and k8s_name(r) == "ai-gateway")
    deployment = urn_where(dev(), lambda r: kind_of(r) == "Deployment" and k8s_name(r) == "ai-gateway")
    [found] = stack_reports(stack.replicated_workloads_have_pdb, graph)
    assert found.urn == deployment
    assert found.message.startswith(
        "Deployment llm-gateway/ai-gateway runs several replicas without a PodDisruptionBudget"
    )
    assert "maxUnavailable: 1" in found.message


def replicated(name: str, replicas: int) -> dict[str, Any]:
    return workload("Deployment", name, "llm-serving", [container(name, "nginx:1.27")], replicas=replicas)


def pdb(name: str) -> dict[str, Any]:
    selector = {"matchLabels": {"app.kubernetes.io/name": name}}
    return k8s("PodDisruptionBudget", name, "llm-serving", spec={"maxUnavailable": 1.0, "selector": selector})


def test_a_single_replica_workload_needs_no_pdb() -> None:
    assert stack_reports(stack.replicated_workloads_have_pdb, [k8s_node(replicated("solo", 1))]) == []


@pytest.mark.parametrize(
    "scaler",
    [
        k8s(
            "HorizontalPodAutoscaler",
            "web",
            "llm-serving",
            spec={"scaleTargetRef": {"name": "web"}, "minReplicas": 2.0},
        ),
        k8s("ScaledObject", "web", "llm-serving", spec={"scaleTargetRef": {"name": "web"}, "minReplicaCount": 2.0}),
    ],
    ids=["hpa", "keda"],
)
def test_an_autoscaler_floor_above_one_calls_for_a_pdb(scaler: dict[str, Any]) -> None:
    graph = [k8s_node(replicated("web", 1)), k8s_node(scaler)]
    assert [r.urn for r in stack_reports(stack.replicated_workloads_have_pdb, graph)] == [graph[0].urn]
    assert stack_reports(stack.replicated_workloads_have_pdb, [*graph, k8s_node(pdb("web"))]) == []


def test_a_pdb_selecting_other_pods_does_not_cover_a_workload() -> None:
    graph = [k8s_node(replicated("web", 3)), k8s_node(pdb("api"))]
    assert len(stack_reports(stack.replicated_workloads_have_pdb, graph)) == 1


def test_a_pdb_in_another_cluster_does_not_cover_a_workload() -> None:
    east, west = provider(name="us-east-k8s"), provider(name="us-west-k8s")
    graph = [k8s_node(replicated("web", 3), via=east), k8s_node(pdb("web"), via=west)]
    assert len(stack_reports(stack.replicated_workloads_have_pdb, graph)) == 1


# --- residency --------------------------------------------------------------------------------


def eu_latency_record(r: RenderedResource) -> bool:
    return r.type == "aws:route53/record:Record" and r.inputs.get("name") == f"eu.{spec('byteion').platform.domain}"


@breaks(stack.residency)
def test_the_eu_name_pointing_at_a_us_region_breaks_residency() -> None:
    domain = spec("byteion").platform.domain

    def to_us_east(inputs: dict[str, Any]) -> None:
        inputs["records"] = [f"us-east.regions.{domain}"]  # the US region's own name

    graph = editing(byteion(), eu_latency_record, to_us_east, expect=1)
    [found] = stack_reports(stack.residency, graph)
    assert found.urn == urn_where(byteion(), eu_latency_record)
    assert found.message == f"eu.{domain} routes EU-pinned tenants to us-east.regions.{domain}, outside EU"


def test_the_eu_name_may_point_at_the_eu_dr_region() -> None:
    domain = spec("byteion").platform.domain

    def to_eu_central(inputs: dict[str, Any]) -> None:
        inputs["records"] = [f"eu-central.regions.{domain}"]

    graph = editing(byteion(), eu_latency_record, to_eu_central, expect=1)
    assert stack_reports(stack.residency, graph) == []


def test_an_eu_region_failing_over_to_a_us_gateway_breaks_residency() -> None:
    domain = spec("byteion").platform.domain
    graph = byteion()
    us_west = urn_where(graph, lambda r: kind_of(r) == "Service" and r.name == "byteion-us-west-ai-gateway-service")
    resources = [
        dataclasses.replace(r, property_dependencies={**r.property_dependencies, "records": [us_west]})
        if r.type == "aws:route53/record:Record" and r.name == "byteion-dns-eu-west-secondary"
        else r
        for r in graph.resources
    ]
    found = messages(stack_reports(stack.residency, dataclasses.replace(graph, resources=resources)))
    assert found == [
        f"eu-west.regions.{domain} fails over to us-west (US), outside EU; pick a DR secondary in the same jurisdiction"
    ]


@breaks(stack.s3_buckets_tls_only)
def test_buckets_without_a_tls_only_policy_are_reported_once_their_exception_is_cleared() -> None:
    found = stack_reports(stack.s3_buckets_tls_only, dev(), {"exceptions": []})
    buckets = {r.urn for r in dev().resources if r.type == "aws:s3/bucket:Bucket"}
    assert {f.urn for f in found} == buckets and len(buckets) == 2
    assert all("accepts plain-HTTP requests" in f.message for f in found)


def test_the_shipped_buckets_tls_exception_does_not_cover_other_buckets() -> None:
    assert stack_reports(stack.s3_buckets_tls_only, dev()) == []  # the default exception covers tokenplane's
    [found] = stack_reports(stack.s3_buckets_tls_only, [node("aws:s3/bucket:Bucket", {}, "team-data")])
    assert found.message.startswith("bucket team-data accepts plain-HTTP requests")


# --- DR ---------------------------------------------------------------------------------------


@breaks(stack.dr_critical_pools_in_secondary)
def test_a_critical_pool_missing_from_its_dr_region_is_reported() -> None:
    graph = dropping(
        byteion(), lambda r: kind_of(r) == "Deployment" and r.region == "us-west" and k8s_name(r) == "vllm-small-chat"
    )
    assert len(graph.resources) == len(byteion().resources) - 1
    assert messages(stack_reports(stack.dr_critical_pools_in_secondary, graph)) == [
        "critical pool small-chat runs in us-east but has no replicas in its DR region us-west; "
        "place it there (a small min_replicas keeps it warm)"
    ]


# --- capacity ---------------------------------------------------------------------------------


@breaks(stack.capacity_lambda_below_mu)
def test_fifty_times_the_peak_puts_lambda_above_mu() -> None:
    def surge(data: dict[str, Any]) -> None:
        data["platform"]["peak_rps"] *= 50

    found = messages(stack_reports(stack.capacity_lambda_below_mu, with_spec(dev(), surge, gateways=2)))
    overloaded = {m.split(" in ", 1)[0] for m in found if "lambda=" in m}
    assert overloaded == {"pool small", "pool medium", "pool large"}, found
    assert all("raise max_replicas to" in m for m in found if "lambda=" in m)


def test_the_utilization_ceiling_comes_from_config() -> None:
    found = messages(stack_reports(stack.capacity_lambda_below_mu, dev(), {"maxUtilization": 0.15}))
    assert [m.split(":", 1)[0] for m in found] == ["pool small in local"], found
    assert ">= 0.15" in found[0]


@breaks(stack.kv_headroom)
def test_a_tiny_kv_ceiling_flags_every_pool_that_holds_kv_cache() -> None:
    found = messages(stack_reports(stack.kv_headroom, dev(), {"maxKvUsage": 0.001}))
    assert [m.split(" fills", 1)[0] for m in found] == [
        "pool small in local",
        "pool medium in local",
        "pool large in local",
    ]
    assert all("kv_cache_dtype: fp8" in m for m in found)


@breaks(stack.budget_cap)
def test_a_one_dollar_cap_from_config_is_exceeded() -> None:
    [message] = messages(stack_reports(stack.budget_cap, dev(), {"maxUsdPerHour": 1}))
    assert "at max replicas (normal peak) exceeds the cap of $1/h" in message
    assert "lower max_replicas" in message


def test_the_budget_cap_defaults_to_the_spec_in_the_gateway_config() -> None:
    def tight(data: dict[str, Any]) -> None:
        data["budget"]["max_usd_per_hour"] = 10

    [message] = messages(stack_reports(stack.budget_cap, with_spec(dev(), tight, gateways=2)))
    assert "exceeds the cap of $10/h" in message


def test_every_stack_policy_has_a_failing_case() -> None:
    assert {p.name for p in stack.POLICIES} == BROKEN
