"""The AWS value rules set 20's misses led to (written after its blind run, so not held out), each planted in dev's
render beside its correct twin: a Route 53 health check's interval other than 10 or 30 s, a Lambda SQS mapping's
batch above 10 without a batching window (and the other batch limits), an alarm's SNS action in another region
(aws-api-values), and a DynamoDB TTL on the time an item was written (ttl-expires)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import alarm_actions, aws_values, ttl_expires
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.render import RenderedResource

DEV_REGION, DEV_CLOUD = "local", "eu-north-1"  # stacks/dev.yaml's one region


def _planted(*extra: RenderedResource) -> deploy.Graph:
    return deploy.Graph(spec("dev"), mutated(rendered("dev"), lambda r: r, extra=list(extra)))


def _about(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if "planted" in f.urn]


def _in_dev(typ: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return dataclasses.replace(_aws(typ, name, inputs), region=DEV_REGION)


# aws-api-values: a Route 53 health check's interval and threshold -----------------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "refused"),
    [
        ({"requestInterval": 20}, "RequestInterval 20 s"),
        ({"requestInterval": 60}, "RequestInterval 60 s"),
        ({"requestInterval": 30}, None),
        ({"requestInterval": 10}, None),
        ({}, None),
        ({"requestInterval": 30, "failureThreshold": 11}, "FailureThreshold 11 checks"),
        ({"requestInterval": 10, "failureThreshold": 3}, None),
    ],
)
def test_a_health_check_requests_every_10_or_30_seconds(inputs: dict[str, Any], refused: str | None) -> None:
    check = _aws(aws_values.HEALTH_CHECK, "planted-health", {"type": "HTTPS", "port": 443, **inputs})
    said = _about(list(aws_values.check(_planted(check))))
    assert bool(said) == bool(refused), said
    for finding in said:
        assert "planted-health" in finding.message and str(refused) in finding.message
        assert finding.rule == aws_values.RULE and ("10 or 30 s" in finding.fix or "1-10" in finding.fix)


# aws-api-values: a Lambda event source mapping's batch size ----------------------------------------------------------

QUEUE = "arn:aws:sqs:eu-north-1:123456789012:usage-events"


@pytest.mark.parametrize(
    ("source", "inputs", "refused"),
    [
        (QUEUE, {"batchSize": 100}, "maximumBatchingWindowInSeconds unset"),
        (QUEUE, {"batchSize": 100, "maximumBatchingWindowInSeconds": 0}, "maximumBatchingWindowInSeconds 0"),
        (QUEUE, {"batchSize": 100, "maximumBatchingWindowInSeconds": 10}, None),
        (QUEUE, {"batchSize": 10}, None),
        (QUEUE, {}, None),
        (QUEUE, {"batchSize": 20_000, "maximumBatchingWindowInSeconds": 5}, "BatchSize 1-10,000"),
        (QUEUE, {"batchSize": 50, "maximumBatchingWindowInSeconds": 301}, "MaximumBatchingWindowInSeconds 301 s"),
        (QUEUE + ".fifo", {"batchSize": 20, "maximumBatchingWindowInSeconds": 5}, "FIFO queue"),
        (QUEUE + ".fifo", {"batchSize": 10}, None),
        ("arn:aws:kinesis:eu-north-1:123456789012:stream/usage", {"batchSize": 500}, None),
        ("arn:aws:kinesis:eu-north-1:123456789012:stream/usage", {"batchSize": 20_000}, "BatchSize 1-10,000"),
    ],
)
def test_a_mapping_batch_size_is_within_its_source_limits(
    source: str, inputs: dict[str, Any], refused: str | None
) -> None:
    mapping = _aws(aws_values.MAPPING, "planted-mapping", {"eventSourceArn": source, "functionName": "f", **inputs})
    said = _about(list(aws_values.check(_planted(mapping))))
    assert bool(said) == bool(refused), said
    for finding in said:
        assert "planted-mapping" in finding.message and str(refused) in finding.message
        assert "InvalidParameterValueException" in finding.message and finding.fix


# aws-api-values: an alarm's SNS actions in its own region -------------------------------------------------------------


@pytest.mark.parametrize("alarm_type", alarm_actions.ALARMS)
@pytest.mark.parametrize(
    ("field", "topic_region", "refused"),
    [
        ("alarmActions", "us-east-1", True),
        ("okActions", "us-west-2", True),
        ("insufficientDataActions", "us-east-1", True),
        ("alarmActions", DEV_CLOUD, False),
        ("okActions", DEV_CLOUD, False),
    ],
)
def test_an_alarm_publishes_only_to_topics_of_its_region(
    alarm_type: str, field: str, topic_region: str, refused: bool
) -> None:
    topic = f"arn:aws:sns:{topic_region}:123456789012:oncall"
    alarm = _in_dev(alarm_type, "planted-alarm", {field: [topic]})
    said = _about(list(aws_values.check(_planted(alarm))))
    assert bool(said) == refused, said
    for finding in said:
        assert "planted-alarm" in finding.message and field in finding.message and topic_region in finding.message
        assert f"Only {DEV_CLOUD} is supported" in finding.message and DEV_CLOUD in finding.fix


def test_an_alarm_action_that_is_not_a_topic_is_not_judged() -> None:
    actions = ["arn:aws:automate:us-east-1:ec2:stop", "arn:aws:lambda:us-east-1:123456789012:function:f"]
    alarm = _in_dev(aws_values.METRIC_ALARM, "planted-alarm", {"alarmActions": actions})
    assert not _about(list(aws_values.check(_planted(alarm))))


# ttl-expires: a DynamoDB TTL on the time an item was written -----------------------------------------------------------


@pytest.mark.parametrize(
    ("attribute", "enabled", "flagged"),
    [
        ("created_at", True, True),
        ("createdAt", True, True),
        ("creation_time", True, True),
        ("inserted_at", True, True),
        ("timestamp", True, True),
        ("ts", True, True),
        ("created_at", False, False),
        ("expires_at", True, False),
        ("expiresAt", True, False),
        ("expiry", True, False),
        ("ttl", True, False),
        ("expire_at", True, False),
        ("valid_until", True, False),
        ("deadline", True, False),
        ("created_at_plus_ttl", True, False),
    ],
)
def test_a_ttl_attribute_is_an_expiry_time_not_a_creation_time(attribute: str, enabled: bool, flagged: bool) -> None:
    table = _aws(
        ttl_expires.TABLE,
        "planted-ledger",
        {"hashKey": "request_id", "ttl": {"attributeName": attribute, "enabled": enabled}},
    )
    said = _about(list(ttl_expires.check(_planted(table))))
    assert bool(said) == flagged, said
    for finding in said:
        assert finding.rule == ttl_expires.RULE and "planted-ledger" in finding.message
        assert repr(attribute) in finding.message and "ttl.attribute_name" in finding.fix
