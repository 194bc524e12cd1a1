"""S3 as the provider creates it: buckets and each bucket configuration resource, objects (see ``aws_calls``)."""

from __future__ import annotations

from typing import Any

from tokenplane.proof.deployability.aws_calls import Api, Made, Skip, builds, drop_none, need, physical_name

# --- S3 -------------------------------------------------------------------------------------------------------------


@builds("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
def bucket(api: Api) -> Made:
    name = physical_name(api, "bucket", limit=63)
    params: dict[str, Any] = {"Bucket": name}
    if api.region != "us-east-1":  # us-east-1 refuses a LocationConstraint naming itself
        params["CreateBucketConfiguration"] = {"LocationConstraint": api.region}
    if api.inputs.get("objectLockEnabled"):
        params["ObjectLockEnabledForBucket"] = True
    api.call("s3", "create_bucket", **params)
    legacy_versioning = api.inputs.get("versioning") or {}
    if isinstance(legacy_versioning, dict) and legacy_versioning.get("enabled"):
        api.call("s3", "put_bucket_versioning", Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    if isinstance(legacy_policy := api.inputs.get("policy"), str):
        api.call("s3", "put_bucket_policy", Bucket=name, Policy=legacy_policy)
    return Made(name, f"arn:aws:s3:::{name}")


def _bucket_config(api: Api, operation: str, member: str, value: Any) -> Made:
    name = need(api, "bucket")
    api.call("s3", operation, Bucket=name, **{member: api.shaped("s3", operation, member, value)})
    return Made(name)


@builds("aws:s3/bucketVersioning:BucketVersioning", "aws:s3/bucketVersioningV2:BucketVersioningV2")
def bucket_versioning(api: Api) -> Made:
    return _bucket_config(api, "put_bucket_versioning", "VersioningConfiguration", need(api, "versioningConfiguration"))


@builds(
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    "aws:s3/bucketServerSideEncryptionConfigurationV2:BucketServerSideEncryptionConfigurationV2",
)
def bucket_encryption(api: Api) -> Made:
    value = {"rules": need(api, "rules")}
    return _bucket_config(api, "put_bucket_encryption", "ServerSideEncryptionConfiguration", value)


@builds("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
def bucket_public_access_block(api: Api) -> Made:
    value = {k: v for k, v in api.inputs.items() if k != "bucket"}
    return _bucket_config(api, "put_public_access_block", "PublicAccessBlockConfiguration", value)


@builds(
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
    "aws:s3/bucketLifecycleConfigurationV2:BucketLifecycleConfigurationV2",
)
def bucket_lifecycle(api: Api) -> Made:
    rules = []
    for rule in need(api, "rules"):
        # The provider sends an empty or absent filter block as an empty prefix (every object), the rule's
        # top-level ``prefix`` where one is given (terraform-provider-aws, expandLifecycleRules).
        if rule.get("filter"):
            rules.append(rule)
            continue
        sent = {k: v for k, v in rule.items() if k not in ("filter", "prefix")}
        sent["filter"] = {"prefix": rule.get("prefix") or ""}
        rules.append(sent)
    return _bucket_config(api, "put_bucket_lifecycle_configuration", "LifecycleConfiguration", {"rules": rules})


@builds("aws:s3/bucketPolicy:BucketPolicy")
def bucket_policy(api: Api) -> Made:
    name = need(api, "bucket")
    api.call("s3", "put_bucket_policy", Bucket=name, Policy=need(api, "policy"))
    return Made(name)


@builds("aws:s3/bucketReplicationConfig:BucketReplicationConfig")
def bucket_replication(api: Api) -> Made:
    value = {"role": need(api, "role"), "rules": need(api, "rules")}
    return _bucket_config(api, "put_bucket_replication", "ReplicationConfiguration", value)


@builds("aws:s3/bucketNotification:BucketNotification")
def bucket_notification(api: Api) -> Made:
    def configs(key: str, arn_key: str) -> list[dict[str, Any]]:
        out = []
        for item in api.inputs.get(key) or []:
            rules = [
                {"Name": name, "Value": item[f"filter{name.capitalize()}"]}
                for name in ("prefix", "suffix")
                if item.get(f"filter{name.capitalize()}")
            ]
            config: dict[str, Any] = {arn_key: item.get(arn_key[0].lower() + arn_key[1:]), "Events": item.get("events")}
            if item.get("id"):
                config["Id"] = item["id"]
            if rules:
                config["Filter"] = {"Key": {"FilterRules": rules}}
            out.append(config)
        return out

    name = need(api, "bucket")
    notification: dict[str, Any] = {
        "QueueConfigurations": configs("queues", "QueueArn"),
        "TopicConfigurations": configs("topics", "TopicArn"),
        "LambdaFunctionConfigurations": configs("lambdaFunctions", "LambdaFunctionArn"),
    }
    if api.inputs.get("eventbridge"):
        notification["EventBridgeConfiguration"] = {}
    api.call("s3", "put_bucket_notification_configuration", Bucket=name, NotificationConfiguration=notification)
    return Made(name)


@builds("aws:s3/bucketObjectv2:BucketObjectv2", "aws:s3/bucketObject:BucketObject")
def bucket_object(api: Api) -> Made:
    body = api.inputs.get("content")
    if body is None and api.inputs.get("source") is not None:
        raise Skip("the object's body is a file the replay does not read")
    params = drop_none(
        Bucket=need(api, "bucket"),
        Key=need(api, "key"),
        Body=(body or "").encode(),
        ContentType=api.inputs.get("contentType"),
        Metadata={str(k): str(v) for k, v in (api.inputs.get("metadata") or {}).items()} or None,
    )
    api.call("s3", "put_object", **params)
    return Made(f"{params['Bucket']}/{params['Key']}")
