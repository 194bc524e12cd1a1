"""The rules set 19's AWS-service misses led to (written after its blind run, so not held out), each planted in a
shipped render beside its correct twin: a Lambda Permission naming its function by name, ARN or qualified ARN admits
the sender, a log subscription filter and an SNS subscription are senders that the destination must admit (and whose
key must admit them) (service-admitted), and a VPC-attached Lambda in subnets with no way to the AWS services its
role calls (function-egress)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import lambda_network, service_access, vpc_routes
from tokenplane.proof.render import RenderedResource, physical_id, render_program

FUNCTION, PERMISSION = "aws:lambda/function:Function", "aws:lambda/permission:Permission"
QUEUE, QUEUE_POLICY = "aws:sqs/queue:Queue", "aws:sqs/queuePolicy:QueuePolicy"
FILTER = "aws:cloudwatch/logSubscriptionFilter:LogSubscriptionFilter"
ROLE, ROLE_POLICY = "aws:iam/role:Role", "aws:iam/rolePolicy:RolePolicy"
FN_ARN = "arn:aws:lambda:us-east-1:123456789012:function:planted-fn"


def _wired(typ: str, name: str, inputs: dict[str, Any], after: tuple[str, ...] = (), **refs: Any) -> RenderedResource:
    """A planted resource whose inputs ``refs`` are outputs of other planted resources, waiting for ``after``."""
    resource = _aws(typ, name, inputs)
    deps = {k: [r.urn] for k, r in refs.items()}
    return dataclasses.replace(
        resource, property_dependencies=deps, dependencies=[*(u for v in deps.values() for u in v), *after]
    )


def _admitted(*planted: RenderedResource) -> list[str]:
    result = mutated(rendered("dev"), lambda r: r, extra=list(planted))
    return [f.message for f in service_access.check(deploy.Graph(spec("dev"), result))]


def _function() -> RenderedResource:
    return _aws(FUNCTION, "planted-fn", {"name": "planted-fn", "runtime": "python3.12", "handler": "h.h"})


def _event_target(function: RenderedResource) -> list[RenderedResource]:
    rule = _aws("aws:cloudwatch/eventRule:EventRule", "planted-rule", {"scheduleExpression": "rate(1 day)"})
    return [rule, _wired("aws:cloudwatch/eventTarget:EventTarget", "planted-target", {"arn": FN_ARN}, arn=function)]


@pytest.mark.parametrize(
    "function_input",
    ["planted-fn", FN_ARN, f"{FN_ARN}:live", None],  # name, ARN, qualified ARN, an output unknown at render
)
@pytest.mark.parametrize("source_arn", [None, "arn:aws:events:us-east-1:123456789012:rule/planted-rule"])
def test_a_permission_naming_the_function_by_name_or_arn_admits_eventbridge(
    function_input: str | None, source_arn: str | None
) -> None:
    function = _function()
    inputs = {"principal": "events.amazonaws.com", "action": "lambda:InvokeFunction"}
    if function_input is not None:
        inputs["function"] = function_input
    if source_arn is not None:
        inputs["sourceArn"] = source_arn
    permission = _aws(PERMISSION, "planted-permission", inputs)
    assert _admitted(function, *_event_target(function), permission) == []


def test_a_permission_on_another_function_or_for_another_service_does_not_admit_eventbridge() -> None:
    function = _function()
    other = _aws(PERMISSION, "p1", {"principal": "events.amazonaws.com", "function": "other-fn"})
    s3 = _aws(PERMISSION, "p2", {"principal": "s3.amazonaws.com", "function": "planted-fn"})
    said = _admitted(function, *_event_target(function), other, s3)
    assert len(said) == 1 and "events.amazonaws.com" in said[0] and "FailedInvocations" in said[0], said


def test_the_lambda_mock_gives_a_function_the_name_a_permission_names_it_by() -> None:
    import pulumi
    import pulumi_aws as aws

    def program() -> None:
        role = "arn:aws:iam::123456789012:role/r"
        fn = aws.lambda_.Function("fn", runtime="python3.12", handler="h.h", role=role, code=pulumi.AssetArchive({}))
        aws.lambda_.Permission("fn-from-events", function=fn.name, principal="events.amazonaws.com", action="x")

    result = render_program(program, regions={}, kubernetes_version=None)
    permission = next(r for r in result.resources if r.type == PERMISSION)
    function = next(r for r in result.resources if r.type == FUNCTION)
    assert permission.inputs.get("function") and permission.property_dependencies["function"] == [function.urn]


def _filter_to_function(principal: str | None, *, waits: bool = True) -> list[str]:
    function = _function()
    group = _aws("aws:cloudwatch/logGroup:LogGroup", "planted-group", {"name": "/planted"})
    planted = [function, group]
    after: tuple[str, ...] = ()
    if principal is not None:
        permission = _wired(PERMISSION, "planted-from-logs", {"principal": principal}, function=function)
        planted.append(permission)
        after = (permission.urn,) if waits else ()
    inputs = {"logGroup": "/planted", "filterPattern": "ERROR", "destinationArn": FN_ARN}
    planted.append(_wired(FILTER, "planted-filter", inputs, after, destinationArn=function, logGroup=group))
    return _admitted(*planted)


@pytest.mark.parametrize(
    ("principal", "waits", "said"),
    [
        (None, True, "pulumi up fails at planted-filter"),  # no Permission: PutSubscriptionFilter refuses
        ("events.amazonaws.com", True, "pulumi up fails at planted-filter"),  # a Permission for another service
        ("logs.amazonaws.com", False, "does not wait for planted-from-logs"),  # the first run races the Permission
        ("logs.amazonaws.com", True, None),
        ("logs.us-east-1.amazonaws.com", True, None),
    ],
)
def test_a_log_subscription_filter_to_a_function_needs_its_permission_first(
    principal: str | None, waits: bool, said: str | None
) -> None:
    found = _filter_to_function(principal, waits=waits)
    assert len(found) == (1 if said else 0) and all(said and said in m and "logs." in m for m in found), found


def test_a_log_subscription_filter_to_a_kinesis_stream_is_not_judged_here() -> None:
    stream = _aws("aws:kinesis/stream:Stream", "planted-stream", {"shardCount": 1})
    inputs = {"logGroup": "/planted", "filterPattern": "", "destinationArn": "arn:aws:kinesis:x", "roleArn": "r"}
    assert _admitted(stream, _wired(FILTER, "planted-filter", inputs, destinationArn=stream)) == []


SNS_SEND = {"Effect": "Allow", "Principal": {"Service": "sns.amazonaws.com"}, "Action": "sqs:SendMessage"}


def _topic_to_queue(queue_inputs: dict[str, Any], *, policy: bool = True) -> list[str]:
    topic = _aws("aws:sns/topic:Topic", "planted-topic", {})
    queue = _aws(QUEUE, "planted-queue", {"name": "planted-queue", **queue_inputs})
    planted = [topic, queue]
    if policy:
        document = json.dumps({"Version": "2012-10-17", "Statement": [{**SNS_SEND, "Resource": "*"}]})
        planted.append(_wired(QUEUE_POLICY, "planted-qp", {"policy": document}, queueUrl=queue))
    inputs = {"protocol": "sqs", "topic": "t", "endpoint": "arn:aws:sqs:us-east-1:123456789012:planted-queue"}
    sub = _wired("aws:sns/topicSubscription:TopicSubscription", "planted-sub", inputs, topic=topic, endpoint=queue)
    return _admitted(*planted, sub)


@pytest.mark.parametrize(
    ("queue", "policy", "said"),
    [
        ({"kmsMasterKeyId": "alias/aws/sqs"}, True, "alias/aws/sqs, an AWS managed key"),
        ({"sqsManagedSseEnabled": True}, True, None),  # SSE-SQS: no KMS key policy for SNS to pass
        ({"sqsManagedSseEnabled": True}, False, "does not allow it sqs:SendMessage"),
    ],
)
def test_an_sns_subscription_to_a_queue_needs_its_policy_and_a_key_sns_may_use(
    queue: dict[str, Any], policy: bool, said: str | None
) -> None:
    found = _topic_to_queue(queue, policy=policy)
    assert len(found) == (1 if said else 0) and all(said and said in m and "sns.amazonaws.com" in m for m in found), (
        found
    )


@pytest.mark.parametrize(("principal", "refused"), [(None, True), ("sns.amazonaws.com", False)])
def test_an_sns_subscription_to_a_function_needs_its_permission(principal: str | None, refused: bool) -> None:
    function, topic = _function(), _aws("aws:sns/topic:Topic", "planted-topic", {})
    planted = [function, topic]
    if principal:
        planted.append(_aws(PERMISSION, "planted-from-sns", {"principal": principal, "function": "planted-fn"}))
    inputs = {"protocol": "lambda", "topic": "t", "endpoint": FN_ARN}
    planted.append(_wired("aws:sns/topicSubscription:TopicSubscription", "planted-sub", inputs, endpoint=function))
    found = _admitted(*planted)
    assert bool(found) == refused and all("SNS fails every delivery" in m for m in found), found


def _subnets(kind: str) -> list[str]:
    graph = deploy.Graph(spec("dev"), rendered("dev"))
    subnets = graph.of_type(vpc_routes.SUBNET)
    return [physical_id(s.type, s.name) for s in subnets if vpc_routes.egress(graph, s).kind == kind]


def _function_in(kind: str, actions: list[str], *, s3_endpoint: bool = False) -> list[str]:
    role_id = physical_id(ROLE, "planted-role")
    role = _aws(ROLE, "planted-role", {"assumeRolePolicy": "{}"})
    document = json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}]}
    )
    inputs = {
        "runtime": "python3.12",
        "handler": "h.h",
        "role": f"arn:aws:iam::123456789012:role/{role_id.removesuffix('-id')}",
        "vpcConfig": {"subnetIds": _subnets(kind), "securityGroupIds": []},
    }
    planted = [
        role,
        _aws(ROLE_POLICY, "planted-rp", {"role": role_id, "policy": document}),
        _aws(FUNCTION, "fn", inputs),
    ]
    result = rendered("dev")
    if s3_endpoint:
        graph = deploy.Graph(spec("dev"), result)
        public = next(s for s in graph.of_type(vpc_routes.SUBNET) if vpc_routes.egress(graph, s).kind == "igw")
        table = vpc_routes.egress(graph, public).table
        vpc = vpc_routes.vpc_of(graph, public)
        assert table is not None and vpc is not None
        endpoint = {
            "vpcId": physical_id(vpc.type, vpc.name),
            "serviceName": "com.amazonaws.us-east-1.s3",
            "routeTableIds": [physical_id(table.type, table.name)],
        }
        planted.append(dataclasses.replace(_aws(vpc_routes.VPC_ENDPOINT, "planted-s3", endpoint), region=vpc.region))
    graph = deploy.Graph(spec("dev"), mutated(result, lambda r: r, extra=planted))
    return [f.message for f in lambda_network.check(graph)]


@pytest.mark.parametrize(
    ("kind", "actions", "s3_endpoint", "said"),
    [
        ("igw", ["s3:ListBucket"], False, "grants calls to s3, for which the VPC has no endpoint"),
        ("nat", ["s3:ListBucket"], False, None),  # private subnets: S3's public endpoint through the NAT gateway
        ("igw", ["s3:ListBucket"], True, None),  # a gateway endpoint on the public subnets' route table
        ("igw", ["logs:PutLogEvents", "sqs:ReceiveMessage"], False, None),  # Lambda's own calls: logs, the poller
        ("igw", ["s3:GetObject", "dynamodb:GetItem"], True, "grants calls to dynamodb"),
    ],
)
def test_a_vpc_lambda_in_public_subnets_reaches_only_services_with_an_endpoint(
    kind: str, actions: list[str], s3_endpoint: bool, said: str | None
) -> None:
    found = _function_in(kind, actions, s3_endpoint=s3_endpoint)
    assert len(found) == (1 if said else 0), found
    assert all(said and said in m and "vpcConfig.subnetIds" in m and "internet gateway" in m for m in found), found
