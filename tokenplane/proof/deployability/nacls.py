"""Network ACLs: the stateless, ordered, per-subnet filter that security groups and NetworkPolicies sit behind.

A subnet is filtered by exactly one ACL: the ``aws.ec2.NetworkAcl`` that lists it (``subnetIds``) or an
``aws.ec2.NetworkAclAssociation`` names, else its VPC's default ACL. The default ACL admits everything unless
the program adopts it with ``aws.ec2.DefaultNetworkAcl``, which (as the provider documents) removes every rule
it does not declare. Rules come inline (``ingress``/``egress``) or as ``aws.ec2.NetworkAclRule`` resources; they
are read in rule-number order, the first that matches decides, and a final implicit rule denies.

Because an ACL keeps no state, a TCP or UDP flow needs four rules: the source subnet's egress and the destination
subnet's ingress on the server port, and the reverse on the client's ephemeral ports (Linux pods and nodes use
32768-60999; load balancers and internet clients anything in 1024-65535). Traffic between two addresses of one
subnet never crosses its ACL.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.security_groups import Network, network
from tokenplane.proof.render import RenderedResource

NETWORK_ACL = "aws:ec2/networkAcl:NetworkAcl"
NETWORK_ACL_RULE = "aws:ec2/networkAclRule:NetworkAclRule"
NETWORK_ACL_ASSOCIATION = "aws:ec2/networkAclAssociation:NetworkAclAssociation"
DEFAULT_NETWORK_ACL = "aws:ec2/defaultNetworkAcl:DefaultNetworkAcl"
VPC = "aws:ec2/vpc:Vpc"
LINUX_EPHEMERAL = (32768, 60999)  # net.ipv4.ip_local_port_range's default: pods' and nodes' client ports
ANY_EPHEMERAL = (1024, 65535)  # AWS's advice for load balancers and internet clients
PROTOCOL_NUMBERS = {"tcp": "6", "udp": "17", "icmp": "1", "all": "-1"}


@dataclass(frozen=True)
class AclRule:
    number: int
    egress: bool
    allow: bool
    protocol: str  # a protocol number as a string; "-1" for all
    network: Network | None
    low: int
    high: int

    @classmethod
    def read(cls, data: dict[str, Any], egress: bool, number_key: str, action_key: str) -> AclRule:
        protocol = str(data.get("protocol", "-1")).lower()
        cidr = data.get("cidrBlock") or data.get("ipv6CidrBlock")
        return cls(
            int(data.get(number_key) or 0),
            egress,
            str(data.get(action_key, "deny")).lower() == "allow",
            PROTOCOL_NUMBERS.get(protocol, protocol),
            network(cidr),
            int(data.get("fromPort") or 0),
            int(data.get("toPort") or 0),
        )

    def matches_protocol(self, protocol: str) -> bool:
        return self.protocol == "-1" or self.protocol == PROTOCOL_NUMBERS[protocol]

    def ports(self) -> tuple[int, int]:
        # AWS ignores the port range of an all-protocol rule; a TCP/UDP rule of 0-0 is how "all ports" reads back.
        if self.protocol == "-1" or (self.low, self.high) == (0, 0):
            return 0, 65535
        return self.low, self.high

    def __str__(self) -> str:
        low, high = self.ports()
        ports = "all ports" if (low, high) == (0, 65535) else f"ports {low}-{high}"
        protocol = {v: k for k, v in PROTOCOL_NUMBERS.items()}.get(self.protocol, self.protocol)
        return f"rule {self.number} {'allow' if self.allow else 'deny'} {protocol} {self.network} {ports}"


@dataclass(frozen=True)
class Acl:
    resource: RenderedResource
    rules: tuple[AclRule, ...]

    @property
    def name(self) -> str:
        return self.resource.name

    def decides(self, egress: bool, peer: Network, protocol: str, ports: tuple[int, int]) -> str | None:
        """None when every address of ``peer`` on every port of ``ports`` is allowed, else why not."""
        # Pieces of (addresses, port range) not yet decided; each rule, in number order, decides what it covers.
        pending: list[tuple[Network, int, int]] = [(peer, *ports)]
        for rule in sorted((r for r in self.rules if r.egress == egress), key=lambda r: r.number):
            if rule.network is None or not rule.matches_protocol(protocol):
                continue
            low, high = rule.ports()
            rest: list[tuple[Network, int, int]] = []
            for net, a, b in pending:
                if net.version != rule.network.version or not net.overlaps(rule.network) or b < low or a > high:
                    rest.append((net, a, b))
                    continue
                if not rule.allow:
                    return f"{rule} matches it"
                # The part the rule covers is allowed; what lies outside its range or ports goes on to later rules.
                if not net.subnet_of(rule.network):  # type: ignore[arg-type]  # same version, checked above
                    rest.extend((n, a, b) for n in net.address_exclude(rule.network))  # type: ignore[arg-type]
                    inside = rule.network if rule.network.subnet_of(net) else net  # type: ignore[arg-type]
                else:
                    inside = net
                rest.extend((inside, x, y) for x, y in ((a, low - 1), (high + 1, b)) if x <= y)
            pending = rest
            if not pending:
                return None
        net, a, b = pending[0]
        return f"no rule allows {net} on ports {a}-{b} (the final rule denies)"


@dataclass
class Acls:
    """Which ACL filters each subnet of a region, as the program declares them."""

    graph: Graph
    region: str

    @cached_property
    def _rules(self) -> dict[str, list[AclRule]]:
        out: dict[str, list[AclRule]] = {}
        for rule in self.graph.of_type(NETWORK_ACL_RULE, self.region):
            for acl in self.graph.referenced(rule, "networkAclId"):
                out.setdefault(acl.urn, []).append(
                    AclRule.read(rule.inputs, bool(rule.inputs.get("egress")), "ruleNumber", "ruleAction")
                )
        return out

    def _acl(self, resource: RenderedResource) -> Acl:
        inline = [
            AclRule.read(rule, egress, "ruleNo", "action")
            for egress, key in ((False, "ingress"), (True, "egress"))
            for rule in resource.inputs.get(key) or []
        ]
        return Acl(resource, tuple(inline + self._rules.get(resource.urn, [])))

    @cached_property
    def by_subnet(self) -> dict[str, Acl]:
        """Subnet URN -> the ACL the program puts on it; a subnet absent here has its VPC's untouched default."""
        out: dict[str, Acl] = {}
        for default in self.graph.of_type(DEFAULT_NETWORK_ACL, self.region):
            # Adopting the default ACL rewrites it for every subnet of the VPC that no other ACL claims.
            vpcs = {
                urn
                for urn in default.property_dependencies.get("defaultNetworkAclId", [])
                if (r := self.graph.by_urn.get(urn)) is not None and r.type == VPC
            }
            acl = self._acl(default)
            for subnet in self.graph.of_type("aws:ec2/subnet:Subnet", self.region):
                if vpcs & {v.urn for v in self.graph.referenced(subnet, "vpcId")}:
                    out[subnet.urn] = acl
            for subnet in self.graph.referenced(default, "subnetIds"):
                out[subnet.urn] = acl
        for resource in self.graph.of_type(NETWORK_ACL, self.region):
            acl = self._acl(resource)
            for subnet in self.graph.referenced(resource, "subnetIds"):
                out[subnet.urn] = acl
        for association in self.graph.of_type(NETWORK_ACL_ASSOCIATION, self.region):
            for resource in self.graph.referenced(association, "networkAclId"):
                for subnet in self.graph.referenced(association, "subnetId"):
                    out[subnet.urn] = self._acl(resource)
        return out

    def blocks(
        self,
        sources: list[RenderedResource] | list[Network],
        destinations: list[RenderedResource],
        port: int,
        protocol: str = "tcp",
        ephemeral: tuple[int, int] = LINUX_EPHEMERAL,
    ) -> list[str]:
        """Why a flow from ``sources`` (subnets, or outside ranges) to ``destinations`` (subnets) on ``port`` is
        stopped by an ACL, one line per refusing ACL and direction; empty when every pair gets through."""
        if not self.by_subnet:
            return []
        out: list[str] = []
        for source in sources:
            src_net = network(source.inputs.get("cidrBlock")) if isinstance(source, RenderedResource) else source
            src_acl = self.by_subnet.get(source.urn) if isinstance(source, RenderedResource) else None
            for destination in destinations:
                dst_net = network(destination.inputs.get("cidrBlock"))
                if src_net is None or dst_net is None or src_net == dst_net:
                    continue  # within one subnet no ACL applies
                dst_acl = self.by_subnet.get(destination.urn)
                steps = [
                    (src_acl, True, dst_net, (port, port), "leaving", source),
                    (dst_acl, False, src_net, (port, port), "entering", destination),
                    (dst_acl, True, src_net, ephemeral, "replying from", destination),
                    (src_acl, False, dst_net, ephemeral, "reply entering", source),
                ]
                for acl, egress, peer, ports, what, subnet in steps:
                    why = acl.decides(egress, peer, protocol, ports) if acl is not None else None
                    if why is not None and acl is not None:
                        where = subnet.name if isinstance(subnet, RenderedResource) else str(subnet)
                        line = (
                            f"network ACL {acl.name} ({'egress' if egress else 'ingress'}, {what} {where}, "
                            f"{protocol.upper()} {ports[0]}{'' if ports[0] == ports[1] else f'-{ports[1]}'} "
                            f"{'to' if egress else 'from'} {peer}): {why}"
                        )
                        if line not in out:
                            out.append(line)
        return out


def fix(port: int, protocol: str = "tcp", ephemeral: tuple[int, int] = LINUX_EPHEMERAL) -> str:
    return (
        f"network ACLs are stateless: allow {protocol.upper()} {port} out of the client's subnets and into the "
        f"server's, and the replies on {ephemeral[0]}-{ephemeral[1]} back (both ACLs, both directions), with rule "
        "numbers below any deny that covers them"
    )


ANY_IPV4 = ipaddress.IPv4Network("0.0.0.0/0")
