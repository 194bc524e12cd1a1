"""KMS, Secrets Manager, ECR, ACM, Route 53, CloudWatch Logs, SQS, SNS and DynamoDB as the provider creates them
(see ``aws_calls``)."""

from __future__ import annotations

from typing import Any

from tokenplane.proof.deployability.aws_calls import (
    Api,
    Made,
    Skip,
    builds,
    drop_none,
    need,
    physical_name,
    scalar_text,
    tags,
    whole,
)

# --- KMS, Secrets Manager, ECR, ACM ----------------------------------------------------------------------------


@builds("aws:kms/key:Key")
def kms_key(api: Api) -> Made:
    params = drop_none(
        Description=api.inputs.get("description"),
        KeyUsage=api.inputs.get("keyUsage"),
        KeySpec=api.inputs.get("customerMasterKeySpec"),
        Policy=api.inputs.get("policy"),
        MultiRegion=api.inputs.get("multiRegion"),
        BypassPolicyLockoutSafetyCheck=api.inputs.get("bypassPolicyLockoutSafetyCheck"),
        Tags=tags(api, "TagKey", "TagValue") or None,
    )
    metadata = api.call("kms", "create_key", **params)["KeyMetadata"]
    if api.inputs.get("enableKeyRotation"):
        period = drop_none(RotationPeriodInDays=whole(api.inputs.get("rotationPeriodInDays")))
        api.call("kms", "enable_key_rotation", KeyId=metadata["KeyId"], **period)
    return Made(metadata["KeyId"], metadata["Arn"])


@builds("aws:kms/alias:Alias")
def kms_alias(api: Api) -> Made:
    name = physical_name(api, limit=256)
    api.call("kms", "create_alias", AliasName=name, TargetKeyId=need(api, "targetKeyId"))
    return Made(name, f"arn:aws:kms:{api.region}:123456789012:{name}")


@builds("aws:secretsmanager/secret:Secret")
def secret(api: Api) -> Made:
    params = drop_none(
        Name=physical_name(api, limit=512),
        Description=api.inputs.get("description"),
        KmsKeyId=api.inputs.get("kmsKeyId"),
        Tags=tags(api) or None,
    )
    arn = api.call("secretsmanager", "create_secret", **params)["ARN"]
    if isinstance(policy_text := api.inputs.get("policy"), str):
        api.call("secretsmanager", "put_resource_policy", SecretId=arn, ResourcePolicy=policy_text)
    return Made(arn, arn)


@builds("aws:secretsmanager/secretVersion:SecretVersion")
def secret_version(api: Api) -> Made:
    params = drop_none(
        SecretId=need(api, "secretId"),
        SecretString=api.inputs.get("secretString"),
        SecretBinary=api.inputs.get("secretBinary"),
        VersionStages=api.inputs.get("versionStages"),
    )
    answer = api.call("secretsmanager", "put_secret_value", **params)
    return Made(f"{answer['ARN']}|{answer['VersionId']}")


@builds("aws:ecr/repository:Repository")
def ecr_repository(api: Api) -> Made:
    name = physical_name(api, limit=256)
    params = drop_none(
        repositoryName=name,
        imageTagMutability=api.inputs.get("imageTagMutability"),
        imageScanningConfiguration=api.shaped(
            "ecr", "create_repository", "imageScanningConfiguration", api.inputs.get("imageScanningConfiguration")
        ),
        encryptionConfiguration=api.shaped(
            "ecr",
            "create_repository",
            "encryptionConfiguration",
            (api.inputs.get("encryptionConfigurations") or [None])[0],
        ),
        tags=tags(api) or None,
    )
    arn = api.call("ecr", "create_repository", **params)["repository"]["repositoryArn"]
    return Made(name, arn)


@builds("aws:ecr/lifecyclePolicy:LifecyclePolicy")
def ecr_lifecycle_policy(api: Api) -> Made:
    name = need(api, "repository")
    api.call("ecr", "put_lifecycle_policy", repositoryName=name, lifecyclePolicyText=need(api, "policy"))
    return Made(name)


@builds("aws:ecr/repositoryPolicy:RepositoryPolicy")
def ecr_repository_policy(api: Api) -> Made:
    name = need(api, "repository")
    api.call("ecr", "set_repository_policy", repositoryName=name, policyText=need(api, "policy"))
    return Made(name)


@builds("aws:acm/certificate:Certificate")
def certificate(api: Api) -> Made:
    if api.inputs.get("privateKey") is not None or api.inputs.get("certificateBody") is not None:
        raise Skip("an imported certificate's material is not replayed")
    params = drop_none(
        DomainName=need(api, "domainName"),
        ValidationMethod=api.inputs.get("validationMethod"),
        SubjectAlternativeNames=api.inputs.get("subjectAlternativeNames"),
        KeyAlgorithm=api.inputs.get("keyAlgorithm"),
        Tags=tags(api) or None,
    )
    arn = api.call("acm", "request_certificate", **params)["CertificateArn"]
    return Made(arn, arn)


@builds("aws:acm/certificateValidation:CertificateValidation")
def certificate_validation(api: Api) -> Made:
    # The provider only waits for ACM to issue the certificate (DescribeCertificate): no create call to replay.
    arn = need(api, "certificateArn")
    api.call("acm", "describe_certificate", CertificateArn=arn)
    return Made(arn)


# --- Route 53, CloudWatch Logs, SQS, SNS ----------------------------------------------------------------------


@builds("aws:route53/zone:Zone")
def zone(api: Api) -> Made:
    vpcs = api.inputs.get("vpcs") or []
    params = drop_none(
        Name=need(api, "name"),
        CallerReference=str(api.render_outputs["rid"]),
        HostedZoneConfig={"Comment": api.inputs.get("comment", "Managed by Pulumi"), "PrivateZone": bool(vpcs)},
        VPC={"VPCId": vpcs[0].get("vpcId"), "VPCRegion": vpcs[0].get("vpcRegion") or api.region} if vpcs else None,
        DelegationSetId=api.inputs.get("delegationSetId"),
    )
    zone_id = api.call("route53", "create_hosted_zone", **params)["HostedZone"]["Id"].rsplit("/", 1)[-1]
    return Made(zone_id, aliases={str(api.render_outputs.get("zoneId")): zone_id})


def _record_set(api: Api) -> dict[str, Any]:
    record: dict[str, Any] = {"Name": need(api, "name"), "Type": need(api, "type")}
    if api.inputs.get("ttl") is not None:
        record["TTL"] = whole(api.inputs["ttl"])
    if api.inputs.get("records"):
        record["ResourceRecords"] = [{"Value": str(v)} for v in api.inputs["records"]]
    if aliases := api.inputs.get("aliases"):
        alias = aliases[0]
        record["AliasTarget"] = {
            "HostedZoneId": alias.get("zoneId"),
            "DNSName": alias.get("name"),
            "EvaluateTargetHealth": bool(alias.get("evaluateTargetHealth")),
        }
    if api.inputs.get("setIdentifier"):
        record["SetIdentifier"] = api.inputs["setIdentifier"]
    if api.inputs.get("healthCheckId"):
        record["HealthCheckId"] = api.inputs["healthCheckId"]
    # A routing policy block -> its field of the record set (the provider's weighted, latency and failover).
    for key, param, field_name in (
        ("weightedRoutingPolicies", "Weight", "weight"),
        ("latencyRoutingPolicies", "Region", "region"),
        ("failoverRoutingPolicies", "Failover", "type"),
    ):
        if policies := api.inputs.get(key):
            value = policies[0].get(field_name)
            record[param] = whole(value) if param == "Weight" else value
    return record


@builds("aws:route53/record:Record")
def record(api: Api) -> Made:
    # The provider CREATEs (UPSERTs only with allowOverwrite), and names a relative record inside its zone.
    action = "UPSERT" if api.inputs.get("allowOverwrite") else "CREATE"
    zone_id = need(api, "zoneId")
    record_set = _record_set(api)
    domain = str(api.call("route53", "get_hosted_zone", Id=zone_id)["HostedZone"]["Name"]).rstrip(".")
    name = str(record_set["Name"]).rstrip(".")
    if name != domain and not name.endswith(f".{domain}"):
        record_set["Name"] = f"{name}.{domain}"
    change = {"Action": action, "ResourceRecordSet": record_set}
    api.call("route53", "change_resource_record_sets", HostedZoneId=zone_id, ChangeBatch={"Changes": [change]})
    return Made(f"{zone_id}_{record_set['Name']}_{record_set['Type']}")


_HEALTH_CHECK = {
    "type": "Type",
    "fqdn": "FullyQualifiedDomainName",
    "ipAddress": "IPAddress",
    "port": "Port",
    "resourcePath": "ResourcePath",
    "requestInterval": "RequestInterval",
    "failureThreshold": "FailureThreshold",
    "searchString": "SearchString",
    "measureLatency": "MeasureLatency",
    "invertHealthcheck": "Inverted",
    "disabled": "Disabled",
    "enableSni": "EnableSNI",
    "regions": "Regions",
}


@builds("aws:route53/healthCheck:HealthCheck")
def health_check(api: Api) -> Made:
    config = {param: api.inputs[key] for key, param in _HEALTH_CHECK.items() if api.inputs.get(key) is not None}
    answer = api.call(
        "route53",
        "create_health_check",
        CallerReference=str(api.render_outputs["rid"]),
        HealthCheckConfig=api.shaped("route53", "create_health_check", "HealthCheckConfig", config),
    )
    return Made(answer["HealthCheck"]["Id"])


@builds("aws:cloudwatch/logGroup:LogGroup")
def log_group(api: Api) -> Made:
    name = physical_name(api, limit=512)
    params = drop_none(
        logGroupName=name,
        kmsKeyId=api.inputs.get("kmsKeyId"),
        logGroupClass=api.inputs.get("logGroupClass"),
        tags={str(k): str(v) for k, v in (api.inputs.get("tags") or {}).items()} or None,
    )
    api.call("logs", "create_log_group", **params)
    if (days := api.inputs.get("retentionInDays")) is not None and int(float(days)) != 0:
        api.call("logs", "put_retention_policy", logGroupName=name, retentionInDays=int(float(days)))
    return Made(name, f"arn:aws:logs:{api.region}:123456789012:log-group:{name}")


_QUEUE_ATTRIBUTES = {
    "delaySeconds": "DelaySeconds",
    "maxMessageSize": "MaximumMessageSize",
    "messageRetentionSeconds": "MessageRetentionPeriod",
    "receiveWaitTimeSeconds": "ReceiveMessageWaitTimeSeconds",
    "visibilityTimeoutSeconds": "VisibilityTimeout",
    "policy": "Policy",
    "redrivePolicy": "RedrivePolicy",
    "fifoQueue": "FifoQueue",
    "contentBasedDeduplication": "ContentBasedDeduplication",
    "kmsMasterKeyId": "KmsMasterKeyId",
    "kmsDataKeyReusePeriodSeconds": "KmsDataKeyReusePeriodSeconds",
    "sqsManagedSseEnabled": "SqsManagedSseEnabled",
}


@builds("aws:sqs/queue:Queue")
def queue(api: Api) -> Made:
    name = physical_name(api, limit=80)
    if api.inputs.get("fifoQueue") and not isinstance(api.inputs.get("name"), str):
        name = name[:75] + ".fifo"  # the provider's auto-name of a FIFO queue keeps the suffix SQS requires
    attributes = {
        attr: str(scalar_text(api.inputs[key]))
        for key, attr in _QUEUE_ATTRIBUTES.items()
        if api.inputs.get(key) is not None
    }
    url = api.call("sqs", "create_queue", QueueName=name, Attributes=attributes)["QueueUrl"]
    arn = f"arn:aws:sqs:{api.region}:123456789012:{name}"
    return Made(url, arn)


@builds("aws:sns/topic:Topic")
def topic(api: Api) -> Made:
    name = physical_name(api, limit=256)
    if api.inputs.get("fifoTopic") and not isinstance(api.inputs.get("name"), str):
        name = name[:251] + ".fifo"
    attributes = {
        attr: str(scalar_text(api.inputs[key]))
        for key, attr in (
            ("displayName", "DisplayName"),
            ("policy", "Policy"),
            ("kmsMasterKeyId", "KmsMasterKeyId"),
            ("fifoTopic", "FifoTopic"),
            ("contentBasedDeduplication", "ContentBasedDeduplication"),
        )
        if api.inputs.get(key) is not None
    }
    arn = api.call("sns", "create_topic", Name=name, Attributes=attributes)["TopicArn"]
    return Made(arn, arn)


# --- DynamoDB ----------------------------------------------------------------------------------------------------


def _key_schema(hash_key: Any, range_key: Any) -> list[dict[str, str]]:
    keys = [{"AttributeName": str(hash_key), "KeyType": "HASH"}]
    return keys + ([{"AttributeName": str(range_key), "KeyType": "RANGE"}] if range_key else [])


def _throughput(inputs: dict[str, Any], provisioned: bool) -> dict[str, int] | None:
    if not provisioned:
        return None
    return {
        "ReadCapacityUnits": whole(inputs.get("readCapacity")) or 0,
        "WriteCapacityUnits": whole(inputs.get("writeCapacity")) or 0,
    }


def _projection(index: dict[str, Any]) -> dict[str, Any]:
    return drop_none(
        ProjectionType=index.get("projectionType") or "ALL", NonKeyAttributes=index.get("nonKeyAttributes") or None
    )


@builds("aws:dynamodb/table:Table")
def dynamodb_table(api: Api) -> Made:
    # CreateTable validates that every attribute definition is a key of the table or of an index (ValidationException:
    # "Number of attributes in KeySchema does not exactly match number of attributes defined in AttributeDefinitions").
    inputs = api.inputs
    name = physical_name(api, limit=255)
    provisioned = str(inputs.get("billingMode") or "PROVISIONED") == "PROVISIONED"
    global_indexes = [
        drop_none(
            IndexName=str(index.get("name")),
            KeySchema=_key_schema(index.get("hashKey"), index.get("rangeKey")),
            Projection=_projection(index),
            ProvisionedThroughput=_throughput(index, provisioned),
        )
        for index in inputs.get("globalSecondaryIndexes") or []
    ]
    local_indexes = [
        {
            "IndexName": str(index.get("name")),
            "KeySchema": _key_schema(need(api, "hashKey"), index.get("rangeKey")),
            "Projection": _projection(index),
        }
        for index in inputs.get("localSecondaryIndexes") or []
    ]
    params = drop_none(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": str(a.get("name")), "AttributeType": str(a.get("type"))}
            for a in inputs.get("attributes") or []
        ],
        KeySchema=_key_schema(need(api, "hashKey"), inputs.get("rangeKey")),
        BillingMode="PROVISIONED" if provisioned else "PAY_PER_REQUEST",
        ProvisionedThroughput=_throughput(inputs, provisioned),
        GlobalSecondaryIndexes=global_indexes or None,
        LocalSecondaryIndexes=local_indexes or None,
        Tags=tags(api) or None,
    )
    arn = api.call("dynamodb", "create_table", **params)["TableDescription"]["TableArn"]
    return Made(name, arn)
