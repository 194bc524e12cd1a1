"""AWS resource policies, called directly with one passing and one failing fixture each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from pulumi_policy import ResourceValidationArgs, ResourceValidationPolicy

from tests.policies.fixtures import collect, resource_args
from tokenplane.policies import aws

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
REPLICATION_GROUP = "aws:elasticache/replicationGroup:ReplicationGroup"
MSK = "aws:msk/cluster:Cluster"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}


def node_group(
    *,
    ami: str = "AL2023_x86_64_NVIDIA",
    subnets: int = 2,
    taints: list[dict[str, str]] | None = None,
    environment: str = "dev",
) -> dict[str, Any]:
    return {
        "clusterName": "dev-local",
        "amiType": ami,
        "instanceTypes": ["g6e.xlarge"],
        "subnetIds": [f"subnet-{i}" for i in range(subnets)],
        "taints": [GPU_TAINT] if taints is None else taints,
        "tags": {"tokenplane:environment": environment},
        "scalingConfig": {"minSize": 1.0, "maxSize": 4.0, "desiredSize": 1.0},
    }


def redis(**changes: Any) -> dict[str, Any]:
    props = {
        "engine": "redis",
        "atRestEncryptionEnabled": True,
        "transitEncryptionEnabled": True,
        "authToken": "[secret]",
    }
    return {k: v for k, v in {**props, **changes}.items() if v is not None}


def msk(
    *,
    client_broker: str = "TLS",
    in_cluster: bool = True,
    kms: str | None = "arn:aws:kms:eu-west-1:123456789012:key/k",
    iam: bool = True,
    unauthenticated: bool = False,
) -> dict[str, Any]:
    encryption: dict[str, Any] = {"encryptionInTransit": {"clientBroker": client_broker, "inCluster": in_cluster}}
    if kms:
        encryption["encryptionAtRestKmsKeyArn"] = kms
    return {
        "kafkaVersion": "3.8.x",
        "encryptionInfo": encryption,
        "clientAuthentication": {"sasl": {"iam": iam}, "unauthenticated": unauthenticated},
    }


@dataclass(frozen=True)
class Case:
    """A policy, a resource it accepts, a resource it rejects, and what the rejection must say."""

    policy: ResourceValidationPolicy
    passing: ResourceValidationArgs
    failing: ResourceValidationArgs
    mentions: tuple[str, ...]  # the resource's name and the fix


CASES = [
    Case(
        aws.gpu_node_groups_tainted,
        resource_args(NODE_GROUP, node_group(), name="dev-local-gpu-small-ng"),
        resource_args(NODE_GROUP, node_group(taints=[]), name="dev-local-gpu-small-ng"),
        ("dev-local-gpu-small-ng", "nvidia.com/gpu", "NO_SCHEDULE"),
    ),
    Case(
        aws.elasticache_encrypted,
        resource_args(REPLICATION_GROUP, redis(), name="dev-local-redis-rg"),
        resource_args(REPLICATION_GROUP, redis(atRestEncryptionEnabled=False), name="dev-local-redis-rg"),
        ("dev-local-redis-rg", "atRestEncryptionEnabled: true"),
    ),
    Case(
        aws.msk_tls_iam_encrypted,
        resource_args(MSK, msk(), name="dev-local-kafka-msk"),
        resource_args(MSK, msk(client_broker="TLS_PLAINTEXT"), name="dev-local-kafka-msk"),
        ("dev-local-kafka-msk", "clientBroker must be TLS"),
    ),
]


def test_every_aws_policy_has_a_passing_and_a_failing_case() -> None:
    assert [c.policy.name for c in CASES] == [p.name for p in aws.POLICIES]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.policy.name)
def test_policy_accepts_its_compliant_resource(case: Case) -> None:
    assert collect(case.policy, case.passing) == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.policy.name)
def test_policy_rejects_its_bad_resource_naming_it_and_the_fix(case: Case) -> None:
    messages = collect(case.policy, case.failing)
    assert len(messages) == 1, messages
    for fragment in case.mentions:
        assert fragment in messages[0], f"{fragment!r} missing from: {messages[0]}"


@pytest.mark.parametrize("policy", aws.POLICIES, ids=lambda p: p.name)
def test_aws_policies_ignore_resources_of_other_types(policy: ResourceValidationPolicy) -> None:
    args = resource_args("aws:s3/bucket:Bucket", {"tags": {"tokenplane:environment": "prod"}})
    assert collect(policy, args) == []


# --- GPU taints -------------------------------------------------------------------------------


def test_cpu_node_group_needs_no_gpu_taint() -> None:
    args = resource_args(NODE_GROUP, node_group(ami="AL2023_x86_64_STANDARD", taints=[]), name="system")
    assert collect(aws.gpu_node_groups_tainted, args) == []


def test_gpu_taint_with_prefer_no_schedule_is_not_enough() -> None:
    soft = [{**GPU_TAINT, "effect": "PREFER_NO_SCHEDULE"}]
    args = resource_args(NODE_GROUP, node_group(ami="BOTTLEROCKET_x86_64_NVIDIA", taints=soft), name="gpu-ng")
    assert len(collect(aws.gpu_node_groups_tainted, args)) == 1


def test_legacy_al2_gpu_ami_counts_as_a_gpu_group() -> None:
    args = resource_args(NODE_GROUP, node_group(ami="AL2_x86_64_GPU", taints=[]), name="gpu-ng")
    assert len(collect(aws.gpu_node_groups_tainted, args)) == 1


# --- ElastiCache --------------------------------------------------------------------------------


def test_elasticache_names_every_missing_setting_in_one_message() -> None:
    props = redis(atRestEncryptionEnabled=False, transitEncryptionEnabled=False, authToken=None)
    [message] = collect(aws.elasticache_encrypted, resource_args(REPLICATION_GROUP, props, name="rg"))
    for setting in ("atRestEncryptionEnabled: true", "transitEncryptionEnabled: true", "authToken", "userGroupIds"):
        assert setting in message


def test_elasticache_rbac_user_groups_stand_in_for_an_auth_token() -> None:
    props = redis(authToken=None, userGroupIds=["tokenplane-users"])
    assert collect(aws.elasticache_encrypted, resource_args(REPLICATION_GROUP, props, name="rg")) == []


def test_elasticache_accepts_at_rest_encryption_given_as_the_string_true() -> None:
    props = redis(atRestEncryptionEnabled="true")  # newer pulumi-aws types this input as a string
    assert collect(aws.elasticache_encrypted, resource_args(REPLICATION_GROUP, props, name="rg")) == []


# --- MSK --------------------------------------------------------------------------------------


def test_msk_names_every_problem() -> None:
    props = msk(client_broker="PLAINTEXT", in_cluster=False, kms=None, iam=False, unauthenticated=True)
    [message] = collect(aws.msk_tls_iam_encrypted, resource_args(MSK, props, name="kafka"))
    for problem in (
        "clientBroker must be TLS",
        "inCluster must be true",
        "encryptionAtRestKmsKeyArn",
        "sasl.iam must be true",
        "unauthenticated must be false",
    ):
        assert problem in message


def test_msk_defaults_to_tls_when_transit_settings_are_omitted() -> None:
    props = msk()
    del props["encryptionInfo"]["encryptionInTransit"]  # AWS defaults: TLS to clients and in the cluster
    assert collect(aws.msk_tls_iam_encrypted, resource_args(MSK, props, name="kafka")) == []
