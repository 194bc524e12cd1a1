"""A security group rule's fields as EC2 and the AWS provider validate them together (part of ``aws-api-values``).

One rule is a protocol, a port range whose meaning the protocol decides, and a source (or destination). Each
refusal below stops ``pulumi up`` at the group or the rule, and whatever waits for it (an interface endpoint, a node
group, a database) is never created:

- **Protocol all** (``-1``/``all``) covers every protocol and port, so a port range beside it is a mistake. In an
  ``aws.ec2.SecurityGroup``'s inline ``ingress``/``egress`` the provider refuses ports other than 0 before calling
  EC2: "from_port (443) and to_port (443) must both be 0 to use the 'ALL' "-1" protocol!"
  (hashicorp/terraform-provider-aws ``internal/service/ec2/vpc_security_group.go``, ``expandIPPerms``; the error in
  practice: hashicorp/terraform#2131). ``aws.vpc.SecurityGroupIngressRule``/``EgressRule`` send the ports as given,
  and EC2 answers InvalidParameterValue "When protocol is ALL, you cannot specify from-port"
  (hashicorp/terraform-provider-aws#1920; leave ``from_port``/``to_port`` unset there). ``aws.ec2.SecurityGroupRule``
  drops the ports of a ``-1`` rule itself (``expandIPPermission``), so it is not judged.
- **TCP and UDP** ports within 0-65535, ``from`` no higher than ``to``; an ``aws.vpc`` rule names both ("Must specify
  both from and to ports with TCP/UDP", InvalidParameterValue; the provider leaves them out when unset).
- **ICMP and ICMPv6** read ``from_port`` as the type and ``to_port`` as the code, each -1 (all) or 0-255, and a type
  of -1 (all types) takes code -1 (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_IpPermission.html:
  "If you specify all ICMP/ICMPv6 types, you must specify all ICMP/ICMPv6 codes").
- **The source**: an ``aws.vpc`` rule names exactly one of ``cidrIpv4``, ``cidrIpv6``, ``prefixListId`` and
  ``referencedSecurityGroupId`` (the provider's ``ExactlyOneOf`` config validator, at preview); an
  ``aws.ec2.SecurityGroupRule`` at least one of ``cidrBlocks``, ``ipv6CidrBlocks``, ``prefixListIds``, ``self`` and
  ``sourceSecurityGroupId`` ("One of ['cidr_blocks', 'ipv6_cidr_blocks', 'self', 'source_security_group_id',
  'prefix_list_ids'] must be set to create an AWS Security Group Rule").

Cannot see: values known only at apply time, rules other tools add.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.security_groups import SG_EGRESS_RULE, SG_INGRESS_RULE, SG_RULE
from tokenplane.proof.render import RenderedResource

RULE = "aws-api-values"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
ALL = ("-1", "all")
TCP_UDP = ("tcp", "udp", "6", "17")
ICMP = ("icmp", "icmpv6", "1", "58")
PORTS = (0, 65535)
ICMP_VALUES = (-1, 255)
VPC_SOURCES = ("cidrIpv4", "cidrIpv6", "prefixListId", "referencedSecurityGroupId")
RULE_SOURCES = ("cidrBlocks", "ipv6CidrBlocks", "prefixListIds", "self", "sourceSecurityGroupId")


def check(resources: list[RenderedResource]) -> Iterator[Finding]:
    for resource in resources:
        if resource.type == SECURITY_GROUP:
            for direction in ("ingress", "egress"):
                for i, rule in enumerate(resource.inputs.get(direction) or []):
                    if isinstance(rule, dict):
                        yield from _fields(resource, rule, f"{direction}[{i}]", inline=True)
        elif resource.type == SG_RULE:
            yield from _fields(resource, resource.inputs, "rule", inline=False)
            if not any(resource.inputs.get(source) for source in RULE_SOURCES):
                yield _refused(
                    resource,
                    "the AWS provider",
                    "a rule with no source (One of ['cidr_blocks', 'ipv6_cidr_blocks', 'self', "
                    "'source_security_group_id', 'prefix_list_ids'] must be set)",
                    "give the rule cidr_blocks, ipv6_cidr_blocks, prefix_list_ids, self or source_security_group_id",
                )
        elif resource.type in (SG_INGRESS_RULE, SG_EGRESS_RULE):
            yield from _fields(resource, resource.inputs, "rule", inline=False, vpc=True)
            given = [s for s in VPC_SOURCES if resource.inputs.get(s) not in (None, "")]
            if len(given) != 1:
                yield _refused(
                    resource,
                    "the AWS provider",
                    f"a rule with {len(given)} of cidrIpv4, cidrIpv6, prefixListId and referencedSecurityGroupId "
                    f"({', '.join(given) or 'none'}; exactly one is allowed)",
                    "give each rule exactly one source: one rule resource per CIDR, prefix list or group",
                )


def _refused(resource: RenderedResource, who: str, what: str, fix: str) -> Finding:
    return Finding(
        RULE,
        resource.urn,
        f"{who} refuses {resource.name}: {what}; pulumi up fails there and whatever needs the group waits for ever",
        fix,
    )


def _number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and value == int(value):
        return int(value)
    return None


def _fields(
    resource: RenderedResource, rule: dict[str, Any], where: str, *, inline: bool, vpc: bool = False
) -> Iterator[Finding]:
    low, high = _number(rule.get("fromPort")), _number(rule.get("toPort"))
    protocol = str(rule.get("protocol") or rule.get("ipProtocol") or "").lower()
    if protocol in ALL:
        if (inline or vpc) and ((low or 0) != 0 or (high or 0) != 0):
            if inline:
                who = "the AWS provider"
                what = (
                    f"{where} protocol {protocol} with ports {low}-{high} (from_port ({low}) and to_port ({high}) "
                    "must both be 0 to use the 'ALL' \"-1\" protocol!)"
                )
                fix = "set protocol tcp (or udp) to open those ports, or from_port = to_port = 0 to open everything"
            else:
                who = "EC2"
                what = (
                    f"{where} protocol {protocol} with ports {low}-{high} (InvalidParameterValue: When protocol "
                    "is ALL, you cannot specify from-port)"
                )
                fix = "set ip_protocol tcp (or udp) to open those ports, or leave from_port and to_port unset"
            yield _refused(resource, who, what, fix)
        return
    if protocol in ICMP:
        for name, value in (("type (from_port)", low), ("code (to_port)", high)):
            if value is not None and not ICMP_VALUES[0] <= value <= ICMP_VALUES[1]:
                yield _refused(
                    resource,
                    "EC2",
                    f"{where} ICMP {name} {value} (InvalidParameterValue: -1 or 0-255)",
                    "use an ICMP type and code of 0-255, or -1 for all",
                )
        if low == -1 and high is not None and high != -1:
            yield _refused(
                resource,
                "EC2",
                f"{where} ICMP type -1 (all types) with code {high} (all types take all codes: -1)",
                "set to_port -1 too, or name the ICMP type in from_port",
            )
        return
    if protocol not in TCP_UDP:
        return  # another IP protocol number: EC2 opens all its ports whatever the range says
    for port in (low, high):
        if port is not None and not PORTS[0] <= port <= PORTS[1]:
            yield _refused(
                resource, "EC2", f"{where} port {port} (InvalidParameterValue: 0-65535)", "use a port in 0-65535"
            )
    if low is not None and high is not None and low > high:
        yield _refused(
            resource, "EC2", f"{where} from port {low} above to port {high} (InvalidParameterValue)", "swap the ports"
        )
    if vpc and (low is None or high is None):
        yield _refused(
            resource,
            "EC2",
            f"{where} protocol {protocol} without from_port and to_port (InvalidParameterValue: Must specify both "
            "from and to ports with TCP/UDP)",
            "set from_port and to_port (the same port for one port), or ip_protocol -1 for everything",
        )
