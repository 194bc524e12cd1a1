"""AWS security baseline: network exposure, encryption at rest, EKS, and IAM.

Modelled on Pulumi's AWSGuard rules for the same resources; the README lists
which of its rules the pack covers and which it leaves out. Each policy reads
the inputs the way the engine delivers them (camelCase, numbers as floats,
booleans sometimes as strings).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from tokenplane.aws_iam_actions import takes_no_resource
from tokenplane.policies import exceptions
from tokenplane.policies.common import as_int, get
from tokenplane.policies.exceptions import Flag

ANYWHERE = ("0.0.0.0/0", "::/0")
ALL_PROTOCOLS = ("-1", "all")
# Policy actions that only read metadata: AWS allows no resource scoping for most of them.
READ_ONLY_VERBS = ("Describe", "List")
POLICY_DOCUMENT_TYPES = (
    "aws:iam/policy:Policy",
    "aws:iam/rolePolicy:RolePolicy",
    "aws:iam/userPolicy:UserPolicy",
    "aws:iam/groupPolicy:GroupPolicy",
)


def _true(value: Any) -> bool:
    """The engine sometimes delivers a boolean input as the string the provider schema stores."""
    return value is True or value == "true"


def _policy(
    name: str,
    description: str,
    check: Callable[[ResourceValidationArgs, Flag], None],
    properties: Mapping[str, Any] | None = None,
) -> ResourceValidationPolicy:
    """A policy whose ``check`` reports through a flag that honours the policy's exceptions."""

    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        check(args, exceptions.flagger(args, report, name))

    return ResourceValidationPolicy(
        name=name,
        description=description,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(properties={**(properties or {}), "exceptions": exceptions.setting(name)}),
        validate=validate,
    )


# --- network exposure -------------------------------------------------------------------------


def _ingress_rules(args: ResourceValidationArgs) -> Iterator[tuple[str, int, int, list[str]]]:
    """(protocol, from, to, CIDRs) of every ingress rule a security group resource opens."""
    props = args.props
    if args.resource_type == "aws:ec2/securityGroup:SecurityGroup":
        for rule in get(props, "ingress", default=[]):
            cidrs = [*get(rule, "cidrBlocks", default=[]), *get(rule, "ipv6CidrBlocks", default=[])]
            yield (
                str(get(rule, "protocol", default="")),
                as_int(get(rule, "fromPort")),
                as_int(get(rule, "toPort")),
                cidrs,
            )
    elif args.resource_type == "aws:ec2/securityGroupRule:SecurityGroupRule" and get(props, "type") == "ingress":
        cidrs = [*get(props, "cidrBlocks", default=[]), *get(props, "ipv6CidrBlocks", default=[])]
        yield (
            str(get(props, "protocol", default="")),
            as_int(get(props, "fromPort")),
            as_int(get(props, "toPort")),
            cidrs,
        )
    elif args.resource_type == "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule":
        cidrs = [c for c in (get(props, "cidrIpv4"), get(props, "cidrIpv6")) if c]
        protocol = str(get(props, "ipProtocol", default=""))
        yield protocol, as_int(get(props, "fromPort")), as_int(get(props, "toPort")), cidrs


def _open_ingress(args: ResourceValidationArgs, flag: Flag) -> None:
    public_ports = {as_int(p) for p in args.get_config().get("publicPorts", [443])}
    for protocol, low, high, cidrs in _ingress_rules(args):
        open_to = [c for c in cidrs if c in ANYWHERE]
        if not open_to:
            continue
        every_port = protocol.lower() in ALL_PROTOCOLS
        if not every_port and low == high and low in public_ports:
            continue
        ports = "every port" if every_port else (f"port {low}" if low == high else f"ports {low}-{high}")
        flag(
            f"ingress {ports}",
            f"security group {args.name} opens {ports} ({protocol}) to {', '.join(open_to)}; allow the internet "
            f"only on {', '.join(map(str, sorted(public_ports)))} (publicPorts) and everything else from the VPC's "
            "CIDR or another security group",
        )


security_groups_no_public_ingress = _policy(
    "security-groups-no-public-ingress",
    "No security group opens a port other than the public ones (443) to 0.0.0.0/0 or ::/0.",
    _open_ingress,
    {"publicPorts": {"type": "array", "items": {"type": "integer"}, "default": [443]}},
)


def _rds_public(args: ResourceValidationArgs, flag: Flag) -> None:
    if args.resource_type not in ("aws:rds/instance:Instance", "aws:rds/clusterInstance:ClusterInstance"):
        return
    if _true(get(args.props, "publiclyAccessible")):
        flag(
            "publiclyAccessible",
            f"database {args.name} is publicly accessible: it gets a public IP and DNS name. Set "
            "publicly_accessible=False and reach it from inside the VPC",
        )


rds_not_publicly_accessible = _policy(
    "rds-not-publicly-accessible", "No RDS instance is publicly accessible.", _rds_public
)


def _eks_endpoint(args: ResourceValidationArgs, flag: Flag) -> None:
    if args.resource_type != "aws:eks/cluster:Cluster":
        return
    vpc = get(args.props, "vpcConfig", default={})
    if get(vpc, "endpointPublicAccess") is False or get(vpc, "endpointPublicAccess") == "false":
        return
    cidrs = get(vpc, "publicAccessCidrs", default=[])
    if cidrs and not any(c in ANYWHERE for c in cidrs):
        return
    flag(
        "endpointPublicAccess",
        f"EKS cluster {args.name}'s API endpoint is open to the internet (endpointPublicAccess defaults to true); "
        "set vpcConfig.endpointPublicAccess=False, or publicAccessCidrs to your CI's and operators' ranges",
    )


eks_endpoint_not_public = _policy(
    "eks-endpoint-not-public",
    "EKS API endpoints are private, or public only to listed CIDRs.",
    _eks_endpoint,
)


# --- encryption at rest -----------------------------------------------------------------------


def _ebs(args: ResourceValidationArgs, flag: Flag) -> None:
    props = args.props
    if args.resource_type == "aws:ebs/volume:Volume":
        if not _true(get(props, "encrypted")):
            flag("volume", f"EBS volume {args.name} is not encrypted; set encrypted=True (and a kms_key_id)")
    elif args.resource_type == "aws:ec2/launchTemplate:LaunchTemplate":
        for mapping in get(props, "blockDeviceMappings", default=[]):
            ebs = get(mapping, "ebs")
            if ebs is not None and not _true(get(ebs, "encrypted")):
                device = get(mapping, "deviceName", default="?")
                flag(
                    f"device {device}",
                    f"launch template {args.name} maps {device} as an unencrypted EBS volume; set ebs.encrypted='true'",
                )
    elif args.resource_type == "aws:ec2/instance:Instance":
        if not _true(get(props, "rootBlockDevice", "encrypted")):
            flag("root", f"instance {args.name}'s root volume is not encrypted; set root_block_device.encrypted=True")
        for device in get(props, "ebsBlockDevices", default=[]):
            if not _true(get(device, "encrypted")):
                name = get(device, "deviceName", default="?")
                flag(f"device {name}", f"instance {args.name}'s EBS volume {name} is not encrypted; set encrypted=True")


ebs_encrypted = _policy(
    "ebs-encrypted",
    "EBS volumes, and the volumes of launch templates and instances, are encrypted.",
    _ebs,
)


def _rds_encrypted(args: ResourceValidationArgs, flag: Flag) -> None:
    if args.resource_type not in ("aws:rds/instance:Instance", "aws:rds/cluster:Cluster"):
        return
    # An instance of an Aurora cluster takes the cluster's encryption; the cluster is checked instead.
    if args.resource_type == "aws:rds/instance:Instance" and get(args.props, "replicateSourceDb"):
        return
    if not _true(get(args.props, "storageEncrypted")):
        flag(
            "storageEncrypted",
            f"database {args.name} stores data unencrypted; set storage_encrypted=True (it cannot be turned on later "
            "without a snapshot and restore)",
        )


rds_storage_encrypted = _policy(
    "rds-storage-encrypted", "RDS instances and clusters encrypt their storage.", _rds_encrypted
)


def _eks_secrets(args: ResourceValidationArgs, flag: Flag) -> None:
    if args.resource_type != "aws:eks/cluster:Cluster":
        return
    config = get(args.props, "encryptionConfig", default={})
    configs = config if isinstance(config, list) else [config]  # the provider's schema took a list before v6
    if not any("secrets" in get(c, "resources", default=[]) and get(c, "provider", "keyArn") for c in configs):
        flag(
            "encryptionConfig",
            f"EKS cluster {args.name} keeps Kubernetes Secrets unencrypted by a key of yours; set encryption_config "
            "with resources=['secrets'] and a KMS key ARN",
        )


eks_secrets_encrypted = _policy(
    "eks-secrets-encrypted", "EKS clusters envelope-encrypt Kubernetes Secrets with a KMS key.", _eks_secrets
)


def _kms_rotation(args: ResourceValidationArgs, flag: Flag) -> None:
    if args.resource_type != "aws:kms/key:Key":
        return
    # Rotation applies to symmetric encryption keys only; AWS refuses it for asymmetric and HMAC keys.
    if get(args.props, "customerMasterKeySpec", default=get(args.props, "keySpec", default="SYMMETRIC_DEFAULT")) != (
        "SYMMETRIC_DEFAULT"
    ):
        return
    if not _true(get(args.props, "enableKeyRotation")):
        flag(
            "enableKeyRotation",
            f"KMS key {args.name} never rotates its key material; set enable_key_rotation=True (AWS rotates yearly "
            "and keeps old material for decryption)",
        )


kms_key_rotation_enabled = _policy(
    "kms-key-rotation-enabled",
    "Symmetric KMS keys rotate their key material (AWSGuard cmk-backing-key-rotation).",
    _kms_rotation,
)


# --- IAM --------------------------------------------------------------------------------------


def _documents(args: ResourceValidationArgs) -> Iterator[tuple[str, Any]]:
    if args.resource_type in POLICY_DOCUMENT_TYPES:
        yield args.name, get(args.props, "policy")
    elif args.resource_type == "aws:iam/role:Role":
        for inline in get(args.props, "inlinePolicies", default=[]):
            yield f"{args.name} inline {get(inline, 'name', default='?')}", get(inline, "policy")


def _statements(document: Any) -> list[Mapping[str, Any]]:
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except json.JSONDecodeError:
            return []
    statements = get(document, "Statement", default=[])
    statements = statements if isinstance(statements, list) else [statements]
    return [s for s in statements if isinstance(s, Mapping)]


def _as_list(value: Any) -> list[str]:
    return [str(v) for v in (value if isinstance(value, list) else [value] if value is not None else [])]


def _wildcards(args: ResourceValidationArgs, flag: Flag) -> None:
    for where, document in _documents(args):
        for i, statement in enumerate(_statements(document)):
            if statement.get("Effect") != "Allow":
                continue
            actions = _as_list(statement.get("Action"))
            broad = [a for a in actions if a == "*" or a.endswith(":*")]
            if statement.get("NotAction") is not None:
                broad.append("NotAction")
            if broad:
                flag(
                    f"statement {i} action",
                    f"IAM policy {where} statement {i} allows {', '.join(broad)}: every current and future action of "
                    "the service. List the actions it needs",
                )
                continue
            # An action that supports no resource type is authorised only on "*" (tokenplane.aws_iam_actions): that is
            # no wildcard, so only the statement's scoped writes are judged.
            writes = [
                a for a in actions if not a.split(":", 1)[-1].startswith(READ_ONLY_VERBS) and not takes_no_resource(a)
            ]
            if "*" in _as_list(statement.get("Resource")) and writes and statement.get("Condition") is None:
                flag(
                    f"statement {i} resource",
                    f"IAM policy {where} statement {i} allows {', '.join(writes[:3])} on every resource ('*') without "
                    "a Condition; scope Resource to the ARNs it acts on, or add a Condition (e.g. on a resource tag)",
                )


iam_no_wildcards = _policy(
    "iam-no-wildcards",
    "IAM policies grant no wildcard actions, and no write action on Resource '*' without a Condition (actions that support no resource type take only '*').",
    _wildcards,
)


def _access_keys(args: ResourceValidationArgs, flag: Flag) -> None:
    if args.resource_type == "aws:iam/accessKey:AccessKey":
        flag(
            "accessKey",
            f"IAM access key {args.name} is a long-lived credential that ends up in state and CI secrets; use a role "
            "(IRSA for pods, OIDC for CI) instead",
        )


iam_no_access_keys = _policy("iam-no-access-keys", "The stack creates no long-lived IAM access keys.", _access_keys)

POLICIES = [
    security_groups_no_public_ingress,
    rds_not_publicly_accessible,
    eks_endpoint_not_public,
    ebs_encrypted,
    rds_storage_encrypted,
    eks_secrets_encrypted,
    kms_key_rotation_enabled,
    iam_no_wildcards,
    iam_no_access_keys,
]
