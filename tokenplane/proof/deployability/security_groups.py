"""Security-group ingress rules, whichever resource declares them, and the address arithmetic they need.

A group's rules come inline (``ingress`` of ``aws.ec2.SecurityGroup``) or as resources of their own
(``aws.ec2.SecurityGroupRule`` of type ingress, ``aws.vpc.SecurityGroupIngressRule``); each admits ranges,
other groups (by ID, resolved to their resources through the graph) or its own group.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
SG_INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SG_EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
PROTOCOLS = {"tcp": ("tcp", "6"), "udp": ("udp", "17")}


def network(text: object) -> Network | None:
    try:
        return ipaddress.ip_network(str(text), strict=False)
    except ValueError:
        return None


def covered(networks: Iterable[Network], by: Iterable[Network]) -> bool:
    """Every address of ``networks`` lies in the union of ``by`` (a network split over two rules counts)."""
    cover = list(by)
    left = [n for n in networks]
    for block in cover:
        rest: list[Network] = []
        for n in left:
            if n.version != block.version or not n.overlaps(block):
                rest.append(n)
            elif not n.subnet_of(block):  # type: ignore[arg-type]  # same version, checked above
                rest.extend(n.address_exclude(block))  # type: ignore[arg-type]  # same version
        left = rest
    return not left


@dataclass(frozen=True)
class SgRule:
    """One security-group ingress rule, whichever resource declares it."""

    owner: str  # the security group's URN
    protocol: str
    from_port: int
    to_port: int
    networks: list[Network]
    source_groups: set[str]  # URNs of the groups it admits
    self_ref: bool

    def has_port(self, port: int, protocol: str = "tcp") -> bool:
        if self.protocol in ("-1", "all"):
            return True
        return self.protocol in PROTOCOLS[protocol] and self.from_port <= port <= self.to_port

    def summary(self) -> str:
        sources = [str(n) for n in self.networks] + [urn.rsplit("::", 1)[-1] for urn in sorted(self.source_groups)]
        if self.self_ref:
            sources.append("itself")
        return ", ".join(sources) or "no source"

    @staticmethod
    def _ports(data: dict[str, Any], low: str, high: str) -> tuple[str, int, int]:
        protocol = str(data.get("protocol", data.get("ipProtocol", "tcp"))).lower()
        return protocol, int(data.get(low) or 0), int(data.get(high) or data.get(low) or 0)

    @classmethod
    def inline(cls, group: RenderedResource, rule: dict[str, Any], graph: Graph) -> SgRule:
        protocol, low, high = cls._ports(rule, "fromPort", "toPort")
        networks = [
            n
            for c in [*(rule.get("cidrBlocks") or []), *(rule.get("ipv6CidrBlocks") or [])]
            if (n := network(c)) is not None
        ]
        sources = {g.urn for g in graph.by_physical_ids(rule.get("securityGroups") or [])}
        return cls(group.urn, protocol, low, high, networks, sources, bool(rule.get("self")))

    @classmethod
    def standalone(cls, rule: RenderedResource, graph: Graph) -> SgRule:
        protocol, low, high = cls._ports(rule.inputs, "fromPort", "toPort")
        blocks = [*(rule.inputs.get("cidrBlocks") or []), *(rule.inputs.get("ipv6CidrBlocks") or [])]
        networks = [n for c in blocks if (n := network(c)) is not None]
        sources = {g.urn for g in graph.referenced(rule, "sourceSecurityGroupId")}
        owner = next(iter(graph.referenced(rule, "securityGroupId")), rule)
        return cls(owner.urn, protocol, low, high, networks, sources, bool(rule.inputs.get("self")))

    @classmethod
    def vpc_rule(cls, rule: RenderedResource, graph: Graph) -> SgRule:
        protocol, low, high = cls._ports(rule.inputs, "fromPort", "toPort")
        blocks = [rule.inputs.get("cidrIpv4"), rule.inputs.get("cidrIpv6")]
        networks = [n for c in blocks if c and (n := network(c)) is not None]
        sources = {g.urn for g in graph.referenced(rule, "referencedSecurityGroupId")}
        owner = next(iter(graph.referenced(rule, "securityGroupId")), rule)
        return cls(owner.urn, protocol, low, high, networks, sources, False)
