"""Where a subnet's traffic to AWS's public endpoints goes, as EC2 routes it, and which VPC endpoints stand in.

One home for the routing that ``nodes_join`` and ``lb_subnets`` read. EC2 routes a packet by the most specific
route of the subnet's route table (https://docs.aws.amazon.com/vpc/latest/userguide/route-tables-priority.html):
the table explicitly associated with the subnet (``RouteTableAssociation``), else the VPC's main table (a
``MainRouteTableAssociation``, else the one EC2 made with the VPC, holding only the ``local`` route unless a
``DefaultRouteTable`` adopts it). A table's routes are its inline ``routes`` and every standalone ``Route``.
A subnet takes one explicit association: of two the program makes, the second is refused (Resource.AlreadyAssociated,
``aws-unique-key``), so the subnet keeps the table of the one created first, the one the other waits for; where
neither waits for the other, which one is refused is a race and the subnet's table is not known (not judged).

The verdict is ``igw`` (an internet gateway: public, if the instance has a public address), ``nat`` (a NAT
gateway, itself placed in a public subnet), ``none`` (only the local route: no way out), or ``unknown`` (a
transit gateway, a peering, an appliance, a table or target the program does not create): unknown is passed.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

SUBNET = "aws:ec2/subnet:Subnet"
VPC = "aws:ec2/vpc:Vpc"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
ROUTE = "aws:ec2/route:Route"
ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"
MAIN_ASSOCIATION = "aws:ec2/mainRouteTableAssociation:MainRouteTableAssociation"
DEFAULT_TABLE = "aws:ec2/defaultRouteTable:DefaultRouteTable"
INTERNET_GATEWAY = "aws:ec2/internetGateway:InternetGateway"
NAT_GATEWAY = "aws:ec2/natGateway:NatGateway"
VPC_ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
ENDPOINT_TABLE = "aws:ec2/vpcEndpointRouteTableAssociation:VpcEndpointRouteTableAssociation"
# One address of AWS's public ranges (an ECR endpoint's, us-east-1) standing for every public AWS endpoint: the
# route that covers it is the one EC2 uses for ECR, S3, STS and the EKS public endpoint alike.
AWS_PUBLIC = ipaddress.IPv4Address("52.94.0.1")
# Route target keys of the AWS provider (RouteTable ``routes[]`` and ``Route``) that lead somewhere the program
# may not show: judged unknown.
OTHER_TARGETS = (
    "transitGatewayId",
    "vpcPeeringConnectionId",
    "networkInterfaceId",
    "instanceId",
    "localGatewayId",
    "carrierGatewayId",
    "coreNetworkArn",
    "vpcEndpointId",
)


@dataclass(frozen=True)
class Egress:
    """Where a subnet sends traffic for AWS's public endpoints."""

    kind: str  # "igw" | "nat" | "none" | "unknown"
    table: RenderedResource | None = None
    target: RenderedResource | None = None  # the internet or NAT gateway


def vpc_of(graph: Graph, resource: RenderedResource) -> RenderedResource | None:
    return next((v for v in graph.referenced(resource, "vpcId") if v.type == VPC), None)


def table_of(graph: Graph, subnet: RenderedResource) -> tuple[bool, RenderedResource | None]:
    """Whether the subnet's route table is known, and which it is (None: its VPC's untouched main table, which holds
    only the local route). Unknown: a VPC, a table or an adopted main table the program does not show."""
    associations = [
        a
        for a in graph.of_type(ASSOCIATION, subnet.region)
        if any(s.urn == subnet.urn for s in graph.referenced(a, "subnetId"))
    ]
    if associations:
        first = _first_created(graph, associations)
        tables = [t for t in graph.referenced(first, "routeTableId") if t.type == ROUTE_TABLE] if first else []
        return (True, tables[0]) if tables else (False, None)
    vpc = vpc_of(graph, subnet)
    if vpc is None:
        return False, None
    for association in graph.of_type(MAIN_ASSOCIATION, subnet.region):
        if any(v.urn == vpc.urn for v in graph.referenced(association, "vpcId")):
            tables = [t for t in graph.referenced(association, "routeTableId") if t.type == ROUTE_TABLE]
            return (True, tables[0]) if tables else (False, None)
    if graph.of_type(DEFAULT_TABLE, subnet.region):
        return False, None  # an adopted main table, whose VPC the render may not name: not judged
    return True, None


def _first_created(graph: Graph, associations: list[RenderedResource]) -> RenderedResource | None:
    """The association that holds the subnet: the only one, or the one every other waits for (AWS refuses those
    that come after it); None when they are not ordered."""
    for association in associations:
        if all(association.urn in graph.waits_for(a.urn) for a in associations if a is not association):
            return association
    return None


def _routes(graph: Graph, table: RenderedResource) -> list[dict[str, Any]]:
    out = [r for r in table.inputs.get("routes") or [] if isinstance(r, dict)]
    for route in graph.of_type(ROUTE, table.region):
        if any(t.urn == table.urn for t in graph.referenced(route, "routeTableId")):
            out.append({**route.inputs, "cidrBlock": route.inputs.get("destinationCidrBlock")})
    return out


def _public_route(routes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The most specific route that covers AWS's public addresses."""
    best: tuple[int, dict[str, Any]] | None = None
    for route in routes:
        try:
            block = ipaddress.IPv4Network(str(route.get("cidrBlock")), strict=False)
        except ValueError:
            continue  # IPv6, a prefix list: not the IPv4 route to AWS
        if AWS_PUBLIC in block and (best is None or block.prefixlen > best[0]):
            best = (block.prefixlen, route)
    return best[1] if best else None


def egress(graph: Graph, subnet: RenderedResource) -> Egress:
    """Where ``subnet`` sends traffic for AWS's public endpoints."""
    known, table = table_of(graph, subnet)
    if not known:
        return Egress("unknown")
    if table is None:
        return Egress("none")
    routes = _routes(graph, table)
    if any(str(r.get("ipv6CidrBlock") or r.get("destinationIpv6CidrBlock")) == "::/0" for r in routes):
        return Egress("unknown", table)  # dual-stack: AWS endpoints may be reached over IPv6, not modelled
    route = _public_route(routes)
    if route is None:
        return Egress("none", table)
    if any(route.get(key) for key in OTHER_TARGETS):
        return Egress("unknown", table)
    nats = graph.by_physical_ids(route.get("natGatewayId"))
    if nats:
        return Egress("nat", table, nats[0]) if nats[0].type == NAT_GATEWAY else Egress("unknown", table)
    gateways = graph.by_physical_ids(route.get("gatewayId"))
    if gateways and gateways[0].type == INTERNET_GATEWAY:
        return Egress("igw", table, gateways[0])
    return Egress("unknown", table)  # a virtual private gateway, a target outside the program


def public(graph: Graph, subnet: RenderedResource) -> bool | None:
    """Routed to an internet gateway (True), not (False), or not known (None)."""
    kind = egress(graph, subnet).kind
    return None if kind == "unknown" else kind == "igw"


def endpoints(graph: Graph, vpc: RenderedResource, table: RenderedResource | None) -> set[str]:
    """The AWS services the VPC's endpoints serve to a subnet whose route table is ``table``: interface endpoints
    with private DNS (the SDKs call the public name, which private DNS answers inside the VPC), gateway endpoints
    routed from that table. Names as in ``com.amazonaws.REGION.<name>``: ``ecr.api``, ``s3``, ``sts`` ..."""
    out: set[str] = set()
    for endpoint in graph.of_type(VPC_ENDPOINT, vpc.region):
        found = vpc_of(graph, endpoint)
        if found is None or found.urn != vpc.urn:
            continue
        service = str(endpoint.inputs.get("serviceName") or "").split(".", 3)[-1]
        kind = str(endpoint.inputs.get("vpcEndpointType") or "Gateway")
        if kind == "Interface":
            if endpoint.inputs.get("privateDnsEnabled") is True:
                out.add(service)
            continue
        tables = {t.urn for t in graph.referenced(endpoint, "routeTableIds")}
        for association in graph.of_type(ENDPOINT_TABLE, vpc.region):
            if any(e.urn == endpoint.urn for e in graph.referenced(association, "vpcEndpointId")):
                tables |= {t.urn for t in graph.referenced(association, "routeTableId")}
        if table is not None and table.urn in tables:
            out.add(service)
    return out
