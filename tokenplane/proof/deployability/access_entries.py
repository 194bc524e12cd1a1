"""An EKS access entry is created only with values CreateAccessEntry takes, and is useful only when it authorizes.

``access-entry-request``: what CreateAccessEntry refuses (InvalidParameterException), from the EKS user guide's
"Create access entries" (https://docs.aws.amazon.com/eks/latest/userguide/creating-access-entries.html) and the
API reference (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAccessEntry.html):

- a Kubernetes group beginning ``system:`` ("The kubernetes group name system:masters is invalid, it cannot start
  with system:", terraform-aws-modules/terraform-aws-eks#2915; the console refuses it too);
- a username beginning ``system:``, ``eks:``, ``aws:``, ``amazon:`` or ``iam:``;
- groups or a username on an entry whose type is not STANDARD (a node entry: EKS sets ``system:node:...`` itself;
  "You can't use the --kubernetes-groups option when you specify a type other than STANDARD");
- a principal that is not an IAM role or user: an STS assumed-role session ARN ("You can't use the STS session
  principal type with access entries"), an instance profile, or a service-linked role (``role/aws-service-role/``);
  and for the node types (EC2, EC2_LINUX, EC2_WINDOWS, FARGATE_LINUX, HYBRID_LINUX), anything but a role;
- an access policy association whose access scope is of type ``namespace`` without namespaces ("A value is required
  if you specified namespace for Type": https://docs.aws.amazon.com/eks/latest/APIReference/API_AccessScope.html), or
  names one that is not a namespace name (a trailing ``*`` matches a prefix), or whose policy is not one of EKS's
  access policies (``arn:aws:eks::aws:cluster-access-policy/NAME``; an IAM policy ARN is no access policy);
- an access policy associated with a non-STANDARD entry ("You can't associate an access policy to this access
  entry, because its type is a value other than STANDARD").

``access-entry-authorizes``: a STANDARD entry only authenticates. EKS authorizes it through an access policy
association, or Kubernetes RBAC through the entry's groups; "Amazon EKS doesn't confirm that any Kubernetes RBAC
objects that exist on your cluster include any of the group names that you specify". An entry with neither an
association nor a group that a RoleBinding or ClusterRoleBinding of the program names as a ``Group`` subject gets
only the discovery roles every authenticated identity has: ``kubectl`` answers Forbidden to everything else. Judged
against the bindings the program renders; a group that some Helm release's values name is left alone (the chart
may bind it in templates the render does not show).

It cannot see: bindings made outside the program or inside a chart's templates, associations whose principal is
spelled differently from the entry's, and ARNs known only at apply time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph
from tokenplane.proof.render import RenderedResource

RULE = "access-entry-request"
AUTHORIZES = "access-entry-authorizes"
ENTRY = "aws:eks/accessEntry:AccessEntry"
ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
NODE_TYPES = ("EC2", "EC2_LINUX", "EC2_WINDOWS", "FARGATE_LINUX", "HYBRID_LINUX", "HYPERPOD_LINUX")
RESERVED_USER_PREFIXES = ("system:", "eks:", "aws:", "amazon:", "iam:")
BINDINGS = ("RoleBinding", "ClusterRoleBinding")
# EKS's own access policies, in every partition (https://docs.aws.amazon.com/eks/latest/userguide/access-policy-permissions.html).
ACCESS_POLICY_ARN = re.compile(r"^arn:aws[a-z-]*:eks::aws:cluster-access-policy/[A-Za-z0-9]+$")
# A namespace an access scope names: a DNS-1123 label, or a prefix of one ending in '*' ("You can use a wildcard
# character (*) at the end of a namespace name", https://docs.aws.amazon.com/eks/latest/userguide/access-policies.html).
SCOPE_NAMESPACE = re.compile(r"^(?:[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?|[a-z0-9][-a-z0-9]{0,61}\*)$")


def check(graph: Graph) -> Iterator[Finding]:
    entries = graph.of_type(ENTRY)
    for entry in entries:
        for message, fix in _refusals(entry):
            yield Finding(RULE, entry.urn, f"CreateAccessEntry refuses {entry.name}: {message}", fix)
    for association in graph.of_type(ASSOCIATION):
        for message, fix in _association_refusals(association):
            yield Finding(RULE, association.urn, f"AssociateAccessPolicy refuses {association.name}: {message}", fix)
        same = [e for e in entries if _key(e) == _key(association)]
        kind = str(same[0].inputs.get("type") or "STANDARD") if same else "STANDARD"
        if kind != "STANDARD":
            yield Finding(
                RULE,
                association.urn,
                f"access entry {same[0].name} is of type {kind}, and EKS associates access policies only with "
                "STANDARD entries: AssociateAccessPolicy answers InvalidParameterException",
                "delete the association (a node entry's permissions come from its type), or make the entry STANDARD",
            )


def _association_refusals(association: RenderedResource) -> Iterator[tuple[str, str]]:
    """An access scope and policy ARN AssociateAccessPolicy takes (InvalidParameterException)."""
    policy = association.inputs.get("policyArn")
    if isinstance(policy, str) and policy.startswith("arn:") and not ACCESS_POLICY_ARN.match(policy):
        yield (
            f"policy {policy} is not an EKS access policy (arn:aws:eks::aws:cluster-access-policy/NAME; IAM policies "
            "cannot be associated with an access entry)",
            "name one of EKS's access policies (`aws eks list-access-policies`: AmazonEKSViewPolicy, "
            "AmazonEKSEditPolicy, AmazonEKSAdminPolicy, AmazonEKSClusterAdminPolicy...), or grant the IAM policy to "
            "the role itself",
        )
    scope = association.inputs.get("accessScope")
    if not isinstance(scope, dict) or scope.get("type") != "namespace":
        return
    namespaces = scope.get("namespaces")
    if namespaces is None or namespaces == []:
        yield (
            'its access scope is of type namespace and lists no namespaces (AccessScope.namespaces: "A value is '
            'required if you specified namespace for Type")',
            "list the namespaces the policy applies in (access_scope={'type': 'namespace', 'namespaces': [...]}), "
            "or make the scope type cluster",
        )
        return
    for namespace in namespaces if isinstance(namespaces, list) else []:
        if isinstance(namespace, str) and not SCOPE_NAMESPACE.match(namespace):
            yield (
                f"namespace {namespace!r} in its access scope is not a Kubernetes namespace name (lowercase letters, "
                "digits and '-', at most 63, starting and ending alphanumeric; a trailing '*' matches a prefix)",
                "spell the namespace as Kubernetes names it",
            )


def _refusals(entry: RenderedResource) -> Iterator[tuple[str, str]]:
    kind = str(entry.inputs.get("type") or "STANDARD")
    groups = [g for g in entry.inputs.get("kubernetesGroups") or [] if isinstance(g, str)]
    username = entry.inputs.get("userName") or entry.inputs.get("username")
    for group in groups:
        if group.startswith("system:"):
            yield (
                f"Kubernetes group {group!r} begins with 'system:', which is reserved for Kubernetes "
                f"(InvalidParameterException: the kubernetes group name {group} is invalid, it cannot start with system:)",
                "name a group of your own and bind it with a ClusterRoleBinding, or associate an EKS access policy "
                "(AmazonEKSClusterAdminPolicy stands for system:masters)",
            )
    if isinstance(username, str) and username.startswith(RESERVED_USER_PREFIXES):
        yield (
            f"username {username!r} begins with a reserved prefix ({', '.join(RESERVED_USER_PREFIXES)})",
            "leave username unset (EKS derives one from the principal) or choose one without those prefixes",
        )
    if kind != "STANDARD" and (groups or username):
        yield (
            f"it is of type {kind}, and only STANDARD entries take Kubernetes groups or a username (EKS gives a node "
            "entry system:node:... and the nodes group itself)",
            "drop kubernetes_groups and user_name from the node entry, or make it a STANDARD entry",
        )
    principal = entry.inputs.get("principalArn")
    if not isinstance(principal, str) or not principal.startswith("arn:"):
        return  # known only at apply time
    resource = principal.split(":", 5)[-1]
    if ":assumed-role/" in principal or resource.startswith("assumed-role/"):
        yield (
            f"principal {principal} is an STS session, not a permanent IAM principal",
            "give the role's ARN (arn:aws:iam::ACCOUNT:role/NAME), not the assumed-role session's",
        )
    elif resource.startswith("instance-profile/"):
        yield (
            f"principal {principal} is an instance profile, which is not an IAM principal",
            "give the ARN of the role the instance profile holds",
        )
    elif resource.startswith("role/aws-service-role/"):
        yield (
            f"principal {principal} is a service-linked role, which access entries do not support",
            "give a role of your own",
        )
    elif kind in NODE_TYPES and not resource.startswith("role/"):
        yield (
            f"it is of type {kind}, whose principal must be an IAM role, and {principal} is not one",
            "give the node role's ARN",
        )


def authorizes(graph: Graph) -> Iterator[Finding]:
    associated = {_key(a) for a in graph.of_type(ASSOCIATION)}
    for entry in graph.of_type(ENTRY):
        if str(entry.inputs.get("type") or "STANDARD") != "STANDARD" or _key(entry) in associated:
            continue
        if not isinstance(entry.inputs.get("principalArn"), str):
            continue  # an association may name it by a value the render does not show
        bindings = graph.kube(entry.region, *BINDINGS)
        bound = {
            str(s.get("name"))
            for b in bindings
            for s in b.manifest.get("subjects") or []
            if isinstance(s, dict) and s.get("kind") == "Group"
        }
        groups = [g for g in entry.inputs.get("kubernetesGroups") or [] if isinstance(g, str)]
        if any(g in bound or g.startswith("system:") or _charted(graph, entry.region, g) for g in groups):
            continue  # bound (by the program, or perhaps by a chart given the name), or access-entry-request's
        named = (
            f"its Kubernetes groups {groups} are named by no RoleBinding or ClusterRoleBinding"
            if groups
            else ("it names no Kubernetes groups")
        )
        yield Finding(
            AUTHORIZES,
            entry.urn,
            f"access entry {entry.name} lets {entry.inputs.get('principalArn')} authenticate to the cluster, but "
            f"{named} and no access policy is associated with it: EKS authorizes nothing for it, so every kubectl "
            "request beyond API discovery is Forbidden",
            "bind the group with a (Cluster)RoleBinding whose subject is kind: Group, name: <group> (for instance to "
            "the built-in view ClusterRole), or add an aws.eks.AccessPolicyAssociation for the principal",
        )


def _charted(graph: Graph, region: str | None, group: str) -> bool:
    """Whether some Helm release's values carry ``group``: a chart may bind it in its own templates."""
    stack: list[object] = [r.inputs.get("values") for r in graph.of_type(HELM_RELEASE, region)]
    while stack:
        value = stack.pop()
        if value == group:
            return True
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def _key(resource: RenderedResource) -> tuple[str, str]:
    return str(resource.inputs.get("clusterName")), str(resource.inputs.get("principalArn"))
