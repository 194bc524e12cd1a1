"""An ``aws:SourceIp`` condition names addresses a request can come from: public ones.

``aws:SourceIp`` is the requester's public address as AWS sees it: a pod or instance in a private subnet reaches AWS
through a NAT gateway (its Elastic IP is the source) or an internet gateway (the public IP), and a request through a
VPC endpoint does not carry the key at all (``aws:VpcSourceIp`` holds the private address then). IAM's reference,
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html#condition-keys-sourceip
("This key is included in the request context, except when the requester uses a VPC endpoint"; use
``aws:VpcSourceIp`` for a private address), and AWS's knowledge center,
https://repost.aws/knowledge-center/iam-restrict-access-policy ("Only public IP addresses or ranges are supported").
So a private range (RFC 1918's 10/8, 172.16/12, 192.168/16, the shared 100.64/10, IPv6's unique-local fc00::/7:
a VPC's IPv4 CIDR among them) is never the value:

- an Allow statement whose ``IpAddress`` condition on ``aws:SourceIp`` lists only private ranges never matches (the
  key is absent or public). IAM accepts the policy, and the grant is dead: the calls it was meant to allow are denied
  (AccessDenied) unless another statement allows them. Where the holder is a role whose every policy is known at
  render time (inline, RolePolicies, attached managed ones; AWS managed ones as moto records them), a statement of
  those that allows the same actions without such a condition is another grant, and nothing is reported;
- a Deny statement whose only condition is ``NotIpAddress`` on ``aws:SourceIp`` with only private ranges matches
  every request: a public address is not in the ranges, and a negated operator is true where the key is absent (a
  VPC endpoint's request: "If the policy condition requires that the key is not matched ... and the right key is not
  present, the condition is true", reference_policies_elements_condition.html). It denies its actions to every
  caller (a Deny with further conditions is limited by them and is not judged).

Not judged: the ``...IfExists`` forms (true through a VPC endpoint, where the key is absent), ``ForAnyValue:``
forms, a list with any public or unparseable value, values unknown at render time.

It cannot see: policies whose JSON is known only at apply time, grants from outside the program (a bucket policy
for a role's calls, a permission set); a public range that a program owns (BYOIP) is never flagged.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import (
    ROLE,
    ROLE_POLICY,
    as_list,
    document,
    names_action,
    policy_documents,
    role_grants,
    statements,
)
from tokenplane.proof.render import RenderedResource

RULE = "source-ip-can-match"
KEY = "aws:sourceip"
VPC = "aws:ec2/vpc:Vpc"
PRIVATE = tuple(
    ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7")
)


def _private(value: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """The network a condition value names when it lies inside a private range, else None (public, unparseable)."""
    if not isinstance(value, str):
        return None
    try:
        network = ipaddress.ip_network(value.strip(), strict=False)
    except ValueError:
        return None
    inside = any(network.version == p.version and network.subnet_of(p) for p in PRIVATE)  # type: ignore[arg-type]
    return network if inside else None


def private_values(statement: dict[str, Any], operator: str) -> list[str] | None:
    """The ``aws:SourceIp`` values of the statement's ``operator`` condition when there are some and every one is a
    private range; else None."""
    condition = statement.get("Condition")
    if not isinstance(condition, dict):
        return None
    for op, keys in condition.items():
        if str(op).lower() != operator.lower() or not isinstance(keys, dict):
            continue
        for key, value in keys.items():
            values = as_list(value)
            if str(key).lower() == KEY and values and all(_private(v) is not None for v in values):
                return [str(v) for v in values]
    return None


def check(graph: Graph) -> Iterator[Finding]:
    vpcs = [(v.name, _private(v.inputs.get("cidrBlock"))) for v in graph.of_type(VPC)]
    for resource, policy in policy_documents(graph):
        for index, statement in enumerate(statements(policy)):
            listed = [a for a in as_list(statement.get("Action")) if isinstance(a, str)]
            sid = statement.get("Sid")
            where = f"statement {sid!r}" if isinstance(sid, str) and sid else f"statement {index}"
            effect = statement.get("Effect")
            if effect == "Allow" and listed and (values := private_values(statement, "IpAddress")):
                if _granted_elsewhere(graph, resource, statement, listed):
                    continue
                yield Finding(
                    RULE,
                    resource.urn,
                    f"{resource.name} {where} allows {', '.join(listed)} only when aws:SourceIp is in "
                    f"{_spelled(values, vpcs)}, a private range AWS never sees as aws:SourceIp (through a NAT or "
                    "internet gateway it is the public IP, through a VPC endpoint the key is absent and "
                    "aws:VpcSourceIp is set): the condition is never true, IAM accepts the policy and every such "
                    f"call{_by(graph, resource)} is denied (AccessDenied)",
                    _fix(),
                )
            elif (
                effect == "Deny"
                and _only_condition(statement)
                and (values := private_values(statement, "NotIpAddress"))
            ):
                yield Finding(
                    RULE,
                    resource.urn,
                    f"{resource.name} {where} denies {', '.join(listed) or 'its actions'} unless aws:SourceIp is in "
                    f"{_spelled(values, vpcs)}, a private range AWS never sees as aws:SourceIp (a NAT's or client's "
                    "public IP is, and through a VPC endpoint the key is absent, which makes NotIpAddress true): the Deny "
                    f"matches every request, and every such call{_by(graph, resource)} is denied (AccessDenied)",
                    _fix(),
                )


def _only_condition(statement: dict[str, Any]) -> bool:
    condition = statement.get("Condition")
    return isinstance(condition, dict) and len(condition) == 1 and all(len(k) == 1 for k in condition.values())


def _spelled(values: list[str], vpcs: list[tuple[str, Any]]) -> str:
    out = []
    for value in values:
        network = _private(value)
        owner = [name for name, cidr in vpcs if cidr is not None and network is not None and cidr == network]
        out.append(f"{value} (VPC {owner[0]}'s CIDR)" if owner else value)
    return ", ".join(out)


def _roles(graph: Graph, resource: RenderedResource) -> list[RenderedResource]:
    """The program's role whose policy ``resource`` is (a Role's inline policy, a RolePolicy), else []."""
    if resource.type == ROLE:
        return [resource]
    if resource.type == ROLE_POLICY:
        return [r for r in graph.referenced(resource, "role") if r.type == ROLE]
    return []


def _by(graph: Graph, resource: RenderedResource) -> str:
    roles = _roles(graph, resource)
    return f" by role {roles[0].name}" if roles else ""


def _granted_elsewhere(graph: Graph, resource: RenderedResource, dead: dict[str, Any], listed: list[str]) -> bool:
    """Whether the role the statement belongs to may be granted its actions another way: a statement of its known
    policies that allows each of them without a private source-IP condition, or a policy unknown at render time."""
    roles = _roles(graph, resource)
    if not roles:
        return False
    others: list[dict[str, Any]] = []
    for _, value in role_grants(graph, roles[0], aws_managed=True):
        if document(value) is None:
            return True  # unknown: it may allow them
        others += [
            s
            for s in statements(value)
            if s != dead and s.get("Effect") == "Allow" and private_values(s, "IpAddress") is None
        ]
    return all(any(names_action(s, action) for s in others) for action in listed)


def _fix() -> str:
    return (
        "drop the aws:SourceIp condition, or name the public addresses requests leave from (the NAT gateways' "
        "Elastic IPs); to limit access to the VPC, use aws:SourceVpc or aws:SourceVpce with a VPC endpoint (or "
        "aws:VpcSourceIp for private addresses through an endpoint)"
    )
