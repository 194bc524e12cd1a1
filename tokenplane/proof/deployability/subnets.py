"""Every subnet's IPv4 range is one EC2 accepts: inside its VPC, of a size EC2 allows, apart from its siblings.

CreateSubnet rejects (https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html ,
https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html):

- a CIDR block outside every IPv4 block of its VPC, the primary ``cidrBlock`` and any secondary one a
  ``VpcIpv4CidrBlockAssociation`` adds (``InvalidSubnet.Range``);
- a prefix shorter than /16 or longer than /28 (``InvalidSubnet.Range``);
- a block that overlaps another subnet of the same VPC (``InvalidSubnet.Conflict``).

``pulumi up`` fails at the subnet, and everything placed in it (nodes, endpoints, load balancers) with it. A subnet
of a VPC the program does not create, or whose CIDR is not known at render time, is not judged.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "subnet-range"
SUBNET = "aws:ec2/subnet:Subnet"
VPC = "aws:ec2/vpc:Vpc"
ASSOCIATION = "aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation"
PREFIXES = range(16, 29)

Network = ipaddress.IPv4Network


def _network(value: object) -> Network | None:
    try:
        return ipaddress.IPv4Network(str(value), strict=False) if isinstance(value, str) else None
    except ValueError:
        return None


def _vpc_blocks(graph: Graph, vpc: RenderedResource) -> list[Network]:
    blocks = [_network(vpc.inputs.get("cidrBlock"))]
    for association in graph.of_type(ASSOCIATION, vpc.region):
        if any(r.urn == vpc.urn for r in graph.referenced(association, "vpcId")):
            blocks.append(_network(association.inputs.get("cidrBlock")))
    return [b for b in blocks if b is not None]


def check(graph: Graph) -> Iterator[Finding]:
    seen: dict[str, list[tuple[Network, RenderedResource]]] = {}  # VPC URN -> its subnets so far
    for subnet in graph.of_type(SUBNET):
        block = _network(subnet.inputs.get("cidrBlock"))
        vpcs = [v for v in graph.referenced(subnet, "vpcId") if v.type == VPC]
        if block is None or not vpcs:
            continue
        vpc = vpcs[0]
        where = f"subnet {subnet.name} ({block})"
        if block.prefixlen not in PREFIXES:
            yield Finding(
                RULE,
                subnet.urn,
                f"{where} is a /{block.prefixlen}: EC2 allows subnets from /16 to /28 and CreateSubnet fails "
                "(InvalidSubnet.Range)",
                "give the subnet a prefix between /16 and /28",
            )
        blocks = _vpc_blocks(graph, vpc)
        if blocks and not any(block.subnet_of(b) for b in blocks if b.version == block.version):
            yield Finding(
                RULE,
                subnet.urn,
                f"{where} is outside every IPv4 block of VPC {vpc.name} ({', '.join(map(str, blocks))}): "
                "CreateSubnet fails (InvalidSubnet.Range) and everything placed in the subnet with it",
                f"choose a free range inside {blocks[0]}, or add the range to the VPC with a "
                "VpcIpv4CidrBlockAssociation the subnet depends on",
            )
        for other, sibling in seen.get(vpc.urn, []):
            if block.overlaps(other):
                yield Finding(
                    RULE,
                    subnet.urn,
                    f"{where} overlaps subnet {sibling.name} ({other}) of the same VPC {vpc.name}: CreateSubnet "
                    "fails (InvalidSubnet.Conflict)",
                    f"choose a range in {vpc.name} that no other subnet uses",
                )
        seen.setdefault(vpc.urn, []).append((block, subnet))
