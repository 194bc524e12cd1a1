"""The rules set 35's AWS misses led to (written after its blind run, so not held out), planted in the shipped dev
render beside correct twins: an ALB target group's health check interval not above its timeout (aws-api-values for
aws.lb.TargetGroup, controller-values for an ALB Ingress), Lambda environment variable keys Lambda refuses
(aws-api-values), S3 key filters with a leading "/" and EventBridge sources that are service principals
(events-emitted), and a security group without vpcId used in the program's VPC (aws-api-values). The planted defects
are of other values and resources than the held-out cases' (interval 10 vs timeout 10, a timeout of 30 under the
default interval, a Lambda target; keys with a dot, a leading digit, AWS_REGION; topic and Lambda destinations,
an EventBridge object-key prefix; sqs/events/ec2 principals; an ElastiCache cluster, a Lambda's vpcConfig, an
interface endpoint)."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import aws_values, controller_values, events_emitted
from tokenplane.proof.render import RenderedResource, physical_id

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)


def _aws(type_token: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION)


# --- ALB target group: interval > timeout ------------------------------------------------------------------------
TARGET_GROUP = "aws:lb/targetGroup:TargetGroup"


def _tg(health: dict[str, Any] | None, **inputs: Any) -> RenderedResource:
    base: dict[str, Any] = {"port": 8080, "protocol": "HTTP", "targetType": "ip", **inputs}
    if health is not None:
        base["healthCheck"] = health
    return _aws(TARGET_GROUP, "planted-tg", base)


@pytest.mark.parametrize(
    "group",
    [
        _tg({"interval": 10.0, "timeout": 10.0, "path": "/healthz"}),
        _tg({"timeout": 30}),  # the default interval, 30
        _tg({"interval": 5}, protocol="HTTPS"),  # the default timeout, 5
        _tg({"interval": 20, "timeout": 30}, targetType="lambda", protocol=None),
    ],
)
def test_an_alb_target_group_whose_interval_is_not_above_its_timeout_is_refused(group: RenderedResource) -> None:
    found = [f for f in _findings(aws_values.check, group) if "interval" in f.message]
    assert len(found) == 1, found
    assert "Health check interval must be greater than the timeout" in found[0].message


@pytest.mark.parametrize(
    "group",
    [
        _tg({"interval": 15, "timeout": 10}),
        _tg(None),
        _tg({"interval": 6}),
        _tg({"interval": 10, "timeout": 10}, protocol="TCP"),  # an NLB target group: not judged
        _tg({"interval": 10, "enabled": False, "timeout": 10}),
    ],
)
def test_its_correct_twins_pass(group: RenderedResource) -> None:
    assert not [f for f in _findings(aws_values.check, group) if "interval" in f.message]


def _ingress(annotations: dict[str, str], service_annotations: dict[str, str] | None = None) -> list[RenderedResource]:
    manifest = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "planted-web", "namespace": "planted", "annotations": annotations},
        "spec": {
            "ingressClassName": "alb",
            "rules": [
                {
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": "planted-web", "port": {"number": 80}}},
                            }
                        ]
                    }
                }
            ],
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "planted-web", "namespace": "planted", "annotations": service_annotations or {}},
        "spec": {"ports": [{"port": 80, "targetPort": 8080}], "selector": {"app": "planted-web"}},
    }
    return [
        planted(STACK, "kubernetes:networking.k8s.io/v1:Ingress", "planted-web", manifest, region=REGION),
        planted(STACK, "kubernetes:core/v1:Service", "planted-web-svc", service, region=REGION),
    ]


A = "alb.ingress.kubernetes.io/"


@pytest.mark.parametrize(
    "objects",
    [
        _ingress({f"{A}healthcheck-interval-seconds": "10", f"{A}healthcheck-timeout-seconds": "10"}),
        _ingress({f"{A}healthcheck-timeout-seconds": "20"}),  # the controller's interval, 15
        _ingress({}, {f"{A}healthcheck-interval-seconds": "5"}),  # on the Service, the controller's timeout 5
    ],
)
def test_an_alb_ingress_whose_interval_is_not_above_its_timeout_gets_no_target_group(
    objects: list[RenderedResource],
) -> None:
    found = [f for f in _findings(controller_values.check, *objects) if "greater than the timeout" in f.message]
    assert len(found) == 1, found


@pytest.mark.parametrize(
    "objects",
    [
        _ingress({f"{A}healthcheck-interval-seconds": "10"}),
        _ingress({}),
        _ingress({f"{A}healthcheck-interval-seconds": "5"}, {f"{A}healthcheck-interval-seconds": "30"}),
    ],
)
def test_its_correct_ingress_twins_pass(objects: list[RenderedResource]) -> None:
    assert not [f for f in _findings(controller_values.check, *objects) if "greater than the timeout" in f.message]


# --- Lambda environment variables ---------------------------------------------------------------------------------
FUNCTION = "aws:lambda/function:Function"


def _function(variables: dict[str, str]) -> RenderedResource:
    return _aws(
        FUNCTION,
        "planted-fn",
        {
            "runtime": "python3.12",
            "handler": "main.handler",
            "role": "arn:aws:iam::1:role/r",
            "environment": {"variables": variables},
        },
    )


@pytest.mark.parametrize(
    ("variables", "said"),
    [
        ({"MODEL.NAME": "x"}, "does not match"),
        ({"1ST_BUCKET": "x"}, "does not match"),
        ({"AWS_REGION": "eu-west-1"}, "reserved"),
        ({"A_" + str(i): "v" * 300 for i in range(14)}, "4 KB"),
    ],
)
def test_a_lambda_environment_lambda_refuses_is_found(variables: dict[str, str], said: str) -> None:
    found = [f for f in _findings(aws_values.check, _function(variables)) if "environment variable" in f.message]
    assert len(found) == 1 and said in found[0].message, found


@pytest.mark.parametrize(
    "variables",
    [
        {"MODEL_NAME": "x", "b2": "y"},
        {"AWS_LAMBDA_EXEC_WRAPPER": "/opt/w"},
        {"A_" + str(i): "v" * 250 for i in range(14)},
    ],
)
def test_its_correct_environment_twins_pass(variables: dict[str, str]) -> None:
    assert not [f for f in _findings(aws_values.check, _function(variables)) if "environment variable" in f.message]


# --- S3 key filters with a leading slash, principal sources -------------------------------------------------------
NOTIFICATION = "aws:s3/bucketNotification:BucketNotification"
EVENT_RULE = "aws:cloudwatch/eventRule:EventRule"


@pytest.mark.parametrize(
    ("destination", "prefix", "found"),
    [
        ("topics", "/exports/", True),
        ("lambdaFunctions", "/", True),
        ("queues", "/checkpoints/run-1/", True),
        ("topics", "exports/", False),
        ("queues", "checkpoints/", False),
    ],
)
def test_a_notification_prefix_with_a_leading_slash_matches_no_key(destination: str, prefix: str, found: bool) -> None:
    notification = _aws(
        NOTIFICATION,
        "planted-notification",
        {"bucket": "b", destination: [{"events": ["s3:ObjectCreated:*"], "filterPrefix": prefix}]},
    )
    hits = [f for f in _findings(events_emitted.check, notification) if "leading '/'" in f.fix]
    assert bool(hits) is found, hits


def _rule(pattern: dict[str, Any]) -> RenderedResource:
    return _aws(EVENT_RULE, "planted-rule", {"eventPattern": json.dumps(pattern)})


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        ({"source": ["sqs.amazonaws.com"]}, "'aws.sqs'"),
        ({"source": ["ec2.amazonaws.com"], "detail-type": ["EC2 Instance State-change Notification"]}, "'aws.ec2'"),
        ({"$or": [{"source": ["aws.ecr"]}, {"source": ["events.amazonaws.com"]}]}, "'aws.events'"),
        ({"source": ["aws.s3"], "detail": {"object": {"key": [{"prefix": "/models/"}]}}}, "'models/'"),
    ],
)
def test_a_rule_that_matches_no_event_is_found(pattern: dict[str, Any], said: str) -> None:
    found = [f for f in _findings(events_emitted.check, _rule(pattern)) if said in f.message + f.fix]
    assert len(found) == 1, found


@pytest.mark.parametrize(
    "pattern",
    [
        {"source": ["aws.s3"], "detail": {"object": {"key": [{"prefix": "models/"}]}}},
        {"source": ["aws.sqs"]},
        {"source": ["com.acme.registry"]},
    ],
)
def test_its_correct_rule_twins_pass(pattern: dict[str, Any]) -> None:
    assert not [
        f for f in _findings(events_emitted.check, _rule(pattern)) if "principal" in f.message or "'/'" in f.message
    ]


# --- security groups without vpcId --------------------------------------------------------------------------------
VPC = "aws:ec2/vpc:Vpc"
SUBNET = "aws:ec2/subnet:Subnet"
GROUP = "aws:ec2/securityGroup:SecurityGroup"


def _network(group_in_vpc: bool) -> list[RenderedResource]:
    vpc = _aws(VPC, "planted-vpc", {"cidrBlock": "10.9.0.0/16"})
    subnets = [
        _aws(SUBNET, f"planted-subnet-{i}", {"vpcId": physical_id(VPC, "planted-vpc"), "cidrBlock": f"10.9.{i}.0/24"})
        for i in range(2)
    ]
    inputs: dict[str, Any] = {"description": "planted"}
    if group_in_vpc:
        inputs["vpcId"] = physical_id(VPC, "planted-vpc")
    return [vpc, *subnets, _aws(GROUP, "planted-sg", inputs)]


SG = physical_id(GROUP, "planted-sg")
SUBNETS = [physical_id(SUBNET, "planted-subnet-0"), physical_id(SUBNET, "planted-subnet-1")]


def _users() -> list[list[RenderedResource]]:
    return [
        [
            _aws(
                "aws:elasticache/subnetGroup:SubnetGroup",
                "planted-cache-subnets",
                {"name": "planted-cache", "subnetIds": SUBNETS},
            ),
            _aws(
                "aws:elasticache/cluster:Cluster",
                "planted-cache",
                {"engine": "redis", "subnetGroupName": "planted-cache", "securityGroupIds": [SG]},
            ),
        ],
        [_aws(FUNCTION, "planted-vpc-fn", {"vpcConfig": {"subnetIds": SUBNETS, "securityGroupIds": [SG]}})],
        [
            _aws(
                "aws:ec2/vpcEndpoint:VpcEndpoint",
                "planted-endpoint",
                {"vpcId": physical_id(VPC, "planted-vpc"), "vpcEndpointType": "Interface", "securityGroupIds": [SG]},
            ),
        ],
    ]


@pytest.mark.parametrize("user", range(3))
def test_a_security_group_without_vpc_id_used_in_the_programs_vpc_is_refused(user: int) -> None:
    found = [f for f in _findings(aws_values.check, *_network(False), *_users()[user]) if "has no vpcId" in f.message]
    assert len(found) == 1, found


@pytest.mark.parametrize("user", range(3))
def test_its_correct_vpc_twins_pass(user: int) -> None:
    assert not [f for f in _findings(aws_values.check, *_network(True), *_users()[user]) if "vpcId" in f.message]
