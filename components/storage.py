"""S3 buckets that are private, versioned and encrypted by construction."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

ABORT_INCOMPLETE_DAYS = 7  # longer than any publish of a model's weights takes


def secure_bucket(
    logical: str, *, tags: dict[str, str], opts: pulumi.ResourceOptions, abort_incomplete_uploads: bool = True
) -> aws.s3.Bucket:
    """A bucket with public access blocked, versioning on, SSE-KMS with a bucket key, and a lifecycle rule that
    aborts multipart uploads left incomplete (``abort_incomplete_uploads=False`` where the caller writes the
    bucket's one lifecycle configuration itself, with that rule in it)."""
    return versioned_bucket(logical, tags=tags, opts=opts, abort_incomplete_uploads=abort_incomplete_uploads)[0]


def versioned_bucket(
    logical: str, *, tags: dict[str, str], opts: pulumi.ResourceOptions, abort_incomplete_uploads: bool = True
) -> tuple[aws.s3.Bucket, aws.s3.BucketVersioning]:
    """``secure_bucket``, with its versioning resource: S3 refuses a replication configuration on a bucket whose
    versioning is not yet enabled, so replication must wait for it on a first run."""
    bucket = aws.s3.Bucket(logical, force_destroy=False, tags=tags, opts=opts)
    aws.s3.BucketPublicAccessBlock(
        f"{logical}-public-access",
        bucket=bucket.id,
        block_public_acls=True,
        block_public_policy=True,
        ignore_public_acls=True,
        restrict_public_buckets=True,
        opts=opts,
    )
    versioning = aws.s3.BucketVersioning(
        f"{logical}-versioning",
        bucket=bucket.id,
        versioning_configuration=aws.s3.BucketVersioningVersioningConfigurationArgs(status="Enabled"),
        opts=opts,
    )
    aws.s3.BucketServerSideEncryptionConfiguration(
        f"{logical}-sse",
        bucket=bucket.id,
        rules=[
            aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                apply_server_side_encryption_by_default=aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                    sse_algorithm="aws:kms"
                ),
                bucket_key_enabled=True,  # one KMS call per object, not per request: weights are many GB
            )
        ],
        opts=opts,
    )
    if abort_incomplete_uploads:
        # A publish or upload cut short leaves parts that are invisible and billed until aborted. Nothing else
        # expires: a registry keeps every model version for rollback and audit. S3 holds one lifecycle
        # configuration per bucket, so a caller with rules of its own passes abort_incomplete_uploads=False.
        aws.s3.BucketLifecycleConfiguration(
            f"{logical}-lifecycle",
            bucket=bucket.id,
            rules=[
                {
                    "id": "abort-incomplete-uploads",
                    "status": "Enabled",
                    "filter": {},
                    "abort_incomplete_multipart_upload": {"days_after_initiation": ABORT_INCOMPLETE_DAYS},
                }
            ],
            opts=opts,
        )
    return bucket, versioning


def bucket_name(bucket: aws.s3.Bucket | pulumi.Input[str]) -> pulumi.Input[str]:
    """A bucket's name: components take the bucket (``secure_bucket``'s) or its name, as the caller has it."""
    return bucket.bucket if isinstance(bucket, aws.s3.Bucket) else bucket


def tls_only(logical: str, *, bucket: aws.s3.Bucket, opts: pulumi.ResourceOptions) -> aws.s3.BucketPolicy:
    """A bucket policy that denies every request made without TLS (``aws:SecureTransport`` false).

    Its own resource, not part of ``secure_bucket``: a bucket holds one policy, and a bucket that needs more
    statements writes them together with this one.
    """
    policy = bucket.arn.apply(
        lambda arn: json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "DenyInsecureTransport",
                        "Effect": "Deny",
                        "Principal": "*",
                        "Action": "s3:*",
                        "Resource": [arn, f"{arn}/*"],
                        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                    }
                ],
            }
        )
    )
    return aws.s3.BucketPolicy(logical, bucket=bucket.id, policy=policy, opts=opts)
