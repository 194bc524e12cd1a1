"""The rules set 35's observability, S3 CORS and AWS Backup misses led to (written after its blind run, so not held
out), planted in the shipped dev render beside correct twins: an alarm window shorter than a daily S3 storage
metric's interval (alarm-metric-exists), dashboard bodies PutDashboard refuses (dashboard-body-valid), S3 CORS origins
no browser Origin equals (s3-cors-origin-matches) and a backup role without the backup actions
(backup-role-can-back-up). The planted defects use other metrics, values, widgets and resource types than the
held-out cases' (NumberOfObjects over 12 hours, a text widget without markdown, a width of 30, an origin with a path,
an ARN-selected DynamoDB table)."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import alarm_metrics, backup_selection, dashboard_body, s3_cors_origins
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)
ACCOUNT = "123456789012"


def _aws(type_token: str, name: str, inputs: dict[str, Any], **kw: Any) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION, **kw)


# --- alarm-metric-exists: coarse publishing intervals ----------------------------------------------------------


def _alarm(metric: str, period: float, periods: float, storage: str = "AllStorageTypes") -> RenderedResource:
    return _aws(
        alarm_metrics.ALARM,
        "planted-alarm",
        {
            "namespace": "AWS/S3",
            "metricName": metric,
            "dimensions": {"BucketName": "some-bucket", "StorageType": storage},
            "statistic": "Average",
            "period": period,
            "evaluationPeriods": periods,
            "threshold": 1e6,
            "comparisonOperator": "GreaterThanThreshold",
        },
    )


@pytest.mark.parametrize(
    ("metric", "period", "periods", "storage"),
    [
        ("NumberOfObjects", 43200.0, 1.0, "AllStorageTypes"),
        ("BucketSizeBytes", 3600, 6, "StandardIAStorage"),
        ("NumberOfObjects", 60, 5, "AllStorageTypes"),
    ],
)
def test_an_alarm_window_shorter_than_a_daily_metric_is_flagged(
    metric: str, period: float, periods: float, storage: str
) -> None:
    found = _findings(alarm_metrics.check, _alarm(metric, period, periods, storage))
    assert len(found) == 1, found
    assert "once a day" in found[0].message and "86400" in found[0].fix


@pytest.mark.parametrize(
    ("metric", "period", "periods"), [("NumberOfObjects", 86400, 1), ("BucketSizeBytes", 43200, 2)]
)
def test_an_alarm_window_of_a_day_or_more_is_clean(metric: str, period: float, periods: float) -> None:
    assert _findings(alarm_metrics.check, _alarm(metric, period, periods)) == []


def test_a_request_metric_at_five_minutes_is_clean() -> None:
    alarm = _alarm("4xxErrors", 300, 1)
    alarm.inputs["dimensions"] = {"BucketName": "some-bucket", "FilterId": "all"}
    assert _findings(alarm_metrics.check, alarm) == []


# --- dashboard-body-valid ---------------------------------------------------------------------------------------


def _dashboard(*widgets: dict[str, Any]) -> RenderedResource:
    return _aws(
        dashboard_body.DASHBOARD,
        "planted-dashboard",
        {"dashboardName": "planted", "dashboardBody": json.dumps({"widgets": list(widgets)})},
    )


def _metric_widget(**props: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"metrics": [["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "q"]]}
    return {"type": "metric", "x": 0, "y": 0, "width": 12, "height": 6, "properties": {**base, **props}}


@pytest.mark.parametrize(
    ("widget", "said"),
    [
        (_metric_widget(title="queue depth", stat="Maximum"), "without properties.region"),
        ({"type": "text", "x": 0, "y": 6, "width": 24, "height": 2, "properties": {"background": "solid"}}, "markdown"),
        ({**_metric_widget(region="eu-west-1"), "width": 30}, "width is 30"),
        ({"type": "metric", "width": 6, "height": 6, "properties": {"region": "us-east-1"}}, "neither"),
    ],
)
def test_a_dashboard_body_putdashboard_refuses_is_flagged(widget: dict[str, Any], said: str) -> None:
    found = _findings(dashboard_body.check, _dashboard(widget))
    assert len(found) == 1, found
    assert said in found[0].message and "PutDashboard refuses it" in found[0].message


def test_a_valid_dashboard_body_is_clean() -> None:
    text = {"type": "text", "x": 0, "y": 6, "width": 24, "height": 2, "properties": {"markdown": "# queue"}}
    alarm_only = {"type": "metric", "properties": {"region": "eu-west-1", "annotations": {"alarms": ["arn:a"]}}}
    assert _findings(dashboard_body.check, _dashboard(_metric_widget(region="eu-west-1"), text, alarm_only)) == []


def test_a_dashboard_body_known_only_at_apply_time_is_not_judged() -> None:
    dashboard = _dashboard()
    dashboard.inputs["dashboardBody"] = None
    assert _findings(dashboard_body.check, dashboard) == []


# --- s3-cors-origin-matches -------------------------------------------------------------------------------------


def _cors(typ: str, *origins: str) -> RenderedResource:
    rule = {"allowedMethods": ["GET", "PUT"], "allowedOrigins": list(origins), "allowedHeaders": ["*"]}
    return _aws(typ, "planted-cors", {"bucket": "some-bucket", "corsRules": [rule]})


@pytest.mark.parametrize(
    ("typ", "origin", "fixed"),
    [
        (
            "aws:s3/bucketCorsConfigurationV2:BucketCorsConfigurationV2",
            "https://app.example.org/upload",
            "https://app.example.org",
        ),
        ("aws:s3/bucket:Bucket", "http://localhost:3000/", "http://localhost:3000"),
        ("aws:s3/bucketCorsConfiguration:BucketCorsConfiguration", "https://*.example.org/", "https://*.example.org"),
    ],
)
def test_a_cors_origin_with_a_path_or_trailing_slash_is_flagged(typ: str, origin: str, fixed: str) -> None:
    found = _findings(s3_cors_origins.check, _cors(typ, "https://ok.example.org", origin))
    assert len(found) == 1, found
    assert origin in found[0].message and repr(fixed) in found[0].fix


@pytest.mark.parametrize(
    "origin", ["*", "https://app.example.org", "http://localhost:3000", "https://*.example.org", "https://*"]
)
def test_a_cors_origin_as_browsers_send_it_is_clean(origin: str) -> None:
    assert (
        _findings(s3_cors_origins.check, _cors("aws:s3/bucketCorsConfigurationV2:BucketCorsConfigurationV2", origin))
        == []
    )


# --- backup-role-can-back-up ------------------------------------------------------------------------------------


def _backup(policy_arns: list[str], inline: dict[str, Any] | None = None, **selection: Any) -> list[RenderedResource]:
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "backup.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
    role_inputs: dict[str, Any] = {
        "name": "planted-backup-role",
        "assumeRolePolicy": json.dumps(trust),
        "managedPolicyArns": policy_arns,
    }
    if inline is not None:
        role_inputs["inlinePolicies"] = [{"name": "backup", "policy": json.dumps(inline)}]
    role = _aws("aws:iam/role:Role", "planted-backup-role", role_inputs)
    chosen = _aws(
        backup_selection.SELECTION,
        "planted-selection",
        {
            "name": "planted-selection",
            "planId": "plan-id",
            "iamRoleArn": f"arn:aws:iam::{ACCOUNT}:role/planted-backup-role",
            **selection,
        },
    )
    return [role, chosen]


RESTORES = "arn:aws:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForRestores"
BACKUP = "arn:aws:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForBackup"
TABLE = f"arn:aws:dynamodb:eu-west-1:{ACCOUNT}:table/orders"


@pytest.mark.parametrize(
    ("arns", "inline", "selection", "missing"),
    [
        ([RESTORES], None, {"resources": [TABLE]}, "dynamodb:CreateBackup"),
        (
            [],
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "ec2:CreateSnapshot", "Resource": "*"}],
            },
            {"resources": ["*"], "selectionTags": [{"type": "STRINGEQUALS", "key": "backup", "value": "daily"}]},
            "tag:GetResources",
        ),
        ([RESTORES], None, {"resources": [f"arn:aws:rds:eu-west-1:{ACCOUNT}:db:orders"]}, "rds:CreateDBSnapshot"),
    ],
)
def test_a_backup_role_without_the_backup_actions_is_flagged(
    arns: list[str], inline: dict[str, Any] | None, selection: dict[str, Any], missing: str
) -> None:
    found = _findings(backup_selection.check_role, *_backup(arns, inline, **selection))
    assert len(found) == 1, found
    assert missing in found[0].message and "AWSBackupServiceRolePolicyForBackup" in found[0].fix


@pytest.mark.parametrize(
    ("arns", "selection"),
    [
        ([BACKUP, RESTORES], {"resources": [TABLE]}),
        (
            [BACKUP],
            {"resources": ["*"], "selectionTags": [{"type": "STRINGEQUALS", "key": "backup", "value": "daily"}]},
        ),
        ([RESTORES, "arn:aws:iam::123456789012:policy/made-elsewhere"], {"resources": [TABLE]}),  # unknown: not judged
    ],
)
def test_a_backup_role_that_can_back_up_or_is_unknown_is_clean(arns: list[str], selection: dict[str, Any]) -> None:
    assert _findings(backup_selection.check_role, *_backup(arns, **selection)) == []
