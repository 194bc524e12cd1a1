"""AWS security baseline policies, called directly with the props the engine delivers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.policies.fixtures import collect, resource_args
from tokenplane.policies import aws_security

SG = "aws:ec2/securityGroup:SecurityGroup"
CLUSTER = "aws:eks/cluster:Cluster"
POLICY = "aws:iam/policy:Policy"


def sg(*rules: dict[str, Any]) -> list[str]:
    return collect(aws_security.security_groups_no_public_ingress, resource_args(SG, {"ingress": list(rules)}, "web"))


def rule(protocol: str, low: float, high: float, cidr: str = "0.0.0.0/0") -> dict[str, Any]:
    return {"protocol": protocol, "fromPort": low, "toPort": high, "cidrBlocks": [cidr]}


def test_https_from_anywhere_is_allowed() -> None:
    assert sg(rule("tcp", 443.0, 443.0)) == []


def test_ssh_from_anywhere_is_flagged() -> None:
    [message] = sg(rule("tcp", 22.0, 22.0))
    assert "opens port 22 (tcp) to 0.0.0.0/0" in message


def test_every_port_from_ipv6_anywhere_is_flagged() -> None:
    [message] = sg({"protocol": "-1", "fromPort": 0, "toPort": 0, "ipv6CidrBlocks": ["::/0"]})
    assert "every port" in message and "::/0" in message


def test_any_port_from_inside_the_vpc_is_fine() -> None:
    assert sg(rule("-1", 0, 0, cidr="10.0.0.0/16")) == []


def test_standalone_ingress_rules_are_checked() -> None:
    props = {"ipProtocol": "tcp", "fromPort": 5432.0, "toPort": 5432.0, "cidrIpv4": "0.0.0.0/0"}
    args = resource_args("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", props, "db-in")
    assert len(collect(aws_security.security_groups_no_public_ingress, args)) == 1


def test_public_ports_come_from_config() -> None:
    args = resource_args(SG, {"ingress": [rule("tcp", 80.0, 80.0)]}, "web", config={"publicPorts": [80, 443]})
    assert collect(aws_security.security_groups_no_public_ingress, args) == []


def eks(vpc: dict[str, Any], **extra: Any) -> list[str]:
    return collect(aws_security.eks_endpoint_not_public, resource_args(CLUSTER, {"vpcConfig": vpc, **extra}, "main"))


def test_eks_endpoint_is_public_by_default() -> None:
    assert len(eks({"subnetIds": ["a"]})) == 1


def test_eks_endpoint_public_to_listed_cidrs_passes() -> None:
    assert eks({"endpointPublicAccess": True, "publicAccessCidrs": ["203.0.113.0/24"]}) == []
    assert len(eks({"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]})) == 1


def test_the_shipped_clusters_public_endpoint_is_an_explicit_exception() -> None:
    config = {"exceptions": [{"resources": ["*-cluster-eks"], "reason": "x" * 20}]}
    args = resource_args(CLUSTER, {"vpcConfig": {"endpointPublicAccess": True}}, "dev-local-cluster-eks", config=config)
    assert collect(aws_security.eks_endpoint_not_public, args) == []


def test_launch_template_devices_must_be_encrypted() -> None:
    mappings = [
        {"deviceName": "/dev/xvda", "ebs": {"encrypted": "true"}},  # the provider types it as a string
        {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": 100.0}},
    ]
    args = resource_args("aws:ec2/launchTemplate:LaunchTemplate", {"blockDeviceMappings": mappings}, "lt")
    [message] = collect(aws_security.ebs_encrypted, args)
    assert "/dev/xvdb" in message


def test_an_instance_root_volume_must_be_encrypted() -> None:
    args = resource_args("aws:ec2/instance:Instance", {"rootBlockDevice": {"volumeSize": 8.0}}, "vm")
    assert "root volume is not encrypted" in collect(aws_security.ebs_encrypted, args)[0]


def test_an_aurora_cluster_must_encrypt_its_storage() -> None:
    args = resource_args("aws:rds/cluster:Cluster", {"engine": "aurora-postgresql"}, "aurora")
    assert len(collect(aws_security.rds_storage_encrypted, args)) == 1


def iam(*statements: dict[str, Any]) -> list[str]:
    document = json.dumps({"Version": "2012-10-17", "Statement": list(statements)})
    return collect(aws_security.iam_no_wildcards, resource_args(POLICY, {"policy": document}, "p"))


def test_describe_actions_on_every_resource_are_allowed() -> None:
    assert iam({"Effect": "Allow", "Action": ["ec2:DescribeInstances", "eks:ListClusters"], "Resource": "*"}) == []


def test_a_write_on_every_resource_needs_a_condition() -> None:
    write = {"Effect": "Allow", "Action": "autoscaling:SetDesiredCapacity", "Resource": ["*"]}
    assert "without a Condition" in iam(write)[0]
    assert iam({**write, "Condition": {"StringEquals": {"aws:ResourceTag/team": "ml"}}}) == []


@pytest.mark.parametrize(
    "actions",
    [
        ["logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery", "logs:PutResourcePolicy"],
        "ecr:GetAuthorizationToken",
        ["cloudwatch:PutMetricData"],
    ],
)
def test_actions_that_support_no_resource_type_may_take_every_resource(actions: str | list[str]) -> None:
    # IAM authorises them only on "*" (the Service Authorization Reference lists no resource type for them).
    assert iam({"Effect": "Allow", "Action": actions, "Resource": "*"}) == []


def test_a_statement_mixing_them_with_scoped_writes_names_only_the_scoped_ones() -> None:
    mixed = {"Effect": "Allow", "Action": ["ecr:GetAuthorizationToken", "ecr:PutImage"], "Resource": "*"}
    [message] = iam(mixed)
    assert "allows ecr:PutImage on every resource" in message
    assert "GetAuthorizationToken" not in message


@pytest.mark.parametrize("action", ["*", "s3:*"])
def test_wildcard_actions_are_flagged_even_on_one_resource(action: str) -> None:
    [message] = iam({"Effect": "Allow", "Action": action, "Resource": "arn:aws:s3:::b"})
    assert f"allows {action}" in message


def test_allow_with_not_action_is_flagged() -> None:
    assert "NotAction" in iam({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"})[0]


def test_deny_statements_may_use_wildcards() -> None:
    assert iam({"Effect": "Deny", "Action": "*", "Resource": "*"}) == []


def test_inline_role_policies_are_checked() -> None:
    document = json.dumps({"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})
    props = {"inlinePolicies": [{"name": "admin", "policy": document}]}
    [message] = collect(aws_security.iam_no_wildcards, resource_args("aws:iam/role:Role", props, "r"))
    assert "IAM policy r inline admin" in message
