"""A security group's rules of one direction have one owner: the group's inline rules or rule resources, not both.

An ``aws.ec2.SecurityGroup`` given inline ``ingress`` (or ``egress``) rules owns that direction's whole rule set: on
each update it makes the group's rules exactly its list. A separate ``aws.ec2.SecurityGroupRule``,
``aws.vpc.SecurityGroupIngressRule`` or ``aws.vpc.SecurityGroupEgressRule`` on the same group and direction adds a
rule the group's list does not hold, so once a refresh reads it the group's next update removes it, the rule
resource adds it back on the run after, and the access it grants comes and goes between deploys. "You should not
use the aws.ec2.SecurityGroup resource with in-line rules ... in conjunction with ... the aws.ec2.SecurityGroupRule
resource. Doing so may cause rule conflicts, perpetual differences, and result in rules being overwritten"
(https://www.pulumi.com/registry/packages/aws/api-docs/ec2/securitygroup/; tfsec's aws-vpc-disallow-mixed-sgr says
the same for Terraform). A group without inline rules of a direction leaves that direction to the rule resources.

Cannot see: rules added outside the program (the console, another stack), or a group whose ID is unknown at render.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.security_groups import SG_EGRESS_RULE, SG_INGRESS_RULE, SG_RULE
from tokenplane.proof.render import RenderedResource

RULE = "security-group-rules-owned"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"


def check(graph: Graph) -> Iterator[Finding]:
    for rule in [*graph.of_type(SG_RULE), *graph.of_type(SG_INGRESS_RULE), *graph.of_type(SG_EGRESS_RULE)]:
        direction = _direction(rule)
        if direction is None:
            continue
        for group in graph.referenced(rule, "securityGroupId"):
            if group.type != SECURITY_GROUP or not group.inputs.get(direction):
                continue
            yield Finding(
                RULE,
                rule.urn,
                f"{rule.name} adds an {direction} rule to security group {group.name}, which declares its "
                f"{direction} rules inline ({group.name}.{direction}): the group owns its whole {direction} rule set "
                f"and removes {rule.name}'s rule on its next update, the rule resource adds it back on the run after, "
                "and the access comes and goes between deploys",
                f"declare {group.name}'s {direction} rules in one style: move the inline {direction} rules into "
                f"separate rule resources (aws.vpc.SecurityGroup{direction.capitalize()}Rule), or fold "
                f"{rule.name} into {group.name}.{direction}",
            )


def _direction(rule: RenderedResource) -> str | None:
    if rule.type == SG_INGRESS_RULE:
        return "ingress"
    if rule.type == SG_EGRESS_RULE:
        return "egress"
    kind = rule.inputs.get("type")
    return kind if kind in ("ingress", "egress") else None
