"""The rules set 36's VPC flow log misses led to (written after its blind run, so not held out), planted in the shipped
dev render beside correct twins: CreateFlowLogs' aggregation interval and destination ARN (aws-api-values), the
delivery role's logs:CreateLogStream / logs:PutLogEvents on its group (flow-log-delivery-role) and its trust of
vpc-flow-logs.amazonaws.com (service-role-trust). The planted defects are of other values and resources than the
held-out cases' (intervals 120, 1 and 300.0; a log group's name, a group ARN for an S3 destination, a bucket ARN for a
Firehose one; a role without PutLogEvents, one scoped to another group, one through the deprecated logGroupName; a
role trusting ec2.amazonaws.com)."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import aws_values, flow_log_delivery, service_roles
from tokenplane.proof.render import RenderedResource, mock_outputs

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)
FLOW_LOG = "aws:ec2/flowLog:FlowLog"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
GROUP_ARN = "arn:aws:logs:eu-central-1:123456789012:log-group:planted-flow-group"
OTHER_GROUP_ARN = "arn:aws:logs:eu-central-1:123456789012:log-group:planted-other-group"
BUCKET_ARN = "arn:aws:s3:::planted-flow-bucket"
STREAM_ARN = "arn:aws:firehose:eu-central-1:123456789012:deliverystream/planted-flow-stream"
ROLE_ARN = "arn:aws:iam::123456789012:role/planted-flow-role"


def _aws(type_token: str, name: str, inputs: dict[str, Any], **kw: Any) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION, **kw)


def _flow_log(name: str = "planted-flow-log", **inputs: Any) -> RenderedResource:
    return _aws(FLOW_LOG, name, {"vpcId": "vpc-0123", "trafficType": "ALL", **inputs})


def _values(*extra: RenderedResource) -> list[str]:
    return [f.message for f in _findings(aws_values.check, *extra) if f.urn.endswith("planted-flow-log")]


# --- aws-api-values: CreateFlowLogs' values ---------------------------------------------------------------------


@pytest.mark.parametrize("interval", [120, 1, 300.0])
def test_an_aggregation_interval_other_than_60_or_600_is_refused(interval: float) -> None:
    found = _values(_flow_log(logDestinationType="s3", logDestination=BUCKET_ARN, maxAggregationInterval=interval))
    assert len(found) == 1, found
    assert f"maxAggregationInterval {interval:g}" in found[0] and "[60 600]" in found[0]


@pytest.mark.parametrize("interval", [60, 600, 60.0, 600.0, None])
def test_an_aggregation_interval_of_60_or_600_or_the_default_is_not_flagged(interval: float | None) -> None:
    inputs: dict[str, Any] = {"logDestinationType": "s3", "logDestination": BUCKET_ARN}
    if interval is not None:
        inputs["maxAggregationInterval"] = interval
    assert _values(_flow_log(**inputs)) == []


def test_a_log_groups_name_as_the_destination_is_refused_and_named_by_its_output() -> None:
    group = _aws(LOG_GROUP, "planted-flow-group", {"retentionInDays": 7})
    name = mock_outputs(LOG_GROUP, group.name, group.inputs, "eu-central-1")[1]["name"]
    flow_log = _aws(
        FLOW_LOG,
        "planted-flow-log",
        {"vpcId": "vpc-0123", "trafficType": "ALL", "logDestination": name},
        property_dependencies={"logDestination": [group.urn]},
    )
    found = _values(group, flow_log)
    assert len(found) == 1, found
    assert "invalid ARN" in found[0] and "LogGroup planted-flow-group's name output" in found[0]
    assert "cloud-watch-logs" in found[0]


@pytest.mark.parametrize(
    ("kind", "destination", "needs"),
    [
        ("s3", GROUP_ARN, "an S3 bucket"),
        ("kinesis-data-firehose", BUCKET_ARN, "a Data Firehose delivery stream"),
        ("cloud-watch-logs", STREAM_ARN, "a CloudWatch Logs log group"),
        ("s3", "planted-flow-bucket/flows", "an S3 bucket"),
    ],
)
def test_a_destination_that_is_not_the_arn_of_its_types_resource_is_refused(
    kind: str, destination: str, needs: str
) -> None:
    found = _values(_flow_log(logDestinationType=kind, logDestination=destination))
    assert len(found) == 1, found
    assert needs in found[0]


@pytest.mark.parametrize(
    ("kind", "destination"),
    [
        ("s3", BUCKET_ARN),
        ("s3", f"{BUCKET_ARN}/vpc/flows"),
        (None, GROUP_ARN),
        ("cloud-watch-logs", f"{GROUP_ARN}:*"),
        ("kinesis-data-firehose", STREAM_ARN),
        ("s3", ["not", "known"]),
    ],
)
def test_the_arn_of_the_destination_types_resource_is_not_flagged(kind: str | None, destination: Any) -> None:
    inputs: dict[str, Any] = {"logDestination": destination}
    if kind is not None:
        inputs["logDestinationType"] = kind
    assert _values(_flow_log(**inputs)) == []


# --- flow-log-delivery-role -------------------------------------------------------------------------------------


def _role(trusted: str = "vpc-flow-logs.amazonaws.com") -> RenderedResource:
    trust = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": trusted}, "Action": "sts:AssumeRole"}],
    }
    return _aws(ROLE, "planted-flow-role", {"name": "planted-flow-role", "assumeRolePolicy": json.dumps(trust)})


def _policy(*statements: dict[str, Any]) -> RenderedResource:
    document = {"Version": "2012-10-17", "Statement": list(statements)}
    return _aws(ROLE_POLICY, "planted-flow-role-policy", {"role": "planted-flow-role", "policy": json.dumps(document)})


def _delivery(*extra: RenderedResource) -> list[str]:
    return [f.message for f in _findings(flow_log_delivery.check, *extra)]


def _to_group(**inputs: Any) -> RenderedResource:
    return _flow_log(logDestination=GROUP_ARN, iamRoleArn=ROLE_ARN, **inputs)


@pytest.mark.parametrize(
    ("statements", "missing"),
    [
        (
            [{"Effect": "Allow", "Action": "logs:CreateLogStream", "Resource": f"{GROUP_ARN}:*"}],
            "logs:PutLogEvents",
        ),
        (
            [
                {
                    "Effect": "Allow",
                    "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                    "Resource": [OTHER_GROUP_ARN, f"{OTHER_GROUP_ARN}:*"],
                }
            ],
            "logs:CreateLogStream, logs:PutLogEvents",
        ),
        (
            [
                {"Effect": "Allow", "Action": "logs:PutLogEvents", "Resource": "*"},
                {"Effect": "Allow", "Action": "logs:Describe*", "Resource": "*"},
            ],
            "logs:CreateLogStream",
        ),
    ],
)
def test_a_delivery_role_without_create_log_stream_or_put_log_events_on_the_group_is_flagged(
    statements: list[dict[str, Any]], missing: str
) -> None:
    found = _delivery(_role(), _policy(*statements), _to_group())
    assert len(found) == 1, found
    assert f"do not allow {missing} on that group" in found[0] and "DeliverLogsStatus FAILED" in found[0]


def test_a_delivery_role_is_read_through_the_deprecated_log_group_name_too() -> None:
    group = _aws(LOG_GROUP, "planted-flow-group", {"retentionInDays": 7})
    flow_log = _aws(
        FLOW_LOG,
        "planted-flow-log",
        {"vpcId": "vpc-0123", "trafficType": "ALL", "logGroupName": "planted-flow-group", "iamRoleArn": ROLE_ARN},
        property_dependencies={"logGroupName": [group.urn]},
    )
    policy = _policy({"Effect": "Allow", "Action": "logs:PutLogEvents", "Resource": "*"})
    found = _delivery(group, _role(), policy, flow_log)
    assert len(found) == 1, found
    assert "logs:CreateLogStream" in found[0]


@pytest.mark.parametrize(
    "statements",
    [
        [{"Effect": "Allow", "Action": ["logs:CreateLogStream", "logs:PutLogEvents"], "Resource": f"{GROUP_ARN}:*"}],
        [{"Effect": "Allow", "Action": "logs:*", "Resource": "*"}],
        [
            {
                "Effect": "Allow",
                "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                "Resource": "arn:aws:logs:*:*:log-group:planted-*",
            }
        ],
    ],
)
def test_a_delivery_role_allowed_both_actions_on_the_group_is_not_flagged(statements: list[dict[str, Any]]) -> None:
    assert _delivery(_role(), _policy(*statements), _to_group()) == []


def test_an_s3_or_firehose_flow_log_takes_no_delivery_role() -> None:
    policy = _policy({"Effect": "Allow", "Action": "s3:PutObject", "Resource": "*"})
    s3 = _flow_log(logDestinationType="s3", logDestination=BUCKET_ARN, iamRoleArn=ROLE_ARN)
    firehose = _flow_log(
        "planted-flow-log-2", logDestinationType="kinesis-data-firehose", logDestination=STREAM_ARN, iamRoleArn=ROLE_ARN
    )
    assert _delivery(_role(), policy, s3, firehose) == []


def test_a_role_with_a_policy_not_in_view_is_not_judged() -> None:
    policy = _aws(ROLE_POLICY, "planted-flow-role-policy", {"role": "planted-flow-role", "policy": None})
    assert _delivery(_role(), policy, _to_group()) == []


# --- service-role-trust -------------------------------------------------------------------------------------------


def _trust(role: RenderedResource) -> list[str]:
    policy = _policy({"Effect": "Allow", "Action": "logs:*", "Resource": "*"})
    return [f.message for f in _findings(service_roles.check, role, policy, _to_group())]


def test_a_flow_log_role_trusting_another_service_is_flagged() -> None:
    found = _trust(_role("ec2.amazonaws.com"))
    assert len(found) == 1, found
    assert "vpc-flow-logs.amazonaws.com" in found[0] and "trusts ec2.amazonaws.com" in found[0]


def test_a_flow_log_role_trusting_vpc_flow_logs_is_not_flagged() -> None:
    assert _trust(_role()) == []
