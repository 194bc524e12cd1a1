"""A resource whose physical name must be unique, and which other live resources sit in, is not given a fixed name.

``replaceable-name``: EC2 security group names are unique per VPC (CreateSecurityGroup: "Constraints: Up to 255
characters ... must be unique within the VPC"; a second one is refused with ``InvalidGroup.Duplicate``: "The
security group '...' already exists for VPC", hashicorp/terraform#3341). Pulumi autonames ``name`` (the logical
name plus a random suffix) so that a replacement can be created before the old resource is deleted; a name written
out turns that off: pulumi-terraform-bridge's ``nameRequiresDeleteBeforeReplace`` (pkg/tfbridge/schema.go, used by
``Diff`` in provider.go) marks a replacement delete-before-replace whenever an autonamed property holds a value the
autonamer did not give it (https://www.pulumi.com/docs/iac/concepts/resources/names/#autonaming: an explicit name
means "Pulumi cannot create the new resource before deleting the old one"). So a later change that replaces the
group (its ``description``, ``name`` or ``vpc_id``, all ForceNew) deletes it first, and while an RDS instance, a
cache, a Lambda function, an EKS cluster, an MSK cluster or an endpoint still has network interfaces in it,
DeleteSecurityGroup fails with ``DependencyViolation: resource sg-... has a dependent object``; the provider retries
until its delete timeout and the update fails (hashicorp/terraform#15428, cloudposse/terraform-aws-rds-cluster#86:
use ``name_prefix``). A group no other resource references replaces cleanly, and ``name_prefix`` or no name at all
keeps create-before-delete.

Cannot see: a group used by resources made outside the program, a replacement forced by a change the program does
not make yet (the finding is about the next such change).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "replaceable-name"

SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
# Types whose ``name`` AWS holds unique, and the scope it is unique in.
UNIQUE_NAMES = {SECURITY_GROUP: "VPC"}
# Resources that only carry rules of a group: replaced with it (their group input is ForceNew), never blocking it.
RULE_TYPES = frozenset(
    {
        "aws:ec2/securityGroupRule:SecurityGroupRule",
        "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
        "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
    }
)


def check(graph: Graph) -> Iterator[Finding]:
    for typ, scope in UNIQUE_NAMES.items():
        for resource in graph.of_type(typ):
            name = resource.inputs.get("name")
            if not isinstance(name, str) or not name:
                continue  # autonamed, or name_prefix: create-before-delete works
            users = _users(graph, resource)
            if not users:
                continue
            kind = typ.rsplit(":", 1)[-1]
            verb = "uses" if len(users) == 1 else "use"
            held = ", ".join(f"{u.name} ({u.type.rsplit(':', 1)[-1]})" for u in users)
            yield Finding(
                RULE,
                resource.urn,
                f"{resource.name}.name={name!r} is a fixed {kind} name, unique per {scope}, so Pulumi replaces it "
                f"delete-before-replace (an explicitly set autonamed property; creating first would fail with "
                f"InvalidGroup.Duplicate); {held} {verb} it, so the next change that replaces it (description, "
                "name, vpc_id) fails: DeleteSecurityGroup answers DependencyViolation until the delete times out",
                f"set {resource.name}.name_prefix={name.rstrip('-') + '-'!r} instead of name, or leave the name "
                "out and let Pulumi autoname it, so a replacement is created before the old group is deleted",
            )


def _users(graph: Graph, group: RenderedResource) -> list[RenderedResource]:
    """The program's other AWS resources whose inputs carry the group's ID (rule resources aside)."""
    return [
        r
        for r in graph.resources
        if r.custom and r.type.startswith("aws:") and r.urn != group.urn and r.type not in RULE_TYPES
        if any(u.urn == group.urn for u in graph.by_physical_ids(_untagged(r.inputs)))
    ]


def _untagged(inputs: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in inputs.items() if k not in {"tags", "tagsAll"}}
