"""The rules set 37's AWS value misses led to (written after its blind run, so not held out), planted in the shipped
dev render beside correct twins: a VPC endpoint left at the default Gateway type for an Interface-only service
(vpc-endpoint-values), a security group name beginning with ``sg-`` (aws-name), and an SSM parameter name that
PutParameter refuses (aws-api-values). The planted defects are of other services, names and fields than the held-out
cases' (logs, ecr.dkr and sts endpoints and an explicit Gateway one; an explicit name, an autoname and another
prefix; a two-level name, a deep one, an ``aws`` and an ``SSM`` prefix)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import aws_values, endpoint_values, names
from tokenplane.proof.render import RenderedResource, physical_id

STACK = "dev"
REGION = "local"  # the dev render's region
ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
SG = "aws:ec2/securityGroup:SecurityGroup"
PARAMETER = "aws:ssm/parameter:Parameter"
DEV_VPC = physical_id("aws:ec2/vpc:Vpc", "dev-local-network-vpc")
PRIVATE_A = physical_id("aws:ec2/subnet:Subnet", "dev-local-network-private-a")
_findings = partial(planted_findings, stack=STACK)


def _aws(type_token: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION)


# --- vpc-endpoint-values: a Gateway endpoint only for S3 and DynamoDB ------------------------------------------------


def _endpoint(service: str | None, kind: str | None = None, **inputs: Any) -> RenderedResource:
    base: dict[str, Any] = {"vpcId": DEV_VPC, "serviceName": service}
    if kind is not None:
        base["vpcEndpointType"] = kind
    return _aws(ENDPOINT, "planted-endpoint", {**base, **inputs})


@pytest.mark.parametrize(
    ("endpoint", "fires"),
    [
        (_endpoint("com.amazonaws.eu-west-1.logs", subnetIds=[PRIVATE_A]), "sets no vpc_endpoint_type"),
        (_endpoint("com.amazonaws.us-east-2.ecr.dkr"), "ecr.dkr is Interface only"),
        (_endpoint("com.amazonaws.ap-southeast-2.sts", kind="Gateway"), "is a Gateway endpoint, and only S3"),
        (_endpoint("com.amazonaws.eu-north-1.secretsmanager", routeTableIds=["rtb-1"]), "Endpoint type (Gateway)"),
        # Correct twins: S3 and DynamoDB gateways (default or explicit), Interface endpoints, another account's
        # endpoint service, a service name unknown at render time.
        (_endpoint("com.amazonaws.eu-west-1.s3"), None),
        (_endpoint("com.amazonaws.eu-west-1.dynamodb", kind="Gateway"), None),
        (_endpoint("com.amazonaws.eu-west-1.logs", kind="Interface"), None),
        (_endpoint("com.amazonaws.vpce.eu-west-1.vpce-svc-0123456789abcdef0", kind="Interface"), None),
        (_endpoint("com.amazonaws.vpce.eu-west-1.vpce-svc-0123456789abcdef0", kind="GatewayLoadBalancer"), None),
        (_endpoint(None), None),
    ],
)
def test_a_gateway_endpoint_names_a_service_that_offers_one(endpoint: RenderedResource, fires: str | None) -> None:
    said = [f for f in _findings(endpoint_values.check, endpoint) if "Gateway endpoints" in f.message]
    assert bool(said) == bool(fires), said
    assert all(fires in f.message and "vpc_endpoint_type='Interface'" in f.fix for f in said), said


# --- aws-name: a security group name may not begin with sg- ----------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "fires"),
    [
        (_aws(SG, "planted-sg", {"name": "sg-batch-workers", "vpcId": DEV_VPC}), "name='sg-batch-workers'"),
        (_aws(SG, "sg-planted", {"vpcId": DEV_VPC}), "the autoname sg-planted-xxxxxxx"),
        (_aws(SG, "planted-sg", {"namePrefix": "sg-db-", "vpcId": DEV_VPC}), "namePrefix='sg-db-'"),
        # Correct twins: sg elsewhere in the name, a prefix without it, an autoname ending in -sg, an unknown name.
        (_aws(SG, "planted-sg", {"name": "batch-workers-sg", "vpcId": DEV_VPC}), None),
        (_aws(SG, "planted-sg", {"namePrefix": "db-sg-", "vpcId": DEV_VPC}), None),
        (_aws(SG, "planted-db-sg", {"vpcId": DEV_VPC}), None),
        (_aws(SG, "planted-sg", {"name": None, "namePrefix": None, "vpcId": DEV_VPC}), None),
    ],
)
def test_a_security_group_name_may_not_begin_with_sg(group: RenderedResource, fires: str | None) -> None:
    said = _findings(names.check, group)
    assert bool(said) == bool(fires), said
    assert all(fires in f.message and "Group names may not be in the format sg-*" in f.message for f in said), said


# --- aws-api-values: an SSM parameter name PutParameter takes ----------------------------------------------------


def _parameter(name: str | None) -> RenderedResource:
    return _aws(PARAMETER, "planted-param", {"type": "String", "name": name, "insecureValue": "v"})


@pytest.mark.parametrize(
    ("parameter", "fires"),
    [
        (_parameter("billing/rate"), "fully qualified name"),
        (_parameter("team/a/b/c/d/e/f/g/h"), "'/team/a/b/c/d/e/f/g/h'"),
        (_parameter("awsRegionDefault"), 'begins with "aws"'),
        (_parameter("SSM-agent-config"), 'begins with "SSM"'),
        # Correct twins: a fully qualified hierarchy, a flat name, a name with aws/ssm later, an unknown name.
        (_parameter("/billing/rate"), None),
        (_parameter("billing-rate"), None),
        (_parameter("/team/aws-region"), None),
        (_parameter("my-ssm-param"), None),
        (_parameter(None), None),
    ],
)
def test_a_parameter_name_put_parameter_refuses_is_reported(parameter: RenderedResource, fires: str | None) -> None:
    said = [f for f in _findings(aws_values.check, parameter) if "Systems Manager" in f.message]
    assert bool(said) == bool(fires), said
    assert all(fires in f.message or fires in f.fix for f in said), said
