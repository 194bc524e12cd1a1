"""A bucket's separate S3 sub-resources as the ``AWS::S3::Bucket`` property that makes the same call.

The Pulumi AWS provider configures a bucket through one resource per S3 API call (``PutBucketLifecycleConfiguration``,
``PutBucketVersioning``, ...); CloudFormation has them as properties of the bucket. Each sub-resource is linted as a
bucket that carries only that property, laid out as CloudFormation has it. The ``bucket`` input is dropped: the
stand-in is not the program's bucket, and a second bucket of the same name would only say that names are unique.

Where the provider takes a value CloudFormation writes differently (a lifecycle date as ``2025-01-01``, which the
provider takes and CloudFormation's pattern would not), the value is dropped, never guessed.
"""

from __future__ import annotations

from typing import Any

Inputs = dict[str, Any]


def _blocks(value: Any) -> list[dict[str, Any]]:
    """A list of blocks, or one block (the provider renders a block as a dict or a list of one)."""
    if isinstance(value, dict):
        return [value]
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _block(value: Any) -> dict[str, Any]:
    blocks = _blocks(value)
    return blocks[0] if blocks else {}


def _some(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None and v not in ({}, [])}


def _tags(tags: Any) -> list[dict[str, Any]] | None:
    return [{"Key": k, "Value": v} for k, v in tags.items()] if isinstance(tags, dict) and tags else None


def _lifecycle_filter(rule: dict[str, Any]) -> dict[str, Any]:
    """A rule's ``filter`` (prefix, one tag, or ``and`` of both with object sizes) as CloudFormation's flat fields."""
    found = _block(rule.get("filter"))
    both = _block(found.get("and"))
    tag = _block(found.get("tag"))
    tags = _tags(both.get("tags")) or ([{"Key": tag.get("key"), "Value": tag.get("value")}] if tag else None)
    return _some(
        Prefix=both.get("prefix", found.get("prefix", rule.get("prefix"))),
        TagFilters=tags,
        ObjectSizeGreaterThan=both.get("objectSizeGreaterThan", found.get("objectSizeGreaterThan")),
        ObjectSizeLessThan=both.get("objectSizeLessThan", found.get("objectSizeLessThan")),
    )


def _lifecycle_rule(rule: dict[str, Any]) -> dict[str, Any]:
    expiration = _block(rule.get("expiration"))
    noncurrent = _block(rule.get("noncurrentVersionExpiration"))
    abort = _block(rule.get("abortIncompleteMultipartUpload"))
    return _some(
        Id=rule.get("id"),
        Status=rule.get("status"),
        **_lifecycle_filter(rule),
        # Dates are left out: the provider takes ``2025-01-01``, CloudFormation's pattern wants a timestamp.
        ExpirationInDays=expiration.get("days"),
        ExpiredObjectDeleteMarker=expiration.get("expiredObjectDeleteMarker"),
        Transitions=[
            _some(TransitionInDays=t.get("days"), StorageClass=t.get("storageClass"))
            for t in _blocks(rule.get("transitions"))
        ],
        NoncurrentVersionExpiration=_some(
            NoncurrentDays=noncurrent.get("noncurrentDays"),
            NewerNoncurrentVersions=noncurrent.get("newerNoncurrentVersions"),
        ),
        NoncurrentVersionTransitions=[
            _some(
                TransitionInDays=t.get("noncurrentDays"),
                StorageClass=t.get("storageClass"),
                NewerNoncurrentVersions=t.get("newerNoncurrentVersions"),
            )
            for t in _blocks(rule.get("noncurrentVersionTransitions"))
        ],
        AbortIncompleteMultipartUpload=_some(DaysAfterInitiation=abort.get("daysAfterInitiation")),
    )


def lifecycle(inputs: Inputs) -> Inputs:
    """``aws.s3.BucketLifecycleConfiguration``: ``PutBucketLifecycleConfiguration``."""
    return {
        "LifecycleConfiguration": _some(
            Rules=[_lifecycle_rule(r) for r in _blocks(inputs.get("rules"))],
            TransitionDefaultMinimumObjectSize=inputs.get("transitionDefaultMinimumObjectSize"),
        )
    }


def versioning(inputs: Inputs) -> Inputs:
    """``aws.s3.BucketVersioning``: ``PutBucketVersioning``. The provider's ``Disabled`` (a new bucket left
    unversioned) makes no call, so it is not a value to judge."""
    status = _block(inputs.get("versioningConfiguration")).get("status")
    return {"VersioningConfiguration": {"Status": status}} if status not in (None, "Disabled") else {}


def encryption(inputs: Inputs) -> Inputs:
    """``aws.s3.BucketServerSideEncryptionConfiguration``: ``PutBucketEncryption``."""
    rules = []
    for rule in _blocks(inputs.get("rules")):
        default = _block(rule.get("applyServerSideEncryptionByDefault"))
        rules.append(
            _some(
                ServerSideEncryptionByDefault=_some(
                    SSEAlgorithm=default.get("sseAlgorithm"), KMSMasterKeyID=default.get("kmsMasterKeyId")
                ),
                BucketKeyEnabled=rule.get("bucketKeyEnabled"),
            )
        )
    return {"BucketEncryption": {"ServerSideEncryptionConfiguration": rules}}


def cors(inputs: Inputs) -> Inputs:
    """``aws.s3.BucketCorsConfiguration``: ``PutBucketCors``."""
    rules = [
        _some(
            Id=r.get("id"),
            AllowedHeaders=r.get("allowedHeaders"),
            AllowedMethods=r.get("allowedMethods"),
            AllowedOrigins=r.get("allowedOrigins"),
            ExposedHeaders=r.get("exposeHeaders"),
            MaxAge=r.get("maxAgeSeconds"),
        )
        for r in _blocks(inputs.get("corsRules"))
    ]
    return {"CorsConfiguration": {"CorsRules": rules}}


def _replication_filter(found: dict[str, Any]) -> dict[str, Any]:
    both, tag = _block(found.get("and")), _block(found.get("tag"))
    return _some(
        Prefix=found.get("prefix"),
        TagFilter=_some(Key=tag.get("key"), Value=tag.get("value")),
        And=_some(Prefix=both.get("prefix"), TagFilters=_tags(both.get("tags"))),
    )


def replication(inputs: Inputs) -> Inputs:
    """``aws.s3.BucketReplicationConfig``: ``PutBucketReplication``. The provider's blocks are CloudFormation's but
    for case, the filter's tags and ``existingObjectReplication`` (which CloudFormation does not carry)."""
    rules = []
    for rule in _blocks(inputs.get("rules")):
        out = {k: v for k, v in rule.items() if k not in ("filter", "existingObjectReplication")}
        if "filter" in rule:
            out["Filter"] = _replication_filter(_block(rule.get("filter")))
        rules.append(out)
    return {"ReplicationConfiguration": _some(Role=inputs.get("role"), Rules=rules)}
