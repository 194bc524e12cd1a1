"""AWS-side network rules: subnets in AZs that exist, MSK on 2 or 3 client subnets, VPC ranges that do not overlap."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from tokenplane.aws_zones import MSK_CLIENT_SUBNETS, zones
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, need

RULE = "aws-network"
SUBNET = "aws:ec2/subnet:Subnet"
MSK = "aws:msk/cluster:Cluster"
VPC = "aws:ec2/vpc:Vpc"


def check(graph: Graph) -> Iterator[Finding]:
    for subnet in graph.of_type(SUBNET):
        cloud = graph.cloud_region(subnet.region)
        az = need(subnet, subnet.inputs.get("availabilityZone"), "availabilityZone", "a subnet must name its AZ")
        known = zones(cloud) if cloud else None
        if az is not None and known is not None and az not in known:
            yield Finding(
                RULE,
                subnet.urn,
                f"availabilityZone {az} does not exist in {cloud} (zones: {', '.join(known)})",
                "list only existing zones in the region's azs",
            )
    seen: list[tuple[ipaddress.IPv4Network, str]] = []
    for vpc in graph.of_type(VPC):
        block = ipaddress.IPv4Network(str(need(vpc, vpc.inputs.get("cidrBlock"), "cidrBlock", "a VPC needs a range")))
        for other, urn in seen:
            if block.overlaps(other):
                yield Finding(
                    RULE,
                    vpc.urn,
                    f"cidrBlock {block} overlaps {other} of {urn}: the VPCs can never be peered or joined "
                    "by a transit gateway",
                    "give every region's VPC its own range (components/network.py vpc_cidr)",
                )
        seen.append((block, vpc.urn))
    for msk in graph.of_type(MSK):
        subnets = need(
            msk, (msk.inputs.get("brokerNodeGroupInfo") or {}).get("clientSubnets"), "clientSubnets", "not rendered"
        )
        if len(subnets) not in MSK_CLIENT_SUBNETS:
            yield Finding(
                RULE,
                msk.urn,
                f"MSK takes 2 or 3 client subnets; this cluster has {len(subnets)}",
                "place the brokers in 2 or 3 of the region's AZs",
            )
