"""Every secondary IPv4 block a program adds to its VPC is one AssociateVpcCidrBlock accepts.

The VPC User Guide's rules for adding an IPv4 CIDR block to a VPC
(https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html#add-cidr-block-restrictions), for an
``aws.ec2.VpcIpv4CidrBlockAssociation`` of a VPC the program creates:

- The block is between a /16 and a /28 netmask, like every IPv4 VPC block (a whole 100.64.0.0/10 is refused;
  also an IPAM-allocated block's ``ipv4NetmaskLength``).
- Its range is permitted by the "IPv4 CIDR block association restrictions" table, keyed by the range the VPC's
  primary block lies in:

  ===========================  ==========================================================================
  primary block in             restricted secondary blocks
  ===========================  ==========================================================================
  10.0.0.0/8                   172.16.0.0/12, 192.168.0.0/16, 198.19.0.0/16; and 10.0.0.0/16 where a block
                               of the VPC is in 10.0.0.0/15
  172.16.0.0/12                10.0.0.0/8, 192.168.0.0/16, 172.31.0.0/16, 198.19.0.0/16
  192.168.0.0/16               10.0.0.0/8, 172.16.0.0/12, 198.19.0.0/16
  198.19.0.0/16                every RFC 1918 range
  100.64.0.0/10, or public     every RFC 1918 range, and 198.19.0.0/16
  any                          169.254.0.0/16 (link-local, RFC 5735: never assignable to a VPC)
  ===========================  ==========================================================================

  Permitted otherwise: the rest of the primary's own RFC 1918 range, publicly routable blocks, and 100.64.0.0/10.
  The table as the guide's source states it: awsdocs/amazon-vpc-user-guide, ``doc_source/vpc-cidr-blocks.md`` at
  a1298ceea56d79184f27c2fbc5e72a84a5730054 (2023-04-21), "IPv4 CIDR block association restrictions".
- It overlaps neither the primary block nor another block associated with the VPC.
- It is not the same as or larger than the destination of a route in one of the VPC's route tables (a route that
  exists before the association: one the association waits for).

AssociateVpcCidrBlock refuses the call (the CIDR is restricted, invalid, or conflicts), ``pulumi up`` fails at the
association, and every subnet placed in the block with it. The quota of five IPv4 blocks per VPC is adjustable and
not judged.

It cannot see: a VPC the program does not create (its primary block and existing associations), blocks unknown at
render time (an IPAM pool's allocation), the 10.0.0.0/15 row for blocks of the VPC other than the primary, and routes not ordered before the association (created the
other way round, the route itself is judged by EC2, not here).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "vpc-cidr-block"
VPC = "aws:ec2/vpc:Vpc"
ASSOCIATION = "aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
ROUTE = "aws:ec2/route:Route"
PREFIXES = range(16, 29)
SOURCE = "https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html#add-cidr-block-restrictions"

Network = ipaddress.IPv4Network
RFC1918 = tuple(Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
SHARED = Network("100.64.0.0/10")
BENCHMARK = Network("198.19.0.0/16")
LINK_LOCAL = Network("169.254.0.0/16")
# The 10.0.0.0/8 row's and the 172.16.0.0/12 row's own exceptions.
TEN_FIFTEEN, TEN_SIXTEEN = Network("10.0.0.0/15"), Network("10.0.0.0/16")
AWS_DEFAULT_VPC = Network("172.31.0.0/16")


def _network(value: object) -> Network | None:
    try:
        return Network(value, strict=False) if isinstance(value, str) else None
    except ValueError:
        return None


def _range_of(block: Network) -> Network | None:
    """The table's row a primary block falls in: an RFC 1918 range, 198.19.0.0/16, or None (100.64.0.0/10 and
    publicly routable blocks share one row)."""
    return next((r for r in (*RFC1918, BENCHMARK) if block.overlaps(r)), None)


def restricted(primary: Network, block: Network) -> list[Network]:
    """The ranges of the restrictions table that forbid ``block`` beside a VPC whose primary block is ``primary``."""
    row = _range_of(primary)
    forbidden = [LINK_LOCAL]
    if row in RFC1918:
        forbidden += [r for r in RFC1918 if r != row] + [BENCHMARK]
        if row == RFC1918[0] and primary.overlaps(TEN_FIFTEEN):
            forbidden.append(TEN_SIXTEEN)
        if row == RFC1918[1]:
            forbidden.append(AWS_DEFAULT_VPC)
    elif row == BENCHMARK:
        forbidden += list(RFC1918)
    else:
        forbidden += [*RFC1918, BENCHMARK]
    return [r for r in forbidden if block.overlaps(r)]


def permitted(primary: Network) -> str:
    """The table's permitted column for a VPC whose primary block is ``primary``, in words."""
    row = _range_of(primary)
    if row in RFC1918:
        return f"the rest of the primary's own range {row}, {SHARED} or a publicly routable range"
    return f"{SHARED} or a publicly routable range"


def _sized(block: Network) -> Network:
    """A part of ``block`` (or the block around it) of a size a VPC accepts."""
    if block.prefixlen < PREFIXES.start:
        return next(block.subnets(new_prefix=PREFIXES.start))
    return block.supernet(new_prefix=PREFIXES.stop - 1)


def _row_name(primary: Network) -> str:
    row = _range_of(primary)
    if row is not None:
        return str(row)
    return str(SHARED) if primary.subnet_of(SHARED) else "a publicly routable range"


def _associations(graph: Graph, vpc: RenderedResource) -> list[RenderedResource]:
    return [
        a for a in graph.of_type(ASSOCIATION, vpc.region) if any(v.urn == vpc.urn for v in graph.referenced(a, "vpcId"))
    ]


def _routes_before(graph: Graph, vpc: RenderedResource, association: RenderedResource) -> list[tuple[Network, str]]:
    """IPv4 route destinations of the VPC's route tables that exist before ``association`` is made (the resource
    holding the route is one the association waits for), with the holder's name."""
    before = graph.waits_for(association.urn)
    out: list[tuple[Network, str]] = []
    tables = [
        t for t in graph.of_type(ROUTE_TABLE, vpc.region) if any(v.urn == vpc.urn for v in graph.referenced(t, "vpcId"))
    ]
    for table in tables:
        if table.urn in before:
            for route in table.inputs.get("routes") or []:
                if isinstance(route, dict) and (dest := _network(route.get("cidrBlock"))) is not None:
                    out.append((dest, table.name))
    urns = {t.urn for t in tables}
    for route in graph.of_type(ROUTE, vpc.region):
        dest = _network(route.inputs.get("destinationCidrBlock"))
        if (
            dest is not None
            and route.urn in before
            and any(t.urn in urns for t in graph.referenced(route, "routeTableId"))
        ):
            out.append((dest, route.name))
    return out


def check(graph: Graph) -> Iterator[Finding]:
    for vpc in graph.of_type(VPC):
        primary = _network(vpc.inputs.get("cidrBlock"))
        seen: list[tuple[Network, RenderedResource]] = []
        for association in _associations(graph, vpc):
            yield from _judge(graph, vpc, primary, association, seen)


def _judge(
    graph: Graph,
    vpc: RenderedResource,
    primary: Network | None,
    association: RenderedResource,
    seen: list[tuple[Network, RenderedResource]],
) -> Iterator[Finding]:
    length = association.inputs.get("ipv4NetmaskLength")
    block = _network(association.inputs.get("cidrBlock"))
    what = f"secondary block {association.name}"
    if block is None:
        if isinstance(length, int | float) and int(length) == length and int(length) not in PREFIXES:
            yield Finding(
                RULE,
                association.urn,
                f"{what} asks its IPAM pool for a /{int(length)}: a VPC's IPv4 blocks are /16 to /28 and "
                f"AssociateVpcCidrBlock fails ({SOURCE})",
                "ask for an ipv4NetmaskLength between 16 and 28",
            )
        return
    what = f"{what} ({block}) of VPC {vpc.name}"
    if block.prefixlen not in PREFIXES:
        yield Finding(
            RULE,
            association.urn,
            f"{what} is a /{block.prefixlen}: a VPC's IPv4 blocks, primary or secondary, are /16 to /28, and "
            f"AssociateVpcCidrBlock refuses it ({SOURCE}); pulumi up fails at the association and at every subnet "
            "placed in it",
            f"associate a /16 to /28 block instead (such as {_sized(block)}), one association per block if more "
            "addresses are needed",
        )
    if primary is not None:
        forbidden = restricted(primary, block)
        if forbidden:
            yield Finding(
                RULE,
                association.urn,
                f"{what} is in {', '.join(map(str, forbidden))}, which AWS restricts for a VPC whose primary block "
                f"({primary}) is in {_row_name(primary)}: AssociateVpcCidrBlock refuses it (the 'IPv4 CIDR block "
                f"association restrictions' table, {SOURCE}) and pulumi up fails at the association",
                f"take the block (a /16 to /28) from {permitted(primary)}, such as 100.64.0.0/16",
            )
        if block.overlaps(primary):
            yield Finding(
                RULE,
                association.urn,
                f"{what} overlaps the VPC's primary block {primary}: AssociateVpcCidrBlock refuses a block that "
                f"overlaps one already associated with the VPC ({SOURCE})",
                f"choose a block outside {primary}",
            )
    for other, sibling in seen:
        if block.overlaps(other):
            yield Finding(
                RULE,
                association.urn,
                f"{what} overlaps secondary block {sibling.name} ({other}) of the same VPC: AssociateVpcCidrBlock "
                f"refuses whichever of the two comes second ({SOURCE})",
                "give each secondary block a range no other block of the VPC overlaps",
            )
    seen.append((block, association))
    for dest, holder in _routes_before(graph, vpc, association):
        if dest.subnet_of(block):
            yield Finding(
                RULE,
                association.urn,
                f"{what} is the same as or larger than the destination {dest} of a route of the VPC's route tables "
                f"({holder}), which exists before it: AssociateVpcCidrBlock refuses it ({SOURCE})",
                f"choose a block that does not contain {dest}, or one smaller than it",
            )
