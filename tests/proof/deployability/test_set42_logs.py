"""The rules set 42's S3 server access log and CloudTrail misses led to (written after its blind run, so not held out),
each planted in the shipped dev render beside its correct twin. The planted defects are of other resources and
values than the held-out cases' (a tp.secure_bucket log target, a us-east-1 log bucket for an eu-central-1 registry,
a policy conditioned on the log bucket's own ARN; a TLS-only trail bucket policy, a write grant without the trail's
prefix, a log group's bare ``arn``): a bucket's own logging across Regions, a source named by a literal, DSSE-KMS
and a bucket's inline SSE-KMS, another account or another bucket in the conditions; a trail bucket with no policy,
a grant for another prefix, an ACL check granted to another service, another trail's ARN in the condition, a bare
log group ARN in another Region."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import cloudtrail_delivery, s3_acls
from tokenplane.proof.render import ACCOUNT_ID, RenderedResource, physical_id

BUCKET = "aws:s3/bucket:Bucket"
BUCKET_V2 = "aws:s3/bucketV2:BucketV2"
LOGGING = "aws:s3/bucketLogging:BucketLogging"
LOGGING_V2 = "aws:s3/bucketLoggingV2:BucketLoggingV2"
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
SSE = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
TRAIL = "aws:cloudtrail/trail:Trail"
STACK = "dev"
_findings = partial(planted_findings, stack=STACK)

LOGS = physical_id(BUCKET, "planted-logs")
LOGS_ARN = f"arn:aws:s3:::{LOGS}"
SOURCE = physical_id(BUCKET, "planted-source")
SOURCE_ARN = f"arn:aws:s3:::{SOURCE}"


def _res(type_token: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region="local")


def _doc(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


# --- s3-log-delivery: Region, encryption, conditions -----------------------------------------------------------------


def _logs_policy(condition: dict[str, Any] | None = None, prefix: str = "src/") -> RenderedResource:
    statement: dict[str, Any] = {
        "Sid": "ServerAccessLogs",
        "Effect": "Allow",
        "Principal": {"Service": "logging.s3.amazonaws.com"},
        "Action": "s3:PutObject",
        "Resource": f"{LOGS_ARN}/{prefix}*",
    }
    if condition is not None:
        statement["Condition"] = condition
    return _res(BUCKET_POLICY, "planted-logs-policy", {"bucket": LOGS, "policy": _doc(statement)})


def _logs(region: str | None = None, **inputs: Any) -> RenderedResource:
    return _res(BUCKET, "planted-logs", {**({"region": region} if region else {}), **inputs})


def _source(region: str | None = None, **inputs: Any) -> RenderedResource:
    return _res(BUCKET, "planted-source", {**({"region": region} if region else {}), **inputs})


def _logging(type_token: str = LOGGING, **inputs: Any) -> RenderedResource:
    return _res(
        type_token, "planted-logging", {"bucket": SOURCE, "targetBucket": LOGS, "targetPrefix": "src/", **inputs}
    )


@pytest.mark.parametrize(
    "planted_resources",
    [
        [
            _source("us-west-2", logging={"targetBucket": LOGS, "targetPrefix": "src/"}),
            _logs("eu-west-1"),
            _logs_policy(),
        ],
        [_source("ap-southeast-1"), _logs("us-east-2"), _logging(LOGGING_V2), _logs_policy()],
        [_logs("eu-west-3"), _logging(bucket="someone-elses-bucket", region="eu-north-1"), _logs_policy()],
    ],
    ids=["bucket-logging-input", "logging-v2-source-in-another-region", "literal-source-by-logging-region"],
)
def test_access_logs_into_a_bucket_in_another_region_are_refused(planted_resources: list[RenderedResource]) -> None:
    found = _findings(s3_acls.check_log_delivery, *planted_resources)
    assert [f.rule for f in found] == [s3_acls.LOG_DELIVERY], found
    assert "CrossLocationLoggingProhibitted" in found[0].message


def test_access_logs_into_a_bucket_of_the_same_region_pass() -> None:
    assert not _findings(
        s3_acls.check_log_delivery, _source("ap-southeast-1"), _logs("ap-southeast-1"), _logging(), _logs_policy()
    )


def _sse(algorithm: str, key: str | None = None) -> RenderedResource:
    default = {"sseAlgorithm": algorithm, **({"kmsMasterKeyId": key} if key else {})}
    return _res(SSE, "planted-logs-sse", {"bucket": LOGS, "rules": [{"applyServerSideEncryptionByDefault": default}]})


@pytest.mark.parametrize(
    "planted_resources",
    [
        [_source(), _logs(), _logging(), _logs_policy(), _sse("aws:kms", "arn:aws:kms:eu-west-1:123456789012:key/abc")],
        [_source(), _logs(), _logging(LOGGING_V2), _logs_policy(), _sse("aws:kms:dsse")],
        [
            _source(),
            _logs(
                serverSideEncryptionConfiguration={
                    "rule": {"applyServerSideEncryptionByDefault": {"sseAlgorithm": "aws:kms"}}
                }
            ),
            _logging(),
            _res(
                "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
                "planted-own",
                {"bucket": LOGS, "rule": {"objectOwnership": "ObjectWriter"}},
            ),
        ],
    ],
    ids=["kms-key", "dsse-kms", "inline-sse-kms-with-acls-on"],
)
def test_access_logs_into_an_sse_kms_bucket_are_never_delivered(planted_resources: list[RenderedResource]) -> None:
    found = _findings(s3_acls.check_log_delivery, *planted_resources)
    assert [f.rule for f in found] == [s3_acls.LOG_DELIVERY], found
    assert "SSE-KMS" in found[0].message and "SSE-S3" in found[0].fix


def test_access_logs_into_an_sse_s3_bucket_pass() -> None:
    assert not _findings(s3_acls.check_log_delivery, _source(), _logs(), _logging(), _logs_policy(), _sse("AES256"))


@pytest.mark.parametrize(
    "condition",
    [
        {"StringEquals": {"aws:SourceAccount": "210987654321"}},
        {"ArnEquals": {"aws:SourceArn": f"arn:aws:s3:::{physical_id(BUCKET, 'planted-other')}"}},
        {"ArnLike": {"aws:SourceArn": "arn:aws:s3:::access-logs-*"}, "StringEquals": {"aws:SourceAccount": ACCOUNT_ID}},
    ],
    ids=["another-account", "another-bucket", "pattern-missing-the-source"],
)
def test_a_logging_grant_whose_conditions_the_service_does_not_meet_admits_nothing(condition: dict[str, Any]) -> None:
    found = _findings(s3_acls.check_log_delivery, _source(), _logs(), _logging(), _logs_policy(condition))
    assert [f.rule for f in found] == [s3_acls.LOG_DELIVERY], found
    assert "aws:SourceArn" in found[0].message and SOURCE_ARN in found[0].message


@pytest.mark.parametrize(
    "condition",
    [
        {"ArnLike": {"aws:SourceArn": SOURCE_ARN}, "StringEquals": {"aws:SourceAccount": ACCOUNT_ID}},
        {"ArnLike": {"aws:SourceArn": "arn:aws:s3:::planted-*"}},
        {"StringEquals": {"aws:SourceOrgID": "o-abc123"}},
    ],
    ids=["documented", "pattern-covering-the-source", "unjudged-key"],
)
def test_a_logging_grant_for_the_source_bucket_passes(condition: dict[str, Any]) -> None:
    assert not _findings(s3_acls.check_log_delivery, _source(), _logs(), _logging(), _logs_policy(condition))


# --- cloudtrail-delivery -----------------------------------------------------------------------------------------------

TRAIL_BUCKET = physical_id(BUCKET, "planted-trail-bucket")
TRAIL_ARN = f"arn:aws:s3:::{TRAIL_BUCKET}"


def _trail_bucket() -> RenderedResource:
    return _res(BUCKET, "planted-trail-bucket", {"region": "eu-west-1"})


def _trail(prefix: str | None = None, group: str | None = None, name: str = "org-audit") -> RenderedResource:
    inputs: dict[str, Any] = {"name": name, "s3BucketName": TRAIL_BUCKET, "region": "eu-west-1"}
    if prefix is not None:
        inputs["s3KeyPrefix"] = prefix
    if group is not None:
        inputs["cloudWatchLogsGroupArn"] = group
        inputs["cloudWatchLogsRoleArn"] = f"arn:aws:iam::{ACCOUNT_ID}:role/trail-logs"
    return _res(TRAIL, "planted-trail", inputs)


def _trail_policy(
    write: str,
    *,
    acl_service: str = "cloudtrail.amazonaws.com",
    source: str = f"arn:aws:cloudtrail:eu-west-1:{ACCOUNT_ID}:trail/org-audit",
) -> RenderedResource:
    statements = [
        {
            "Sid": "AWSCloudTrailAclCheck",
            "Effect": "Allow",
            "Principal": {"Service": acl_service},
            "Action": "s3:GetBucketAcl",
            "Resource": TRAIL_ARN,
        },
        {
            "Sid": "AWSCloudTrailWrite",
            "Effect": "Allow",
            "Principal": {"Service": "cloudtrail.amazonaws.com"},
            "Action": "s3:PutObject",
            "Resource": write,
            "Condition": {"StringEquals": {"s3:x-amz-acl": "bucket-owner-full-control", "aws:SourceArn": source}},
        },
    ]
    return _res(BUCKET_POLICY, "planted-trail-policy", {"bucket": TRAIL_BUCKET, "policy": _doc(*statements)})


@pytest.mark.parametrize(
    "planted_resources",
    [
        [_trail_bucket(), _trail()],
        [_trail_bucket(), _trail(), _trail_policy(f"{TRAIL_ARN}/logs/AWSLogs/{ACCOUNT_ID}/*")],
        [_trail_bucket(), _trail("cloudtrail"), _trail_policy(f"{TRAIL_ARN}/*", acl_service="config.amazonaws.com")],
        [
            _trail_bucket(),
            _trail(),
            _trail_policy(
                f"{TRAIL_ARN}/AWSLogs/{ACCOUNT_ID}/*", source=f"arn:aws:cloudtrail:eu-west-1:{ACCOUNT_ID}:trail/other"
            ),
        ],
    ],
    ids=["no-policy", "grant-for-another-prefix", "acl-check-for-another-service", "another-trail-in-source-arn"],
)
def test_a_trail_whose_bucket_policy_does_not_admit_cloudtrail_is_refused(
    planted_resources: list[RenderedResource],
) -> None:
    found = _findings(cloudtrail_delivery.check, *planted_resources)
    assert [f.rule for f in found] == [cloudtrail_delivery.RULE], found
    assert "InsufficientS3BucketPolicyException" in found[0].message


@pytest.mark.parametrize(
    "planted_resources",
    [
        [_trail_bucket(), _trail(), _trail_policy(f"{TRAIL_ARN}/AWSLogs/{ACCOUNT_ID}/*")],
        [_trail_bucket(), _trail("a/b"), _trail_policy(f"{TRAIL_ARN}/*")],
        [_trail(), _trail_policy(f"{TRAIL_ARN}/nothing/*")],  # the bucket is not the program's: not judged
    ],
    ids=["documented-without-prefix", "bucket-wide-grant", "bucket-outside-the-program"],
)
def test_a_trail_whose_bucket_policy_admits_cloudtrail_passes(planted_resources: list[RenderedResource]) -> None:
    assert not _findings(cloudtrail_delivery.check, *planted_resources)


@pytest.mark.parametrize(
    "group",
    [
        f"arn:aws:logs:us-west-2:{ACCOUNT_ID}:log-group:/aws/cloudtrail/org",
        f"arn:aws:logs:eu-west-1:{ACCOUNT_ID}:log-group:trail-events",
        f"arn:aws-us-gov:logs:us-gov-west-1:{ACCOUNT_ID}:log-group:audit.events",
    ],
)
def test_a_trail_log_group_arn_without_the_stream_wildcard_is_refused(group: str) -> None:
    policy = _trail_policy(f"{TRAIL_ARN}/AWSLogs/{ACCOUNT_ID}/*")
    found = _findings(cloudtrail_delivery.check, _trail_bucket(), _trail(group=group), policy)
    assert [f.rule for f in found] == [cloudtrail_delivery.RULE], found
    assert "InvalidCloudWatchLogsLogGroupArnException" in found[0].message


def test_a_trail_log_group_arn_with_the_stream_wildcard_passes() -> None:
    policy = _trail_policy(f"{TRAIL_ARN}/AWSLogs/{ACCOUNT_ID}/*")
    group = f"arn:aws:logs:us-west-2:{ACCOUNT_ID}:log-group:/aws/cloudtrail/org:*"
    assert not _findings(cloudtrail_delivery.check, _trail_bucket(), _trail(group=group), policy)
