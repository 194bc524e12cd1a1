"""The rules set 13's misses led to (written after its blind run, so not held out), each planted in a shipped render
beside its correct twin: an AWS service refused by the destination it sends to or by the key it must use
(service-admitted), rollingUpdate beside a Recreate strategy (api-validation), a dimensioned metric filter with a
default value and a CloudFront-scoped web ACL outside us-east-1 (aws-api-values)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tests.proof.deployability.test_set3_invariants import deployment, plus, rule
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import aws_values, service_access
from tokenplane.proof.render import RenderedResource

QUEUE, TOPIC, KEY = "aws:sqs/queue:Queue", "aws:sns/topic:Topic", "aws:kms/key:Key"
ROOT = {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:root"}, "Action": "kms:*", "Resource": "*"}


def _wired(typ: str, name: str, inputs: dict[str, Any], **refs: RenderedResource) -> RenderedResource:
    """A planted AWS resource whose inputs ``refs`` are outputs of other planted resources (as Pulumi records them)."""
    resource = _aws(typ, name, inputs)
    return dataclasses.replace(resource, property_dependencies={k: [r.urn] for k, r in refs.items()})


def _policy(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def _allow(service: str, *actions: str) -> dict[str, Any]:
    return {"Effect": "Allow", "Principal": {"Service": service}, "Action": list(actions), "Resource": "*"}


def _admitted(*planted: RenderedResource) -> list[str]:
    result = mutated(rendered("dev"), lambda r: r, extra=list(planted))
    return [f.message for f in service_access.check(deploy.Graph(spec("dev"), result))]


def _event_to_queue(policy: str | None, **queue: Any) -> list[str]:
    q = _aws(QUEUE, "planted-queue", {"name": "planted-queue", **queue})
    rule_ = _aws("aws:cloudwatch/eventRule:EventRule", "planted-rule", {"eventPattern": '{"source": ["aws.health"]}'})
    target = _wired("aws:cloudwatch/eventTarget:EventTarget", "planted-target", {"arn": "x"}, arn=q, rule=rule_)
    extra = [q, rule_, target]
    if policy is not None:
        extra.append(_wired("aws:sqs/queuePolicy:QueuePolicy", "planted-qp", {"policy": policy}, queueUrl=q))
    return _admitted(*extra)


@pytest.mark.parametrize(
    ("policy", "refused"),
    [
        (None, True),  # no queue policy: EventBridge is refused
        (_policy(_allow("s3.amazonaws.com", "sqs:SendMessage")), True),  # a policy for another service
        (_policy(_allow("events.amazonaws.com", "sqs:ReceiveMessage")), True),  # the wrong action
        (_policy(_allow("events.amazonaws.com", "sqs:SendMessage")), False),
        (_policy(_allow("events.amazonaws.com", "sqs:*")), False),
    ],
)
def test_an_event_rule_sending_to_a_queue_needs_the_queues_policy(policy: str | None, refused: bool) -> None:
    said = _event_to_queue(policy, sqsManagedSseEnabled=True)
    assert bool(said) == refused and all("events.amazonaws.com" in m and "sqs:SendMessage" in m for m in said), said


def test_an_event_rule_invoking_a_function_needs_its_permission() -> None:
    function = _aws("aws:lambda/function:Function", "planted-fn", {"runtime": "python3.12", "handler": "h.h"})
    target = _wired("aws:cloudwatch/eventTarget:EventTarget", "planted-target", {"arn": "x"}, arn=function)
    assert any("lambda:InvokeFunction" in m for m in _admitted(function, target))
    permission = _wired(
        "aws:lambda/permission:Permission",
        "planted-permission",
        {"principal": "events.amazonaws.com", "action": "lambda:InvokeFunction"},
        function=function,
    )
    assert _admitted(function, target, permission) == []


def _alarm_to_topic(key_id: str | None, key_policy: str | None = None) -> list[str]:
    planted: list[RenderedResource] = []
    inputs: dict[str, Any] = {"name": "planted-topic"}
    refs: dict[str, RenderedResource] = {}
    if key_id == "cmk":
        key = _aws(KEY, "planted-key", {"policy": key_policy} if key_policy else {})
        planted.append(key)
        inputs["kmsMasterKeyId"], refs["kmsMasterKeyId"] = "planted-key-id", key
    elif key_id:
        inputs["kmsMasterKeyId"] = key_id
    topic = _wired(TOPIC, "planted-topic", inputs, **refs)
    alarm = _wired(
        "aws:cloudwatch/metricAlarm:MetricAlarm",
        "planted-alarm",
        {"namespace": "AWS/SQS", "metricName": "NumberOfMessagesSent", "period": 300.0},
        alarmActions=topic,
        okActions=topic,
    )
    return _admitted(*planted, topic, alarm)


@pytest.mark.parametrize(
    ("key_id", "key_policy", "refused"),
    [
        ("alias/aws/sns", None, "AWS managed key"),
        ("cmk", None, "no policy of its own"),  # KMS's default policy admits no service
        ("cmk", _policy(ROOT), "does not allow it"),
        ("cmk", _policy(ROOT, _allow("cloudwatch.amazonaws.com", "kms:GenerateDataKey*", "kms:Decrypt")), None),
        (None, None, None),  # an unencrypted topic: CloudWatch publishes under its default policy
    ],
)
def test_an_alarm_publishing_to_an_encrypted_topic_needs_a_key_that_admits_cloudwatch(
    key_id: str | None, key_policy: str | None, refused: str | None
) -> None:
    said = _alarm_to_topic(key_id, key_policy)
    assert len(said) == (1 if refused else 0) and all(refused and refused in m for m in said), said


def test_an_event_rule_to_a_queue_under_the_aws_managed_sqs_key_is_refused() -> None:
    allowed = _policy(_allow("events.amazonaws.com", "sqs:SendMessage"))
    said = _event_to_queue(allowed, kmsMasterKeyId="alias/aws/sqs")
    assert len(said) == 1 and "alias/aws/sqs" in said[0], said


@pytest.mark.parametrize(
    ("key_policy", "refused"),
    [
        (None, True),
        (_policy(ROOT), True),
        (
            _policy(
                ROOT, _allow("logs.us-east-1.amazonaws.com", "kms:Encrypt*", "kms:Decrypt*", "kms:GenerateDataKey*")
            ),
            False,
        ),
        (_policy(ROOT, _allow("logs.amazonaws.com", "kms:*")), False),
    ],
)
def test_a_log_group_on_a_key_that_leaves_out_cloudwatch_logs_is_refused(key_policy: str | None, refused: bool) -> None:
    key = _aws(KEY, "planted-key", {"policy": key_policy} if key_policy else {})
    group = _wired(
        "aws:cloudwatch/logGroup:LogGroup", "planted-logs", {"kmsKeyId": "k", "retentionInDays": 30.0}, kmsKeyId=key
    )
    said = _admitted(key, group)
    assert bool(said) == refused and all("AccessDeniedException" in m for m in said), said


def test_a_bucket_notification_to_a_topic_without_its_policy_is_refused() -> None:
    topic = _aws(TOPIC, "planted-topic", {"name": "planted-topic"})
    bucket = _aws("aws:s3/bucket:Bucket", "planted-bucket", {})
    notification = _wired(
        "aws:s3/bucketNotification:BucketNotification",
        "planted-notes",
        {"topics": [{"events": ["s3:ObjectCreated:*"]}]},
        topics=topic,
        bucket=bucket,
    )
    assert any("s3.amazonaws.com" in m for m in _admitted(topic, bucket, notification))
    inline = dataclasses.replace(
        topic, inputs={**topic.inputs, "policy": _policy(_allow("s3.amazonaws.com", "SNS:Publish"))}
    )
    assert _admitted(inline, bucket, notification) == []


# api-validation: rollingUpdate beside a strategy that does not roll -------------------------------------------------


def _pod() -> dict[str, Any]:
    return {"containers": [{"name": "app", "image": "nginx:1.27"}]}


@pytest.mark.parametrize(
    ("kind", "strategy", "refused"),
    [
        ("Deployment", {"type": "Recreate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}, "Forbidden"),
        ("Deployment", {"type": "Recreate"}, None),
        ("Deployment", {"type": "BlueGreen"}, "Unsupported value"),
        ("StatefulSet", {"type": "OnDelete", "rollingUpdate": {"partition": 0}}, "Forbidden"),
        ("StatefulSet", {"type": "OnDelete"}, None),
        ("StatefulSet", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}, None),
    ],
)
def test_a_rolling_update_beside_a_strategy_that_does_not_roll_is_rejected(
    kind: str, strategy: dict[str, Any], refused: str | None
) -> None:
    workload = deployment("planted-strategy", _pod())
    workload["kind"] = kind
    workload["spec"]["strategy" if kind == "Deployment" else "updateStrategy"] = strategy
    if kind == "StatefulSet":
        workload["spec"]["serviceName"] = "planted-strategy"
    said = [
        f.message
        for f in rule(plus(workload), "api-validation")
        if "planted-strategy" in f.message and "strategy" in f.message.lower()
    ]
    assert bool(said) == bool(refused) and all(refused and refused in m for m in said), said


# aws-api-values: metric filters, and web ACLs scoped to CloudFront ------------------------------------------------------


def _values(resource: RenderedResource) -> list[str]:
    result = mutated(rendered("dev"), lambda r: r, extra=[resource])
    return [f.message for f in aws_values.check(deploy.Graph(spec("dev"), result)) if resource.name in f.message]


@pytest.mark.parametrize(
    ("transformation", "refused"),
    [
        (
            {"name": "m", "namespace": "n", "value": "1", "defaultValue": "0", "dimensions": {"Port": "$port"}},
            "default value",
        ),
        ({"name": "m", "namespace": "n", "value": "1", "dimensions": {"Port": "$port"}}, None),
        ({"name": "m", "namespace": "n", "value": "1", "defaultValue": "0"}, None),
        (
            {"name": "m", "namespace": "n", "value": "1", "dimensions": {f"D{i}": f"$d{i}" for i in range(4)}},
            "at most 3",
        ),
    ],
)
def test_a_metric_filters_dimensions_refuse_a_default_value_and_a_fourth(
    transformation: dict[str, Any], refused: str | None
) -> None:
    planted = _aws(
        "aws:cloudwatch/logMetricFilter:LogMetricFilter",
        "planted-filter",
        {"logGroupName": "g", "pattern": "[x]", "metricTransformation": transformation},
    )
    said = _values(planted)
    assert bool(said) == bool(refused) and all(refused and refused in m for m in said), said


@pytest.mark.parametrize(("scope", "refused"), [("CLOUDFRONT", True), ("REGIONAL", False)])
def test_a_cloudfront_scoped_web_acl_outside_us_east_1_is_refused(scope: str, refused: bool) -> None:
    acl = dataclasses.replace(_aws("aws:wafv2/webAcl:WebAcl", "planted-acl", {"scope": scope}), region="local")
    said = _values(acl)
    assert bool(said) == refused and all("us-east-1" in m for m in said), said
