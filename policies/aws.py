"""AWS resource policies: GPU nodes, and encryption of the data services (multi-AZ is in ``topology``)."""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from tokenplane.policies.common import get

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
    elasticache_encrypted,
    msk_tls_iam_encrypted,
]
