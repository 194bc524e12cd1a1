"""Reading IAM as the program renders it: a policy document's statements, and the program's role an ARN names.

One home for what the IAM invariants (``service_accounts``, ``irsa``, ``iam_s3``) all read.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterator
from functools import cache
from typing import Any

from tokenplane.proof.deployability.aws_replay import cloud_region_of
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.render import RenderedResource, mock_outputs, physical_id

ROLE = "aws:iam/role:Role"
ROLE_ANNOTATION = "eks.amazonaws.com/role-arn"
POD_IDENTITY = "aws:eks/podIdentityAssociation:PodIdentityAssociation"


def document(value: Any) -> dict[str, Any] | None:
    """A policy document (a JSON string or an object), or None when it is not one: a policy known only at apply
    time is not judged."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    return value if isinstance(value, dict) else None


def statements(value: Any) -> list[dict[str, Any]]:
    """A policy document's statements (one statement or a list), or [] when it is not a document."""
    found = (document(value) or {}).get("Statement")
    listed = found if isinstance(found, list) else [found] if found else []
    return [s for s in listed if isinstance(s, dict)]


def names_action(statement: dict[str, Any], action: str, key: str = "Action") -> bool:
    """Whether the statement's ``key`` (Action or NotAction) lists a pattern matching ``action``: IAM's wildcards,
    any case."""
    patterns = [a.lower() for a in as_list(statement.get(key)) if isinstance(a, str)]
    return any(fnmatch.fnmatchcase(action.lower(), a) for a in patterns)


def admits_service(policy: Any, service: str, action: str) -> bool:
    """Whether an Allow statement of ``policy`` lets ``service`` (a service principal) or everyone do ``action``."""
    for statement in statements(policy):
        if statement.get("Effect") != "Allow" or not names_action(statement, action):
            continue
        principal = statement.get("Principal")
        named = principal if isinstance(principal, dict) else {}
        if principal == "*" or "*" in as_list(named.get("AWS")) or service in as_list(named.get("Service")):
            return True
    return False


def allowing(policy: Any, action: str) -> Iterator[dict[str, Any]]:
    """The Allow statements of a policy document whose Action names ``action`` (IAM's wildcards, any case)."""
    for statement in statements(policy):
        if statement.get("Effect") == "Allow" and names_action(statement, action):
            yield statement


def role_named(graph: Graph, arn: Any) -> RenderedResource | None:
    """The program's role an ARN names (``arn:aws:iam::ACCOUNT:role/[path/]NAME``, by its name), or None."""
    if not isinstance(arn, str) or ":role/" not in arn:
        return None
    found = graph.by_physical_id.get(arn.rsplit("/", 1)[-1])
    return found if found is not None and found.type == ROLE else None


ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
MANAGED_POLICY = "aws:iam/policy:Policy"
# Where a managed policy is attached to a role: the resource type and its input naming the policy's ARN(s).
ATTACHMENTS = {
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": ("role", "policyArn"),
    "aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive": ("roleName", "policyArns"),
    "aws:iam/policyAttachment:PolicyAttachment": ("roles", "policyArn"),
}


def attached(graph: Graph, role: RenderedResource) -> list[tuple[RenderedResource, str]]:
    """Every managed policy ARN attached to ``role``, with the resource that attaches it (the role itself for its
    ``managedPolicyArns``)."""
    out = [(role, str(arn)) for arn in role.inputs.get("managedPolicyArns") or [] if isinstance(arn, str)]
    for typ, (role_key, arn_key) in ATTACHMENTS.items():
        for attachment in graph.of_type(typ):
            if any(r.urn == role.urn for r in graph.referenced(attachment, role_key)):
                arns = attachment.inputs.get(arn_key)
                out += [(attachment, str(a)) for a in (arns if isinstance(arns, list) else [arns]) if a]
    return out


def role_grants(
    graph: Graph, role: RenderedResource, *, aws_managed: bool = False
) -> list[tuple[RenderedResource, Any]]:
    """Each policy document ``role`` holds, with the resource that gives it (the role itself for inline policies and
    its ``managedPolicyArns``): inline ones, RolePolicies and the program's attached managed policies, and with
    ``aws_managed`` the AWS managed ones too (``aws_managed_document``). None stands for a document not known at
    render time."""
    out: list[tuple[RenderedResource, Any]] = [
        (role, p.get("policy")) for p in role.inputs.get("inlinePolicies") or [] if isinstance(p, dict)
    ]
    for policy in graph.of_type(ROLE_POLICY):
        if any(r.urn == role.urn for r in graph.referenced(policy, "role")):
            out.append((policy, policy.inputs.get("policy")))
    for holder, arn in attached(graph, role):
        if arn.startswith(AWS_MANAGED):
            if aws_managed:
                out.append((holder, aws_managed_document(arn)))
            continue
        found = graph.by_physical_ids(arn) or [p for p in graph.of_type(MANAGED_POLICY) if p.inputs.get("arn") == arn]
        policies = [p for p in found if p.type == MANAGED_POLICY]
        out.append((holder, policies[0].inputs.get("policy") if policies else None))
    return out


def role_documents(graph: Graph, role: RenderedResource) -> list[Any]:
    """The policy documents ``role`` holds that the program writes: inline ones and its attached managed policies
    of the program. None in the list stands for an attached policy the program does not show (unknown)."""
    return [d for _, d in role_grants(graph, role)]


def aws_managed_document(arn: str) -> Any:
    """An AWS managed policy's document, as moto records IAM's ``ListPolicies --scope AWS``; None where moto is not
    installed or does not know the policy (unknown: nothing is judged on it)."""
    return _aws_managed_documents().get(arn.rsplit("/", 1)[-1])


@cache
def _aws_managed_documents() -> dict[str, Any]:
    try:
        from moto.iam.aws_managed_policies import aws_managed_policies_data
    except ImportError:
        return {}
    data: dict[str, dict[str, Any]] = json.loads(aws_managed_policies_data)
    return {name: entry.get("Document") for name, entry in data.items()}


AWS_MANAGED = "arn:aws:iam::aws:policy/"


def known_documents(graph: Graph, role: RenderedResource) -> list[Any] | None:
    """``role``'s policy documents when every one is known at render time; None when a policy is known only at
    apply time or an AWS managed one is attached: either may allow what the documents do not, so nothing is judged."""
    documents = role_documents(graph, role)
    if any(document(d) is None for d in documents) or any(a.startswith(AWS_MANAGED) for _, a in attached(graph, role)):
        return None
    return documents


def allows(documents: list[Any], action: str) -> bool | None:
    """Whether some Allow statement of ``documents`` names ``action`` (IAM's case-insensitive wildcards); None when
    a document is unknown and none of the known ones allows it."""
    unknown = False
    for value in documents:
        if document(value) is None:
            unknown = True
        elif any(allowing(value, action)):
            return True
    return None if unknown else False


def trusts(role: RenderedResource, service: str) -> bool | None:
    """Whether the role's trust policy lets ``service`` (``ec2.amazonaws.com``) call sts:AssumeRole; None when the
    trust policy is not known at render time."""
    trust = role.inputs.get("assumeRolePolicy")
    if document(trust) is None:
        return None
    for statement in statements(trust):
        listed = statement.get("Action")
        actions = listed if isinstance(listed, list) else [listed]
        if statement.get("Effect") != "Allow" or not any(
            isinstance(a, str) and fnmatch.fnmatchcase("sts:assumerole", a.lower()) for a in actions
        ):
            continue
        principal = statement.get("Principal")
        services = principal.get("Service") if isinstance(principal, dict) else None
        if service in (services if isinstance(services, list) else [services]):
            return True
    return False


# Where each resource type reads its policy documents.
POLICY_INPUTS = {
    "aws:iam/rolePolicy:RolePolicy": "policy",
    "aws:iam/policy:Policy": "policy",
    "aws:iam/userPolicy:UserPolicy": "policy",
    "aws:s3/bucketPolicy:BucketPolicy": "policy",
}


def policy_documents(graph: Graph) -> Iterator[tuple[RenderedResource, Any]]:
    """Every policy document the program writes, with the resource that holds it (inline role policies too)."""
    for typ, key in POLICY_INPUTS.items():
        for resource in graph.of_type(typ):
            yield resource, resource.inputs.get(key)
    for role in graph.of_type("aws:iam/role:Role"):
        for inline in role.inputs.get("inlinePolicies") or []:
            if isinstance(inline, dict):
                yield role, inline.get("policy")


def as_list(value: Any) -> list[Any]:
    """A policy field that IAM takes as one value or a list of them (Action, Resource), as a list."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def allows_on(documents: list[Any], action: str, arns: tuple[str, ...], *, objects: bool = False) -> bool:
    """Whether an Allow statement of ``documents`` names ``action`` on one of ``arns`` (IAM's wildcards); with
    ``objects``, on some object under one of them (``ARN/prefix/*``)."""
    for value in documents:
        for statement in allowing(value, action):
            resources = [r for r in as_list(statement.get("Resource")) if isinstance(r, str)]
            if any(_names(r, arn, objects) for r in resources for arn in arns):
                return True
    return False


def conditions_hold(statement: dict[str, Any], context: dict[str, str]) -> bool:
    """Whether the statement's Condition block can hold for a request carrying ``context`` (condition keys, any case,
    to their values): only the String and Arn operators on keys in ``context`` are judged; any other operator or
    key, a set operator (ForAnyValue:/ForAllValues:), or a value not known at render time counts as holding."""
    block = statement.get("Condition")
    if not isinstance(block, dict):
        return True
    known = {k.lower(): v for k, v in context.items()}
    for operator, tests in block.items():
        if not isinstance(operator, str) or not isinstance(tests, dict) or ":" in operator:
            continue
        base = operator.removesuffix("IfExists")
        negated = "Not" in base
        test = base.replace("Not", "")
        if test not in {"StringEquals", "StringEqualsIgnoreCase", "StringLike", "ArnEquals", "ArnLike"}:
            continue
        for key, wanted in tests.items():
            value = known.get(str(key).lower())
            values = as_list(wanted)
            if value is None or not values or not all(isinstance(w, str) for w in values):
                continue
            if test == "StringEquals":
                matched = value in values
            elif test == "StringEqualsIgnoreCase":
                matched = value.lower() in [w.lower() for w in values]
            else:  # StringLike, ArnEquals and ArnLike take * and ? wildcards
                matched = any(fnmatch.fnmatchcase(value, w.replace("[", "[[]")) for w in values)
            if matched == negated:
                return False
    return True


def _names(pattern: str, arn: str, objects: bool) -> bool:
    if not objects:
        return fnmatch.fnmatchcase(arn, pattern)
    # An object ARN is the bucket's and a key: a pattern names some object when it is under the bucket, or its
    # wildcards (which match '/' too) reach one.
    return pattern.startswith(f"{arn}/") or fnmatch.fnmatchcase(f"{arn}/key", pattern)


def arns_of(graph: Graph, resource: RenderedResource) -> tuple[str, ...]:
    """What a policy may name ``resource`` by: the ARN the mocks give it in its region (its ``arn`` output), and
    its ID."""
    out = {physical_id(resource.type, resource.name)}
    for region in {"", cloud_region_of(graph, resource.region)}:
        _, outputs = mock_outputs(resource.type, resource.name, resource.inputs, region)
        if isinstance(outputs.get("arn"), str):
            out.add(outputs["arn"])
    return tuple(sorted(out))


def pod_roles(graph: Graph, workload: KubeObject, account: str) -> list[RenderedResource]:
    """The IAM roles a pod of ``workload`` can use: its service account's IRSA role and Pod Identity ones."""
    roles: list[RenderedResource] = []
    for sa in graph.kube(workload.resource.region, "ServiceAccount"):
        annotated = (lookup(sa.manifest, "metadata.annotations") or {}).get(ROLE_ANNOTATION)
        if sa.namespace == workload.namespace and sa.name == account and annotated:
            roles += _sources(graph, sa.resource, "metadata")
    for association in graph.of_type(POD_IDENTITY, workload.resource.region):
        inputs = association.inputs
        if inputs.get("namespace") == workload.namespace and inputs.get("serviceAccount") == account:
            roles += _sources(graph, association, "roleArn")
    return roles


def _sources(graph: Graph, resource: RenderedResource, field: str) -> list[RenderedResource]:
    urns = resource.property_dependencies.get(field, [])
    return [graph.by_urn[u] for u in urns if u in graph.by_urn and graph.by_urn[u].type == ROLE]
