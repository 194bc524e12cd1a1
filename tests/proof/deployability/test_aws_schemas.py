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


_TOPIC = "arn:aws:sns:us-east-1:123456789012:alarms-"
_SUBNET = "subnet-0123456789abcdef0"
_VISIBILITY = {"cloudwatchMetricsEnabled": True, "metricName": "gateway", "sampledRequestsEnabled": True}


def _schedule(window: int) -> dict[str, Any]:
    return {
        "scheduleExpression": "rate(1 hour)",
        "flexibleTimeWindow": {"mode": "FLEXIBLE", "maximumWindowInMinutes": window},
        "target": {
            "arn": "arn:aws:lambda:us-east-1:123456789012:function:eval",
            "roleArn": "arn:aws:iam::123456789012:role/scheduler",
        },
    }


def _web_acl(limit: int) -> dict[str, Any]:
    rate = {"limit": limit, "aggregateKeyType": "IP", "evaluationWindowSec": 60}
    rule = {
        "name": "per-ip",
        "priority": 1,
        "action": {"block": {}},
        "visibilityConfig": {**_VISIBILITY, "metricName": "per-ip"},
        "statement": {"rateBasedStatement": rate},
    }
    return {
        "name": "gateway",
        "scope": "REGIONAL",
        "defaultAction": {"allow": {}},
        "visibilityConfig": _VISIBILITY,
        "rules": [rule],
    }


def _firehose(size: int) -> dict[str, Any]:
    s3 = {
        "bucketArn": "arn:aws:s3:::completions",
        "roleArn": "arn:aws:iam::123456789012:role/firehose",
        "bufferingSize": size,
        "bufferingInterval": 300,
        "compressionFormat": "GZIP",
    }
    return {"name": "completions-log", "destination": "extended_s3", "extendedS3Configuration": s3}


def _asg_policy(metric: str) -> dict[str, Any]:
    tracking = {"targetValue": 70, "predefinedMetricSpecification": {"predefinedMetricType": metric}}
    return {
        "autoscalingGroupName": "gpu-workers",
        "policyType": "TargetTrackingScaling",
        "targetTrackingConfiguration": tracking,
    }


def _endpoint_policy(dimension: str) -> dict[str, Any]:
    metric = {"predefinedMetricType": "SageMakerVariantInvocationsPerInstance"}
    return {
        "name": "invocations",
        "policyType": "TargetTrackingScaling",
        "serviceNamespace": "sagemaker",
        "resourceId": "endpoint/llm/variant/AllTraffic",
        "scalableDimension": dimension,
        "targetTrackingScalingPolicyConfiguration": {"targetValue": 100, "predefinedMetricSpecification": metric},
    }


def _lifecycle(storage_class: str) -> dict[str, Any]:
    rule = {
        "id": "cold-checkpoints",
        "status": "Enabled",
        "filter": {"prefix": "ckpt/"},
        "transitions": [{"days": 90, "storageClass": storage_class}],
        "expiration": {"days": 365},
    }
    return {"bucket": "weights", "rules": [rule]}


def _replication(status: str) -> dict[str, Any]:
    rule = {
        "id": "dr",
        "status": status,
        "filter": {"prefix": ""},
        "deleteMarkerReplication": {"status": "Disabled"},
        "destination": {"bucket": "arn:aws:s3:::weights-dr", "storageClass": "STANDARD"},
    }
    return {"bucket": "weights", "role": "arn:aws:iam::123456789012:role/replication", "rules": [rule]}


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
    # A TXT character-string holds at most 255 characters (Route 53: CharacterStringTooLong); the provider quotes the
    # value and splits it where the program writes "" (blind set 17: the split twin was flagged before values were
    # quoted as the provider sends them).
    (
        "aws:route53/record:Record",
        "dkim",
        {
            "zoneId": "Z0123456789ABC",
            "name": "mail._domainkey.example.org",
            "type": "TXT",
            "ttl": 300,
            "records": ["v=DKIM1; p=" + "A" * 300],
        },
        {
            "zoneId": "Z0123456789ABC",
            "name": "mail._domainkey.example.org",
            "type": "TXT",
            "ttl": 300,
            "records": ["v=DKIM1; p=" + "A" * 200 + '""' + "A" * 100],
        },
        "ResourceRecords",
    ),
    (
        "aws:lb/targetGroup:TargetGroup",
        "tg",
        {"port": 80, "protocol": "HTTP", "targetType": "ip", "healthCheck": {"interval": 400}},
        {"port": 80, "protocol": "HTTP", "targetType": "ip", "healthCheck": {"interval": 30}},
        "HealthCheckIntervalSeconds",
    ),
    # Route 53 CreateHealthCheck: FailureThreshold is 1 to 10 (API reference, HealthCheckConfig).
    (
        "aws:route53/healthCheck:HealthCheck",
        "hc",
        {"type": "HTTPS", "fqdn": "api.example.com", "port": 443, "resourcePath": "/readyz", "failureThreshold": 11},
        {"type": "HTTPS", "fqdn": "api.example.com", "port": 443, "resourcePath": "/readyz", "failureThreshold": 10},
        "FailureThreshold",
    ),
    # CloudWatch PutCompositeAlarm: at most 5 alarm actions (API reference, AlarmActions).
    (
        "aws:cloudwatch/compositeAlarm:CompositeAlarm",
        "composite",
        {"alarmName": "c", "alarmRule": "ALARM(a)", "alarmActions": [f"{_TOPIC}{i}" for i in range(6)]},
        {"alarmName": "c", "alarmRule": "ALARM(a)", "alarmActions": [f"{_TOPIC}{i}" for i in range(5)]},
        "AlarmActions",
    ),
    # EventBridge Scheduler CreateSchedule: MaximumWindowInMinutes is 1 to 1440 (API reference, FlexibleTimeWindow).
    (
        "aws:scheduler/schedule:Schedule",
        "schedule",
        _schedule(1500),
        _schedule(1440),
        "MaximumWindowInMinutes",
    ),
    # Lambda AddPermission: Action matches (lambda:[*]|lambda:[a-zA-Z]+|[*]) (API reference).
    (
        "aws:lambda/permission:Permission",
        "permission",
        {"action": "InvokeFunction", "function": "router", "principal": "s3.amazonaws.com", "statementId": "AllowS3"},
        {
            "action": "lambda:InvokeFunction",
            "function": "router",
            "principal": "s3.amazonaws.com",
            "statementId": "AllowS3",
        },
        "Action",
    ),
    # Lambda PutFunctionConcurrency: ReservedConcurrentExecutions is 0 or more; -1 is the provider's "unreserved",
    # which it never sends (cfn_layouts.lambda_function), so it is no value AWS refuses.
    (
        "aws:lambda/function:Function",
        "function",
        {"name": "rollup", "role": "arn:aws:iam::123456789012:role/r", "reservedConcurrentExecutions": -2},
        {"name": "rollup", "role": "arn:aws:iam::123456789012:role/r", "reservedConcurrentExecutions": -1},
        "ReservedConcurrentExecutions",
    ),
    # Lambda CreateFunctionUrlConfig: InvokeMode is BUFFERED or RESPONSE_STREAM (API reference).
    (
        "aws:lambda/functionUrl:FunctionUrl",
        "url",
        {"functionName": "router", "authorizationType": "AWS_IAM", "invokeMode": "STREAMING"},
        {"functionName": "router", "authorizationType": "AWS_IAM", "invokeMode": "RESPONSE_STREAM"},
        "InvokeMode",
    ),
    # Lambda CreateAlias: FunctionVersion matches (\$LATEST|[0-9]+) (API reference).
    (
        "aws:lambda/alias:Alias",
        "alias",
        {"name": "live", "functionName": "router", "functionVersion": "latest"},
        {"name": "live", "functionName": "router", "functionVersion": "$LATEST"},
        "FunctionVersion",
    ),
    # IAM CreateInstanceProfile: the name matches [\w+=,.@-]+ (API reference, InstanceProfileName).
    (
        "aws:iam/instanceProfile:InstanceProfile",
        "profile",
        {"name": "gpu nodes", "role": "gpu-node-role"},
        {"name": "gpu-nodes", "role": "gpu-node-role"},
        "InstanceProfileName",
    ),
    # IAM CreateUser: UserName is 1 to 64 characters (API reference).
    ("aws:iam/user:User", "user", {"name": "u" * 65}, {"name": "u" * 64}, "UserName"),
    # EC2 CreateNatGateway: SecondaryPrivateIpAddressCount is 1 to 31 (API reference).
    (
        "aws:ec2/natGateway:NatGateway",
        "nat",
        {"subnetId": _SUBNET, "connectivityType": "private", "secondaryPrivateIpAddressCount": 32},
        {"subnetId": _SUBNET, "connectivityType": "private", "secondaryPrivateIpAddressCount": 31},
        "SecondaryPrivateIpAddressCount",
    ),
    # EC2 CreatePlacementGroup: Strategy is cluster, spread or partition (API reference, PlacementStrategy).
    (
        "aws:ec2/placementGroup:PlacementGroup",
        "pg",
        {"name": "train", "strategy": "clustered"},
        {"name": "train", "strategy": "cluster"},
        "Strategy",
    ),
    # Athena CreateWorkGroup: BytesScannedCutoffPerQuery is at least 10,000,000 (API reference,
    # WorkGroupConfiguration).
    (
        "aws:athena/workgroup:Workgroup",
        "athena",
        {"name": "analysts", "configuration": {"bytesScannedCutoffPerQuery": 1_000_000}},
        {"name": "analysts", "configuration": {"bytesScannedCutoffPerQuery": 10_000_000}},
        "BytesScannedCutoffPerQuery",
    ),
    # ECR CreatePullThroughCacheRule: the prefix is lowercase, 2 to 30 characters (API reference,
    # ecrRepositoryPrefix).
    (
        "aws:ecr/pullThroughCacheRule:PullThroughCacheRule",
        "cache",
        {"ecrRepositoryPrefix": "DockerHub", "upstreamRegistryUrl": "registry-1.docker.io"},
        {"ecrRepositoryPrefix": "docker-hub", "upstreamRegistryUrl": "registry-1.docker.io"},
        "EcrRepositoryPrefix",
    ),
    # WAFv2 CreateIPSet: Name matches ^[\w\-]+$ (API reference).
    (
        "aws:wafv2/ipSet:IpSet",
        "ipset",
        {"name": "office ips", "scope": "REGIONAL", "ipAddressVersion": "IPV4", "addresses": ["203.0.113.0/24"]},
        {"name": "office-ips", "scope": "REGIONAL", "ipAddressVersion": "IPV4", "addresses": ["203.0.113.0/24"]},
        "Name",
    ),
    # WAFv2 CreateWebACL: a rate-based rule's Limit is 10 to 2,000,000,000 (API reference, RateBasedStatement).
    ("aws:wafv2/webAcl:WebAcl", "acl", _web_acl(5), _web_acl(10), "Limit"),
    # Firehose CreateDeliveryStream: BufferingHints.SizeInMBs is 1 to 128 (API reference, BufferingHints).
    (
        "aws:kinesis/firehoseDeliveryStream:FirehoseDeliveryStream",
        "firehose",
        _firehose(256),
        _firehose(128),
        "SizeInMBs",
    ),
    # CloudTrail CreateTrail: the name has only letters, digits, '.', '_' and '-' (API reference, Name).
    (
        "aws:cloudtrail/trail:Trail",
        "trail",
        {"name": "org trail", "s3BucketName": "audit-logs", "enableLogging": True},
        {"name": "org-trail", "s3BucketName": "audit-logs", "enableLogging": True},
        "TrailName",
    ),
    # EC2 Auto Scaling PutScalingPolicy: PredefinedMetricType is one of four; there is no GPU one (API reference,
    # PredefinedMetricSpecification).
    (
        "aws:autoscaling/policy:Policy",
        "asg-policy",
        _asg_policy("ASGAverageGPUUtilization"),
        _asg_policy("ASGAverageCPUUtilization"),
        "PredefinedMetricType",
    ),
    # Application Auto Scaling PutScalingPolicy: a SageMaker variant scales sagemaker:variant:DesiredInstanceCount
    # (API reference, ScalableDimension).
    (
        "aws:appautoscaling/policy:Policy",
        "endpoint-policy",
        _endpoint_policy("sagemaker:variant:DesiredCount"),
        _endpoint_policy("sagemaker:variant:DesiredInstanceCount"),
        "ScalableDimension",
    ),
    # S3 PutBucketLifecycleConfiguration: Transition.StorageClass is GLACIER, STANDARD_IA, ONEZONE_IA,
    # INTELLIGENT_TIERING, DEEP_ARCHIVE or GLACIER_IR (API reference, Transition).
    (
        "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
        "lifecycle",
        _lifecycle("GLACIER_DEEP_ARCHIVE"),
        _lifecycle("DEEP_ARCHIVE"),
        "GLACIER_DEEP_ARCHIVE",
    ),
    # S3 PutBucketVersioning: Status is Enabled or Suspended (API reference, VersioningConfiguration).
    (
        "aws:s3/bucketVersioningV2:BucketVersioningV2",
        "versioning",
        {"bucket": "weights", "versioningConfiguration": {"status": "On"}},
        {"bucket": "weights", "versioningConfiguration": {"status": "Enabled"}},
        "Status",
    ),
    # S3 PutBucketEncryption: a bucket's SSEAlgorithm is AES256, aws:kms or aws:kms:dsse (API reference,
    # ServerSideEncryptionByDefault).
    (
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
        "sse",
        {"bucket": "weights", "rules": [{"applyServerSideEncryptionByDefault": {"sseAlgorithm": "SSE-KMS"}}]},
        {"bucket": "weights", "rules": [{"applyServerSideEncryptionByDefault": {"sseAlgorithm": "aws:kms"}}]},
        "SSEAlgorithm",
    ),
    # S3 PutBucketCors: AllowedMethod is GET, PUT, HEAD, POST or DELETE; S3 answers preflights itself (user
    # guide, "CORS configuration").
    (
        "aws:s3/bucketCorsConfiguration:BucketCorsConfiguration",
        "cors",
        {"bucket": "weights", "corsRules": [{"allowedMethods": ["GET", "OPTIONS"], "allowedOrigins": ["*"]}]},
        {"bucket": "weights", "corsRules": [{"allowedMethods": ["GET", "HEAD"], "allowedOrigins": ["*"]}]},
        "OPTIONS",
    ),
    # S3 PutBucketReplication: a rule's Status is Enabled or Disabled (API reference, ReplicationRule).
    (
        "aws:s3/bucketReplicationConfig:BucketReplicationConfig",
        "replication",
        _replication("enabled"),
        _replication("Enabled"),
        "enabled",
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
