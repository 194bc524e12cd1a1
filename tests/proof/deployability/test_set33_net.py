"""The rules set 33's network placement misses led to (written after its blind run, so not held out), planted in the
shipped dev render (VPC 10.0.0.0/16, public subnets routed to an internet gateway, private ones to NAT gateways)
beside correct twins: secondary VPC blocks AssociateVpcCidrBlock refuses (vpc-cidr-block), Fargate profiles in
public subnets (fargate-private-subnets), and the program's own internet-facing load balancers in private subnets
(lb-subnets). The planted defects are of other values and resources than the held-out cases' (a 172.16/12 block
beside a 10/8 primary, 198.19/16 beside a publicly routable or an RFC 1918 primary, 10/8 beside a 192.168/16 primary, a /14 and a
/29, overlaps, a route's destination, an IPAM netmask; a mixed and a standalone-route public subnet; an NLB, a
classic ELB, subnet mappings, a VPC without an internet gateway)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings, rendered, spec
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import fargate_subnets, lb_subnets, vpc_cidr_blocks
from tokenplane.proof.render import RenderedResource, physical_id

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)
VPC = "aws:ec2/vpc:Vpc"
SUBNET = "aws:ec2/subnet:Subnet"
ASSOCIATION = "aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
ROUTE = "aws:ec2/route:Route"
TABLE_ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"
IGW = "aws:ec2/internetGateway:InternetGateway"
PROFILE = "aws:eks/fargateProfile:FargateProfile"
LB = "aws:lb/loadBalancer:LoadBalancer"
ALB = "aws:alb/loadBalancer:LoadBalancer"
ELB = "aws:elb/loadBalancer:LoadBalancer"


def _aws(type_token: str, name: str, inputs: dict[str, Any], **kw: Any) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION, **kw)


def _pid(resource: RenderedResource) -> str:
    return physical_id(resource.type, resource.name)


def _dev(type_token: str, suffix: str) -> RenderedResource:
    found = [r for r in rendered(STACK).resources if r.type == type_token and r.name.endswith(suffix)]
    assert len(found) == 1, (suffix, found)
    return found[0]


def _dev_id(type_token: str, suffix: str) -> str:
    return _pid(_dev(type_token, suffix))


DEV_VPC = partial(_dev_id, VPC, "network-vpc")
PUBLIC = ("network-public-a", "network-public-b")
PRIVATE = ("network-private-a", "network-private-b")


def _subnets(*suffixes: str) -> list[str]:
    return [_dev_id(SUBNET, s) for s in suffixes]


def test_the_shipped_render_holds_none_of_these() -> None:
    graph = deploy.Graph(spec(STACK), rendered(STACK))
    assert not [*vpc_cidr_blocks.check(graph), *fargate_subnets.check(graph), *lb_subnets.check(graph)]


# --- vpc-cidr-block ---------------------------------------------------------------------------------------------


def _block(
    cidr: str | None,
    vpc: str | None = None,
    name: str = "planted-block",
    dependencies: list[str] | None = None,
    **inputs: Any,
) -> RenderedResource:
    body: dict[str, Any] = {"vpcId": vpc or DEV_VPC(), **inputs}
    if cidr is not None:
        body["cidrBlock"] = cidr
    return _aws(ASSOCIATION, name, body, dependencies=dependencies)


def _vpc(cidr: str, name: str = "planted-vpc") -> RenderedResource:
    return _aws(VPC, name, {"cidrBlock": cidr})


@pytest.mark.parametrize(
    ("primary", "secondary", "words"),
    [
        (None, "172.20.0.0/16", "is in 172.16.0.0/12, which AWS restricts"),  # beside dev's 10.0.0.0/16
        ("192.168.0.0/20", "10.50.0.0/16", "is in 10.0.0.0/8, which AWS restricts"),
        ("203.0.113.0/24", "198.19.0.0/16", "is in 198.19.0.0/16, which AWS restricts"),
        ("100.64.0.0/16", "192.168.10.0/24", "is in 192.168.0.0/16, which AWS restricts"),
        ("198.19.0.0/16", "172.31.0.0/16", "is in 172.16.0.0/12, which AWS restricts"),
        (None, "10.8.0.0/14", "is a /14"),
        (None, "100.64.0.0/29", "is a /29"),
        (None, "198.19.0.0/16", "is in 198.19.0.0/16, which AWS restricts"),  # beside an RFC 1918 primary
        ("172.16.0.0/16", "172.31.0.0/16", "is in 172.31.0.0/16, which AWS restricts"),
        ("10.1.0.0/16", "10.0.4.0/24", "is in 10.0.0.0/16, which AWS restricts"),  # a block of 10.0.0.0/15
        (None, "169.254.0.0/16", "is in 169.254.0.0/16, which AWS restricts"),
        (None, "10.0.128.0/17", "overlaps the VPC's primary block 10.0.0.0/16"),
    ],
)
def test_a_secondary_block_associate_vpc_cidr_block_refuses_is_reported(
    primary: str | None, secondary: str, words: str
) -> None:
    extra = [_vpc(primary)] if primary else []
    vpc = _pid(extra[0]) if extra else None
    found = _findings(vpc_cidr_blocks.check, *extra, _block(secondary, vpc))
    assert any(words in f.message for f in found), found


@pytest.mark.parametrize(
    ("primary", "secondary"),
    [
        (None, "10.1.0.0/16"),  # the primary's own range
        (None, "100.65.0.0/16"),
        ("10.4.0.0/16", "10.0.4.0/24"),  # 10.0.0.0/16 is restricted only beside a block of 10.0.0.0/15
        (None, "203.0.113.0/24"),  # publicly routable
        (None, "100.64.0.0/28"),
        (None, None),  # not known at render time
        ("172.16.0.0/16", "172.20.0.0/16"),
        ("192.168.0.0/20", "192.168.16.0/20"),
        ("100.64.0.0/16", "100.65.0.0/16"),
        ("198.19.0.0/16", "100.64.0.0/16"),
    ],
)
def test_a_secondary_block_the_table_permits_is_not_reported(primary: str | None, secondary: str | None) -> None:
    extra = [_vpc(primary)] if primary else []
    vpc = _pid(extra[0]) if extra else None
    assert not _findings(vpc_cidr_blocks.check, *extra, _block(secondary, vpc))


def test_two_overlapping_secondary_blocks_are_reported_once() -> None:
    found = _findings(
        vpc_cidr_blocks.check, _block("10.1.0.0/16", name="planted-one"), _block("10.1.128.0/17", name="planted-two")
    )
    assert len(found) == 1 and "overlaps secondary block planted-one" in found[0].message, found
    assert not _findings(
        vpc_cidr_blocks.check, _block("10.1.0.0/16", name="planted-one"), _block("10.2.0.0/17", name="planted-two")
    )


def _peering_table(destination: str) -> RenderedResource:
    return _aws(
        ROUTE_TABLE,
        "planted-peering-rt",
        {"vpcId": DEV_VPC(), "routes": [{"cidrBlock": destination, "vpcPeeringConnectionId": "pcx-0123"}]},
    )


def test_a_block_that_holds_an_earlier_routes_destination_is_reported() -> None:
    table = _peering_table("10.2.0.0/24")
    found = _findings(vpc_cidr_blocks.check, table, _block("10.2.0.0/16", dependencies=[table.urn]))
    assert any("destination 10.2.0.0/24" in f.message for f in found), found
    route = _aws(
        ROUTE,
        "planted-route",
        {
            "routeTableId": _dev_id(ROUTE_TABLE, "network-private-a-rt"),
            "destinationCidrBlock": "10.3.0.0/20",
            "vpcPeeringConnectionId": "pcx-1",
        },
    )
    found = _findings(vpc_cidr_blocks.check, route, _block("10.3.0.0/16", dependencies=[route.urn]))
    assert any("destination 10.3.0.0/20" in f.message for f in found), found


def test_a_block_smaller_than_the_route_or_not_after_it_is_not_reported() -> None:
    table = _peering_table("10.2.0.0/24")
    assert not _findings(vpc_cidr_blocks.check, table, _block("10.2.0.0/25", dependencies=[table.urn]))
    assert not _findings(vpc_cidr_blocks.check, table, _block("10.2.0.0/16"))  # not ordered: not judged


def test_an_ipam_netmask_outside_16_to_28_is_reported() -> None:
    found = _findings(vpc_cidr_blocks.check, _block(None, ipv4IpamPoolId="ipam-pool-1", ipv4NetmaskLength=12.0))
    assert found and "/12" in found[0].message, found
    assert not _findings(vpc_cidr_blocks.check, _block(None, ipv4IpamPoolId="ipam-pool-1", ipv4NetmaskLength=20.0))


# --- fargate-private-subnets ------------------------------------------------------------------------------------


def _profile(subnet_ids: list[str]) -> RenderedResource:
    return _aws(
        PROFILE,
        "planted-profile",
        {
            "clusterName": "dev-local",
            "podExecutionRoleArn": "arn:aws:iam::123456789012:role/fargate",
            "subnetIds": subnet_ids,
            "selectors": [{"namespace": "batch", "labels": {"app": "copy"}}],
        },
    )


def _own_subnet(name: str, table_routes: list[dict[str, Any]], *, standalone: bool = False) -> list[RenderedResource]:
    """A subnet of dev's VPC with its own route table, its default route inline or as an aws.ec2.Route."""
    subnet = _aws(SUBNET, name, {"vpcId": DEV_VPC(), "cidrBlock": "10.0.200.0/24", "availabilityZone": "eu-north-1c"})
    table = _aws(ROUTE_TABLE, f"{name}-rt", {"vpcId": DEV_VPC(), "routes": [] if standalone else table_routes})
    out = [
        subnet,
        table,
        _aws(TABLE_ASSOCIATION, f"{name}-assoc", {"subnetId": _pid(subnet), "routeTableId": _pid(table)}),
    ]
    if standalone:
        out += [
            _aws(
                ROUTE,
                f"{name}-route-{i}",
                {
                    "routeTableId": _pid(table),
                    "destinationCidrBlock": r["cidrBlock"],
                    **{k: v for k, v in r.items() if k != "cidrBlock"},
                },
            )
            for i, r in enumerate(table_routes)
        ]
    return out


def _to_igw() -> list[dict[str, Any]]:
    return [{"cidrBlock": "0.0.0.0/0", "gatewayId": _dev_id(IGW, "network-igw")}]


@pytest.mark.parametrize(
    "subnets",
    [
        lambda: ([], _subnets(*PUBLIC)),
        lambda: ([], _subnets("network-private-a", "network-public-b")),  # one public subnet is enough
        lambda: ((s := _own_subnet("planted-sub", _to_igw(), standalone=True)), [_pid(s[0]), *_subnets(PRIVATE[0])]),
    ],
)
def test_a_fargate_profile_in_a_public_subnet_is_reported(subnets: Any) -> None:
    extra, ids = subnets()
    found = _findings(fargate_subnets.check, *extra, _profile(ids))
    assert found and "not a private subnet" in found[0].message and "internet gateway" in found[0].message, found


@pytest.mark.parametrize(
    "subnets",
    [
        lambda: ([], _subnets(*PRIVATE)),
        lambda: ([], ["subnet-0a1b2c3d4e5f60718"]),  # not the program's: not judged
        lambda: (
            (s := _own_subnet("planted-sub", [{"cidrBlock": "0.0.0.0/0", "transitGatewayId": "tgw-1"}])),
            [_pid(s[0])],
        ),
        lambda: ((s := _own_subnet("planted-sub", [])), [_pid(s[0])]),  # isolated: private
    ],
)
def test_a_fargate_profile_in_private_or_unknown_subnets_is_not_reported(subnets: Any) -> None:
    extra, ids = subnets()
    assert not _findings(fargate_subnets.check, *extra, _profile(ids))


# --- lb-subnets: the program's own load balancers ---------------------------------------------------------------


def _balancer(type_token: str, **inputs: Any) -> RenderedResource:
    return _aws(type_token, "planted-lb", inputs)


@pytest.mark.parametrize(
    "balancer",
    [
        lambda: _balancer(LB, internal=False, loadBalancerType="network", subnets=_subnets(*PRIVATE)),
        lambda: _balancer(ELB, subnets=_subnets(*PRIVATE), listeners=[]),  # internal absent: internet-facing
        lambda: _balancer(ALB, subnetMappings=[{"subnetId": s} for s in _subnets(*PRIVATE)]),
        lambda: _balancer(LB, internal=False, loadBalancerType="application", subnets=_subnets(PRIVATE[1])),
    ],
)
def test_an_internet_facing_load_balancer_in_private_subnets_is_reported(balancer: Any) -> None:
    found = _findings(lb_subnets.check, balancer())
    assert found and "internet-facing" in found[0].message and "through NAT" in found[0].message, found
    assert "public subnets" in found[0].fix


def test_an_internet_facing_load_balancer_in_a_vpc_without_internet_gateway_is_reported() -> None:
    vpc = _vpc("10.9.0.0/16", "planted-vpc")
    subnet = _aws(SUBNET, "planted-sub", {"vpcId": _pid(vpc), "cidrBlock": "10.9.0.0/24"})
    found = _findings(lb_subnets.check, vpc, subnet, _balancer(LB, internal=False, subnets=[_pid(subnet)]))
    assert found and "has no internet gateway" in found[0].message, found


@pytest.mark.parametrize(
    "balancer",
    [
        lambda: _balancer(LB, internal=True, loadBalancerType="application", subnets=_subnets(*PRIVATE)),
        lambda: _balancer(LB, internal=False, loadBalancerType="network", subnets=_subnets(*PUBLIC)),
        lambda: _balancer(ELB, subnets=_subnets("network-public-a", "network-private-b")),  # one AZ reachable
        lambda: _balancer(LB, loadBalancerType="gateway", subnets=_subnets(*PRIVATE)),  # no scheme
        lambda: _balancer(LB, internal=False, subnets=[*_subnets(*PRIVATE), "subnet-0a1b2c3d4e5f60718"]),
        lambda: _balancer(ALB, internal=False, subnetMappings=[{"subnetId": s} for s in _subnets(*PUBLIC)]),
    ],
)
def test_an_internal_or_publicly_placed_load_balancer_is_not_reported(balancer: Any) -> None:
    assert not _findings(lb_subnets.check, balancer())
