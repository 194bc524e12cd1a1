"""Pulumi AWS inputs laid out differently from CloudFormation's, rewritten into its layout for cfn-lint.

Most inputs are the same field under another name (``cfn_types``); these are not: a DynamoDB key schema as
``hashKey``/``rangeKey``, a security group's rule with a list of CIDRs, a target group's health check as one
block, a JSON document the provider takes as a string. Each function takes a resource's inputs and returns them
as CloudFormation lays them out; an input it cannot place is dropped (the check then says nothing about it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Inputs = dict[str, Any]


def document(value: Any) -> Any:
    """A JSON document the provider takes as a string (a policy, a redrive policy), as CloudFormation's object."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def documents(*keys: str) -> Callable[[Inputs], Inputs]:
    def prepare(inputs: Inputs) -> Inputs:
        return {k: (document(v) if k in keys else v) for k, v in inputs.items()}

    return prepare


def key_schema(hash_key: Any, range_key: Any) -> list[dict[str, Any]]:
    keys = [{"AttributeName": hash_key, "KeyType": "HASH"}] if hash_key is not None else []
    return keys + ([{"AttributeName": range_key, "KeyType": "RANGE"}] if range_key is not None else [])


def provisioned_throughput(block: dict[str, Any]) -> dict[str, Any] | None:
    read, write = block.get("readCapacity"), block.get("writeCapacity")
    if read is None and write is None:
        return None
    return {"ReadCapacityUnits": read, "WriteCapacityUnits": write}


def secondary_index(index: dict[str, Any], hash_key: Any) -> dict[str, Any]:
    projection = {"ProjectionType": index.get("projectionType"), "NonKeyAttributes": index.get("nonKeyAttributes")}
    out = {
        "IndexName": index.get("name"),
        "KeySchema": key_schema(index.get("hashKey", hash_key), index.get("rangeKey")),
        "Projection": {k: v for k, v in projection.items() if v is not None},
    }
    if (throughput := provisioned_throughput(index)) is not None:
        out["ProvisionedThroughput"] = throughput
    return out


def dynamodb_table(inputs: Inputs) -> Inputs:
    """The provider's ``attributes``/``hashKey``/``rangeKey`` and index blocks as CloudFormation's key schemas."""
    out = {k: v for k, v in inputs.items() if k not in _DYNAMODB_LAID_OUT}
    out["AttributeDefinitions"] = [
        {"AttributeName": a.get("name"), "AttributeType": a.get("type")}
        for a in inputs.get("attributes") or []
        if isinstance(a, dict)
    ]
    out["KeySchema"] = key_schema(inputs.get("hashKey"), inputs.get("rangeKey"))
    for key, cfn in (
        ("globalSecondaryIndexes", "GlobalSecondaryIndexes"),
        ("localSecondaryIndexes", "LocalSecondaryIndexes"),
    ):
        if inputs.get(key):
            out[cfn] = [secondary_index(i, inputs.get("hashKey")) for i in inputs[key] if isinstance(i, dict)]
    if (throughput := provisioned_throughput(inputs)) is not None:
        out["ProvisionedThroughput"] = throughput
    if isinstance(ttl := inputs.get("ttl"), dict) and ttl.get("enabled"):
        out["TimeToLiveSpecification"] = {"AttributeName": ttl.get("attributeName"), "Enabled": True}
    if inputs.get("streamEnabled"):
        out["StreamSpecification"] = {"StreamViewType": inputs.get("streamViewType")}
    if isinstance(pitr := inputs.get("pointInTimeRecovery"), dict):
        out["PointInTimeRecoverySpecification"] = {"PointInTimeRecoveryEnabled": pitr.get("enabled")}
    if isinstance(sse := inputs.get("serverSideEncryption"), dict):
        out["SSESpecification"] = {"SSEEnabled": sse.get("enabled"), "KMSMasterKeyId": sse.get("kmsKeyArn")}
    return out


_DYNAMODB_LAID_OUT = frozenset(
    {
        "attributes",
        "hashKey",
        "rangeKey",
        "globalSecondaryIndexes",
        "localSecondaryIndexes",
        "readCapacity",
        "writeCapacity",
        "ttl",
        "streamEnabled",
        "streamViewType",
        "pointInTimeRecovery",
        "serverSideEncryption",
    }
)


def rules(inputs: Inputs, key: str, peer: str) -> list[dict[str, Any]]:
    """A security group's inline rules, one CloudFormation rule per CIDR or peer group (the provider takes lists)."""
    out: list[dict[str, Any]] = []
    for rule in inputs.get(key) or []:
        if not isinstance(rule, dict):
            continue
        base = {
            "IpProtocol": rule.get("protocol"),
            "FromPort": rule.get("fromPort"),
            "ToPort": rule.get("toPort"),
            "Description": rule.get("description"),
        }
        targets = [{"CidrIp": c} for c in rule.get("cidrBlocks") or []]
        targets += [{"CidrIpv6": c} for c in rule.get("ipv6CidrBlocks") or []]
        targets += [{peer: g} for g in rule.get("securityGroups") or []]
        out.extend({**base, **t} for t in targets or [{}])
    return out


def security_group(inputs: Inputs) -> Inputs:
    out = {k: v for k, v in inputs.items() if k not in ("ingress", "egress")}
    out["SecurityGroupIngress"] = rules(inputs, "ingress", "SourceSecurityGroupId")
    out["SecurityGroupEgress"] = rules(inputs, "egress", "DestinationSecurityGroupId")
    return out


def group_rule(inputs: Inputs) -> Inputs:
    """``aws.ec2.SecurityGroupRule``: one rule of either direction, with a list of CIDRs."""
    cidrs = inputs.get("cidrBlocks") or []
    peer = "SourceSecurityGroupId" if inputs.get("type") == "ingress" else "DestinationSecurityGroupId"
    out = {
        "GroupId": inputs.get("securityGroupId"),
        "IpProtocol": inputs.get("protocol"),
        "FromPort": inputs.get("fromPort"),
        "ToPort": inputs.get("toPort"),
        "Description": inputs.get("description"),
        peer: inputs.get("sourceSecurityGroupId"),
    }
    return {**out, "CidrIp": cidrs[0]} if cidrs else out


def target_group(inputs: Inputs) -> Inputs:
    """A target group's ``healthCheck`` block as CloudFormation's top-level ``HealthCheck*`` properties."""
    out = {k: v for k, v in inputs.items() if k != "healthCheck"}
    check = inputs.get("healthCheck")
    if isinstance(check, dict):
        for key, cfn in _HEALTH_CHECK.items():
            if check.get(key) is not None:
                out[cfn] = check[key]
        if check.get("matcher") is not None:
            out["Matcher"] = {"GrpcCode" if inputs.get("protocolVersion") == "GRPC" else "HttpCode": check["matcher"]}
    return out


_HEALTH_CHECK = {
    "enabled": "HealthCheckEnabled",
    "healthyThreshold": "HealthyThresholdCount",
    "unhealthyThreshold": "UnhealthyThresholdCount",
    "interval": "HealthCheckIntervalSeconds",
    "timeout": "HealthCheckTimeoutSeconds",
    "path": "HealthCheckPath",
    "port": "HealthCheckPort",
    "protocol": "HealthCheckProtocol",
}


def txt_value(value: Any) -> Any:
    """A TXT or SPF value as Route 53 receives it from the provider: wrapped in quotes, so that a ``""`` inside
    (the provider's way to split a value over 255 characters) separates two character-strings
    (https://registry.terraform.io/providers/hashicorp/aws/latest/docs/resources/route53_record#records).
    CloudFormation's template takes the quoted form itself, which is what cfn-lint's pattern reads."""
    if isinstance(value, str) and not (len(value) > 1 and value.startswith('"') and value.endswith('"')):
        return f'"{value}"'
    return value


def record(inputs: Inputs) -> Inputs:
    """A Route 53 record's routing-policy blocks as CloudFormation's flat ``Weight``/``Region``/``Failover``, and
    its TXT values quoted as the provider sends them."""
    out = {k: v for k, v in inputs.items() if not k.endswith("RoutingPolicies") and k != "aliases"}
    if str(inputs.get("type")).upper() in ("TXT", "SPF") and isinstance(inputs.get("records"), list):
        out["records"] = [txt_value(v) for v in inputs["records"]]
    for key, pick in (
        ("weightedRoutingPolicies", lambda p: {"Weight": p.get("weight")}),
        ("latencyRoutingPolicies", lambda p: {"Region": p.get("region")}),
        ("failoverRoutingPolicies", lambda p: {"Failover": p.get("type")}),
        (
            "geolocationRoutingPolicies",
            lambda p: {
                "GeoLocation": {
                    "ContinentCode": p.get("continent"),
                    "CountryCode": p.get("country"),
                    "SubdivisionCode": p.get("subdivision"),
                }
            },
        ),
    ):
        policies = inputs.get(key)
        if isinstance(policies, list) and policies and isinstance(policies[0], dict):
            out.update(pick(policies[0]))
    aliases = inputs.get("aliases")
    if isinstance(aliases, list) and aliases and isinstance(aliases[0], dict):
        alias = aliases[0]
        out["AliasTarget"] = {
            "DNSName": alias.get("name"),
            "HostedZoneId": alias.get("zoneId"),
            "EvaluateTargetHealth": alias.get("evaluateTargetHealth"),
        }
    return out


def launch_template(inputs: Inputs) -> Inputs:
    """A launch template's inputs are CloudFormation's ``LaunchTemplateData``, but for its name."""
    data = {
        k: v
        for k, v in inputs.items()
        if k not in ("name", "namePrefix", "description", "tags", "updateDefaultVersion")
    }
    if "vpcSecurityGroupIds" in data:
        data["SecurityGroupIds"] = data.pop("vpcSecurityGroupIds")
    return {"LaunchTemplateName": inputs.get("name"), "LaunchTemplateData": data}


def cluster(inputs: Inputs) -> Inputs:
    out = {k: v for k, v in inputs.items() if k != "enabledClusterLogTypes"}
    if isinstance(types := inputs.get("enabledClusterLogTypes"), list):
        out["Logging"] = {"ClusterLogging": {"EnabledTypes": [{"Type": t} for t in types]}}
    return out


def load_balancer(inputs: Inputs) -> Inputs:
    out = {k: v for k, v in inputs.items() if k != "internal"}
    if isinstance(inputs.get("internal"), bool):
        out["Scheme"] = "internal" if inputs["internal"] else "internet-facing"
    return out


def listener(inputs: Inputs) -> Inputs:
    out = {k: v for k, v in inputs.items() if k != "certificateArn"}
    if inputs.get("certificateArn") is not None:
        out["Certificates"] = [{"CertificateArn": inputs["certificateArn"]}]
    return out


def msk(inputs: Inputs) -> Inputs:
    """MSK's flags the provider takes as booleans, which CloudFormation wraps in ``{Enabled: ...}``."""
    out = dict(inputs)
    auth = inputs.get("clientAuthentication")
    if isinstance(auth, dict) and isinstance(sasl := auth.get("sasl"), dict):
        out["clientAuthentication"] = {
            **auth,
            "sasl": {k: ({"Enabled": v} if isinstance(v, bool) else v) for k, v in sasl.items()},
        }
    encryption = inputs.get("encryptionInfo")
    if isinstance(encryption, dict) and encryption.get("encryptionAtRestKmsKeyArn") is not None:
        rest = {"DataVolumeKMSKeyId": encryption["encryptionAtRestKmsKeyArn"]}
        out["encryptionInfo"] = {**encryption, "EncryptionAtRest": rest}
    return out


def lustre(inputs: Inputs) -> Inputs:
    """An FSx for Lustre file system: CloudFormation's one FSx type, with the Lustre settings in their own block."""
    top = {"storageCapacity", "storageType", "subnetIds", "securityGroupIds", "kmsKeyId", "fileSystemTypeVersion"}
    out = {k: v for k, v in inputs.items() if k in top}
    out["FileSystemType"] = "LUSTRE"
    out["LustreConfiguration"] = {k: v for k, v in inputs.items() if k not in top and k != "tags"}
    return out


def backup_plan(inputs: Inputs) -> Inputs:
    rules = [
        {
            "RuleName": r.get("ruleName"),
            "TargetBackupVault": r.get("targetVaultName"),
            "ScheduleExpression": r.get("schedule"),
            "StartWindowMinutes": r.get("startWindow"),
            "CompletionWindowMinutes": r.get("completionWindow"),
            "Lifecycle": {
                "DeleteAfterDays": (r.get("lifecycle") or {}).get("deleteAfter"),
                "MoveToColdStorageAfterDays": (r.get("lifecycle") or {}).get("coldStorageAfter"),
            }
            if isinstance(r.get("lifecycle"), dict)
            else None,
        }
        for r in inputs.get("rules") or []
        if isinstance(r, dict)
    ]
    return {"BackupPlan": {"BackupPlanName": inputs.get("name"), "BackupPlanRule": rules}}


def metric_filter(inputs: Inputs) -> Inputs:
    out = {k: v for k, v in inputs.items() if k not in ("metricTransformation", "pattern", "name")}
    out["FilterPattern"], out["FilterName"] = inputs.get("pattern"), inputs.get("name")
    if isinstance(m := inputs.get("metricTransformation"), dict):
        out["MetricTransformations"] = [
            {
                "MetricName": m.get("name"),
                "MetricNamespace": m.get("namespace"),
                "MetricValue": m.get("value"),
                "DefaultValue": m.get("defaultValue"),
                "Unit": m.get("unit"),
            }
        ]
    return out


def auto_scaling_group(inputs: Inputs) -> Inputs:
    out = {k: v for k, v in inputs.items() if k != "launchTemplate"}
    if isinstance(template := inputs.get("launchTemplate"), dict):
        out["LaunchTemplate"] = {
            "LaunchTemplateId": template.get("id"),
            "LaunchTemplateName": template.get("name"),
            "Version": template.get("version"),
        }
    return out


def flow_log(inputs: Inputs) -> Inputs:
    out = dict(inputs)
    for key, kind in (("vpcId", "VPC"), ("subnetId", "Subnet"), ("eniId", "NetworkInterface")):
        if inputs.get(key) is not None:
            out["ResourceId"], out["ResourceType"] = out.pop(key), kind
    return out


def policy_on(key: str, cfn: str, listed: bool) -> Callable[[Inputs], Inputs]:
    """A resource policy the provider attaches to one resource (``key``), as CloudFormation's policy resource."""

    def prepare(inputs: Inputs) -> Inputs:
        target = inputs.get(key)
        return {"PolicyDocument": document(inputs.get("policy")), cfn: [target] if listed else target}

    return prepare


def health_check(inputs: Inputs) -> Inputs:
    """A Route 53 health check's settings are CloudFormation's ``HealthCheckConfig`` block, its alarm a pair."""
    config = {k: v for k, v in inputs.items() if k in _HEALTH_CHECK_CONFIG}
    for key, cfn in (
        ("fqdn", "FullyQualifiedDomainName"),
        ("invertHealthcheck", "Inverted"),
        ("childHealthThreshold", "HealthThreshold"),
    ):
        if inputs.get(key) is not None:
            config[cfn] = inputs[key]
    if inputs.get("cloudwatchAlarmName") is not None:
        config["AlarmIdentifier"] = {
            "Name": inputs["cloudwatchAlarmName"],
            "Region": inputs.get("cloudwatchAlarmRegion"),
        }
    return {"HealthCheckConfig": config, "HealthCheckTags": inputs.get("tags")}


# The provider's inputs that are CloudFormation's ``HealthCheckConfig`` fields but for case.
_HEALTH_CHECK_CONFIG = frozenset(
    {
        "type",
        "ipAddress",
        "port",
        "resourcePath",
        "searchString",
        "requestInterval",
        "failureThreshold",
        "measureLatency",
        "enableSni",
        "childHealthchecks",
        "insufficientDataHealthStatus",
        "regions",
        "routingControlArn",
    }
)


def composite_alarm(inputs: Inputs) -> Inputs:
    """The ``actionsSuppressor`` block as CloudFormation's three flat ``ActionsSuppressor*`` properties."""
    out = {k: v for k, v in inputs.items() if k != "actionsSuppressor"}
    if isinstance(suppressor := inputs.get("actionsSuppressor"), dict):
        out["ActionsSuppressor"] = suppressor.get("alarm")
        out["ActionsSuppressorExtensionPeriod"] = suppressor.get("extensionPeriod")
        out["ActionsSuppressorWaitPeriod"] = suppressor.get("waitPeriod")
    return out


def schedule(inputs: Inputs) -> Inputs:
    """A schedule's ECS target tags are a map in the provider and a list of maps in CloudFormation: dropped."""
    target = inputs.get("target")
    if isinstance(target, dict) and isinstance(ecs := target.get("ecsParameters"), dict):
        ecs = {k: v for k, v in ecs.items() if k != "tags"}
        return {**inputs, "target": {**target, "ecsParameters": ecs}}
    return inputs


def alias(inputs: Inputs) -> Inputs:
    """A Lambda alias's ``additionalVersionWeights`` map (version -> weight) as CloudFormation's list of pairs."""
    out = dict(inputs)
    routing = inputs.get("routingConfig")
    if isinstance(routing, dict) and isinstance(weights := routing.get("additionalVersionWeights"), dict):
        out["routingConfig"] = {
            "AdditionalVersionWeights": [{"FunctionVersion": v, "FunctionWeight": w} for v, w in weights.items()]
        }
    return out


def lambda_function(inputs: Inputs) -> Inputs:
    """A Lambda function without ``reservedConcurrentExecutions: -1``, the provider's "no reservation".

    The Pulumi/Terraform provider reads -1 as unreserved and then calls no PutFunctionConcurrency (its docs: "A value
    of 0 disables lambda from being triggered and -1 removes any concurrency limitations. Defaults to Unreserved
    Concurrency Limits -1", https://www.pulumi.com/registry/packages/aws/api-docs/lambda/function/ and
    hashicorp/terraform-provider-aws website/docs/r/lambda_function.html.markdown), so AWS never sees it; placed as
    CloudFormation's ReservedConcurrentExecutions (minimum 0) it would read as a value the service refuses.
    """
    if inputs.get("reservedConcurrentExecutions") in (-1, -1.0, "-1"):
        return {k: v for k, v in inputs.items() if k != "reservedConcurrentExecutions"}
    return inputs


def instance_profile(inputs: Inputs) -> Inputs:
    out = {k: v for k, v in inputs.items() if k != "role"}
    if inputs.get("role") is not None:
        out["Roles"] = [inputs["role"]]
    return out


def workgroup(inputs: Inputs) -> Inputs:
    """An Athena workgroup's result encryption names its key ``kmsKeyArn``, CloudFormation's ``KmsKey``."""
    out = dict(inputs)
    config = inputs.get("configuration")
    results = config.get("resultConfiguration") if isinstance(config, dict) else None
    if isinstance(config, dict) and isinstance(results, dict):
        encryption = results.get("encryptionConfiguration")
        if isinstance(encryption, dict) and "kmsKeyArn" in encryption:
            encryption = {
                **{k: v for k, v in encryption.items() if k != "kmsKeyArn"},
                "KmsKey": encryption["kmsKeyArn"],
            }
            out["configuration"] = {**config, "resultConfiguration": {**results, "encryptionConfiguration": encryption}}
    return out


def web_acl(inputs: Inputs) -> Inputs:
    """A web ACL's rules are CloudFormation's but for case; its custom response bodies are a list of blocks named
    by ``key`` where CloudFormation has a map. The rules as one JSON string (``ruleJson``) and the association
    config (a list of per-service blocks, a map in CloudFormation) are dropped."""
    out = {k: v for k, v in inputs.items() if k not in ("ruleJson", "associationConfig", "customResponseBodies")}
    bodies = inputs.get("customResponseBodies")
    if isinstance(bodies, list) and all(isinstance(b, dict) for b in bodies):
        out["CustomResponseBodies"] = {
            b.get("key"): {"Content": b.get("content"), "ContentType": b.get("contentType")} for b in bodies
        }
    return out


def firehose(inputs: Inputs) -> Inputs:
    """A Firehose stream's S3 destination: the provider's flat buffering inputs are CloudFormation's
    ``BufferingHints``. Only the fields laid out alike are carried; the other destinations are dropped."""
    out: Inputs = {"DeliveryStreamName": inputs.get("name")}
    if inputs.get("kinesisSourceConfiguration") is not None:
        out["DeliveryStreamType"] = "KinesisStreamAsSource"
    s3 = inputs.get("extendedS3Configuration")
    if isinstance(s3, dict):
        hints = {"SizeInMBs": s3.get("bufferingSize"), "IntervalInSeconds": s3.get("bufferingInterval")}
        out["ExtendedS3DestinationConfiguration"] = {
            "BucketARN": s3.get("bucketArn"),
            "RoleARN": s3.get("roleArn"),
            "BufferingHints": {k: v for k, v in hints.items() if v is not None},
            **{cfn: s3.get(key) for key, cfn in _FIREHOSE_S3.items()},
        }
    return out


_FIREHOSE_S3 = {
    "compressionFormat": "CompressionFormat",
    "prefix": "Prefix",
    "errorOutputPrefix": "ErrorOutputPrefix",
    "fileExtension": "FileExtension",
    "customTimeZone": "CustomTimeZone",
    "s3BackupMode": "S3BackupMode",
    "cloudwatchLoggingOptions": "CloudWatchLoggingOptions",
}


def without(*keys: str) -> Callable[[Inputs], Inputs]:
    """Inputs that would land on a CloudFormation property of another meaning or shape, dropped."""

    def prepare(inputs: Inputs) -> Inputs:
        return {k: v for k, v in inputs.items() if k not in keys}

    return prepare


def chain(*steps: Callable[[Inputs], Inputs]) -> Callable[[Inputs], Inputs]:
    def prepare(inputs: Inputs) -> Inputs:
        for step in steps:
            inputs = step(inputs)
        return inputs

    return prepare
