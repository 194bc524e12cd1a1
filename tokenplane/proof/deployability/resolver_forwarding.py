"""A Route 53 Resolver forwarding rule the program creates forwards queries: it is associated, and its outbound
endpoint may send them.

Both defects deploy cleanly and leave the forwarded domain unresolvable:

- **Associated with a VPC**: "Resolver rules apply only to the VPCs that you associate them with"; until a rule is
  associated (``aws.route53.ResolverRuleAssociation``), the VPC's Resolver answers the domain itself, and a private
  domain gets NXDOMAIN
  (https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/resolver-rules-managing.html#resolver-rules-managing-associating-rules).
  Judged on a FORWARD rule of the program that no association of the program names and that no RAM resource
  association of the program may share (a shared rule is associated in the other account).
- **Its outbound endpoint's security groups allow DNS out to each target**: an outbound endpoint sends the
  forwarded queries through its security groups, whose outbound rules must allow TCP and UDP on the target's port
  (https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/resolver-forwarding-outbound-queries.html#resolver-forwarding-outbound-queries-configuring).
  pulumi-aws removes AWS's default allow-all egress rule from a group it creates ("this provider will remove this
  default rule", https://www.pulumi.com/registry/packages/aws/api-docs/ec2/securitygroup/), so a group with only
  ingress rules drops every forwarded query and the clients time out (SERVFAIL). Judged with the reachability
  model's egress rules (``reachability.Region.egress_rules``) for each literal target IP, where every group is the
  program's and each rule for the port names only literal ranges.

Cannot see: associations and RAM shares made outside the program, rules of other stacks, groups given by ID, prefix
lists, the routes (transit gateway, VPN) between the endpoint's subnets and the targets, and an inbound endpoint's
ingress.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, number
from tokenplane.proof.deployability.reachability import Region
from tokenplane.proof.deployability.security_groups import network
from tokenplane.proof.render import RenderedResource

RULE = "resolver-forwarding"
RESOLVER_RULE = "aws:route53/resolverRule:ResolverRule"
ASSOCIATION = "aws:route53/resolverRuleAssociation:ResolverRuleAssociation"
ENDPOINT = "aws:route53/resolverEndpoint:ResolverEndpoint"
RAM_ASSOCIATION = "aws:ram/resourceAssociation:ResourceAssociation"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
DNS_PORT = 53


def check(graph: Graph) -> Iterator[Finding]:
    for rule in graph.of_type(RESOLVER_RULE):
        if str(rule.inputs.get("ruleType") or "").upper() != "FORWARD":
            continue
        yield from _associated(graph, rule)
        yield from _endpoint_egress(graph, rule)


def _associated(graph: Graph, rule: RenderedResource) -> Iterator[Finding]:
    for association in graph.of_type(ASSOCIATION):
        named = graph.referenced(association, "resolverRuleId")
        if not named or any(r.urn == rule.urn for r in named):
            return  # associated, or an association whose rule is not known: not judged
    for share in graph.of_type(RAM_ASSOCIATION):
        arn = share.inputs.get("resourceArn")
        target = graph.by_identifying_output.get(arn) if isinstance(arn, str) else None
        if target is None or target.urn == rule.urn:
            return  # shared with another account, which associates it there (or unknown)
    domain = rule.inputs.get("domainName")
    yield Finding(
        RULE,
        rule.urn,
        f"Resolver rule {rule.name} forwards {domain or 'its domain'} but no ResolverRuleAssociation associates it "
        "with a VPC (and no RAM share hands it to another account): a Resolver rule applies only to the VPCs it "
        "is associated with, so the VPC's resolver keeps answering the domain itself (NXDOMAIN for a private one) "
        "and no query is ever forwarded",
        f"add an aws.route53.ResolverRuleAssociation with resolver_rule_id={rule.name}.id and the VPC's vpc_id",
    )


def _endpoint_egress(graph: Graph, rule: RenderedResource) -> Iterator[Finding]:
    endpoints = [e for e in graph.referenced(rule, "resolverEndpointId") if e.type == ENDPOINT]
    if len(endpoints) != 1 or str(endpoints[0].inputs.get("direction") or "").upper() != "OUTBOUND":
        return
    endpoint = endpoints[0]
    ids = endpoint.inputs.get("securityGroupIds")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        return
    groups = [g for g in graph.by_physical_ids(ids) if g.type == SECURITY_GROUP]
    if len(groups) != len(set(ids)):
        return  # a group not made by the program: its rules are unknown
    if endpoint.region is None:
        return
    region = Region(graph, endpoint.region)
    rules = [r for g in groups for r in region.egress_rules(g)]
    if any(_unknown(r) for g in groups for r in g.inputs.get("egress") or []):
        return
    if any(not r.networks and not r.source_groups and not r.self_ref for r in rules):
        return  # a rule whose destination is not known at render time
    for target in rule.inputs.get("targetIps") or []:
        if not isinstance(target, dict):
            continue
        try:
            address = ipaddress.ip_address(str(target.get("ip") or target.get("ipv6") or ""))
        except ValueError:
            continue  # not a literal address
        port_value = number(target.get("port"))
        port = int(port_value) if port_value is not None else DNS_PORT
        destination = ipaddress.ip_network(address)
        blocked = [
            protocol
            for protocol in ("udp", "tcp")
            if not any(
                r.has_port(port, protocol)
                and any(destination.subnet_of(n) for n in r.networks if n.version == address.version)  # type: ignore[arg-type]
                for r in rules
            )
            and not any(r.has_port(port, protocol) and (r.source_groups or r.self_ref) for r in rules)
        ]
        if not blocked:
            continue
        names = ", ".join(g.name for g in groups)
        label = " and ".join(p.upper() for p in blocked)
        yield Finding(
            RULE,
            rule.urn,
            f"Resolver rule {rule.name} forwards through outbound endpoint {endpoint.name}, whose security groups "
            f"({names}) allow no egress on {label} {port} to the target {address}: a group the program creates has "
            "no egress rule unless it declares one (pulumi-aws removes the default allow-all), so forwarded queries "
            "are dropped and time out (SERVFAIL)",
            f"add egress rules for UDP and TCP {port} to {address}/{destination.prefixlen} on {names}",
        )


def _unknown(inline: object) -> bool:
    """An inline egress rule whose ranges or ports are not all literal (or that names a prefix list)."""
    if not isinstance(inline, dict):
        return True
    if inline.get("prefixListIds"):
        return True
    blocks = [*(inline.get("cidrBlocks") or []), *(inline.get("ipv6CidrBlocks") or [])]
    if any(network(b) is None for b in blocks):
        return True
    return number(inline.get("fromPort")) is None or number(inline.get("toPort")) is None
