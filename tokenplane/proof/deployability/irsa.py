"""A web-identity IAM role (IRSA) reaches the pods it trusts, and asks for the audience EKS's tokens carry.

EKS injects a web-identity token for every ServiceAccount annotated ``eks.amazonaws.com/role-arn``; the SDKs in
the pod call ``AssumeRoleWithWebIdentity`` with it. ``service-account-trust`` (``service_accounts.py``) reads each
annotated ServiceAccount against its role's trust. This check covers what that one cannot see from the
ServiceAccounts' side (issue 27's held-out p08 kind):

- a role whose trust names a ServiceAccount the program makes (``<issuer>:sub``), while nothing in the program
  carries the role's ARN (no annotation, chart value, add-on or Pod Identity association, stack output): the
  annotation was forgotten or put on another account, and that ServiceAccount's pods get no credentials;
- a role no ServiceAccount that ``service-account-trust`` reads carries (neither the graph's, nor one a chart or an
  add-on makes from the program's values) whose ``<issuer>:aud`` condition is not
  ``sts.amazonaws.com``, the audience EKS's tokens carry: AssumeRoleWithWebIdentity is denied for every pod.

Both read trust policies with ``web_identity``'s one matcher.

It cannot see: roles of other stacks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability import service_accounts
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import ROLE
from tokenplane.proof.deployability.web_identity import (
    AUDIENCE,
    ROLE_ANNOTATION,
    conditions,
    federated,
    subject,
    web_identity_statements,
)
from tokenplane.proof.render import RenderedResource, physical_id

RULE = "irsa-trust"


def check(graph: Graph) -> Iterator[Finding]:
    carried = service_accounts.carried_roles(graph)
    for trusted in graph.of_type(ROLE):
        if trusted.urn in carried:
            continue  # service-account-trust reads it against the ServiceAccounts that carry it, audience included
        for statement in _web_identity(trusted):
            for condition in conditions(statement, "aud"):
                if not condition.admits(AUDIENCE):
                    key = f"{condition.operator} {condition.key}"
                    yield Finding(
                        RULE,
                        trusted.urn,
                        f"role {trusted.name}'s trust requires {key} in {condition.values}, but EKS's ServiceAccount "
                        f"tokens carry the audience {AUDIENCE}: AssumeRoleWithWebIdentity is denied for every pod",
                        f'set the condition to "{condition.key}": "{AUDIENCE}"',
                    )
    yield from _uncarried(graph)


def _web_identity(role: RenderedResource) -> list[dict[str, Any]]:
    """The role's Allow statements for AssumeRoleWithWebIdentity from a Federated (OIDC) principal."""
    return [s for s in web_identity_statements(role.inputs.get("assumeRolePolicy")) if federated(s)]


def _uncarried(graph: Graph) -> Iterator[Finding]:
    """A web-identity role whose ARN nothing in the program carries (no ServiceAccount annotation, chart value,
    add-on or Pod Identity association, no stack output) and whose trust names a ServiceAccount the program makes:
    that ServiceAccount's pods get no credentials (the annotation was forgotten, or put on another account)."""
    carried = json.dumps([r.inputs for r in graph.resources], default=str) + json.dumps(
        graph.result.outputs, default=str
    )
    accounts = {subject(a.namespace, a.name): a for a in graph.kube(None, "ServiceAccount")}
    for role in graph.of_type(ROLE):
        names = {physical_id(role.type, role.name).removesuffix("-id"), str(role.inputs.get("name") or "")} - {""}
        if any(f'/{n}"' in carried for n in names):  # the ARN's end, as a JSON string ends it
            continue
        for statement in _web_identity(role):
            subs = [v for condition in conditions(statement, "sub") for v in condition.literals]
            for named in [s for s in subs if s in accounts]:
                account = accounts[named]
                yield Finding(
                    RULE,
                    account.urn,
                    f"role {role.name}'s trust admits ServiceAccount {account.namespace}/{account.name}, but nothing "
                    f"in the program carries the role's ARN (no {ROLE_ANNOTATION} annotation on it): its pods get no "
                    "AWS credentials and every AWS call is denied",
                    f"annotate the ServiceAccount with {ROLE_ANNOTATION}: <the role's ARN>",
                )
