"""The graph in checkov's shapes: manifests and a Terraform plan, without checkov installed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.policies.fixtures import rendered
from tokenplane.proof import checkov_export
from tokenplane.proof.checkov_export import export, integral, snake, terraform_type, terraform_values

# A stand-in for checkov's registry: the Terraform types it has checks for (checkov_scan.terraform_types()).
KNOWN = frozenset(
    {
        "aws_vpc",
        "aws_instance",
        "aws_security_group",
        "aws_s3_bucket",
        "aws_s3_bucket_public_access_block",
        "aws_eks_cluster",
        "aws_elasticache_replication_group",
    }
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("encryptionInfo", "encryption_info"),
        ("bucketServerSideEncryptionConfiguration", "bucket_server_side_encryption_configuration"),
        ("vpcConfig", "vpc_config"),
        ("kmsKeyId", "kms_key_id"),
    ],
)
def test_pulumi_names_become_terraform_attribute_names(name: str, expected: str) -> None:
    assert snake(name) == expected


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("aws:s3/bucket:Bucket", "aws_s3_bucket"),
        ("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "aws_s3_bucket_public_access_block"),
        ("aws:ec2/vpc:Vpc", "aws_vpc"),
        ("aws:ec2/securityGroup:SecurityGroup", "aws_security_group"),
        ("aws:elasticache/replicationGroup:ReplicationGroup", "aws_elasticache_replication_group"),
        ("aws:eks/cluster:Cluster", "aws_eks_cluster"),
        ("aws:msk/topic:Topic", None),  # no check covers it: left unscanned, listed
        ("random:index/randomPassword:RandomPassword", None),
    ],
)
def test_type_tokens_map_to_the_terraform_types_checkov_checks(token: str, expected: str | None) -> None:
    assert terraform_type(token, KNOWN) == expected


def test_only_ec2_drops_the_module_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    # aws:rds/instance:Instance is Terraform's aws_db_instance; dropping "rds" would make it an EC2 instance.
    assert terraform_type("aws:rds/instance:Instance", KNOWN) is None
    monkeypatch.setattr(checkov_export, "UNPREFIXED_MODULES", frozenset({"ec2", "rds"}))
    assert terraform_type("aws:rds/instance:Instance", KNOWN) == "aws_instance"  # the defect the rule avoids


def test_numbers_come_back_as_integers_where_pulumi_made_them_floats() -> None:
    pod = {"securityContext": {"runAsUser": 10001.0}, "ports": [{"containerPort": 8000.0}], "ratio": 0.5}
    assert integral(pod) == {"securityContext": {"runAsUser": 10001}, "ports": [{"containerPort": 8000}], "ratio": 0.5}
    assert isinstance(integral(pod)["securityContext"]["runAsUser"], int)


def test_terraform_values_keep_map_keys_and_add_the_singular_block_name() -> None:
    inputs: dict[str, Any] = {
        "tags": {"managedBy": "pulumi"},
        "rules": [{"applyServerSideEncryptionByDefault": {"sseAlgorithm": "aws:kms"}}],
        "vpcConfig": {"endpointPublicAccess": False},
    }
    values = terraform_values(inputs)
    assert values["tags"] == {"managedBy": "pulumi"}  # a tag's key is data
    assert (
        values["rule"] == values["rules"] == [{"apply_server_side_encryption_by_default": {"sse_algorithm": "aws:kms"}}]
    )
    assert values["vpc_config"] == {"endpoint_public_access": False}


def test_the_dev_graph_exports_every_kubernetes_object_and_links_aws_resources_by_reference() -> None:
    graph = rendered("dev")
    known = frozenset({"aws_s3_bucket", "aws_s3_bucket_public_access_block", "aws_vpc", "aws_eks_cluster"})
    out = export(graph, known)
    objects = [r for r in graph.resources if r.is_kubernetes_object and "kind" in r.inputs]
    assert sorted(out.urn_by_file.values()) == sorted(r.urn for r in objects)
    assert out.unscanned["kubernetes:helm.sh/v3:Release"] > 0, "Helm releases are said to be unseen, not dropped"
    blocks = [r for r in out.plan["configuration"]["root_module"]["resources"] if r["type"].endswith("access_block")]
    assert blocks, "the registry bucket has a public access block"
    for block in blocks:
        [reference, *_] = block["expressions"]["bucket"]["references"]
        assert reference.startswith("aws_s3_bucket."), block
        assert reference.removesuffix(".id") in out.urn_by_address, block
