"""An exclusive IAM resource owns its whole relation: nothing else may hold a part of it.

Some IAM resources manage a relation exclusively, and on every update remove whatever part of it they do not
declare:

- ``aws.iam.PolicyAttachment`` owns one policy's attachments across the whole account: "all of the
  users/roles/groups to which a single policy is attached must be declared by a single aws.iam.PolicyAttachment
  resource ... any users/roles/groups that have the attached policy via any other mechanism (including other
  resources managed by this provider) will have that attached policy revoked by this resource"
  (https://www.pulumi.com/registry/packages/aws/api-docs/iam/policyattachment/, its WARNING; the provider's
  aws_iam_policy_attachment: hashicorp/terraform-provider-aws#2014). On an AWS managed policy
  (``arn:aws:iam::aws:policy/...``) that is every principal of the account that uses it, the program's or not;
- ``aws.iam.RolePolicyAttachmentsExclusive`` (and its User and Group twins) and a Role's ``managedPolicyArns`` own
  one principal's managed policies ("removal of managed IAM policies which are not explicitly configured":
  https://www.pulumi.com/registry/packages/aws/api-docs/iam/rolepolicyattachmentsexclusive/; the Role page's
  ``managedPolicyArns`` note);
- ``aws.iam.RolePoliciesExclusive`` and a Role's ``inlinePolicies`` own its inline policies (RolePolicy);
- ``aws.iam.GroupMembership`` owns one group's users ("Multiple aws.iam.GroupMembership resources with the same group
  name will produce inconsistent behavior", and it conflicts with ``aws.iam.UserGroupMembership``:
  https://www.pulumi.com/registry/packages/aws/api-docs/iam/groupmembership/).

The first ``pulumi up`` succeeds; a later update (after a refresh reads the relation back) detaches what the other
resource gave: a node role loses its worker, CNI and ECR policies (NotReady nodes, pods without IPs, image pulls
denied), a pod's role its grants; and the two resources undo each other on every update after. This rule reports an
exclusive resource beside a non-exclusive (or another exclusive) one of the program that manages part of the same
relation and is not declared by it, and a PolicyAttachment on any AWS managed policy.

Cannot see: principals outside the program that hold a customer managed policy a PolicyAttachment owns.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import as_list
from tokenplane.proof.render import RenderedResource

RULE = "iam-exclusive-attachments"
ROLE = "aws:iam/role:Role"
POLICY_ATTACHMENT = "aws:iam/policyAttachment:PolicyAttachment"
GROUP_MEMBERSHIP = "aws:iam/groupMembership:GroupMembership"
USER_GROUP_MEMBERSHIP = "aws:iam/userGroupMembership:UserGroupMembership"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
ROLE_POLICIES_EXCLUSIVE = "aws:iam/rolePoliciesExclusive:RolePoliciesExclusive"
# Resources that attach managed policies: type -> ((principal kind, input), ...), the policy ARN input.
ATTACHMENTS: dict[str, tuple[tuple[tuple[str, str], ...], str]] = {
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": ((("role", "role"),), "policyArn"),
    "aws:iam/userPolicyAttachment:UserPolicyAttachment": ((("user", "user"),), "policyArn"),
    "aws:iam/groupPolicyAttachment:GroupPolicyAttachment": ((("group", "group"),), "policyArn"),
    POLICY_ATTACHMENT: ((("role", "roles"), ("user", "users"), ("group", "groups")), "policyArn"),
    "aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive": ((("role", "roleName"),), "policyArns"),
    "aws:iam/userPolicyAttachmentsExclusive:UserPolicyAttachmentsExclusive": ((("user", "userName"),), "policyArns"),
    "aws:iam/groupPolicyAttachmentsExclusive:GroupPolicyAttachmentsExclusive": (
        (("group", "groupName"),),
        "policyArns",
    ),
}
PER_PRINCIPAL = frozenset(t for t in ATTACHMENTS if t.endswith("Exclusive"))


@dataclass(frozen=True)
class Held:
    """One (principal, thing) pair a resource manages: a policy attached to a role, an inline policy, a member."""

    holder: RenderedResource
    principal: str  # kind:identity (the resource's URN where the program makes it, else the value as written)
    principal_name: str
    thing: str


def _identities(graph: Graph, resource: RenderedResource, kind: str, key: str) -> list[tuple[str, str]]:
    out = []
    for value in as_list(resource.inputs.get(key)):
        if not isinstance(value, str) or not value:
            continue
        found = [r for r in graph.by_physical_ids(value) if r.type.startswith("aws:iam/")]
        out.append((f"{kind}:{found[0].urn}", found[0].name) if found else (f"{kind}:{value}", value))
    return out


def _attachments(graph: Graph) -> list[Held]:
    held = []
    for type_, (principals, arn_key) in ATTACHMENTS.items():
        for resource in graph.of_type(type_):
            arns = [str(a) for a in as_list(resource.inputs.get(arn_key)) if isinstance(a, str) and a]
            for kind, key in principals:
                for principal, name in _identities(graph, resource, kind, key):
                    held += [Held(resource, principal, name, arn) for arn in arns]
    for role in graph.of_type(ROLE):
        for arn in as_list(role.inputs.get("managedPolicyArns")):
            if isinstance(arn, str) and arn:
                held.append(Held(role, f"role:{role.urn}", role.name, arn))
    return held


def check(graph: Graph) -> Iterator[Finding]:
    held = _attachments(graph)
    yield from _policy_attachments(graph, held)
    yield from _per_principal(graph, held)
    yield from _inline(graph)
    yield from _memberships(graph)


def _policy_attachments(graph: Graph, held: list[Held]) -> Iterator[Finding]:
    for attachment in graph.of_type(POLICY_ATTACHMENT):
        arn = attachment.inputs.get("policyArn")
        if not isinstance(arn, str) or not arn:
            continue
        mine = {h.principal for h in held if h.holder.urn == attachment.urn}
        others = [h for h in held if h.thing == arn and h.holder.urn != attachment.urn and h.principal not in mine]
        aws_managed = ":iam::aws:policy/" in arn
        if not others and not aws_managed:
            continue
        named = sorted({f"{h.principal_name} (from {h.holder.name})" for h in others})
        who = f"the program's {', '.join(named)}" if named else ""
        if aws_managed:
            who = "every other role, user and group of the account that uses it" + (f", {who}" if who else "")
        yield Finding(
            RULE,
            attachment.urn,
            f"PolicyAttachment {attachment.name} attaches {arn} exclusively across the account: the first pulumi up "
            f"succeeds, and a later update detaches it from {who} (Pulumi's PolicyAttachment warning: any principal "
            "holding the policy by another mechanism has it revoked)",
            "attach it with aws.iam.RolePolicyAttachment (UserPolicyAttachment, GroupPolicyAttachment), one per "
            "principal and policy",
        )


def _per_principal(graph: Graph, held: list[Held]) -> Iterator[Finding]:
    owners = [h for h in held if h.holder.type in PER_PRINCIPAL or h.holder.type == ROLE]
    exclusive: dict[tuple[str, str], set[str]] = {}
    for h in owners:
        exclusive.setdefault((h.holder.urn, h.principal), set()).add(h.thing)
    # a Role's managedPolicyArns and the *Exclusive resources own their principal even when they list nothing
    for type_ in PER_PRINCIPAL:
        principals, _ = ATTACHMENTS[type_]
        for resource in graph.of_type(type_):
            for kind, key in principals:
                for principal, _name in _identities(graph, resource, kind, key):
                    exclusive.setdefault((resource.urn, principal), set())
    for role in graph.of_type(ROLE):
        if isinstance(role.inputs.get("managedPolicyArns"), list):
            exclusive.setdefault((role.urn, f"role:{role.urn}"), set())
    for (urn, principal), listed in exclusive.items():
        owner = graph.by_urn[urn]
        extra = [h for h in held if h.principal == principal and h.holder.urn != urn and h.thing not in listed]
        if not extra:
            continue
        field = "managedPolicyArns" if owner.type == ROLE else "policyArns"
        pairs = sorted({f"{h.thing} (from {h.holder.name})" for h in extra})
        yield Finding(
            RULE,
            owner.urn,
            f"{owner.name} owns {extra[0].principal_name}'s managed policies exclusively ({field}), and the program "
            f"also attaches {', '.join(pairs)}: a later update detaches them, and the two undo each other on every "
            "update after",
            f"list every policy the principal holds in {owner.name}'s {field}, or drop it and keep the "
            "non-exclusive attachments",
        )


def _inline(graph: Graph) -> Iterator[Finding]:
    owners: list[tuple[RenderedResource, str, set[str]]] = []
    for resource in graph.of_type(ROLE_POLICIES_EXCLUSIVE):
        names = {str(n) for n in as_list(resource.inputs.get("policyNames")) if isinstance(n, str)}
        owners += [(resource, p, names) for p, _ in _identities(graph, resource, "role", "roleName")]
    for role in graph.of_type(ROLE):
        inline = [p for p in as_list(role.inputs.get("inlinePolicies")) if isinstance(p, dict)]
        if inline:
            owners.append((role, f"role:{role.urn}", {str(p.get("name")) for p in inline}))
    for owner, principal, names in owners:
        extra = sorted(
            str(policy.inputs.get("name") or policy.name)
            for policy in graph.of_type(ROLE_POLICY)
            if any(p == principal for p, _ in _identities(graph, policy, "role", "role"))
            and str(policy.inputs.get("name") or "") not in names
        )
        if extra:
            yield Finding(
                RULE,
                owner.urn,
                f"{owner.name} owns its role's inline policies exclusively ({', '.join(sorted(names)) or 'none'}), "
                f"and the program also writes RolePolicy {', '.join(extra)} on that role: a later update deletes it",
                f"name every inline policy in {owner.name}, or keep them all as RolePolicy resources",
            )


def _memberships(graph: Graph) -> Iterator[Finding]:
    per_user: list[tuple[RenderedResource, str, str, str]] = []  # (resource, group, user, user's name)
    for membership in graph.of_type(USER_GROUP_MEMBERSHIP):
        for user, user_name in _identities(graph, membership, "user", "user"):
            per_user += [(membership, g, user, user_name) for g, _ in _identities(graph, membership, "group", "groups")]
    groups = graph.of_type(GROUP_MEMBERSHIP)
    for membership in groups:
        users = {u for u, _ in _identities(graph, membership, "user", "users")}
        for group, group_name in _identities(graph, membership, "group", "group"):
            rivals = [
                m.name
                for m in groups
                if m.urn != membership.urn and any(g == group for g, _ in _identities(graph, m, "group", "group"))
            ]
            strays = [f"{name} (from {r.name})" for r, g, user, name in per_user if g == group and user not in users]
            if rivals or strays:
                yield Finding(
                    RULE,
                    membership.urn,
                    f"GroupMembership {membership.name} owns group {group_name}'s members exclusively, and the "
                    f"program also adds {', '.join(sorted(strays + rivals))} to it: a later update removes them",
                    "manage the group's members in one GroupMembership, or use UserGroupMembership for each user",
                )
