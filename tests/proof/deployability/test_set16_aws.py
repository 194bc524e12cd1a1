"""The rules set 16's AWS misses led to (written after its blind run, so not held out), each planted in a shipped
render beside its correct twin: an alarm's evaluation range (aws-api-values), a DynamoDB CLI query on an index the
pod's role may not query (aws-cli-permissions), an event source mapping whose function's role cannot read its queue
(event-source-permissions), a bucket policy requiring a VPC that has no S3 endpoint (bucket-source-vpc), and a
CloudFront distribution on a certificate outside us-east-1 (tls-listener)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tests.proof.deployability.test_set3_invariants import _resource
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import aws_cli, aws_values, event_sources, source_vpc, tls
from tokenplane.proof.render import RenderedResource, physical_id

NAMESPACE = "llm-data"


def _graph(*extra: RenderedResource) -> deploy.Graph:
    return deploy.Graph(spec("minimal"), mutated(rendered("minimal"), lambda r: r, extra=list(extra)))


def _wired(typ: str, name: str, inputs: dict[str, Any], **refs: RenderedResource) -> RenderedResource:
    return dataclasses.replace(_aws(typ, name, inputs), property_dependencies={k: [r.urn] for k, r in refs.items()})


def _policy(*statements: tuple[list[str], list[str]]) -> str:
    listed = [{"Effect": "Allow", "Action": actions, "Resource": resources} for actions, resources in statements]
    return json.dumps({"Version": "2012-10-17", "Statement": listed})


# aws-api-values: an alarm's evaluation range ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("period", "evaluations", "refused"),
    [
        (1800, 96, "at most one day"),  # 172,800 s at a sub-hour period
        (3600, 48, None),  # the same two days at an hourly period
        (300, 288, None),  # exactly one day
        (3600, 169, "at most seven days"),
        (86400, 7, None),
    ],
)
def test_an_alarms_evaluation_range_is_within_what_put_metric_alarm_takes(
    period: int, evaluations: int, refused: str | None
) -> None:
    alarm = _aws(
        "aws:cloudwatch/metricAlarm:MetricAlarm",
        "planted-alarm",
        {"metricName": "X", "namespace": "AWS/SQS", "period": period, "evaluationPeriods": evaluations},
    )
    said = [f for f in aws_values.check(_graph(alarm)) if f.urn == alarm.urn]
    assert bool(said) == bool(refused), said
    for finding in said:
        assert refused and refused in finding.message and "planted-alarm" in finding.message, finding
        assert "evaluationPeriods" in finding.message and "evaluationPeriods" in finding.fix, finding


# aws-cli-permissions: dynamodb commands, on the table or its index ------------------------------------------------------

TABLE = "planted-sessions"
ON_TABLE = f"arn:aws:dynamodb:*:*:table/{TABLE}"


def _cli_graph(script: str, policy: str) -> deploy.Graph:
    table = _aws("aws:dynamodb/table:Table", "planted-table", {"name": TABLE, "hashKey": "id"})
    role = _aws("aws:iam/role:Role", "planted-role", {"name": "planted-role", "inlinePolicies": [{"policy": policy}]})
    account = _resource(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {
                "name": "planted-sweep",
                "namespace": NAMESPACE,
                "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/planted-role"},
            },
        }
    )
    account = dataclasses.replace(account, property_dependencies={"metadata": [role.urn]})
    container = {
        "name": "sweep",
        "image": "public.ecr.aws/aws-cli/aws-cli:2.22.35",
        "command": ["sh", "-c", script],
        "env": [{"name": "TABLE", "value": TABLE}],
    }
    pod = {"serviceAccountName": "planted-sweep", "restartPolicy": "OnFailure", "containers": [container]}
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "planted-sweep", "namespace": NAMESPACE},
        "spec": {"schedule": "30 2 * * *", "jobTemplate": {"spec": {"template": {"spec": pod}}}},
    }
    return _graph(table, role, account, _resource(cron))


QUERY = 'aws dynamodb query --table-name "$TABLE" --index-name by-state --key-condition-expression "s = :s"'


@pytest.mark.parametrize(
    ("script", "policy", "missing"),
    [
        (QUERY, _policy((["dynamodb:Query"], [ON_TABLE])), "dynamodb:Query on arn:aws:dynamodb:us-east-1:"),
        (QUERY, _policy((["dynamodb:Query"], [ON_TABLE, f"{ON_TABLE}/index/*"])), None),
        (
            f"aws dynamodb query --table-name {TABLE} --key-condition-expression 'id = :i'",
            _policy((["dynamodb:Query"], [ON_TABLE])),
            None,
        ),
        (
            f"aws dynamodb put-item --table-name {TABLE} --item '{{}}'",
            _policy((["dynamodb:Query"], [ON_TABLE])),
            "dynamodb:PutItem",
        ),
        (f"aws dynamodb scan --table-name {TABLE}", _policy((["dynamodb:*"], [ON_TABLE])), None),
        ("aws dynamodb get-item --table-name someone-elses --key '{}'", _policy(), None),  # not the program's table
        (
            f'aws dynamodb batch-get-item --request-items \'{{"{TABLE}": {{"Keys": []}}}}\'',
            _policy((["dynamodb:GetItem"], [ON_TABLE])),
            "dynamodb:BatchGetItem",
        ),
    ],
)
def test_a_pods_dynamodb_commands_are_allowed_on_the_table_or_index_they_name(
    script: str, policy: str, missing: str | None
) -> None:
    said = list(aws_cli.check(_cli_graph(script, policy)))
    assert bool(said) == bool(missing), said
    for finding in said:
        assert missing and missing in finding.message, finding
        assert "CronJob llm-data/planted-sweep container sweep" in finding.message, finding
        assert "planted-role" in finding.fix, finding
    if missing and "index" in script:
        assert "/index/by-state" in said[0].message, said


# event-source-permissions: the function's role may read its source ------------------------------------------------------

QUEUE = "arn:aws:sqs:us-east-1:123456789012:planted-intake"
STREAM = "arn:aws:kinesis:us-east-1:123456789012:stream/planted-events"
BASIC = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
SQS_ALL = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"]


def _mapping_graph(source: str, policy: str, managed: list[str]) -> deploy.Graph:
    role = _aws("aws:iam/role:Role", "planted-fn-role", {"name": "planted-fn-role"})
    inline = _wired(
        "aws:iam/rolePolicy:RolePolicy", "planted-fn-policy", {"policy": policy, "role": "planted-fn-role"}, role=role
    )
    attachments = [
        _wired(
            "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
            f"planted-fn-managed-{i}",
            {"policyArn": arn, "role": physical_id(role.type, role.name)},
            role=role,
        )
        for i, arn in enumerate(managed)
    ]
    function = _wired(
        "aws:lambda/function:Function",
        "planted-fn",
        {"name": "planted-fn", "role": "arn:aws:iam::123456789012:role/planted-fn-role", "timeout": 30},
        role=role,
    )
    mapping = _wired(
        "aws:lambda/eventSourceMapping:EventSourceMapping",
        "planted-source",
        {"eventSourceArn": source, "functionName": "arn:aws:lambda:us-east-1:123456789012:function:planted-fn"},
        functionName=function,
    )
    # Created after the role's grants, as a first pulumi up needs (set 17's mapping-before-policy race).
    mapping = dataclasses.replace(mapping, dependencies=[function.urn, inline.urn, *(a.urn for a in attachments)])
    return _graph(role, inline, *attachments, function, mapping)


@pytest.mark.parametrize(
    ("source", "policy", "managed", "missing"),
    [
        (QUEUE, _policy((["sqs:ReceiveMessage", "sqs:GetQueueAttributes"], [QUEUE])), [BASIC], "sqs:DeleteMessage"),
        (QUEUE, _policy((SQS_ALL, [QUEUE])), [BASIC], None),
        (QUEUE, _policy((["sqs:*"], ["arn:aws:sqs:*:*:planted-*"])), [], None),
        (QUEUE, _policy(), [BASIC, "arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole"], None),
        (QUEUE, _policy(), ["arn:aws:iam::aws:policy/SomeOtherManagedPolicy"], None),  # its document is not in view
        (
            STREAM,
            _policy((["kinesis:GetRecords", "kinesis:GetShardIterator", "kinesis:DescribeStream"], [STREAM])),
            [],
            "kinesis:ListShards",
        ),
        (STREAM, _policy(), ["arn:aws:iam::aws:policy/service-role/AWSLambdaKinesisExecutionRole"], None),
    ],
)
def test_an_event_source_mappings_function_role_may_read_its_source(
    source: str, policy: str, managed: list[str], missing: str | None
) -> None:
    said = list(event_sources.check(_mapping_graph(source, policy, managed)))
    assert bool(said) == bool(missing), said
    for finding in said:
        assert missing and missing in finding.message and "planted-source" in finding.message, finding
        assert "planted-fn-role" in finding.message and missing in finding.fix, finding


# bucket-source-vpc: a Deny unless aws:SourceVpc, in a VPC with an S3 endpoint --------------------------------------------

VPC_ID = "minimal-us-network-vpc-adc8068-id"


def _vpc_graph(key: str, value: str, service: str | None, operator: str = "StringNotEquals") -> deploy.Graph:
    vpc = next(r for r in rendered("minimal").resources if r.type == "aws:ec2/vpc:Vpc")
    deny = {
        "Sid": "DenyOutsideVpc",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": ["arn:aws:s3:::planted-evals", "arn:aws:s3:::planted-evals/*"],
        "Condition": {operator: {key: value}},
    }
    bucket = _aws("aws:s3/bucket:Bucket", "planted-evals", {"bucket": "planted-evals"})
    policy = _wired(
        "aws:s3/bucketPolicy:BucketPolicy",
        "planted-evals-policy",
        {"bucket": "planted-evals", "policy": json.dumps({"Version": "2012-10-17", "Statement": [deny]})},
        bucket=bucket,
    )
    extra = [bucket, policy]
    if service:
        extra.append(
            _wired(
                "aws:ec2/vpcEndpoint:VpcEndpoint",
                "planted-endpoint",
                {"vpcId": physical_id(vpc.type, vpc.name), "serviceName": service, "vpcEndpointType": "Gateway"},
                vpcId=vpc,
            )
        )
    return _graph(*extra)


ENDPOINT_ID = physical_id("aws:ec2/vpcEndpoint:VpcEndpoint", "planted-endpoint")


@pytest.mark.parametrize(
    ("key", "value", "service", "operator", "refused"),
    [
        ("aws:SourceVpc", VPC_ID, None, "StringNotEquals", "has no S3 VPC endpoint"),
        ("aws:SourceVpc", VPC_ID, "com.amazonaws.us-east-1.s3", "StringNotEquals", None),
        ("aws:SourceVpc", VPC_ID, "com.amazonaws.us-east-1.dynamodb", "StringNotEquals", "has no S3 VPC endpoint"),
        ("aws:SourceVpc", VPC_ID, None, "StringEquals", None),  # a Deny inside the VPC only
        ("aws:SourceVpc", "vpc-0123456789abcdef0", None, "StringNotEquals", None),  # not the program's VPC
        ("aws:sourcevpce", ENDPOINT_ID, "com.amazonaws.us-east-1.s3", "StringNotEquals", None),
        ("aws:SourceVpce", ENDPOINT_ID, "com.amazonaws.us-east-1.sts", "StringNotEquals", "is not an S3 endpoint"),
    ],
)
def test_a_bucket_policys_source_vpc_names_a_vpc_with_an_s3_endpoint(
    key: str, value: str, service: str | None, operator: str, refused: str | None
) -> None:
    said = list(source_vpc.check(_vpc_graph(key, value, service, operator)))
    assert bool(said) == bool(refused), said
    for finding in said:
        assert refused and refused in finding.message and "planted-evals-policy" in finding.message, finding
        assert "DenyOutsideVpc" in finding.message and "VpcEndpoint" in finding.fix, finding


# tls-listener: a CloudFront viewer certificate of us-east-1 ---------------------------------------------------------------


def _distribution(arn: str, *certificates: RenderedResource) -> RenderedResource:
    distribution = _aws(
        "aws:cloudfront/distribution:Distribution",
        "planted-edge",
        {"enabled": True, "viewerCertificate": {"acmCertificateArn": arn, "sslSupportMethod": "sni-only"}},
    )
    return dataclasses.replace(distribution, property_dependencies={"viewerCertificate": [c.urn for c in certificates]})


CERT = "arn:aws:acm:{}:123456789012:certificate/00000000-0000-0000-0000-000000000000"


@pytest.mark.parametrize(
    ("arn", "certificate_region", "refused"),
    [
        (CERT.format("eu-central-1"), None, "of eu-central-1"),
        (CERT.format("us-east-1"), None, None),
        ("", "eu-west-1", "of eu-west-1"),  # the program's certificate on a provider of another region
        ("", "us", None),  # the program's certificate in us-east-1
    ],
)
def test_a_cloudfront_viewer_certificate_is_of_us_east_1(
    arn: str, certificate_region: str | None, refused: str | None
) -> None:
    certificates = []
    if certificate_region:
        certificate = _aws("aws:acm/certificate:Certificate", "planted-cert", {"domainName": "api.acme.example"})
        certificates.append(dataclasses.replace(certificate, region=certificate_region))
    distribution = _distribution(arn, *certificates)
    said = [f for f in tls.check(_graph(*certificates, distribution)) if f.urn == distribution.urn]
    assert bool(said) == bool(refused), said
    for finding in said:
        assert refused and refused in finding.message and "viewerCertificate.acmCertificateArn" in finding.message
        assert "us-east-1" in finding.fix, finding
