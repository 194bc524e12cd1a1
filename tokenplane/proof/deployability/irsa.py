"""A web-identity IAM role (IRSA) reaches the pods it trusts, and asks for the audience EKS's tokens carry.

EKS injects a web-identity token for every ServiceAccount annotated ``eks.amazonaws.com/role-arn``; the SDKs in
the pod call ``AssumeRoleWithWebIdentity`` with it. ``service-account-trust`` (``service_accounts.py``) reads each
annotated ServiceAccount against its role's trust. This check covers what that one cannot see from the
ServiceAccounts' side (issue 27's held-out p08 kind):

- a role whose trust names a ServiceAccount the program makes (``<issuer>:sub``), while nothing in the program
  carries the role's ARN (no annotation, chart value, add-on or Pod Identity association, stack output): the
  annotation was forgotten or put on another account, and that ServiceAccount's pods get no credentials;
- a role no ServiceAccount of the graph carries (a chart's or an add-on's) whose ``<issuer>:aud`` condition is not
  ``sts.amazonaws.com``, the audience EKS's tokens carry: AssumeRoleWithWebIdentity is denied for every pod.

It cannot see: roles of other stacks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import ROLE, role_named, statements
from tokenplane.proof.render import RenderedResource, physical_id

RULE = "irsa-trust"
ROLE_ANNOTATION = "eks.amazonaws.com/role-arn"
AUDIENCE = "sts.amazonaws.com"
WEB_IDENTITY = "sts:AssumeRoleWithWebIdentity"


def check(graph: Graph) -> Iterator[Finding]:
    carried = {
        role.urn
        for account in graph.kube(None, "ServiceAccount")
        if (
            role := role_named(
                graph, (account.manifest.get("metadata", {}).get("annotations") or {}).get(ROLE_ANNOTATION)
            )
        )
    }
    for trusted in graph.of_type(ROLE):
        if trusted.urn in carried:
            continue  # service-account-trust reads it against the ServiceAccounts that carry it, audience included
        for statement in _web_identity(trusted):
            for key, values in _conditions(statement, "aud"):
                if AUDIENCE not in values:
                    yield Finding(
                        RULE,
                        trusted.urn,
                        f"role {trusted.name}'s trust requires {key} in {values}, but EKS's ServiceAccount tokens carry "
                        f"the audience {AUDIENCE}: AssumeRoleWithWebIdentity is denied for every pod",
                        f'set the condition to "{key}": "{AUDIENCE}"',
                    )
    yield from _uncarried(graph)


def _web_identity(role: RenderedResource) -> list[dict[str, Any]]:
    """The role's Allow statements for AssumeRoleWithWebIdentity from a Federated (OIDC) principal."""
    out = []
    for statement in statements(role.inputs.get("assumeRolePolicy")):
        actions = statement.get("Action")
        actions = actions if isinstance(actions, list) else [actions]
        federated = (statement.get("Principal") or {}) if isinstance(statement.get("Principal"), dict) else {}
        if statement.get("Effect") == "Allow" and WEB_IDENTITY in actions and "Federated" in federated:
            out.append(statement)
    return out


def _conditions(statement: dict[str, Any], claim: str) -> Iterator[tuple[str, list[str]]]:
    """(condition key, values) of every StringEquals/StringLike condition on ``<issuer>:<claim>``."""
    for operator in ("StringEquals", "StringLike"):
        for key, values in ((statement.get("Condition") or {}).get(operator) or {}).items():
            if str(key).endswith(f":{claim}"):
                yield f"{operator} {key}", [str(v) for v in (values if isinstance(values, list) else [values])]


def _uncarried(graph: Graph) -> Iterator[Finding]:
    """A web-identity role whose ARN nothing in the program carries (no ServiceAccount annotation, chart value,
    add-on or Pod Identity association, no stack output) and whose trust names a ServiceAccount the program makes:
    that ServiceAccount's pods get no credentials (the annotation was forgotten, or put on another account)."""
    carried = json.dumps([r.inputs for r in graph.resources], default=str) + json.dumps(
        graph.result.outputs, default=str
    )
    accounts = {f"system:serviceaccount:{a.namespace}:{a.name}": a for a in graph.kube(None, "ServiceAccount")}
    for role in graph.of_type(ROLE):
        names = {physical_id(role.type, role.name).removesuffix("-id"), str(role.inputs.get("name") or "")} - {""}
        if any(f'/{n}"' in carried for n in names):  # the ARN's end, as a JSON string ends it
            continue
        for statement in _web_identity(role):
            subs = [v for _, values in _conditions(statement, "sub") for v in values]
            for subject in [s for s in subs if s in accounts]:
                account = accounts[subject]
                yield Finding(
                    RULE,
                    account.urn,
                    f"role {role.name}'s trust admits ServiceAccount {account.namespace}/{account.name}, but nothing "
                    f"in the program carries the role's ARN (no {ROLE_ANNOTATION} annotation on it): its pods get no "
                    "AWS credentials and every AWS call is denied",
                    f"annotate the ServiceAccount with {ROLE_ANNOTATION}: <the role's ARN>",
                )
