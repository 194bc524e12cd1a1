"""aws-api-model: literal values judged against the constraints botocore's API models publish, for any AWS type.

The planted defects are of kinds no held-out case named (a log group name with a colon, an EventBridge rule name
with a space, an IAM role path without its slashes, an EKS taint in Kubernetes' spelling, a health check interval
of a minute, a Lambda with 64 MB, an ECR repository with capitals, a Step Functions name over 80 characters), each
beside a correct twin; then what the rule must leave alone (values from outputs, secrets, unknowns, long
enumerations, types no operation makes, a key whose members disagree)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import api_model_values
from tokenplane.proof.deployability.api_model_values import Constraint, operation_members
from tokenplane.proof.render import RenderedResource

_findings = partial(planted_findings, api_model_values.check)


def _aws(type_token: str, inputs: dict[str, Any], **kwargs: Any) -> RenderedResource:
    return planted("dev", type_token, "planted-thing", inputs, region="local", **kwargs)


DEFECTS = [
    ("aws:cloudwatch/logGroup:LogGroup", {"name": "llm:gateway:access"}, "name", "[\\.\\-_/#A-Za-z0-9]+"),
    ("aws:cloudwatch/eventRule:EventRule", {"name": "nightly reindex", "scheduleExpression": "rate(1 day)"}, "name",
     "PutRule.Name"),
    ("aws:iam/role:Role", {"name": "reindex", "path": "service-roles", "assumeRolePolicy": "{}"}, "path",
     "CreateRole.Path"),
    ("aws:eks/nodeGroup:NodeGroup", {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]},
     "taints[0].effect", "not one of NO_SCHEDULE, NO_EXECUTE, PREFER_NO_SCHEDULE"),
    ("aws:route53/healthCheck:HealthCheck", {"type": "HTTPS", "requestInterval": 60.0}, "requestInterval",
     "60 is above the maximum 30"),
    ("aws:lambda/function:Function", {"memorySize": 64.0, "runtime": "python3.12"}, "memorySize",
     "64 is below the minimum 128"),
    ("aws:ecr/repository:Repository", {"name": "llm/AI-Gateway"}, "name", "CreateRepository.repositoryName"),
    ("aws:sfn/stateMachine:StateMachine", {"name": "x" * 81, "definition": "{}"}, "name",
     "length 81 is above the maximum 80"),
    # a tail of the type's name is dropped too: a RolePolicy's name is PutRolePolicy's PolicyName
    ("aws:iam/rolePolicy:RolePolicy", {"name": "s3:read", "policy": "{}"}, "name", "PutRolePolicy.PolicyName"),
]  # fmt: skip

TWINS = [
    ("aws:cloudwatch/logGroup:LogGroup", {"name": "/llm/gateway/access"}),
    ("aws:cloudwatch/eventRule:EventRule", {"name": "nightly-reindex", "scheduleExpression": "rate(1 day)"}),
    ("aws:iam/role:Role", {"name": "reindex", "path": "/service-roles/", "assumeRolePolicy": "{}"}),
    ("aws:eks/nodeGroup:NodeGroup", {"taints": [{"key": "gpu", "value": "true", "effect": "NO_SCHEDULE"}]}),
    ("aws:route53/healthCheck:HealthCheck", {"type": "HTTPS", "requestInterval": 30.0}),
    ("aws:lambda/function:Function", {"memorySize": 128.0, "runtime": "python3.12"}),
    ("aws:ecr/repository:Repository", {"name": "llm/ai-gateway"}),
    ("aws:sfn/stateMachine:StateMachine", {"name": "x" * 80, "definition": "{}"}),
    ("aws:iam/rolePolicy:RolePolicy", {"name": "s3-read", "policy": "{}"}),
]


@pytest.mark.parametrize(("type_token", "inputs", "path", "reason"), DEFECTS)
def test_a_value_the_api_model_refuses_is_a_finding(
    type_token: str, inputs: dict[str, Any], path: str, reason: str
) -> None:
    found = _findings(_aws(type_token, inputs))
    assert len(found) == 1, found
    assert f"planted-thing's {path} is " in found[0].message and reason in found[0].message
    assert found[0].rule == "aws-api-model" and "ValidationException" in found[0].message


@pytest.mark.parametrize(("type_token", "inputs"), TWINS)
def test_the_same_resource_with_accepted_values_is_fine(type_token: str, inputs: dict[str, Any]) -> None:
    assert not _findings(_aws(type_token, inputs))


def test_a_value_from_another_resources_output_is_not_judged() -> None:
    # Under the mocks an output is a stand-in ("llm-gateway-id"); AWS will see the real one.
    inputs = {"name": "llm:gateway:access"}
    deps = {"name": ["urn:pulumi:dev::tokenplane::aws:s3/bucketV2:BucketV2::logs"]}
    assert not _findings(_aws("aws:cloudwatch/logGroup:LogGroup", inputs, property_dependencies=deps))


@pytest.mark.parametrize("value", ["[secret]", "04da6b54-80e4-46f7-96ec-b56ff0331ba9"])
def test_secrets_and_unknowns_are_not_judged(value: str) -> None:
    assert not _findings(_aws("aws:cloudwatch/logGroup:LogGroup", {"name": value}))


def test_tags_are_not_judged() -> None:
    assert not _findings(_aws("aws:cloudwatch/logGroup:LogGroup", {"name": "/ok", "tags": {"a b:c": "x" * 300}}))


def test_a_long_enumeration_is_not_judged() -> None:
    # EC2 adds instance types faster than an installed botocore learns them: a newer type would read as refused.
    template = {"instanceType": "p9.enormous", "blockDeviceMappings": [{"deviceName": "/dev/xvda"}]}
    assert not _findings(_aws("aws:ec2/launchTemplate:LaunchTemplate", template))


def test_a_type_no_operation_makes_is_not_judged() -> None:
    assert operation_members("aws:ec2/eip:Eip") is None
    assert operation_members("aws:nosuchservice/thing:Thing") is None
    assert not _findings(_aws("aws:ec2/eip:Eip", {"domain": "vpc", "networkBorderGroup": "x" * 9999}))


def test_the_operation_is_the_longest_noun_the_type_ends_with_else_the_shortest_that_ends_with_it() -> None:
    fsx = operation_members("aws:fsx/lustreFileSystem:LustreFileSystem")
    rds = operation_members("aws:rds/instance:Instance")
    opensearch = operation_members("aws:opensearch/domain:Domain")
    assert fsx is not None and fsx[0] == ("CreateFileSystem",)
    assert rds is not None and rds[0] == ("CreateDBInstance",)
    assert opensearch is not None and [c.where for c in opensearch[2]["name"]] == ["CreateDomain.DomainName"]
    assert rds[2]["identifier"][0].where == "CreateDBInstance.DBInstanceIdentifier"


def test_a_key_is_refused_only_where_every_member_it_may_be_refuses_it() -> None:
    short, long = Constraint("A.X", "string", high=7), Constraint("B.X", "string", high=64)
    assert short.refuses("sun:03:00") and long.refuses("sun:03:00") is None
    # a member that is a structure (or a type other than the value's) cannot refuse a scalar
    assert Constraint("C.X", "container").refuses("anything") is None
    assert Constraint("D.X", "integer", low=1).refuses("0") is None


def test_patterns_match_the_whole_value_and_unreadable_ones_are_skipped() -> None:
    name = Constraint("Op.Name", "string", pattern="[a-z][a-z0-9\\-]+")
    assert name.refuses("Search-1") and name.refuses("search_1") and name.refuses("search-1") is None
    assert Constraint("Op.Text", "string", pattern="[\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*").refuses("Grüße 1") is None
    assert Constraint("Op.Bad", "string", pattern="(?<unclosed").refuses("anything") is None
