"""Pulumi AWS resources as the CloudFormation resources that describe the same API call, for cfn-lint to judge.

The Pulumi AWS provider and CloudFormation both wrap one service API, so most inputs are the same field under
another name: ``visibilityTimeoutSeconds`` is SQS's ``VisibilityTimeout`` in both. Each entry below names the
CloudFormation type and the inputs whose names differ; ``cfn_shape`` matches every other input to the
CloudFormation schema case-insensitively and drops what it cannot place. A few inputs are laid out differently
(a DynamoDB key schema as ``hashKey``/``rangeKey``, a security group's rule with a list of CIDRs, a target
group's health check as one block): ``prepare`` rewrites those into CloudFormation's layout first.

A type is here when CloudFormation's schema for it, or a cfn-lint rule on it, holds something the service
refuses at create time. Dropping an input is always safe: the check then says nothing about it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tokenplane.proof.deployability import cfn_s3

Inputs = dict[str, Any]


@dataclass(frozen=True)
class CfnType:
    """How one Pulumi AWS type reads as a CloudFormation resource.

    Attributes:
        type: the CloudFormation type, e.g. ``AWS::SQS::Queue``.
        renames: Pulumi input -> CloudFormation property, where the names differ beyond case.
        prepare: rewrites inputs laid out differently (runs before ``renames``).
        variant: the CloudFormation type for these inputs, where one Pulumi type stands for two (a security
            group rule of either direction).
    """

    type: str
    renames: dict[str, str] = field(default_factory=dict)
    prepare: Callable[[Inputs], Inputs] | None = None
    variant: Callable[[Inputs], str] | None = None

    def type_for(self, inputs: Inputs) -> str:
        return self.variant(inputs) if self.variant is not None else self.type


def _json(value: Any) -> Any:
    """A JSON document the provider takes as a string (a policy, a redrive policy), as CloudFormation's object."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _documents(*keys: str) -> Callable[[Inputs], Inputs]:
    def prepare(inputs: Inputs) -> Inputs:
        return {k: (_json(v) if k in keys else v) for k, v in inputs.items()}

    return prepare


def _key_schema(hash_key: Any, range_key: Any) -> list[dict[str, Any]]:
    keys = [{"AttributeName": hash_key, "KeyType": "HASH"}] if hash_key is not None else []
    return keys + ([{"AttributeName": range_key, "KeyType": "RANGE"}] if range_key is not None else [])


def _throughput(block: dict[str, Any]) -> dict[str, Any] | None:
    read, write = block.get("readCapacity"), block.get("writeCapacity")
    if read is None and write is None:
        return None
    return {"ReadCapacityUnits": read, "WriteCapacityUnits": write}


def _index(index: dict[str, Any], hash_key: Any) -> dict[str, Any]:
    projection = {"ProjectionType": index.get("projectionType"), "NonKeyAttributes": index.get("nonKeyAttributes")}
    out = {
        "IndexName": index.get("name"),
        "KeySchema": _key_schema(index.get("hashKey", hash_key), index.get("rangeKey")),
        "Projection": {k: v for k, v in projection.items() if v is not None},
    }
    if (throughput := _throughput(index)) is not None:
        out["ProvisionedThroughput"] = throughput
    return out


def _dynamodb_table(inputs: Inputs) -> Inputs:
    """The provider's ``attributes``/``hashKey``/``rangeKey`` and index blocks as CloudFormation's key schemas."""
    out = {k: v for k, v in inputs.items() if k not in _DYNAMODB_LAID_OUT}
    out["AttributeDefinitions"] = [
        {"AttributeName": a.get("name"), "AttributeType": a.get("type")}
        for a in inputs.get("attributes") or []
        if isinstance(a, dict)
    ]
    out["KeySchema"] = _key_schema(inputs.get("hashKey"), inputs.get("rangeKey"))
    for key, cfn in (
        ("globalSecondaryIndexes", "GlobalSecondaryIndexes"),
        ("localSecondaryIndexes", "LocalSecondaryIndexes"),
    ):
        if inputs.get(key):
            out[cfn] = [_index(i, inputs.get("hashKey")) for i in inputs[key] if isinstance(i, dict)]
    if (throughput := _throughput(inputs)) is not None:
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


def _rules(inputs: Inputs, key: str, peer: str) -> list[dict[str, Any]]:
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


def _security_group(inputs: Inputs) -> Inputs:
    out = {k: v for k, v in inputs.items() if k not in ("ingress", "egress")}
    out["SecurityGroupIngress"] = _rules(inputs, "ingress", "SourceSecurityGroupId")
    out["SecurityGroupEgress"] = _rules(inputs, "egress", "DestinationSecurityGroupId")
    return out


def _group_rule(inputs: Inputs) -> Inputs:
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


def _target_group(inputs: Inputs) -> Inputs:
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


def _txt_value(value: Any) -> Any:
    """A TXT or SPF value as Route 53 receives it from the provider: wrapped in quotes, so that a ``""`` inside
    (the provider's way to split a value over 255 characters) separates two character-strings
    (https://registry.terraform.io/providers/hashicorp/aws/latest/docs/resources/route53_record#records).
    CloudFormation's template takes the quoted form itself, which is what cfn-lint's pattern reads."""
    if isinstance(value, str) and not (len(value) > 1 and value.startswith('"') and value.endswith('"')):
        return f'"{value}"'
    return value


def _record(inputs: Inputs) -> Inputs:
    """A Route 53 record's routing-policy blocks as CloudFormation's flat ``Weight``/``Region``/``Failover``, and
    its TXT values quoted as the provider sends them."""
    out = {k: v for k, v in inputs.items() if not k.endswith("RoutingPolicies") and k != "aliases"}
    if str(inputs.get("type")).upper() in ("TXT", "SPF") and isinstance(inputs.get("records"), list):
        out["records"] = [_txt_value(v) for v in inputs["records"]]
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


def _launch_template(inputs: Inputs) -> Inputs:
    """A launch template's inputs are CloudFormation's ``LaunchTemplateData``, but for its name."""
    data = {
        k: v
        for k, v in inputs.items()
        if k not in ("name", "namePrefix", "description", "tags", "updateDefaultVersion")
    }
    if "vpcSecurityGroupIds" in data:
        data["SecurityGroupIds"] = data.pop("vpcSecurityGroupIds")
    return {"LaunchTemplateName": inputs.get("name"), "LaunchTemplateData": data}


def _cluster(inputs: Inputs) -> Inputs:
    out = {k: v for k, v in inputs.items() if k != "enabledClusterLogTypes"}
    if isinstance(types := inputs.get("enabledClusterLogTypes"), list):
        out["Logging"] = {"ClusterLogging": {"EnabledTypes": [{"Type": t} for t in types]}}
    return out


def _load_balancer(inputs: Inputs) -> Inputs:
    out = {k: v for k, v in inputs.items() if k != "internal"}
    if isinstance(inputs.get("internal"), bool):
        out["Scheme"] = "internal" if inputs["internal"] else "internet-facing"
    return out


def _listener(inputs: Inputs) -> Inputs:
    out = {k: v for k, v in inputs.items() if k != "certificateArn"}
    if inputs.get("certificateArn") is not None:
        out["Certificates"] = [{"CertificateArn": inputs["certificateArn"]}]
    return out


def _msk(inputs: Inputs) -> Inputs:
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


def _lustre(inputs: Inputs) -> Inputs:
    """An FSx for Lustre file system: CloudFormation's one FSx type, with the Lustre settings in their own block."""
    top = {"storageCapacity", "storageType", "subnetIds", "securityGroupIds", "kmsKeyId", "fileSystemTypeVersion"}
    out = {k: v for k, v in inputs.items() if k in top}
    out["FileSystemType"] = "LUSTRE"
    out["LustreConfiguration"] = {k: v for k, v in inputs.items() if k not in top and k != "tags"}
    return out


def _backup_plan(inputs: Inputs) -> Inputs:
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


def _metric_filter(inputs: Inputs) -> Inputs:
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


def _auto_scaling_group(inputs: Inputs) -> Inputs:
    out = {k: v for k, v in inputs.items() if k != "launchTemplate"}
    if isinstance(template := inputs.get("launchTemplate"), dict):
        out["LaunchTemplate"] = {
            "LaunchTemplateId": template.get("id"),
            "LaunchTemplateName": template.get("name"),
            "Version": template.get("version"),
        }
    return out


def _flow_log(inputs: Inputs) -> Inputs:
    out = dict(inputs)
    for key, kind in (("vpcId", "VPC"), ("subnetId", "Subnet"), ("eniId", "NetworkInterface")):
        if inputs.get(key) is not None:
            out["ResourceId"], out["ResourceType"] = out.pop(key), kind
    return out


def _policy_on(key: str, cfn: str, listed: bool) -> Callable[[Inputs], Inputs]:
    """A resource policy the provider attaches to one resource (``key``), as CloudFormation's policy resource."""

    def prepare(inputs: Inputs) -> Inputs:
        target = inputs.get(key)
        return {"PolicyDocument": _json(inputs.get("policy")), cfn: [target] if listed else target}

    return prepare


def _health_check(inputs: Inputs) -> Inputs:
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


def _composite_alarm(inputs: Inputs) -> Inputs:
    """The ``actionsSuppressor`` block as CloudFormation's three flat ``ActionsSuppressor*`` properties."""
    out = {k: v for k, v in inputs.items() if k != "actionsSuppressor"}
    if isinstance(suppressor := inputs.get("actionsSuppressor"), dict):
        out["ActionsSuppressor"] = suppressor.get("alarm")
        out["ActionsSuppressorExtensionPeriod"] = suppressor.get("extensionPeriod")
        out["ActionsSuppressorWaitPeriod"] = suppressor.get("waitPeriod")
    return out


def _schedule(inputs: Inputs) -> Inputs:
    """A schedule's ECS target tags are a map in the provider and a list of maps in CloudFormation: dropped."""
    target = inputs.get("target")
    if isinstance(target, dict) and isinstance(ecs := target.get("ecsParameters"), dict):
        ecs = {k: v for k, v in ecs.items() if k != "tags"}
        return {**inputs, "target": {**target, "ecsParameters": ecs}}
    return inputs


def _alias(inputs: Inputs) -> Inputs:
    """A Lambda alias's ``additionalVersionWeights`` map (version -> weight) as CloudFormation's list of pairs."""
    out = dict(inputs)
    routing = inputs.get("routingConfig")
    if isinstance(routing, dict) and isinstance(weights := routing.get("additionalVersionWeights"), dict):
        out["routingConfig"] = {
            "AdditionalVersionWeights": [{"FunctionVersion": v, "FunctionWeight": w} for v, w in weights.items()]
        }
    return out


def _instance_profile(inputs: Inputs) -> Inputs:
    out = {k: v for k, v in inputs.items() if k != "role"}
    if inputs.get("role") is not None:
        out["Roles"] = [inputs["role"]]
    return out


def _workgroup(inputs: Inputs) -> Inputs:
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


def _web_acl(inputs: Inputs) -> Inputs:
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


def _firehose(inputs: Inputs) -> Inputs:
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


def _without(*keys: str) -> Callable[[Inputs], Inputs]:
    """Inputs that would land on a CloudFormation property of another meaning or shape, dropped."""

    def prepare(inputs: Inputs) -> Inputs:
        return {k: v for k, v in inputs.items() if k not in keys}

    return prepare


def _chain(*steps: Callable[[Inputs], Inputs]) -> Callable[[Inputs], Inputs]:
    def prepare(inputs: Inputs) -> Inputs:
        for step in steps:
            inputs = step(inputs)
        return inputs

    return prepare


TYPES: dict[str, CfnType] = {
    "aws:sqs/queue:Queue": CfnType(
        "AWS::SQS::Queue",
        {
            "name": "QueueName",
            "visibilityTimeoutSeconds": "VisibilityTimeout",
            "messageRetentionSeconds": "MessageRetentionPeriod",
            "receiveWaitTimeSeconds": "ReceiveMessageWaitTimeSeconds",
            "maxMessageSize": "MaximumMessageSize",
        },
        _documents("redrivePolicy", "redriveAllowPolicy"),
    ),
    "aws:sqs/queuePolicy:QueuePolicy": CfnType(
        "AWS::SQS::QueuePolicy",
        {"policy": "PolicyDocument"},
        _chain(_documents("policy"), lambda i: {**i, "Queues": [i.get("queueUrl")]}),
    ),
    "aws:sns/topic:Topic": CfnType("AWS::SNS::Topic", {"name": "TopicName"}),
    "aws:cloudwatch/metricAlarm:MetricAlarm": CfnType(
        "AWS::CloudWatch::Alarm", {"name": "AlarmName", "okActions": "OKActions"}
    ),
    "aws:cloudwatch/logGroup:LogGroup": CfnType("AWS::Logs::LogGroup", {"name": "LogGroupName"}),
    "aws:cloudwatch/eventRule:EventRule": CfnType("AWS::Events::Rule", {}, _documents("eventPattern")),
    "aws:dynamodb/table:Table": CfnType("AWS::DynamoDB::Table", {"name": "TableName"}, _dynamodb_table),
    "aws:lambda/function:Function": CfnType("AWS::Lambda::Function", {"name": "FunctionName"}),
    "aws:ec2/securityGroup:SecurityGroup": CfnType(
        "AWS::EC2::SecurityGroup", {"description": "GroupDescription", "name": "GroupName"}, _security_group
    ),
    "aws:ec2/securityGroupRule:SecurityGroupRule": CfnType(
        "AWS::EC2::SecurityGroupIngress",
        prepare=_group_rule,
        variant=lambda i: (
            "AWS::EC2::SecurityGroupEgress" if i.get("type") == "egress" else "AWS::EC2::SecurityGroupIngress"
        ),
    ),
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": CfnType(
        "AWS::EC2::SecurityGroupIngress",
        {
            "securityGroupId": "GroupId",
            "cidrIpv4": "CidrIp",
            "cidrIpv6": "CidrIpv6",
            "referencedSecurityGroupId": "SourceSecurityGroupId",
            "prefixListId": "SourcePrefixListId",
        },
    ),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": CfnType(
        "AWS::EC2::SecurityGroupEgress",
        {
            "securityGroupId": "GroupId",
            "cidrIpv4": "CidrIp",
            "cidrIpv6": "CidrIpv6",
            "referencedSecurityGroupId": "DestinationSecurityGroupId",
            "prefixListId": "DestinationPrefixListId",
        },
    ),
    "aws:ec2/vpc:Vpc": CfnType("AWS::EC2::VPC"),
    "aws:ec2/subnet:Subnet": CfnType("AWS::EC2::Subnet"),
    "aws:ec2/vpcEndpoint:VpcEndpoint": CfnType(
        "AWS::EC2::VPCEndpoint", {"policy": "PolicyDocument"}, _documents("policy")
    ),
    "aws:ec2/launchTemplate:LaunchTemplate": CfnType("AWS::EC2::LaunchTemplate", {}, _launch_template),
    "aws:ebs/volume:Volume": CfnType("AWS::EC2::Volume", {"type": "VolumeType"}),
    "aws:ecr/repository:Repository": CfnType(
        "AWS::ECR::Repository", {"name": "RepositoryName", "encryptionConfigurations": "EncryptionConfiguration"}
    ),
    "aws:eks/cluster:Cluster": CfnType("AWS::EKS::Cluster", {"vpcConfig": "ResourcesVpcConfig"}, _cluster),
    "aws:eks/nodeGroup:NodeGroup": CfnType(
        "AWS::EKS::Nodegroup", {"nodeGroupName": "NodegroupName", "nodeRoleArn": "NodeRole", "subnetIds": "Subnets"}
    ),
    "aws:eks/addon:Addon": CfnType("AWS::EKS::Addon", {"resolveConflictsOnCreate": "ResolveConflicts"}),
    "aws:eks/accessEntry:AccessEntry": CfnType("AWS::EKS::AccessEntry", {"userName": "Username"}),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": CfnType("AWS::EKS::PodIdentityAssociation"),
    "aws:iam/role:Role": CfnType(
        "AWS::IAM::Role",
        {"name": "RoleName", "assumeRolePolicy": "AssumeRolePolicyDocument"},
        _documents("assumeRolePolicy"),
    ),
    "aws:iam/policy:Policy": CfnType(
        "AWS::IAM::ManagedPolicy", {"name": "ManagedPolicyName", "policy": "PolicyDocument"}, _documents("policy")
    ),
    "aws:iam/rolePolicy:RolePolicy": CfnType(
        "AWS::IAM::RolePolicy",
        {"name": "PolicyName", "role": "RoleName", "policy": "PolicyDocument"},
        _documents("policy"),
    ),
    "aws:s3/bucket:Bucket": CfnType("AWS::S3::Bucket", {"bucket": "BucketName"}),
    "aws:s3/bucketV2:BucketV2": CfnType("AWS::S3::Bucket", {"bucket": "BucketName"}),
    "aws:secretsmanager/secret:Secret": CfnType("AWS::SecretsManager::Secret"),
    "aws:kms/key:Key": CfnType(
        "AWS::KMS::Key",
        {
            "customerMasterKeySpec": "KeySpec",
            "deletionWindowInDays": "PendingWindowInDays",
            "policy": "KeyPolicy",
            "isEnabled": "Enabled",
        },
        _documents("policy"),
    ),
    "aws:kms/alias:Alias": CfnType("AWS::KMS::Alias", {"name": "AliasName"}),
    "aws:route53/record:Record": CfnType(
        "AWS::Route53::RecordSet",
        {"records": "ResourceRecords", "zoneId": "HostedZoneId", "multivalueAnswerRoutingPolicy": "MultiValueAnswer"},
        _record,
    ),
    "aws:elasticache/replicationGroup:ReplicationGroup": CfnType(
        "AWS::ElastiCache::ReplicationGroup",
        {
            "description": "ReplicationGroupDescription",
            "nodeType": "CacheNodeType",
            "parameterGroupName": "CacheParameterGroupName",
            "subnetGroupName": "CacheSubnetGroupName",
            "multiAzEnabled": "MultiAZEnabled",
            "maintenanceWindow": "PreferredMaintenanceWindow",
            "preferredCacheClusterAzs": "PreferredCacheClusterAZs",
        },
    ),
    "aws:elasticache/subnetGroup:SubnetGroup": CfnType(
        "AWS::ElastiCache::SubnetGroup", {"name": "CacheSubnetGroupName"}
    ),
    "aws:msk/cluster:Cluster": CfnType("AWS::MSK::Cluster", {}, _msk),
    "aws:rds/instance:Instance": CfnType(
        "AWS::RDS::DBInstance",
        {
            "instanceClass": "DBInstanceClass",
            "identifier": "DBInstanceIdentifier",
            "dbName": "DBName",
            "username": "MasterUsername",
            "password": "MasterUserPassword",
            "multiAz": "MultiAZ",
            "dbSubnetGroupName": "DBSubnetGroupName",
            "vpcSecurityGroupIds": "VPCSecurityGroups",
            "performanceInsightsEnabled": "EnablePerformanceInsights",
            "parameterGroupName": "DBParameterGroupName",
            "caCertIdentifier": "CACertificateIdentifier",
            "backupWindow": "PreferredBackupWindow",
            "maintenanceWindow": "PreferredMaintenanceWindow",
            "iamDatabaseAuthenticationEnabled": "EnableIAMDatabaseAuthentication",
            "enabledCloudwatchLogsExports": "EnableCloudwatchLogsExports",
        },
    ),
    "aws:rds/subnetGroup:SubnetGroup": CfnType(
        "AWS::RDS::DBSubnetGroup", {"name": "DBSubnetGroupName", "description": "DBSubnetGroupDescription"}
    ),
    "aws:lb/targetGroup:TargetGroup": CfnType("AWS::ElasticLoadBalancingV2::TargetGroup", {}, _target_group),
    "aws:lb/loadBalancer:LoadBalancer": CfnType(
        "AWS::ElasticLoadBalancingV2::LoadBalancer", {"loadBalancerType": "Type"}, _load_balancer
    ),
    "aws:lb/listener:Listener": CfnType("AWS::ElasticLoadBalancingV2::Listener", {}, _listener),
    "aws:ssm/parameter:Parameter": CfnType("AWS::SSM::Parameter"),
    "aws:efs/fileSystem:FileSystem": CfnType("AWS::EFS::FileSystem"),
    "aws:efs/mountTarget:MountTarget": CfnType("AWS::EFS::MountTarget"),
    "aws:efs/accessPoint:AccessPoint": CfnType("AWS::EFS::AccessPoint"),
    "aws:fsx/lustreFileSystem:LustreFileSystem": CfnType("AWS::FSx::FileSystem", {}, _lustre),
    "aws:kinesis/stream:Stream": CfnType("AWS::Kinesis::Stream", {"retentionPeriod": "RetentionPeriodHours"}),
    "aws:sfn/stateMachine:StateMachine": CfnType(
        "AWS::StepFunctions::StateMachine",
        {"name": "StateMachineName", "type": "StateMachineType"},
        _documents("definition"),
    ),
    "aws:backup/plan:Plan": CfnType("AWS::Backup::BackupPlan", {}, _backup_plan),
    "aws:lambda/eventSourceMapping:EventSourceMapping": CfnType("AWS::Lambda::EventSourceMapping"),
    "aws:sns/topicSubscription:TopicSubscription": CfnType(
        "AWS::SNS::Subscription", {"topic": "TopicArn"}, _documents("filterPolicy", "redrivePolicy")
    ),
    "aws:sns/topicPolicy:TopicPolicy": CfnType("AWS::SNS::TopicPolicy", {}, _policy_on("arn", "Topics", listed=True)),
    "aws:s3/bucketPolicy:BucketPolicy": CfnType(
        "AWS::S3::BucketPolicy", {}, _policy_on("bucket", "Bucket", listed=False)
    ),
    "aws:rds/cluster:Cluster": CfnType(
        "AWS::RDS::DBCluster",
        {
            "clusterIdentifier": "DBClusterIdentifier",
            "masterPassword": "MasterUserPassword",
            "dbSubnetGroupName": "DBSubnetGroupName",
            "dbClusterInstanceClass": "DBClusterInstanceClass",
            "serverlessv2ScalingConfiguration": "ServerlessV2ScalingConfiguration",
            "preferredBackupWindow": "PreferredBackupWindow",
        },
    ),
    "aws:rds/clusterInstance:ClusterInstance": CfnType(
        "AWS::RDS::DBInstance",
        {
            "identifier": "DBInstanceIdentifier",
            "clusterIdentifier": "DBClusterIdentifier",
            "instanceClass": "DBInstanceClass",
        },
    ),
    "aws:elasticache/cluster:Cluster": CfnType(
        "AWS::ElastiCache::CacheCluster",
        {
            "clusterId": "ClusterName",
            "nodeType": "CacheNodeType",
            "parameterGroupName": "CacheParameterGroupName",
            "subnetGroupName": "CacheSubnetGroupName",
            "securityGroupIds": "VpcSecurityGroupIds",
        },
    ),
    "aws:autoscaling/group:Group": CfnType(
        "AWS::AutoScaling::AutoScalingGroup", {"vpcZoneIdentifiers": "VPCZoneIdentifier"}, _auto_scaling_group
    ),
    "aws:appautoscaling/target:Target": CfnType("AWS::ApplicationAutoScaling::ScalableTarget"),
    "aws:cloudwatch/logSubscriptionFilter:LogSubscriptionFilter": CfnType(
        "AWS::Logs::SubscriptionFilter", {"logGroup": "LogGroupName", "name": "FilterName"}
    ),
    "aws:cloudwatch/logMetricFilter:LogMetricFilter": CfnType("AWS::Logs::MetricFilter", {}, _metric_filter),
    "aws:ec2/flowLog:FlowLog": CfnType("AWS::EC2::FlowLog", {"iamRoleArn": "DeliverLogsPermissionArn"}, _flow_log),
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": CfnType(
        "AWS::IAM::OIDCProvider", {"clientIdLists": "ClientIdList", "thumbprintLists": "ThumbprintList"}
    ),
    "aws:ec2/instance:Instance": CfnType(
        "AWS::EC2::Instance", {"ami": "ImageId", "vpcSecurityGroupIds": "SecurityGroupIds"}
    ),
    "aws:opensearch/domain:Domain": CfnType("AWS::OpenSearchService::Domain"),
    "aws:eks/fargateProfile:FargateProfile": CfnType(
        "AWS::EKS::FargateProfile", {"podExecutionRoleArn": "PodExecutionRoleArn", "subnetIds": "Subnets"}
    ),
    "aws:acm/certificate:Certificate": CfnType("AWS::CertificateManager::Certificate"),
    "aws:route53/healthCheck:HealthCheck": CfnType("AWS::Route53::HealthCheck", {}, _health_check),
    "aws:cloudwatch/compositeAlarm:CompositeAlarm": CfnType(
        "AWS::CloudWatch::CompositeAlarm", {"okActions": "OKActions"}, _composite_alarm
    ),
    "aws:scheduler/schedule:Schedule": CfnType("AWS::Scheduler::Schedule", {}, _schedule),
    # The qualifier and statement ID have no place of their own in CloudFormation's permission.
    "aws:lambda/permission:Permission": CfnType(
        "AWS::Lambda::Permission",
        {"function": "FunctionName"},
        _without("qualifier", "statementId", "statementIdPrefix"),
    ),
    "aws:lambda/functionUrl:FunctionUrl": CfnType(
        "AWS::Lambda::Url", {"functionName": "TargetFunctionArn", "authorizationType": "AuthType"}
    ),
    "aws:lambda/alias:Alias": CfnType("AWS::Lambda::Alias", {}, _alias),
    "aws:iam/instanceProfile:InstanceProfile": CfnType(
        "AWS::IAM::InstanceProfile", {"name": "InstanceProfileName"}, _instance_profile
    ),
    "aws:iam/user:User": CfnType("AWS::IAM::User", {"name": "UserName"}),
    "aws:ec2/natGateway:NatGateway": CfnType("AWS::EC2::NatGateway", {"privateIp": "PrivateIpAddress"}),
    "aws:ec2/placementGroup:PlacementGroup": CfnType("AWS::EC2::PlacementGroup", {"name": "GroupName"}),
    "aws:athena/workgroup:Workgroup": CfnType(
        "AWS::Athena::WorkGroup", {"configuration": "WorkGroupConfiguration"}, _workgroup
    ),
    "aws:ecr/pullThroughCacheRule:PullThroughCacheRule": CfnType("AWS::ECR::PullThroughCacheRule"),
    "aws:wafv2/ipSet:IpSet": CfnType("AWS::WAFv2::IPSet"),
    "aws:wafv2/webAcl:WebAcl": CfnType("AWS::WAFv2::WebACL", {}, _web_acl),
    "aws:kinesis/firehoseDeliveryStream:FirehoseDeliveryStream": CfnType(
        "AWS::KinesisFirehose::DeliveryStream", {}, _firehose
    ),
    "aws:cloudtrail/trail:Trail": CfnType(
        "AWS::CloudTrail::Trail",
        {"name": "TrailName", "enableLogging": "IsLogging", "cloudWatchLogsGroupArn": "CloudWatchLogsLogGroupArn"},
    ),
    "aws:autoscaling/policy:Policy": CfnType("AWS::AutoScaling::ScalingPolicy", {"name": "PolicyName"}),
    "aws:appautoscaling/policy:Policy": CfnType("AWS::ApplicationAutoScaling::ScalingPolicy", {"name": "PolicyName"}),
    # The bucket sub-resources, under the provider's names and their ``V2`` aliases (cfn_s3).
    **{
        f"aws:s3/{token}:{token[0].upper()}{token[1:]}": CfnType("AWS::S3::Bucket", {}, prepare)
        for base, prepare in (
            ("bucketLifecycleConfiguration", cfn_s3.lifecycle),
            ("bucketVersioning", cfn_s3.versioning),
            ("bucketServerSideEncryptionConfiguration", cfn_s3.encryption),
            ("bucketCorsConfiguration", cfn_s3.cors),
        )
        for token in (base, f"{base}V2")
    },
    "aws:s3/bucketReplicationConfig:BucketReplicationConfig": CfnType("AWS::S3::Bucket", {}, cfn_s3.replication),
}
