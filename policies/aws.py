"""AWS resource policies: GPU nodes, multi-AZ, and encryption of the data services."""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from policies.common import get

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
GPU_AMI_MARKERS = ("NVIDIA", "GPU")


def _is_gpu_group(args: ResourceValidationArgs) -> bool:
    ami = str(get(args.props, "amiType", default=""))
    return any(marker in ami for marker in GPU_AMI_MARKERS)


def _gpu_taint(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != NODE_GROUP or not _is_gpu_group(args):
        return
    taints = get(args.props, "taints", default=[])
    if not any(t.get("key") == "nvidia.com/gpu" and t.get("effect") == "NO_SCHEDULE" for t in taints):
        report(
            f"GPU node group {args.name} has no 'nvidia.com/gpu' NoSchedule taint, so CPU pods can take its GPUs' "
            "nodes; add taints=[{key: nvidia.com/gpu, value: 'true', effect: NO_SCHEDULE}]",
            None,
        )


gpu_node_groups_tainted = ResourceValidationPolicy(
    name="gpu-node-groups-tainted",
    description="GPU node groups carry the nvidia.com/gpu NoSchedule taint, so only GPU workloads land there.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_gpu_taint,
)


def _multi_az(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != NODE_GROUP:
        return
    minimum = int(args.get_config().get("minAzs", 2))
    subnets = get(args.props, "subnetIds", default=[])
    if len(subnets) < minimum:
        report(
            f"node group {args.name} spans {len(subnets)} subnet(s); an AZ outage would take it whole. "
            f"Give it private subnets in at least {minimum} AZs",
            None,
        )


node_groups_multi_az = ResourceValidationPolicy(
    name="node-groups-multi-az",
    description="Node groups span at least two availability zones.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={"minAzs": {"type": "integer", "minimum": 1, "default": 2}}),
    validate=_multi_az,
)


def _prod_three_azs(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != NODE_GROUP:
        return
    environment = get(args.props, "tags", "tokenplane:environment", default="")
    minimum = int(args.get_config().get("minAzs", 3))
    subnets = get(args.props, "subnetIds", default=[])
    if environment == "prod" and len(subnets) < minimum:
        report(
            f"prod node group {args.name} spans {len(subnets)} AZs; with fewer than {minimum}, losing one AZ "
            f"removes 1/{len(subnets)} of the pool. Add an AZ to the region in the spec",
            None,
        )


prod_node_groups_three_azs = ResourceValidationPolicy(
    name="prod-node-groups-three-azs",
    description="In prod, node groups span at least three AZs (advisory: some regions offer only two for a GPU type).",
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=PolicyConfigSchema(properties={"minAzs": {"type": "integer", "minimum": 1, "default": 3}}),
    validate=_prod_three_azs,
)


def _elasticache(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != "aws:elasticache/replicationGroup:ReplicationGroup":
        return
    missing = []
    if get(args.props, "atRestEncryptionEnabled") not in (True, "true"):
        missing.append("atRestEncryptionEnabled: true")
    if get(args.props, "transitEncryptionEnabled") is not True:
        missing.append("transitEncryptionEnabled: true")
    if not get(args.props, "authToken") and not get(args.props, "userGroupIds"):
        missing.append("an authToken (or RBAC userGroupIds)")
    if missing:
        report(f"ElastiCache {args.name} holds tenants' limits and cached completions; set {', '.join(missing)}", None)


elasticache_encrypted = ResourceValidationPolicy(
    name="elasticache-encrypted-with-auth",
    description="ElastiCache replication groups encrypt at rest and in transit, and require auth.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_elasticache,
)


def _msk(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != "aws:msk/cluster:Cluster":
        return
    problems = []
    transit = get(args.props, "encryptionInfo", "encryptionInTransit", default={})
    if get(transit, "clientBroker", default="TLS") != "TLS":
        problems.append("encryptionInfo.encryptionInTransit.clientBroker must be TLS")
    if get(transit, "inCluster", default=True) is not True:
        problems.append("encryptionInfo.encryptionInTransit.inCluster must be true")
    if not get(args.props, "encryptionInfo", "encryptionAtRestKmsKeyArn"):
        problems.append("encryptionInfo.encryptionAtRestKmsKeyArn must name a KMS key")
    if get(args.props, "clientAuthentication", "sasl", "iam") is not True:
        problems.append("clientAuthentication.sasl.iam must be true")
    if get(args.props, "clientAuthentication", "unauthenticated") is True:
        problems.append("clientAuthentication.unauthenticated must be false")
    if problems:
        report(f"MSK cluster {args.name} carries usage and audit events: {'; '.join(problems)}", None)


msk_tls_iam_encrypted = ResourceValidationPolicy(
    name="msk-tls-iam-encrypted",
    description="MSK clusters use TLS, IAM authentication and KMS encryption at rest.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_msk,
)

POLICIES = [
    gpu_node_groups_tainted,
    node_groups_multi_az,
    prod_node_groups_three_azs,
    elasticache_encrypted,
    msk_tls_iam_encrypted,
]
