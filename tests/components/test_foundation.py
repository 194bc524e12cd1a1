"""Foundation and the ``from_config`` classmethods: a region's opening and its pool from a ``GatewayConfig``.

A program composed by hand (``examples/single-region``) builds its network, cluster, add-ons and namespaces
in one call, and its pool's args from the same config its gateways read. What they derive must be what a
program would have written by hand, and input that does not fit the config is refused with an error that
says what to pass.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pulumi
import pulumi_aws as aws
import pytest

from tests.components.conftest import spec
from tests.components.test_gateway_config import CHAT, EU, MODEL, by_hand
from tokenplane.components import (
    ExistingCluster,
    Foundation,
    FoundationArgs,
    GatewayConfig,
    GpuNodeGroup,
    Namespace,
    NodeSelection,
    VllmPoolArgs,
)
from tokenplane.proof.testing import RenderedProgram, render_function
from tokenplane.spec import Environment, ModelSet, Placement

ELSEWHERE = ExistingCluster(
    name="c", oidc_provider_arn="arn:aws:iam::123456789012:oidc-provider/oidc", oidc_issuer="https://oidc"
)
SELECTION = NodeSelection(labels={"tokenplane.io/pool": "chat"})
SERVING = Namespace.existing("llm-serving")
TAGS = {"team": "ml-platform"}


def _pool_args(config: Any = None, **changes: Any) -> VllmPoolArgs:
    parts: dict[str, Any] = {
        "pool": CHAT,
        "nodes": SELECTION,
        "namespace": SERVING,
        "registry_bucket": "registry",
        "cluster": ELSEWHERE,
        "image": "vllm/vllm-openai:v0.19.0",
        "tags": TAGS,
    }
    return VllmPoolArgs.from_config(config or by_hand(), **(parts | changes))


def test_pool_args_from_config_are_what_a_program_would_write_by_hand() -> None:
    written = VllmPoolArgs(
        pool=CHAT,
        models=ModelSet(models=[MODEL]),
        nodes=SELECTION,
        namespace=SERVING,
        region="eu",
        cloud_region="eu-central-1",
        registry_bucket="registry",
        cluster=ELSEWHERE,
        image="vllm/vllm-openai:v0.19.0",
        tags=TAGS,
        placement=EU.pools[0],
        workload_classes=by_hand().workload_classes,
    )
    assert _pool_args() == written
    assert _pool_args(pool="chat") == written  # by name, as well
    # The placement comes from the config's region, so a NodeSelection (no replica bounds of its own) is enough.
    assert _pool_args().replicas() == Placement(pool="chat", min_replicas=1, max_replicas=2)


def test_pool_args_from_config_refuse_a_pool_the_config_does_not_have() -> None:
    with pytest.raises(ValueError, match=r"pool 'embed' is not one of config.pools \('chat'\); pass one of those"):
        _pool_args(pool="embed")
    # Same name, other settings: the gateways would route by the config's pool, the replicas run another.
    other = CHAT.model_copy(update={"gpu": "A100-80GB"})
    with pytest.raises(ValueError, match=r"pool 'chat' differs from the pool of that name in config.pools"):
        _pool_args(pool=other)


def test_pool_args_from_config_refuse_a_pool_the_region_does_not_place() -> None:
    # byteion's us-west runs no long-context replica: that pool is placed in other regions only.
    config = GatewayConfig.from_spec(spec("byteion"), "us-west")
    with pytest.raises(ValueError, match=r"region 'us-west' has no placement for pool 'long-context'; add Placement"):
        _pool_args(config, pool="long-context")


def test_pool_args_from_config_need_a_cluster_when_the_nodes_name_none() -> None:
    with pytest.raises(ValueError, match=r"nodes is a NodeSelection, which names no cluster; pass cluster="):
        _pool_args(cluster=None)


def test_foundation_args_from_config_take_the_region_and_size_the_system_nodes_by_environment() -> None:
    provider: Any = object()  # only carried: an aws.Provider needs a Pulumi program to exist
    dev = FoundationArgs.from_config(by_hand(), provider=provider, system_cpu=32, tags=TAGS)
    assert (dev.cloud_region, dev.azs, dev.cluster_name) == ("eu-central-1", list(EU.azs), "acme-eu")
    assert (dev.system_nodes, dev.system_cpu, dev.kubernetes_version) == (2, 32, "1.35")
    prod = FoundationArgs.from_config(by_hand(environment=Environment.PROD), provider=provider, tags=TAGS)
    assert prod.system_nodes == 3  # one per AZ, so that an AZ outage leaves system capacity


def _two_foundations() -> dict[str, Any]:
    provider = aws.Provider("aws", region="eu-central-1")
    on_aws = pulumi.ResourceOptions(provider=provider)
    out: dict[str, Any] = {}
    for name in ("eu", "eu2"):
        args = dataclasses.replace(
            FoundationArgs.from_config(by_hand(), provider=provider, system_cpu=32, tags=TAGS),
            cluster_name=f"acme-{name}",
        )
        base = Foundation(name, args, on_aws)
        nodes = base.gpu_nodes(f"{name}-gpu-chat", CHAT, EU.pools[0])
        jobs = base.publish_jobs(f"{name}-publish", models=[MODEL], bucket="registry")
        out[name] = (base, nodes, jobs)
    return out


@pytest.mark.slow
def test_two_foundations_render_side_by_side_with_every_part_named_from_their_own_names() -> None:
    built: dict[str, Any] = {}
    stack: RenderedProgram = render_function(lambda: built.update(_two_foundations()), cloud_region="eu-central-1")
    # No duplicate URN: every child, the namespaces included, is named from its foundation's name.
    assert not stack.result.issues, stack.result.issues
    for name in ("eu", "eu2"):
        assert stack.find("aws:eks/cluster:Cluster", f"{name}-cluster-eks").inputs["name"] == f"acme-{name}"
        for short, namespace in (("serving", "llm-serving"), ("gateway", "llm-gateway"), ("monitoring", "monitoring")):
            assert stack.find("kubernetes:core/v1:Namespace", f"{name}-ns-{short}").inputs["metadata"]["name"] == (
                namespace
            )
        base, nodes, jobs = built[name]
        assert isinstance(nodes, GpuNodeGroup) and nodes.cluster is base.cluster
        # What a workload waits for: the system nodes and KEDA; the publish Job waits for them and its namespace.
        job = stack.find("kubernetes:batch/v1:Job", f"{name}-publish-qwen-7b-chat-v1")
        waits = {d.rsplit("::", 1)[1] for d in job.dependencies}
        assert {f"{name}-cluster-system", f"{name}-addons-keda", f"{name}-ns-serving"} <= waits, waits
        assert set(jobs) == {MODEL.ref}
    releases = {r.name for r in stack.all("kubernetes:helm.sh/v3:Release")}
    assert {"eu-addons-keda", "eu2-addons-keda"} <= releases, releases
