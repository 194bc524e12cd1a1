"""The rules a program adds to one security group fit the inbound (and outbound) rules per security group quota.

A security group holds at most 60 inbound and 60 outbound rules by default, "enforced separately for IPv4 rules and
IPv6 rules" (https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html, "Inbound or outbound rules per
security group", quota L-0EA8095F, adjustable). Rules are counted as EC2 counts them: one per CIDR (a
``SecurityGroupRule`` or inline rule with three ``cidrBlocks`` is three), one for IPv4 and one for IPv6 per referenced
security group or AWS-managed prefix list, and a customer-managed prefix list as its ``maxEntries``, not the entries
it holds: "if you create a prefix list with 20 maximum entries and you reference that prefix list in a security group
rule, this counts as 20 security group rules" (same page, "Maximum number of entries per prefix list"). Past the
quota, AuthorizeSecurityGroupIngress (or Egress) fails with ``RulesPerSecurityGroupLimitExceeded: The maximum number
of rules per security group has been reached``, and the rule, with whatever waits for it, is never created.

Judged against the default quota of 60, as ``policy-size`` judges IAM's adjustable quotas: an account that raised it
through Service Quotas deploys what is flagged here. The rules of ``aws.vpc.SecurityGroupIngressRule``/``EgressRule``,
``aws.ec2.SecurityGroupRule`` and a group's inline ``ingress``/``egress`` are summed per group where the group is the
program's (or named by one ID); a rule on a group known only at apply time (one EKS created and the program looks up,
say) is counted alone, since what else that group holds is not in the graph: EKS's cluster security group starts with
one inbound rule (itself) and one outbound rule (all IPv4), which this does not add.

It cannot see: rules made outside the program (by EKS, controllers, other stacks) on the same group, raised quotas,
the ``maxEntries`` of prefix lists the program does not create (counted as one), and values known only at apply time
(a rule whose source is unknown is counted as one rule).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import CLUSTER, Graph, number
from tokenplane.proof.deployability.security_groups import SG_EGRESS_RULE, SG_INGRESS_RULE, SG_RULE
from tokenplane.proof.render import RenderedResource

RULE = "security-group-rules-quota"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
PREFIX_LIST = "aws:ec2/managedPrefixList:ManagedPrefixList"
QUOTA = 60
FAMILIES = ("IPv4", "IPv6")


@dataclass
class _Tally:
    """The rules counted toward one group's quota in one direction, per address family, and who adds them."""

    group: str
    counts: dict[str, int] = field(default_factory=lambda: {"IPv4": 0, "IPv6": 0})
    parts: list[tuple[RenderedResource, str, dict[str, int]]] = field(default_factory=list)

    def add(self, resource: RenderedResource, what: str, counts: dict[str, int]) -> None:
        for family, n in counts.items():
            self.counts[family] += n
        self.parts.append((resource, what, counts))


def check(graph: Graph) -> Iterator[Finding]:
    tallies: dict[tuple[str, str], _Tally] = {}

    def tally(key: str, label: str, direction: str) -> _Tally:
        return tallies.setdefault((key, direction), _Tally(label))

    for group in graph.of_type(SECURITY_GROUP):
        for direction in ("ingress", "egress"):
            for rule in group.inputs.get(direction) or []:
                if isinstance(rule, dict):
                    counts, what = _ec2_sources(graph, rule)
                    tally(group.urn, f"security group {group.name}", direction).add(group, what, counts)
    for resource in graph.of_type(SG_RULE):
        kind = resource.inputs.get("type")
        if kind not in ("ingress", "egress"):
            continue
        key, label = _group(graph, resource)
        counts, what = _ec2_sources(graph, resource.inputs)
        tally(key, label, str(kind)).add(resource, what, counts)
    for token, direction in ((SG_INGRESS_RULE, "ingress"), (SG_EGRESS_RULE, "egress")):
        for resource in graph.of_type(token):
            key, label = _group(graph, resource)
            counts, what = _vpc_source(graph, resource.inputs)
            tally(key, label, direction).add(resource, what, counts)
    for (_, direction), t in tallies.items():
        over = [f for f in FAMILIES if t.counts[f] > QUOTA]
        if not over:
            continue
        family = over[0]
        heaviest = max(t.parts, key=lambda p: p[2].get(family, 0))
        adds = "; ".join(f"{r.name}: {what}" for r, what, c in t.parts if c.get(family))
        inbound = "inbound" if direction == "ingress" else "outbound"
        call = "AuthorizeSecurityGroupIngress" if direction == "ingress" else "AuthorizeSecurityGroupEgress"
        yield Finding(
            RULE,
            heaviest[0].urn,
            f"the program adds {t.counts[family]} {family} {inbound} rules to {t.group} as EC2 counts them ({adds}), "
            f"over the default quota of {QUOTA} {inbound} rules per security group (a prefix list counts as its "
            f"maxEntries, not the entries it holds): {call} fails with RulesPerSecurityGroupLimitExceeded (The "
            "maximum number of rules per security group has been reached)",
            "lower the prefix list's max_entries to what it needs (it can be raised later with "
            "ModifyManagedPrefixList, if the groups that reference it have room), split the rules over several "
            "security groups, or raise 'Inbound or outbound rules per security group' (L-0EA8095F) through Service "
            "Quotas before deploying",
        )


def _group(graph: Graph, rule: RenderedResource) -> tuple[str, str]:
    """The key and name of the group a standalone rule is added to; the rule itself where the group is unknown."""
    groups = graph.referenced(rule, "securityGroupId")
    if groups and groups[0].type == CLUSTER:
        return groups[0].urn, f"the cluster security group of {groups[0].name} (beside the rules EKS puts there)"
    if groups:
        return groups[0].urn, f"security group {groups[0].name}"
    value = rule.inputs.get("securityGroupId")
    if isinstance(value, str) and value:
        return value, f"security group {value}"
    return rule.urn, "its security group (known only at apply time; only this rule is counted)"


def _prefix_list(graph: Graph, value: Any) -> tuple[str, int]:
    """(address family, rules it counts as): a customer-managed list's maxEntries, else one for each family."""
    lists = [r for r in graph.by_physical_ids(value) if r.type == PREFIX_LIST]
    if lists:
        entries = number(lists[0].inputs.get("maxEntries"))
        family = lists[0].inputs.get("addressFamily")
        if entries is not None and family in FAMILIES:
            return str(family), int(entries)
    return "both", 1


def _ec2_sources(graph: Graph, rule: dict[str, Any]) -> tuple[dict[str, int], str]:
    """What an inline rule or ``aws.ec2.SecurityGroupRule`` counts as: each CIDR, group and prefix list a rule."""
    counts = {"IPv4": 0, "IPv6": 0}
    said: list[str] = []
    cidrs = [c for c in rule.get("cidrBlocks") or [] if c is not None]
    v6 = [c for c in rule.get("ipv6CidrBlocks") or [] if c is not None]
    counts["IPv4"] += len(cidrs)
    counts["IPv6"] += len(v6)
    if cidrs:
        said.append(f"{len(cidrs)} IPv4 CIDRs")
    if v6:
        said.append(f"{len(v6)} IPv6 CIDRs")
    for value in rule.get("prefixListIds") or []:
        family, n = _prefix_list(graph, value)
        _count(counts, family, n)
        said.append(f"prefix list of max {n} entries" if family != "both" else "a prefix list")
    peers = list(rule.get("securityGroups") or []) + [x for x in [rule.get("sourceSecurityGroupId")] if x]
    if rule.get("self"):
        peers.append("self")
    for _ in peers:
        _count(counts, "both", 1)
    if peers:
        said.append(f"{len(peers)} security group references")
    if not any(counts.values()):
        _count(counts, "both", 1)  # a source known only at apply time: at least one rule
    return counts, ", ".join(said) or "1 rule"


def _vpc_source(graph: Graph, inputs: dict[str, Any]) -> tuple[dict[str, int], str]:
    """What an ``aws.vpc`` rule counts as: one CIDR, one group reference, or a prefix list at its maxEntries."""
    counts = {"IPv4": 0, "IPv6": 0}
    if inputs.get("prefixListId") is not None:
        family, n = _prefix_list(graph, inputs.get("prefixListId"))
        _count(counts, family, n)
        return counts, (f"prefix list of max {n} entries" if family != "both" else "a prefix list")
    if inputs.get("cidrIpv6") is not None:
        counts["IPv6"] = 1
    elif inputs.get("cidrIpv4") is not None:
        counts["IPv4"] = 1
    else:
        _count(counts, "both", 1)
    return counts, "1 rule"


def _count(counts: dict[str, int], family: str, n: int) -> None:
    for f in FAMILIES if family == "both" else (family,):
        counts[f] += n
