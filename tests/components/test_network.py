"""Network: a public and a private subnet in every AZ, and egress that survives an AZ outage."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from tests.components.conftest import mock_id, of_type, rendered, spec
from tokenplane.proof.render import RenderedResource, RenderResult

SUBNET = "aws:ec2/subnet:Subnet"
NAT = "aws:ec2/natGateway:NatGateway"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"
VPC = "aws:ec2/vpc:Vpc"
PRIVATE_TAG = "kubernetes.io/role/internal-elb"  # where internal load balancers go: the private subnets
PUBLIC_TAG = "kubernetes.io/role/elb"

REGIONS = [(name, region.name) for name in ("dev", "byteion") for region in spec(name).regions]


def subnets(result: RenderResult, region: str, role_tag: str) -> list[RenderedResource]:
    return [s for s in of_type(result, SUBNET, region) if role_tag in (s.inputs.get("tags") or {})]


def default_route(route_table: RenderedResource) -> dict[str, Any] | None:
    return next((r for r in route_table.inputs.get("routes") or [] if r.get("cidrBlock") == "0.0.0.0/0"), None)


def route_table_of(result: RenderResult, region: str, subnet: RenderedResource) -> RenderedResource:
    associations = [a for a in of_type(result, ASSOCIATION, region) if a.inputs.get("subnetId") == mock_id(subnet)]
    assert len(associations) == 1, f"{subnet.urn} has {len(associations)} route table associations, expected one"
    tables = {mock_id(t): t for t in of_type(result, ROUTE_TABLE, region)}
    table = tables.get(associations[0].inputs.get("routeTableId", ""))
    assert table is not None, f"{associations[0].urn} associates {subnet.urn} with a route table that was not rendered"
    return table


@pytest.mark.parametrize(("name", "region"), REGIONS)
def test_every_az_has_exactly_one_private_subnet(name: str, region: str) -> None:
    private = subnets(rendered(name), region, PRIVATE_TAG)
    azs = sorted(str(s.inputs.get("availabilityZone")) for s in private)
    assert azs == sorted(spec(name).region(region).azs), (
        f"private subnets in {region} cover {azs}: {[s.urn for s in private]}"
    )


@pytest.mark.parametrize(("name", "region"), REGIONS)
def test_every_az_has_exactly_one_public_subnet(name: str, region: str) -> None:
    public = subnets(rendered(name), region, PUBLIC_TAG)
    azs = sorted(str(s.inputs.get("availabilityZone")) for s in public)
    assert azs == sorted(spec(name).region(region).azs), (
        f"public subnets in {region} cover {azs}: {[s.urn for s in public]}"
    )


@pytest.mark.parametrize(("name", "region"), REGIONS)
def test_every_az_has_its_own_nat_gateway(name: str, region: str) -> None:
    result = rendered(name)
    public_az = {mock_id(s): s.inputs.get("availabilityZone") for s in subnets(result, region, PUBLIC_TAG)}
    nats = of_type(result, NAT, region)
    for nat in nats:
        assert nat.inputs.get("subnetId") in public_az, f"{nat.urn} is not in one of {region}'s public subnets"
    azs = sorted(str(public_az[n.inputs["subnetId"]]) for n in nats)
    assert azs == sorted(spec(name).region(region).azs), (
        f"NAT gateways in {region} cover {azs}: {[n.urn for n in nats]}"
    )


@pytest.mark.parametrize(("name", "region"), REGIONS)
def test_private_subnets_route_default_traffic_through_a_nat(name: str, region: str) -> None:
    result = rendered(name)
    for subnet in subnets(result, region, PRIVATE_TAG):
        table = route_table_of(result, region, subnet)
        route = default_route(table)
        assert route is not None, f"{table.urn} (for {subnet.urn}) has no 0.0.0.0/0 route"
        assert route.get("natGatewayId"), f"{table.urn} sends {subnet.urn}'s 0.0.0.0/0 to {route}, not to a NAT"


@pytest.mark.parametrize(("name", "region"), REGIONS)
def test_private_subnets_use_the_nat_in_their_own_az(name: str, region: str) -> None:
    result = rendered(name)
    public_az = {mock_id(s): s.inputs.get("availabilityZone") for s in subnets(result, region, PUBLIC_TAG)}
    nat_az = {mock_id(n): public_az.get(n.inputs.get("subnetId", "")) for n in of_type(result, NAT, region)}
    for subnet in subnets(result, region, PRIVATE_TAG):
        table = route_table_of(result, region, subnet)
        route = default_route(table) or {}
        az = subnet.inputs.get("availabilityZone")
        assert nat_az.get(route.get("natGatewayId", "")) == az, (
            f"{subnet.urn} in {az} egresses through a NAT in {nat_az.get(route.get('natGatewayId', ''))} "
            f"({table.urn}): an outage there would cut this AZ off too"
        )


@pytest.mark.parametrize(("name", "region"), REGIONS)
def test_subnets_are_disjoint_and_inside_the_vpc(name: str, region: str) -> None:
    result = rendered(name)
    [vpc] = of_type(result, VPC, region)
    network = ipaddress.IPv4Network(vpc.inputs["cidrBlock"])
    blocks = [(s.urn, ipaddress.IPv4Network(s.inputs["cidrBlock"])) for s in of_type(result, SUBNET, region)]
    for i, (urn, block) in enumerate(blocks):
        assert block.subnet_of(network), f"{urn} ({block}) is outside {vpc.urn} ({network})"
        for other_urn, other in blocks[i + 1 :]:
            assert not block.overlaps(other), f"{urn} ({block}) overlaps {other_urn} ({other})"


@pytest.mark.parametrize(("name", "region"), REGIONS)
def test_each_vpcs_default_security_group_is_adopted_with_no_rules(name: str, region: str) -> None:
    result = rendered(name)
    [vpc] = of_type(result, VPC, region)
    groups = [g for g in of_type(result, "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup", region)]
    assert [g.inputs.get("vpcId") for g in groups] == [mock_id(vpc)], groups
    assert not groups[0].inputs.get("ingress") and not groups[0].inputs.get("egress")
