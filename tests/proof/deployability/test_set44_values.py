"""The value checks set 44's AWS misses led to (written after its blind run, so not held out), planted in the shipped
dev render beside correct twins: metric filter dimensions on a pattern that has no fields, an enforced Athena
workgroup without a result location, Cost and Usage Reports through a provider outside us-east-1 or with artifact
combinations the provider refuses (aws-api-values), and a report bucket whose policy does not admit
billingreports.amazonaws.com (service-admitted). The planted defects differ from the held-out cases: regex and
quoted-phrase patterns and a bare term on other log groups, a workgroup with an empty result configuration, one with
no enforce flag (the default) and one with a KMS setting only; reports through us-west-2, ap-southeast-1 and
eu-west-1, ATHENA beside REDSHIFT, ATHENA on textORcsv, QUICKSIGHT on Parquet, the default versioning; a bucket
policy granting only PutObject, one granting the actions to another service, and a bucket with no policy."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import aws_values, service_access
from tokenplane.proof.render import RenderedResource

STACK = "dev"
_findings = partial(planted_findings, stack=STACK)
FILTER = "aws:cloudwatch/logMetricFilter:LogMetricFilter"
WORKGROUP = "aws:athena/workgroup:Workgroup"
REPORT = "aws:cur/reportDefinition:ReportDefinition"
BUCKET = "aws:s3/bucketV2:BucketV2"
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"


def _aws(type_token: str, name: str, inputs: dict[str, Any], region: str = "us-east-1", **kw: Any) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=region, **kw)


# --- metric filter dimensions need a JSON or space-delimited pattern -------------------------------------------------


def _filter(pattern: str, dimensions: dict[str, str] | None) -> RenderedResource:
    transformation: dict[str, Any] = {"name": "Hits", "namespace": "Acme/App", "value": "1"}
    if dimensions is not None:
        transformation["dimensions"] = dimensions
    return _aws(
        FILTER,
        "planted-filter",
        {"logGroupName": "/acme/app", "pattern": pattern, "metricTransformation": transformation},
    )


@pytest.mark.parametrize(
    "pattern",
    ["%timeout|deadline%", '"connection reset"', "ERROR", "ERROR -healthcheck"],
)
def test_dimensions_on_a_pattern_without_fields_are_refused(pattern: str) -> None:
    found = _findings(aws_values.check, _filter(pattern, {"Service": "$.service"}))
    assert [f.rule for f in found] == ["aws-api-values"], found
    assert "does not support dimensions" in found[0].message


@pytest.mark.parametrize(
    ("pattern", "dimensions"),
    [
        ('{ $.level = "error" }', {"Service": "$.service"}),
        ("[ip, user, status = 5*, size]", {"Status": "$status"}),
        ("ERROR", None),  # a term pattern without dimensions
        ("", {"Service": "$.service"}),  # an empty pattern is not judged
    ],
)
def test_dimensions_on_json_or_delimited_patterns_pass(pattern: str, dimensions: dict[str, str] | None) -> None:
    assert _findings(aws_values.check, _filter(pattern, dimensions)) == []


# --- an enforced Athena workgroup names a result location ---------------------------------------------------------


@pytest.mark.parametrize(
    "configuration",
    [
        {"enforceWorkgroupConfiguration": True, "resultConfiguration": {}},
        {"bytesScannedCutoffPerQuery": 10_485_760.0},  # enforce defaults to true
        {"enforceWorkgroupConfiguration": True, "publishCloudwatchMetricsEnabled": False},
    ],
)
def test_enforced_workgroup_without_a_result_location_is_flagged(configuration: dict[str, Any]) -> None:
    found = _findings(aws_values.check, _aws(WORKGROUP, "planted-wg", {"name": "w", "configuration": configuration}))
    assert [f.rule for f in found] == ["aws-api-values"], found
    assert "No output location provided" in found[0].message


@pytest.mark.parametrize(
    "inputs",
    [
        {
            "configuration": {
                "enforceWorkgroupConfiguration": True,
                "resultConfiguration": {"outputLocation": "s3://acme-athena/results/"},
            }
        },
        {"configuration": {"enforceWorkgroupConfiguration": False}},
        {"configuration": {"managedQueryResultsConfiguration": {"enabled": True}}},
        {"configuration": {"executionRole": "arn:aws:iam::123456789012:role/spark"}},
        {},  # no configuration block: not judged
    ],
)
def test_workgroups_with_a_location_or_not_enforced_pass(inputs: dict[str, Any]) -> None:
    assert _findings(aws_values.check, _aws(WORKGROUP, "planted-wg", {"name": "w", **inputs})) == []


# --- Cost and Usage Reports --------------------------------------------------------------------------------------


def _report(region: str = "us-east-1", **overrides: Any) -> RenderedResource:
    inputs: dict[str, Any] = {
        "reportName": "acme-cur",
        "timeUnit": "DAILY",
        "format": "Parquet",
        "compression": "Parquet",
        "additionalSchemaElements": ["RESOURCES"],
        "additionalArtifacts": ["ATHENA"],
        "reportVersioning": "OVERWRITE_REPORT",
        "s3Bucket": "acme-cur",
        "s3Prefix": "cur",
        "s3Region": "eu-west-1",
    }
    inputs.update(overrides)
    return _aws(REPORT, "planted-report", {k: v for k, v in inputs.items() if v is not None}, region=region)


@pytest.mark.parametrize("region", ["us-west-2", "ap-southeast-1", "eu-west-1"])
def test_a_report_outside_us_east_1_is_refused(region: str) -> None:
    found = _findings(aws_values.check, _report(region))
    assert [f.rule for f in found] == ["aws-api-values"], found
    assert "only the us-east-1 endpoint" in found[0].message


@pytest.mark.parametrize(
    ("overrides", "said"),
    [
        ({"additionalArtifacts": ["ATHENA", "REDSHIFT"]}, "no other artifact"),
        ({"reportVersioning": None}, "CREATE_NEW_REPORT"),  # the provider's default
        ({"format": "textORcsv", "compression": "GZIP"}, "format textORcsv"),
        ({"additionalArtifacts": ["QUICKSIGHT"]}, "need textORcsv"),
        ({"additionalArtifacts": [], "compression": "GZIP"}, "Parquet goes only with Parquet"),
    ],
)
def test_report_combinations_the_provider_refuses(overrides: dict[str, Any], said: str) -> None:
    found = _findings(aws_values.check, _report(**overrides))
    assert found and all(f.rule == "aws-api-values" for f in found), found
    assert any(said in f.message for f in found), found


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {
            "additionalArtifacts": ["REDSHIFT", "QUICKSIGHT"],
            "format": "textORcsv",
            "compression": "GZIP",
            "reportVersioning": "CREATE_NEW_REPORT",
        },
        {"additionalArtifacts": None, "format": "textORcsv", "compression": "ZIP"},
    ],
)
def test_accepted_reports_in_us_east_1_pass(overrides: dict[str, Any]) -> None:
    assert _findings(aws_values.check, _report(**overrides)) == []


def _bucket_and_report(*statements: dict[str, Any], policy: bool = True) -> list[RenderedResource]:
    bucket = _aws(BUCKET, "planted-cur-bucket", {"bucket": "acme-cur"})
    report = _aws(REPORT, "planted-report", dict(_report().inputs), property_dependencies={"s3Bucket": [bucket.urn]})
    out = [bucket, report]
    if policy:
        out.append(
            _aws(
                BUCKET_POLICY,
                "planted-cur-policy",
                {"bucket": "acme-cur", "policy": json.dumps({"Version": "2012-10-17", "Statement": list(statements)})},
                property_dependencies={"bucket": [bucket.urn]},
            )
        )
    return out


def _allow(principal: str, *actions: str) -> dict[str, Any]:
    return {
        "Effect": "Allow",
        "Principal": {"Service": principal},
        "Action": list(actions),
        "Resource": ["arn:aws:s3:::acme-cur", "arn:aws:s3:::acme-cur/*"],
    }


BILLING = "billingreports.amazonaws.com"


@pytest.mark.parametrize(
    "resources",
    [
        _bucket_and_report(_allow(BILLING, "s3:PutObject")),
        _bucket_and_report(
            _allow("delivery.logs.amazonaws.com", "s3:GetBucketAcl", "s3:GetBucketPolicy", "s3:PutObject")
        ),
        _bucket_and_report(policy=False),
    ],
)
def test_a_report_bucket_that_does_not_admit_billing_reports_is_refused(resources: list[RenderedResource]) -> None:
    found = _findings(service_access.check, *resources)
    assert [f.rule for f in found] == ["service-admitted"], found
    assert "Failed to verify customer bucket permission" in found[0].message


@pytest.mark.parametrize(
    "resources",
    [
        _bucket_and_report(_allow(BILLING, "s3:GetBucketAcl", "s3:GetBucketPolicy"), _allow(BILLING, "s3:PutObject")),
        _bucket_and_report(_allow(BILLING, "s3:Get*", "s3:PutObject")),
    ],
)
def test_a_report_bucket_admitting_billing_reports_passes(resources: list[RenderedResource]) -> None:
    assert _findings(service_access.check, *resources) == []
