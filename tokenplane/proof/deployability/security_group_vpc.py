"""A security group without ``vpcId`` is in the default VPC: a resource placed in the program's VPC refuses it.

``CreateSecurityGroup`` without a ``VpcId`` creates the group in the account's default VPC ("VpcId: The ID of the
VPC. Required for a nondefault VPC", https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSecurityGroup.html;
where the account has none it fails with VPCIdNotSpecified). A security group protects network interfaces of its
own VPC only, so the service that places the resource in the program's VPC refuses a group of another:
``CreateDBInstance``/``CreateDBCluster`` "InvalidParameterCombination: The DB instance and EC2 security group are in
different VPCs" (https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/USER_VPC.WorkingWithRDSInstanceinaVPC.html),
EC2 and the services that create interfaces for you (Lambda's VPC config, EKS, ELB, EFS mount targets, interface
endpoints, MSK, ElastiCache) "security group ... and subnet ... belong to different networks" or an
InvalidParameter of their own. ``pulumi up`` fails at that resource.

Judged for the users in ``USERS`` (and an EKS node group's launch template), when the resource is placed, through
its subnets, its DB/cache subnet group or its ``vpcId``, in a VPC the program creates, and a group it names is one
the program creates with no ``vpcId`` input at all (a ``vpcId`` from another resource's output counts as set).
It cannot see groups or VPCs of other programs, nor a program that means the default VPC (it creates no VPC there).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.deployability.launch_keys import launch_template
from tokenplane.proof.render import RenderedResource

SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
VPC = "aws:ec2/vpc:Vpc"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
# A user's type -> (the inputs naming its security groups, the inputs that place it in a VPC).
USERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "aws:rds/instance:Instance": (("vpcSecurityGroupIds",), ("dbSubnetGroupName",)),
    "aws:rds/cluster:Cluster": (("vpcSecurityGroupIds",), ("dbSubnetGroupName",)),
    "aws:elasticache/cluster:Cluster": (("securityGroupIds",), ("subnetGroupName",)),
    "aws:elasticache/replicationGroup:ReplicationGroup": (("securityGroupIds",), ("subnetGroupName",)),
    "aws:lambda/function:Function": (("vpcConfig.securityGroupIds",), ("vpcConfig.subnetIds",)),
    "aws:ec2/vpcEndpoint:VpcEndpoint": (("securityGroupIds",), ("vpcId", "subnetIds")),
    "aws:ec2/instance:Instance": (("vpcSecurityGroupIds",), ("subnetId",)),
    "aws:eks/cluster:Cluster": (("vpcConfig.securityGroupIds",), ("vpcConfig.subnetIds",)),
    "aws:lb/loadBalancer:LoadBalancer": (("securityGroups",), ("subnets",)),
    "aws:efs/mountTarget:MountTarget": (("securityGroups",), ("subnetId",)),
    "aws:msk/cluster:Cluster": (("brokerNodeGroupInfo.securityGroups",), ("brokerNodeGroupInfo.clientSubnets",)),
}


def check(graph: Graph, rule: str) -> Iterator[Finding]:
    for type_token, (group_paths, place_paths) in USERS.items():
        for user in graph.of_type(type_token):
            vpcs = _vpcs(graph, [lookup(user.inputs, p) for p in place_paths])
            groups = _defaulted(graph, [lookup(user.inputs, p) for p in group_paths])
            yield from _findings(rule, user, user, vpcs, groups)
    for node_group in graph.of_type(NODE_GROUP):
        template = launch_template(graph, node_group)
        if template is None:
            continue
        named = [template.inputs.get("vpcSecurityGroupIds")] + [
            i.get("securityGroups") for i in template.inputs.get("networkInterfaces") or [] if isinstance(i, dict)
        ]
        vpcs = _vpcs(graph, [node_group.inputs.get("subnetIds")])
        yield from _findings(rule, template, node_group, vpcs, _defaulted(graph, named))


def _vpcs(graph: Graph, values: list[Any], depth: int = 0) -> list[RenderedResource]:
    """The program's VPCs that ``values`` (IDs or names of VPCs, subnets, subnet groups) place a resource in."""
    found: dict[str, RenderedResource] = {}
    for resource in graph.by_physical_ids(values):
        if resource.type == VPC:
            found[resource.urn] = resource
        elif depth < 2:
            inner = [resource.inputs.get("vpcId"), resource.inputs.get("subnetIds")]
            found.update({v.urn: v for v in _vpcs(graph, inner, depth + 1)})
    return list(found.values())


def _defaulted(graph: Graph, values: list[Any]) -> list[RenderedResource]:
    """The groups ``values`` name that the program creates with no vpcId input."""
    return [
        g
        for g in graph.by_physical_ids(values)
        if g.type == SECURITY_GROUP and g.inputs.get("vpcId") is None and "vpcId" not in g.property_dependencies
    ]


def _findings(
    rule: str,
    user: RenderedResource,
    placed: RenderedResource,
    vpcs: list[RenderedResource],
    groups: list[RenderedResource],
) -> Iterator[Finding]:
    if len(vpcs) != 1:
        return  # not placed in one VPC the program creates: not judged
    (vpc,) = vpcs
    for group in groups:
        yield Finding(
            rule,
            group.urn,
            f"security group {group.name} has no vpcId, so EC2 creates it in the account's default VPC (or refuses "
            f"it, VPCIdNotSpecified, where there is none), but {user.name} uses it"
            + (f" for {placed.name}" if placed is not user else "")
            + f" in VPC {vpc.name}: a security group works only in its own VPC, and the service refuses it "
            "(InvalidParameterCombination: ... security group are in different VPCs) when pulumi up creates "
            f"{placed.name}",
            f"set vpc_id on {group.name} to VPC {vpc.name}'s id",
        )
