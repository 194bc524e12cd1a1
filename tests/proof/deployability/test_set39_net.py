"""The rules set 39's networking misses led to (written after its blind run, so not held out), planted in the shipped
dev render beside correct twins: two subnets of one zone under a transit gateway attachment, a load balancer or a
Network Firewall (one-subnet-per-zone); a Route 53 Resolver endpoint with fewer than two addresses (aws-api-values);
a FORWARD rule no association or RAM share covers, and an outbound endpoint whose groups send no DNS to a target
(resolver-forwarding). The planted defects use other resources, zones, targets and ports than the held-out cases."""

from __future__ import annotations

from functools import partial
from typing import Any

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import aws_values, resolver_forwarding, subnet_zones
from tokenplane.proof.render import RenderedResource, physical_id

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)
SUBNET = "aws:ec2/subnet:Subnet"
SG = "aws:ec2/securityGroup:SecurityGroup"
ENDPOINT = "aws:route53/resolverEndpoint:ResolverEndpoint"
RULE_TYPE = "aws:route53/resolverRule:ResolverRule"
ASSOCIATION = "aws:route53/resolverRuleAssociation:ResolverRuleAssociation"
# The dev render's subnets: public-a and private-a in eu-north-1a, public-b and private-b in eu-north-1b.
PUBLIC_A = physical_id(SUBNET, "dev-local-network-public-a")
PRIVATE_A = physical_id(SUBNET, "dev-local-network-private-a")
PUBLIC_B = physical_id(SUBNET, "dev-local-network-public-b")
PRIVATE_B = physical_id(SUBNET, "dev-local-network-private-b")


def _aws(type_token: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION)


def _rules(findings: list[Any], rule: str) -> list[Any]:
    return [f for f in findings if f.rule == rule]


# --- one-subnet-per-zone ----------------------------------------------------------------------------------------


def test_a_transit_gateway_attachment_with_two_subnets_of_one_zone_is_refused() -> None:
    bad = _aws(
        "aws:ec2transitgateway/vpcAttachment:VpcAttachment",
        "planted-tgw",
        {"transitGatewayId": "tgw-1", "vpcId": "vpc-1", "subnetIds": [PRIVATE_B, PUBLIC_B]},
    )
    found = _findings(subnet_zones.check, bad)
    assert len(found) == 1 and "DuplicateSubnetsInSameZone" in found[0].message and "eu-north-1b" in found[0].message
    ok = _aws(
        "aws:ec2transitgateway/vpcAttachment:VpcAttachment",
        "planted-tgw",
        {"transitGatewayId": "tgw-1", "vpcId": "vpc-1", "subnetIds": [PRIVATE_A, PRIVATE_B]},
    )
    assert _findings(subnet_zones.check, ok) == []


def test_a_load_balancer_with_two_subnets_of_one_zone_is_refused() -> None:
    for token, inputs in (
        ("aws:lb/loadBalancer:LoadBalancer", {"loadBalancerType": "network", "subnets": [PUBLIC_A, PRIVATE_A]}),
        (
            "aws:alb/loadBalancer:LoadBalancer",
            {"subnetMappings": [{"subnetId": PUBLIC_A}, {"subnetId": PUBLIC_B}, {"subnetId": PRIVATE_B}]},
        ),
    ):
        found = _findings(subnet_zones.check, _aws(token, "planted-lb", inputs))
        assert len(found) == 1 and "CreateLoadBalancer" in found[0].message, (token, found)
    ok = _aws("aws:lb/loadBalancer:LoadBalancer", "planted-lb", {"subnets": [PUBLIC_A, PUBLIC_B]})
    assert _findings(subnet_zones.check, ok) == []


def test_a_network_firewall_with_two_subnets_of_one_zone_is_refused() -> None:
    bad = _aws(
        "aws:networkfirewall/firewall:Firewall",
        "planted-firewall",
        {"subnetMappings": [{"subnetId": PUBLIC_A}, {"subnetId": PRIVATE_A}], "vpcId": "vpc-1"},
    )
    found = _findings(subnet_zones.check, bad)
    assert len(found) == 1 and "CreateFirewall" in found[0].message
    ok = _aws(
        "aws:networkfirewall/firewall:Firewall",
        "planted-firewall",
        {"subnetMappings": [{"subnetId": PUBLIC_A}, {"subnetId": PUBLIC_B}], "vpcId": "vpc-1"},
    )
    assert _findings(subnet_zones.check, ok) == []


def test_subnets_the_program_does_not_know_are_not_judged() -> None:
    unknown = _aws(
        "aws:ec2transitgateway/vpcAttachment:VpcAttachment",
        "planted-tgw",
        {"transitGatewayId": "tgw-1", "vpcId": "vpc-1", "subnetIds": [PRIVATE_A, "subnet-0abc"]},
    )
    assert _findings(subnet_zones.check, unknown) == []


# --- aws-api-values: Resolver endpoint addresses -----------------------------------------------------------------


def _endpoint(addresses: list[dict[str, Any]], direction: str = "OUTBOUND", groups: list[str] | None = None) -> Any:
    return _aws(
        ENDPOINT,
        "planted-endpoint",
        {
            "direction": direction,
            "ipAddresses": addresses,
            "securityGroupIds": groups or [physical_id(SG, "planted-sg")],
        },
    )


def test_a_resolver_endpoint_with_fewer_than_two_addresses_is_refused() -> None:
    for addresses in (
        [{"subnetId": PRIVATE_B, "ip": "10.0.3.10"}],  # one fixed address, inbound
        [{"subnetId": PUBLIC_A}],
        [],
    ):
        found = [
            f for f in _findings(aws_values.check, _endpoint(addresses, "INBOUND")) if "Route 53 Resolver" in f.message
        ]
        assert len(found) == 1 and "at least 2" in found[0].message, addresses
    ok = _endpoint([{"subnetId": PRIVATE_A}, {"subnetId": PRIVATE_A, "ip": "10.0.2.9"}])  # two in one subnet: allowed
    assert [f for f in _findings(aws_values.check, ok) if "Route 53 Resolver" in f.message] == []


# --- resolver-forwarding -----------------------------------------------------------------------------------------


def _sg(egress: list[dict[str, Any]]) -> RenderedResource:
    return _aws(SG, "planted-sg", {"vpcId": "vpc-1", "description": "resolver", "egress": egress})


def _rule(targets: list[dict[str, Any]], rule_type: str = "FORWARD") -> RenderedResource:
    return _aws(
        RULE_TYPE,
        "planted-rule",
        {
            "domainName": "onprem.example.net",
            "ruleType": rule_type,
            "resolverEndpointId": physical_id(ENDPOINT, "planted-endpoint"),
            "targetIps": targets,
        },
    )


def _association() -> RenderedResource:
    return _aws(
        ASSOCIATION,
        "planted-association",
        {"resolverRuleId": physical_id(RULE_TYPE, "planted-rule"), "vpcId": "vpc-1"},
    )


def _dns_out(cidr: str, port: float = 53.0, protocols: tuple[str, ...] = ("udp", "tcp")) -> list[dict[str, Any]]:
    return [{"protocol": p, "fromPort": port, "toPort": port, "cidrBlocks": [cidr]} for p in protocols]


TWO = [{"subnetId": PRIVATE_A}, {"subnetId": PRIVATE_B}]


def test_a_forward_rule_no_association_covers_forwards_nothing() -> None:
    graph = [_sg(_dns_out("172.16.0.0/12")), _endpoint(TWO), _rule([{"ip": "172.16.5.5"}])]
    found = _rules(_findings(resolver_forwarding.check, *graph), resolver_forwarding.RULE)
    assert len(found) == 1 and "no ResolverRuleAssociation" in found[0].message
    # An association of some other rule does not count either.
    other_rule = _aws(RULE_TYPE, "other-rule", {"domainName": "x.example", "ruleType": "SYSTEM"})
    other = _aws(ASSOCIATION, "planted-other", {"resolverRuleId": physical_id(RULE_TYPE, "other-rule")})
    found = _rules(_findings(resolver_forwarding.check, *graph, other_rule, other), resolver_forwarding.RULE)
    assert any("no ResolverRuleAssociation" in f.message for f in found)
    assert _findings(resolver_forwarding.check, *graph, _association()) == []


def test_a_rule_shared_through_ram_or_associated_by_an_unknown_id_is_not_judged() -> None:
    graph = [_sg(_dns_out("0.0.0.0/0")), _endpoint(TWO), _rule([{"ip": "192.168.1.53"}])]
    share = _aws("aws:ram/resourceAssociation:ResourceAssociation", "planted-share", {"resourceArn": "unknown"})
    assert _findings(resolver_forwarding.check, *graph, share) == []
    unknown = _aws(ASSOCIATION, "planted-association", {"resolverRuleId": "rslvr-rr-0123", "vpcId": "vpc-1"})
    assert _findings(resolver_forwarding.check, *graph, unknown) == []


def test_an_outbound_endpoint_whose_groups_send_no_dns_to_a_target_drops_the_queries() -> None:
    cases = [
        # only ingress: no egress at all
        ([], [{"ip": "192.168.1.53"}], "UDP and TCP 53"),
        # egress to another range
        (_dns_out("10.0.0.0/16"), [{"ip": "192.168.1.53", "port": 53.0}], "UDP and TCP 53"),
        # a target on another port than the one allowed
        (_dns_out("192.168.0.0/16"), [{"ip": "192.168.1.53", "port": 5353.0}], "5353"),
        # UDP only
        (_dns_out("192.168.1.53/32", protocols=("udp",)), [{"ip": "192.168.1.53"}], "TCP 53"),
    ]
    for egress, targets, expected in cases:
        graph = [_sg(egress), _endpoint(TWO), _rule(targets), _association()]
        found = _rules(_findings(resolver_forwarding.check, *graph), resolver_forwarding.RULE)
        assert len(found) == 1 and expected in found[0].message, (egress, targets, found)


def test_an_outbound_endpoint_that_sends_dns_to_its_targets_is_clean() -> None:
    for egress, targets in (
        (_dns_out("192.168.0.0/16"), [{"ip": "192.168.1.53"}, {"ip": "192.168.2.53", "port": 53}]),
        ([{"protocol": "-1", "fromPort": 0, "toPort": 0, "cidrBlocks": ["0.0.0.0/0"]}], [{"ip": "10.9.9.9"}]),
        (_dns_out("192.168.1.53/32", port=5353.0), [{"ip": "192.168.1.53", "port": 5353}]),
    ):
        graph = [_sg(egress), _endpoint(TWO), _rule(targets), _association()]
        assert _findings(resolver_forwarding.check, *graph) == [], (egress, targets)


def test_unknown_groups_ranges_and_inbound_endpoints_are_not_judged() -> None:
    targets = [{"ip": "192.168.1.53"}]
    # a group not made by the program
    foreign = [_sg([]), _endpoint(TWO, groups=["sg-0123456789"]), _rule(targets), _association()]
    assert _findings(resolver_forwarding.check, *foreign) == []
    # a range not known at render time
    unknown = [{"protocol": "udp", "fromPort": 53, "toPort": 53, "cidrBlocks": ["some-output"]}]
    assert _findings(resolver_forwarding.check, _sg(unknown), _endpoint(TWO), _rule(targets), _association()) == []
    # an inbound endpoint, and a target given by name
    assert (
        _findings(resolver_forwarding.check, _sg([]), _endpoint(TWO, "INBOUND"), _rule(targets), _association()) == []
    )
    assert (
        _findings(resolver_forwarding.check, _sg([]), _endpoint(TWO), _rule([{"ip": "dns-out"}]), _association()) == []
    )
