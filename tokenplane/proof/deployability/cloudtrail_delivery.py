"""A CloudTrail trail can deliver where it is told: its bucket's policy admits CloudTrail, its log group ARN is the
form CloudTrail validates.

``CreateTrail`` (and ``UpdateTrail``) check the destinations before the trail exists
(https://docs.aws.amazon.com/awscloudtrail/latest/APIReference/API_CreateTrail.html, Errors):

- the S3 bucket's policy must let the ``cloudtrail.amazonaws.com`` service principal ``s3:GetBucketAcl`` on the
  bucket and ``s3:PutObject`` on ``arn:aws:s3:::BUCKET/[PREFIX/]AWSLogs/ACCOUNT/*``, the trail's ``s3KeyPrefix``
  included ("Amazon S3 bucket policy for CloudTrail",
  https://docs.aws.amazon.com/awscloudtrail/latest/userguide/create-s3-bucket-policy-for-cloudtrail.html: CloudTrail
  writes with ``s3:x-amz-acl`` ``bucket-owner-full-control`` and ``aws:SourceArn`` the trail's ARN, which the
  documented statement conditions on). Otherwise the call fails with ``InsufficientS3BucketPolicyException:
  Incorrect S3 bucket policy is detected for bucket``;
- ``cloudWatchLogsGroupArn`` must carry the log-stream wildcard, ``arn:aws:logs:REGION:ACCOUNT:log-group:NAME:*``
  ("Sending events to CloudWatch Logs",
  https://docs.aws.amazon.com/awscloudtrail/latest/userguide/send-cloudtrail-events-to-cloudwatch-logs.html; the
  Pulumi/Terraform docs for ``aws.cloudtrail.Trail``: "CloudTrail requires the Log Stream wildcard"). A log group's
  ``arn`` output has no ``:*`` since Terraform provider 4.0 (hashicorp/terraform-provider-aws#14557), and CreateTrail
  fails with ``InvalidCloudWatchLogsLogGroupArnException``.

So, for a trail into a bucket the program creates, whose policies are all known at render time (a ``BucketPolicy``
on it or its own ``policy``), ``cloudtrail-delivery`` reports a policy with no Allow statement for CloudTrail's
service principal (or everyone) that covers each of the two requests, its String/Arn conditions evaluated against
what CloudTrail sends (``aws:SourceArn``, ``aws:SourceAccount``, ``s3:x-amz-acl``); and a literal log group ARN
without ``:*``.

It cannot see: buckets the program does not create and policies put outside it, a policy known only at apply time,
Deny statements (CloudTrail's requests use TLS, so the usual TLS-only Deny does not apply), condition keys and
operators other than those above (they count as met), organization trails' ``AWSLogs/ORG_ID/`` path, and whether
the trail waits for the policy.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.aws_replay import known_cloud_region
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import arns_of, as_list, conditions_hold, names_action, statements
from tokenplane.proof.render import ACCOUNT_ID, RenderedResource, physical_id

RULE = "cloudtrail-delivery"
TRAIL = "aws:cloudtrail/trail:Trail"
BUCKETS = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
SERVICE = "cloudtrail.amazonaws.com"
# A log group ARN without the log-stream wildcard (a log group's name has no ':').
_BARE_GROUP_ARN = re.compile(r"arn:[^:]+:logs:[^:]*:[^:]*:log-group:[^:]+")


def check(graph: Graph) -> Iterator[Finding]:
    for trail in graph.of_type(TRAIL):
        group = trail.inputs.get("cloudWatchLogsGroupArn")
        if isinstance(group, str) and _BARE_GROUP_ARN.fullmatch(group):
            yield Finding(
                RULE,
                trail.urn,
                f"trail {trail.name}'s cloud_watch_logs_group_arn is {group}, a log group ARN without the log-stream "
                "wildcard: CloudTrail validates only the form ...:log-group:NAME:* and CreateTrail fails with "
                "InvalidCloudWatchLogsLogGroupArnException (CloudTrail cannot validate the specified log group ARN); "
                "a LogGroup's arn output has no ':*' suffix",
                "pass the log group's ARN with ':*' appended (log_group.arn.apply(lambda arn: f'{arn}:*'))",
            )
        yield from _bucket_policy(graph, trail)


def _bucket_policy(graph: Graph, trail: RenderedResource) -> Iterator[Finding]:
    buckets = [b for b in graph.by_physical_ids(trail.inputs.get("s3BucketName")) if b.type in BUCKETS]
    if not buckets:
        return
    bucket = buckets[0]
    documents = _documents(graph, bucket)
    if documents is None:
        return  # a policy known only at apply time
    prefix = trail.inputs.get("s3KeyPrefix")
    if prefix is not None and not isinstance(prefix, str):
        return
    arn = f"arn:aws:s3:::{trail.inputs['s3BucketName']}"
    # What the program's policy may name the bucket by: its real ARN, or the ARN the render's mocks gave it.
    arns = {arn, *(a for a in arns_of(graph, bucket) if a.startswith("arn:"))}
    path = f"{prefix + '/' if prefix else ''}AWSLogs/{ACCOUNT_ID}/"
    key = f"{arn}/{path}"
    context = {"aws:SourceAccount": ACCOUNT_ID, "s3:x-amz-acl": "bucket-owner-full-control"}
    region = _region(graph, trail)
    name = trail.inputs.get("name") if "name" in trail.inputs else physical_id(trail.type, trail.name)
    if region and isinstance(name, str):
        context["aws:SourceArn"] = f"arn:aws:cloudtrail:{region}:{ACCOUNT_ID}:trail/{name}"
    missing = [
        what
        for what, action, resources in (
            (f"s3:GetBucketAcl on {arn}", "s3:GetBucketAcl", arns),
            (f"s3:PutObject on {key}*", "s3:PutObject", {f"{a}/{path}x" for a in arns}),
        )
        if not any(_admits(documents, action, resource, context) for resource in resources)
    ]
    if not missing:
        return
    has = "no bucket policy" if not documents else "a bucket policy that does not let"
    yield Finding(
        RULE,
        trail.urn,
        f"trail {trail.name} delivers to bucket {bucket.name} (key prefix {prefix or '(none)'}), which has {has} "
        f"{SERVICE} {' nor '.join(missing)}: CreateTrail checks the bucket policy first and fails with "
        "InsufficientS3BucketPolicyException (Incorrect S3 bucket policy is detected for bucket), so pulumi up fails",
        f"add to {bucket.name}'s bucket policy the statements CloudTrail's guide shows: Allow Principal {{'Service': "
        f"'{SERVICE}'}} s3:GetBucketAcl on {arn}, and s3:PutObject on {key}* with condition StringEquals "
        "s3:x-amz-acl bucket-owner-full-control (and aws:SourceArn the trail's ARN); make the trail depend on it",
    )


def _documents(graph: Graph, bucket: RenderedResource) -> list[Any] | None:
    """The policy documents on the bucket (a BucketPolicy naming it, its own ``policy``), or None when one is not
    known at render time."""
    values = [bucket.inputs["policy"]] if bucket.inputs.get("policy") else []
    for policy in graph.of_type(BUCKET_POLICY):
        if any(b.urn == bucket.urn for b in graph.by_physical_ids(policy.inputs.get("bucket"))):
            values.append(policy.inputs.get("policy"))
    if any(not statements(value) and not isinstance(value, dict) for value in values):
        return None
    if not values and any(not isinstance(p.inputs.get("bucket"), str) for p in graph.of_type(BUCKET_POLICY)):
        return None  # a policy whose bucket is known only at apply time may be this one's
    return values


def _admits(documents: list[Any], action: str, resource: str, context: dict[str, str]) -> bool:
    """Whether an Allow statement of ``documents`` for CloudTrail's service principal (or everyone) names ``action``
    on ``resource`` with conditions a CloudTrail request meets."""
    for document in documents:
        for statement in statements(document):
            if statement.get("Effect") != "Allow" or not names_action(statement, action):
                continue
            principal = statement.get("Principal")
            named = principal if isinstance(principal, dict) else {}
            if not (principal == "*" or "*" in as_list(named.get("AWS")) or SERVICE in as_list(named.get("Service"))):
                continue
            resources = [r for r in as_list(statement.get("Resource")) if isinstance(r, str)]
            if any(fnmatch.fnmatchcase(resource, r) for r in resources) and conditions_hold(statement, context):
                return True
    return False


def _region(graph: Graph, resource: RenderedResource) -> str | None:
    if "region" in resource.inputs:
        region = resource.inputs["region"]
        return region if isinstance(region, str) and region else None
    return known_cloud_region(graph, resource.region)
