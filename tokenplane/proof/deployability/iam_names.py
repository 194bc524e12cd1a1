"""Every AWS managed policy the program attaches exists, and every action its policies name is one IAM knows.

Two misspellings IAM treats differently:

- a managed policy ARN (``arn:aws:iam::aws:policy/[PATH/]NAME``) that AWS does not publish, or under the wrong path
  (``AmazonEBSCSIDriverPolicy`` lives under ``service-role/``): AttachRolePolicy fails with ``NoSuchEntity: Policy
  arn:aws:iam::aws:policy/... does not exist or is not attachable`` and ``pulumi up`` fails at the attachment.
  ``aws_managed_policies.json`` lists the ARNs AWS publishes (not deprecated), with its source and date;
- an action that does not exist (``s3:GetObjects``, ``ecr:BatchGetImages``) in a policy the program writes: IAM
  accepts the document (it validates the grammar, not the names) and the statement grants nothing, so the call is
  denied (AccessDenied) although the policy seems to allow it. A wildcard action that matches no action
  (``s3:Get0bject*``) is as empty. ``iam_actions.json`` holds, per service, the actions of AWS's Service
  Authorization Reference (dated, with each service's page); only services it lists are judged.

IAM action names are case-insensitive (``s3:getobject`` is ``s3:GetObject``); a managed policy's ARN is matched
exactly. Read from every policy document the graph holds (role, user and bucket policies, managed ``Policy``,
roles' inline policies) and every attachment (``RolePolicyAttachment``, ``PolicyAttachment``, ``managedPolicyArns``).

It cannot see: actions and managed policies AWS added after the tables' date (flagged by mistake: refresh the
tables), policies whose JSON is known only at apply time, policies attached outside the program.
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import json
from collections.abc import Iterator

from tokenplane import package_data
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import AWS_MANAGED, policy_documents, statements

RULE = "iam-name-exists"
POLICY_ARN_INPUTS = {
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": "policyArn",
    "aws:iam/userPolicyAttachment:UserPolicyAttachment": "policyArn",
    "aws:iam/groupPolicyAttachment:GroupPolicyAttachment": "policyArn",
    "aws:iam/policyAttachment:PolicyAttachment": "policyArn",
    "aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive": "policyArns",
    "aws:iam/role:Role": "managedPolicyArns",
}


@functools.cache
def managed_policies() -> frozenset[str]:
    """The AWS managed policies, as ``[PATH/]NAME`` after ``arn:aws:iam::aws:policy/``."""
    data = json.loads(package_data.path(package_data.AWS_MANAGED_POLICIES).read_text(encoding="utf-8"))
    return frozenset(str(p) for p in data["policies"])


@functools.cache
def _path_unknown() -> frozenset[str]:
    """Managed policies whose path the source does not record: accepted under any path."""
    data = json.loads(package_data.path(package_data.AWS_MANAGED_POLICIES).read_text(encoding="utf-8"))
    return frozenset(str(p) for p in data["path_unknown"])


@functools.cache
def actions() -> dict[str, frozenset[str]]:
    """Service prefix -> its actions, lower-cased (IAM compares them case-insensitively)."""
    data = json.loads(package_data.path(package_data.IAM_ACTIONS).read_text(encoding="utf-8"))
    return {str(s): frozenset(str(a).lower() for a in v["actions"]) for s, v in data["services"].items()}


@functools.cache
def _spelled(service: str) -> dict[str, str]:
    data = json.loads(package_data.path(package_data.IAM_ACTIONS).read_text(encoding="utf-8"))
    return {str(a).lower(): str(a) for a in data["services"][service]["actions"]}


def check(graph: Graph) -> Iterator[Finding]:
    yield from _policy_arns(graph)
    yield from _actions(graph)


def _policy_arns(graph: Graph) -> Iterator[Finding]:
    known = managed_policies()
    for typ, key in POLICY_ARN_INPUTS.items():
        for resource in graph.of_type(typ):
            value = resource.inputs.get(key)
            for arn in value if isinstance(value, list) else [value]:
                if not isinstance(arn, str) or not arn.startswith(AWS_MANAGED):
                    continue
                name = arn.removeprefix(AWS_MANAGED)
                if name in known or name.rsplit("/", 1)[-1] in _path_unknown():
                    continue
                same = sorted(p for p in known if p.rsplit("/", 1)[-1] == name.rsplit("/", 1)[-1])
                near = same or difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.85)
                hint = f" (did you mean {AWS_MANAGED}{near[0]}?)" if near else ""
                yield Finding(
                    RULE,
                    resource.urn,
                    f"{resource.name} attaches {arn}, which is not an AWS managed policy{hint}: AttachRolePolicy "
                    f"fails (NoSuchEntity: Policy {arn} does not exist or is not attachable)",
                    f"attach {AWS_MANAGED}{near[0]}"
                    if near
                    else "use the ARN of a policy AWS publishes, path included",
                )


def unknown_action(action: str) -> str | None:
    """Why ``action`` grants nothing (a did-you-mean), or None when it is real or its service is not in the table."""
    service, sep, name = action.partition(":")
    table = actions().get(service.lower())
    if not sep or table is None or not name:
        return None
    lowered = name.lower()
    if any(c in lowered for c in "*?"):
        if any(fnmatch.fnmatchcase(a, lowered) for a in table):
            return None
        return f"{action} matches no {service} action"
    if lowered in table:
        return None
    near = difflib.get_close_matches(lowered, sorted(table), n=1, cutoff=0.8)
    hint = f" (did you mean {service}:{_spelled(service.lower())[near[0]]}?)" if near else ""
    return f"{action} is not an action of {service}{hint}"


def _actions(graph: Graph) -> Iterator[Finding]:
    for resource, document in policy_documents(graph):
        for statement in statements(document):
            if statement.get("Effect") != "Allow" or "Action" not in statement:
                continue  # a Deny or NotAction with a misspelled name is a different defect: not judged here
            listed = statement["Action"]
            for action in listed if isinstance(listed, list) else [listed]:
                why = unknown_action(str(action)) if isinstance(action, str) else None
                if why is not None:
                    yield Finding(
                        RULE,
                        resource.urn,
                        f"{resource.name} allows {why}: IAM accepts the policy and the grant allows nothing, so the "
                        "call is denied (AccessDenied)",
                        "spell the action as AWS's Service Authorization Reference lists it "
                        "(tokenplane/proof/deployability/iam_actions.json)",
                    )
