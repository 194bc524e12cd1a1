"""The AWS value and event rules set 19's misses led to (written after its blind run, so not held out), each planted in
dev's render beside its correct twin: a secret's recovery window outside 0 and 7-30 days (aws-api-values), an
EventBridge rule's detail-type its AWS source never sends, and an S3 notification's key filter written as a glob
(events-emitted)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import aws_values, events_emitted
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.render import RenderedResource


def _planted(*extra: RenderedResource) -> deploy.Graph:
    return deploy.Graph(spec("dev"), mutated(rendered("dev"), lambda r: r, extra=list(extra)))


def _about(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if "planted" in f.urn]


# aws-api-values: a secret's recovery window ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("days", "refused"), [(3, True), (0, False), (7, False), (30, False), (31, True), (None, False)]
)
def test_a_secret_recovery_window_is_zero_or_seven_to_thirty_days(days: int | None, refused: bool) -> None:
    inputs: dict[str, Any] = {"name": "acme/tenants/beta/api-key"}
    if days is not None:
        inputs["recoveryWindowInDays"] = days
    secret = _aws(aws_values.SECRET, "planted-secret", inputs)
    said = _about(list(aws_values.check(_planted(secret))))
    assert bool(said) == refused, said
    for finding in said:
        assert "planted-secret" in finding.message and f"RecoveryWindowInDays {days} days" in finding.message
        assert "0 or 7-30 days" in finding.message and "recoveryWindowInDays" in finding.fix


# events-emitted: a detail-type the source never sends -------------------------------------------------------------------


def _rule(pattern: dict[str, Any]) -> RenderedResource:
    return _aws(events_emitted.EVENT_RULE, "planted-rule", {"eventPattern": json.dumps(pattern)})


WRONG_SPOT = "EC2 Spot Interruption Warning"
SPOT = "EC2 Spot Instance Interruption Warning"


@pytest.mark.parametrize(
    ("pattern", "closest"),
    [
        ({"source": ["aws.ec2"], "detail-type": [WRONG_SPOT]}, SPOT),
        ({"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification", WRONG_SPOT]}, SPOT),
        ({"source": ["aws.s3"], "detail-type": ["Object Create"]}, "Object Created"),
        ({"source": ["aws.health"], "detail-type": ["AWS Health event"]}, "AWS Health Event"),
        ({"$or": [{"source": ["aws.ecr"], "detail-type": ["ECR Image Scans"]}]}, "ECR Image Scan"),
        ({"source": ["aws.ec2"], "detail-type": [SPOT]}, None),
        ({"source": ["aws.ec2"], "detail-type": ["AWS API Call via CloudTrail"]}, None),
        ({"source": ["aws.ec2", "aws.health"], "detail-type": [SPOT, "AWS Health Event"]}, None),
        ({"source": ["aws.ec2", "aws.ebs-unknown"], "detail-type": [WRONG_SPOT]}, None),  # a source not in the table
        ({"source": [{"prefix": "aws."}], "detail-type": [WRONG_SPOT]}, None),  # a matcher, not a source
        ({"source": ["aws.ec2"], "detail-type": [{"prefix": "EC2 Spot"}]}, None),  # a matcher, not a literal
        ({"source": ["acme.orders"], "detail-type": ["Order Placed"]}, None),  # a custom source
    ],
)
def test_a_detail_type_is_one_its_source_sends(pattern: dict[str, Any], closest: str | None) -> None:
    said = _about(list(events_emitted.check(_planted(_rule(pattern)))))
    assert bool(said) == bool(closest), said
    for finding in said:
        assert finding.rule == events_emitted.RULE and "planted-rule" in finding.message
        assert "detail-type" in finding.message and f"closest first: {closest!r}" in finding.message
        assert repr(closest) in finding.fix


def test_every_table_entry_names_its_sources() -> None:
    sources, cloudtrail = events_emitted.emitted()
    assert {"aws.ec2", "aws.s3", "aws.health", "aws.autoscaling", "aws.ecr"} <= set(sources)
    assert "AWS API Call via CloudTrail" in cloudtrail and all(sources.values())


# events-emitted: an S3 key filter written as a glob ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("destination", "filters", "fix"),
    [
        ("queues", {"filterPrefix": "models/*", "filterSuffix": ".safetensors"}, "filter_prefix='models/'"),
        ("topics", {"filterSuffix": "*.json"}, "filter_suffix='.json'"),
        ("lambdaFunctions", {"filterPrefix": "models/*/config.json"}, "filter the rest"),
        ("queues", {"filterPrefix": "*"}, "drop filter_prefix"),
        ("queues", {"filterPrefix": "models/", "filterSuffix": ".safetensors"}, None),
        ("queues", {"filterPrefix": "models/?"}, None),
        ("queues", {}, None),
    ],
)
def test_an_s3_key_filter_is_literal(destination: str, filters: dict[str, str], fix: str | None) -> None:
    config = {"events": ["s3:ObjectCreated:*"], "queueArn": "arn:aws:sqs:eu-central-1:123456789012:q", **filters}
    notification = _aws(events_emitted.NOTIFICATION, "planted-notification", {"bucket": "b", destination: [config]})
    said = _about(list(events_emitted.check(_planted(notification))))
    assert bool(said) == bool(fix), said
    for finding in said:
        assert "planted-notification" in finding.message and f"{destination}[0].filter" in finding.message
        assert "not globs" in finding.message and fix and fix in finding.fix
