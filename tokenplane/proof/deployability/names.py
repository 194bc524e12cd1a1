"""AWS name rules per resource type, Pulumi's autoname suffix included.

A resource without an explicit name gets Pulumi's autoname: the logical name,
a hyphen and seven random hex characters (eight characters more). AWS checks
the result at create time, long after a preview passed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

RULE = "aws-name"
AUTONAME_SUFFIX = 8  # "-" + 7 hex characters (pulumi's resource.autoname)


@dataclass(frozen=True)
class NameRule:
    field: str  # the input that carries the name (camelCase, as the engine sees it)
    max_length: int
    pattern: str  # what the whole name must match
    source: str


_LOWER_HYPHEN = r"[a-z][a-z0-9]*(-[a-z0-9]+)*"  # no "--", no trailing "-"
NAME_RULES: dict[str, NameRule] = {
    "aws:elasticache/replicationGroup:ReplicationGroup": NameRule(
        "replicationGroupId", 40, _LOWER_HYPHEN, "ElastiCache API CreateReplicationGroup, ReplicationGroupId"
    ),
    "aws:elasticache/subnetGroup:SubnetGroup": NameRule(
        "name", 255, r"[a-z0-9-]+", "ElastiCache API CreateCacheSubnetGroup, CacheSubnetGroupName"
    ),
    "aws:iam/role:Role": NameRule("name", 64, r"[\w+=,.@-]+", "IAM API CreateRole, RoleName"),
    "aws:iam/policy:Policy": NameRule("name", 128, r"[\w+=,.@-]+", "IAM API CreatePolicy, PolicyName"),
    "aws:iam/rolePolicy:RolePolicy": NameRule("name", 128, r"[\w+=,.@-]+", "IAM API PutRolePolicy, PolicyName"),
    "aws:s3/bucket:Bucket": NameRule(
        "bucket", 63, r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", "S3 User Guide, general purpose bucket naming rules"
    ),
    "aws:s3/bucketV2:BucketV2": NameRule(
        "bucket", 63, r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", "S3 User Guide, general purpose bucket naming rules"
    ),
    "aws:lb/targetGroup:TargetGroup": NameRule(
        "name", 32, r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?", "ELBv2 API CreateTargetGroup, Name"
    ),
    "aws:lb/loadBalancer:LoadBalancer": NameRule(
        "name", 32, r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?", "ELBv2 API CreateLoadBalancer, Name"
    ),
    "aws:eks/cluster:Cluster": NameRule("name", 100, r"[0-9A-Za-z][A-Za-z0-9_-]*", "EKS API CreateCluster, name"),
    "aws:eks/nodeGroup:NodeGroup": NameRule(
        "nodeGroupName", 63, r"[0-9A-Za-z][A-Za-z0-9_-]*", "EKS API CreateNodegroup, nodegroupName"
    ),
    "aws:msk/cluster:Cluster": NameRule("clusterName", 64, r"[0-9A-Za-z][A-Za-z0-9-]*", "MSK API CreateCluster"),
    "aws:msk/configuration:Configuration": NameRule(
        "name", 64, r"[0-9A-Za-z][A-Za-z0-9-]*", "MSK API CreateConfiguration"
    ),
    "aws:ecr/repository:Repository": NameRule(
        "name",
        256,
        r"(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*",
        "ECR API CreateRepository, repositoryName",
    ),
}


def planned_name(logical: str, explicit: object) -> tuple[str, bool]:
    """The name AWS will see and whether it is an autoname (then ``-xxxxxxx`` follows the logical name)."""
    if isinstance(explicit, str) and explicit:
        return explicit, False
    return f"{logical}-{'0' * (AUTONAME_SUFFIX - 1)}", True


def check(graph: Graph) -> Iterator[Finding]:
    for resource in graph.resources:
        rule = NAME_RULES.get(resource.type)
        if rule is None or not resource.custom:
            continue
        name, auto = planned_name(resource.name, resource.inputs.get(rule.field))
        how = f"the autoname {resource.name}-xxxxxxx" if auto else f"{rule.field}={name!r}"
        if len(name) > rule.max_length:
            over = len(name) - rule.max_length
            yield Finding(
                RULE,
                resource.urn,
                f"{how} is {len(name)} characters; AWS allows {rule.max_length} ({rule.source})",
                f"shorten it by {over}: a shorter platform, region or pool name, or an explicit "
                f"{rule.field} of at most {rule.max_length} characters",
            )
        shape = name.lower() if auto and rule.pattern.startswith("[a-z]") else name
        if not re.fullmatch(rule.pattern, shape):
            yield Finding(
                RULE,
                resource.urn,
                f"{how} does not match {rule.pattern} ({rule.source})",
                "use only the characters the pattern allows in the platform, region and pool names",
            )
