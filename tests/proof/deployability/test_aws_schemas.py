"""aws-resource-schema: the program's AWS resources linted by cfn-lint as the CloudFormation resources that make
the same calls. Each planted value is one the service refuses, beside a twin it takes; the shipped renders
have none; references between the program's resources stand in as ``Ref``/``Fn::GetAtt``, never as a made-up
ID that reads as malformed."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof.deployability import aws_schemas
from tokenplane.proof.deployability.cfn_shape import DROP, Shaper
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, RenderResult, physical_id

pytest.importorskip("cfnlint")


def schema_findings(result: RenderResult, stack: str = "dev") -> list[str]:
    return [f.message for f in aws_schemas.check(Graph(spec(stack), result))]


def planted(*resources: RenderedResource) -> list[str]:
    return schema_findings(mutated(rendered("dev"), lambda r: r, extra=list(resources)))


@pytest.mark.parametrize("stack", ["dev", "minimal", "byteion"])
def test_the_shipped_stacks_have_no_value_aws_refuses(stack: str) -> None:
    result = rendered(stack)
    assert any(r.type in aws_schemas.TYPES for r in result.resources)
    assert schema_findings(result, stack) == []


def test_every_mapped_type_has_a_schema_in_cfn_lint() -> None:
    # A misspelt CloudFormation type would be skipped without a word (aws_schemas._schema answers None).
    from tokenplane.proof.deployability.cfn_types import TYPES

    types = {t.type for t in TYPES.values()} | {"AWS::EC2::SecurityGroupEgress"}
    assert [t for t in sorted(types) if aws_schemas._schema("us-east-1", t) is None] == []


def test_every_shipped_aws_resource_of_a_mapped_type_is_linted() -> None:
    # A type that maps to nothing cfn-lint knows would be skipped without a word; the stand-in must exist.
    result = rendered("byteion")
    made = aws_schemas.templates(Graph(spec("byteion"), result))
    linted = {r.urn for t in made.values() for r in t.origin.values()}
    mapped = {r.urn for r in result.resources if r.custom and r.type in aws_schemas.TYPES}
    assert mapped and linted == mapped


CASES: list[tuple[str, str, dict[str, Any], dict[str, Any], str]] = [
    # (type, name, refused inputs, accepted twin, a word the finding says)
    ("aws:sqs/queue:Queue", "q", {"visibilityTimeoutSeconds": 86_400}, {"visibilityTimeoutSeconds": 43_200}, "43200"),
    ("aws:sqs/queue:Queue", "q", {"messageRetentionSeconds": 30}, {"messageRetentionSeconds": 60}, "minimum"),
    ("aws:cloudwatch/logGroup:LogGroup", "logs", {"retentionInDays": 45}, {"retentionInDays": 60}, "RetentionInDays"),
    (
        "aws:cloudwatch/metricAlarm:MetricAlarm",
        "alarm",
        {"period": 45, "comparisonOperator": "GreaterThanThreshold", "evaluationPeriods": 1, "threshold": 1},
        {"period": 60, "comparisonOperator": "GreaterThanThreshold", "evaluationPeriods": 1, "threshold": 1},
        "Period",
    ),
    (
        "aws:dynamodb/table:Table",
        "table",
        {
            "attributes": [{"name": "id", "type": "S"}, {"name": "unused", "type": "S"}],
            "hashKey": "id",
            "billingMode": "PAY_PER_REQUEST",
        },
        {"attributes": [{"name": "id", "type": "S"}], "hashKey": "id", "billingMode": "PAY_PER_REQUEST"},
        "unused",
    ),
    (
        "aws:ec2/securityGroup:SecurityGroup",
        "sg",
        {"description": "the team's group"},
        {"description": "the team group"},
        "GroupDescription",
    ),
    ("aws:iam/role:Role", "role", {"name": "r" * 65}, {"name": "r" * 64}, "RoleName"),
    (
        "aws:eks/nodeGroup:NodeGroup",
        "ng",
        {"amiType": "AL2023_x86_64_GPU"},
        {"amiType": "AL2023_x86_64_NVIDIA"},
        "AmiType",
    ),
    ("aws:kms/key:Key", "key", {"deletionWindowInDays": 3}, {"deletionWindowInDays": 7}, "PendingWindowInDays"),
    (
        "aws:fsx/lustreFileSystem:LustreFileSystem",
        "lustre",
        {"storageCapacity": 1000, "deploymentType": "SCRATCH_2"},
        {"storageCapacity": 1200, "deploymentType": "SCRATCH_2"},
        "StorageCapacity",
    ),
    (
        "aws:sfn/stateMachine:StateMachine",
        "flow",
        {"definition": json.dumps({"StartAt": "A", "States": {"A": {"Type": "Tusk", "End": True}}})},
        {"definition": json.dumps({"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True}}})},
        "Tusk",
    ),
    (
        "aws:backup/plan:Plan",
        "backup",
        {
            "name": "p",
            "rules": [
                {"ruleName": "r", "targetVaultName": "v", "lifecycle": {"coldStorageAfter": 30, "deleteAfter": 60}}
            ],
        },
        {
            "name": "p",
            "rules": [
                {"ruleName": "r", "targetVaultName": "v", "lifecycle": {"coldStorageAfter": 30, "deleteAfter": 120}}
            ],
        },
        "DeleteAfterDays",
    ),
    (
        "aws:kinesis/stream:Stream",
        "stream",
        {"retentionPeriod": 10_000},
        {"retentionPeriod": 168},
        "RetentionPeriodHours",
    ),
    ("aws:autoscaling/group:Group", "asg", {"minSize": 3, "maxSize": 2}, {"minSize": 2, "maxSize": 3}, "MaxSize"),
    (
        "aws:lb/targetGroup:TargetGroup",
        "tg",
        {"port": 80, "protocol": "HTTP", "targetType": "ip", "healthCheck": {"interval": 400}},
        {"port": 80, "protocol": "HTTP", "targetType": "ip", "healthCheck": {"interval": 30}},
        "HealthCheckIntervalSeconds",
    ),
]


@pytest.mark.parametrize(("typ", "name", "refused", "accepted", "said"), CASES, ids=[f"{c[0]}-{c[4]}" for c in CASES])
def test_a_value_the_service_refuses_is_found_and_its_twin_is_not(
    typ: str, name: str, refused: dict[str, Any], accepted: dict[str, Any], said: str
) -> None:
    found = planted(_aws(typ, f"planted-{name}", refused))
    assert len(found) == 1 and said in found[0] and f"planted-{name}" in found[0], found
    assert planted(_aws(typ, f"planted-{name}", accepted)) == []


def test_a_reference_to_a_resource_of_the_program_is_its_stand_in_not_a_malformed_id() -> None:
    # The mock's IDs ("...-id") match no AWS pattern: read as values they would be flagged in every program.
    queue = _aws("aws:sqs/queue:Queue", "planted-dlq", {})
    arn = f"arn:aws:sqs:eu-central-1:123456789012:{physical_id(queue.type, queue.name).removesuffix('-id')}"
    source = _aws(
        "aws:sqs/queue:Queue",
        "planted-source",
        {"redrivePolicy": json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 5})},
    )
    group = _aws("aws:ec2/securityGroup:SecurityGroup", "planted-sg", {"description": "ok", "vpcId": "made-up-vpc-id"})
    made = aws_schemas.templates(
        Graph(spec("dev"), mutated(rendered("dev"), lambda r: r, extra=[queue, source, group]))
    )
    resources = {r.name: body for t in made.values() for name, body in t.resources.items() for r in [t.origin[name]]}
    assert resources["planted-source"]["Properties"]["RedrivePolicy"]["deadLetterTargetArn"] == {
        "Fn::GetAtt": ["PlantedDlq", "Arn"]
    }
    assert resources["planted-sg"]["Properties"]["VpcId"] == "made-up-vpc-id"  # not the program's: a literal value
    assert planted(queue, source) == []


def test_a_reference_to_a_resource_not_linted_drops_the_property_and_one_linted_is_a_ref() -> None:
    result = rendered("dev")
    cluster = next(r for r in result.resources if r.type == "aws:eks/cluster:Cluster")
    table = next(r for r in result.resources if r.type == "aws:ec2/routeTable:RouteTable")
    assert table.type not in aws_schemas.TYPES
    addon = _aws(
        "aws:eks/addon:Addon", "planted-addon", {"addonName": "vpc-cni", "clusterName": cluster.inputs["name"]}
    )
    endpoint = _aws(
        "aws:ec2/vpcEndpoint:VpcEndpoint",
        "planted-endpoint",
        {"serviceName": "com.amazonaws.us-east-1.s3", "routeTableIds": [physical_id(table.type, table.name)]},
    )
    # In the cluster's region: a reference across regions has no stand-in in the region's template.
    addon, endpoint = (dataclasses.replace(r, region=cluster.region) for r in (addon, endpoint))
    made = aws_schemas.templates(Graph(spec("dev"), mutated(result, lambda r: r, extra=[addon, endpoint])))
    bodies = {t.origin[n].name: b for t in made.values() for n, b in t.resources.items()}
    logical = {t.origin[n].urn: n for t in made.values() for n in t.resources}
    assert bodies["planted-addon"]["Properties"]["ClusterName"] == {"Ref": logical[cluster.urn]}
    assert "RouteTableIds" not in bodies["planted-endpoint"]["Properties"]
    assert bodies["planted-endpoint"]["Properties"]["ServiceName"] == "com.amazonaws.us-east-1.s3"


SCHEMA = {
    "properties": {
        "Tags": {"type": "array", "items": {"$ref": "#/definitions/Tag"}},
        "Config": {"$ref": "#/definitions/Config"},
        "Size": {"type": "string"},
        "Labels": {"type": "object", "patternProperties": {".*": {"type": "string"}}},
        "Document": {"type": ["object", "string"]},
    },
    "definitions": {
        "Tag": {"type": "object", "properties": {"Key": {"type": "string"}, "Value": {"type": "string"}}},
        "Config": {"type": "object", "properties": {"Enabled": {"type": "boolean"}, "Count": {"type": "integer"}}},
    },
}


def test_values_take_the_schemas_layout() -> None:
    shaper = Shaper(SCHEMA)
    out = shaper.resource(
        {
            "tags": {"team": "ml"},
            "config": [{"enabled": "true", "count": 3.0, "unknown": 1}],
            "size": 20.0,
            "labels": {"a": "b"},
            "extra": "dropped",
        }
    )
    assert out == {
        "Tags": [{"Key": "team", "Value": "ml"}],
        "Config": {"Enabled": True, "Count": 3},
        "Size": "20",
        "Labels": {"a": "b"},
    }
    assert sorted(shaper.dropped) == ["config.unknown", "extra"]


def test_a_document_holding_a_dropped_reference_goes_whole() -> None:
    # A policy without the statement that named an unknown resource would say something else: drop it all.
    out = Shaper(SCHEMA).resource({"document": {"Statement": [{"Resource": DROP}], "Version": "2012-10-17"}})
    assert out == {}
