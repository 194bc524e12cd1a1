"""An OpenSearch domain's access policy that admits a role's HTTP requests names the domain's subresources.

A domain's resource-based access policy (``accessPolicies`` on ``aws.opensearch.Domain``/``aws.elasticsearch.Domain``,
or an ``aws.opensearch.DomainPolicy``) is evaluated against the resource each request names. The domain's ARN
(``arn:aws:es:REGION:ACCOUNT:domain/NAME``) names the domain itself; every HTTP request (``es:ESHttpGet``,
``es:ESHttpPost``... on ``/<index>/_search``, ``/_bulk``) names a subresource under it, ``domain/NAME/...``. So a
statement allowing ``es:ESHttp*`` on the bare domain ARN covers no request, and the role's signed requests are
denied with 403 "User: ... is not authorized to perform: es:ESHttpPost" while ``pulumi up`` succeeds. The documented
form ends the ARN with ``/*`` ("Identity and Access Management in Amazon OpenSearch Service", resource-based
policies: "the trailing wildcard ... applies to the domain's subresources",
https://docs.aws.amazon.com/opensearch-service/latest/developerguide/ac.html#ac-types-resource).

Judged per Allow statement naming an ``es:ESHttp*`` action whose every Resource is a bare domain ARN (no wildcard)
and whose principals are roles of the program: a role is reported only when nothing else grants it HTTP access, i.e.
no statement of any domain access policy in the program covers a subresource of that domain, and every identity
policy the role holds is known at render time and none allows the action on a subresource (``domain/NAME/*``,
``domain/NAME/logs-*``, ``*``): within one account either grant suffices.

Cannot see: policies known only at apply time, principals that are not the program's roles (users, account roots,
other accounts), roles with AWS managed policies attached, and fine-grained access control's own mapping (it still
needs the IAM grant).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import (
    allows_on,
    as_list,
    known_documents,
    names_action,
    role_named,
    statements,
)
from tokenplane.proof.render import RenderedResource

RULE = "opensearch-access-policy"

# The resources that hold a domain access policy, and its input.
POLICY_HOLDERS = {
    "aws:opensearch/domain:Domain": "accessPolicies",
    "aws:elasticsearch/domain:Domain": "accessPolicies",
    "aws:opensearch/domainPolicy:DomainPolicy": "accessPolicies",
    "aws:elasticsearch/domainPolicy:DomainPolicy": "accessPolicies",
}
# The domain's HTTP actions (the Service Authorization Reference's ESHttp* rows, all on the subresource type).
NAMESPACES = ("es", "opensearch")
HTTP_ACTIONS = tuple(f"es:ESHttp{m}" for m in ("Get", "Head", "Post", "Put", "Delete", "Patch"))
# A domain's own ARN, no wildcard: ``es`` is the service's ARN namespace; the render's mocks spell it ``opensearch``.
BARE_DOMAIN = re.compile(r"arn:aws[a-z-]*:(?:es|opensearch):[^:*?]*:[^:*?]*:domain/[^/*?]+")


def check(graph: Graph) -> Iterator[Finding]:
    documents = [(r, r.inputs.get(key)) for typ, key in POLICY_HOLDERS.items() for r in graph.of_type(typ)]
    for holder, document in documents:
        for statement in statements(document):
            yield from _statement(graph, holder, statement, [d for _, d in documents])


def _statement(
    graph: Graph, holder: RenderedResource, statement: dict[str, Any], documents: list[Any]
) -> Iterator[Finding]:
    if statement.get("Effect") != "Allow" or "NotAction" in statement or "NotResource" in statement:
        return
    actions = [a for a in HTTP_ACTIONS if names_action(statement, a)]
    resources = as_list(statement.get("Resource"))
    if not actions or not resources or not all(isinstance(r, str) and BARE_DOMAIN.fullmatch(r) for r in resources):
        return
    principal = statement.get("Principal")
    arns = as_list(principal.get("AWS")) if isinstance(principal, dict) else []
    domains = tuple(re.sub(":(?:es|opensearch):", f":{ns}:", r, count=1) for r in resources for ns in NAMESPACES)
    if any(_covers(d, actions, domains) for d in documents):
        return  # another statement of a domain access policy admits the HTTP requests
    for arn in arns:
        role = role_named(graph, arn)
        held = known_documents(graph, role) if role is not None else None
        if role is None or held is None or any(allows_on(held, a, domains, objects=True) for a in actions):
            continue
        yield Finding(
            RULE,
            holder.urn,
            f"{holder.name}'s access policy allows {', '.join(actions)} to role {role.name} on "
            f"{', '.join(str(r) for r in resources)}, the domain's own ARN: HTTP requests name the domain's "
            "subresources (domain/NAME/<index>...), which a bare domain ARN does not cover, and nothing else grants "
            f"{role.name} them, so every signed request is denied (403 not authorized to perform: {actions[0]}) "
            "after pulumi up succeeds",
            f"end the Resource with '/*' ({resources[0]}/*), the documented form for a domain's subresources",
        )


def _covers(document: Any, actions: list[str], domains: tuple[str, ...]) -> bool:
    """Whether an Allow statement of ``document`` names one of ``actions`` on some subresource of ``domains``."""
    for statement in statements(document):
        if statement.get("Effect") != "Allow" or not any(names_action(statement, a) for a in actions):
            continue
        if "NotResource" in statement:
            return True  # not judged: it may well cover them
        patterns = [r for r in as_list(statement.get("Resource")) if isinstance(r, str)]
        if any(p.startswith(f"{d}/") or fnmatch.fnmatchcase(f"{d}/index", p) for p in patterns for d in domains):
            return True
    return False
