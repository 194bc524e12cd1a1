"""An IAM ARN written for one of the program's roles, users, groups, policies or instance profiles is that entity's ARN.

IAM's ARNs carry the entity's path: a role named ``reader`` created with ``path="/workloads/"`` is
``arn:aws:iam::123456789012:role/workloads/reader``, not ``...:role/reader`` (IAM User Guide, "IAM identifiers":
"arn:aws:iam::account:role/application_abc/component_xyz/S3Access", and "the ARN includes the path";
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-arns). An ARN assembled
from the account and the name (``f"arn:aws:iam::{account}:role/{name}"``) names no entity when the path is not
``/``: an ``eks.amazonaws.com/role-arn`` annotation with it makes every AssumeRoleWithWebIdentity fail (AccessDenied),
a Principal with it is refused (MalformedPolicy: Invalid principal), an attachment's ``policyArn`` fails with
NoSuchEntity, and a Resource with it grants nothing.

Read from every string of every resource's inputs (policy documents, chart values, Kubernetes annotations and env
included) and the stack's outputs: each ``arn:<partition>:iam::<account>:<kind>/...`` whose kind and last segment
name an entity of that kind the program creates (by its name, or the name Pulumi generates) in the deploying
account must equal that entity's ARN. ARNs with wildcards are not judged.

It cannot see: entities of other stacks, and names known only at apply time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import ACCOUNT_ID, IAM_ARN_KINDS, RenderedResource, iam_arn, mock_outputs

RULE = "iam-arn-exact"
# An IAM entity ARN (names and paths: letters, digits and +=,.@_- and, in a path, '/').
_ARN = re.compile(
    r"arn:aws[a-z-]*:iam::(?P<account>[0-9]{12}):(?P<kind>role|user|group|policy|instance-profile)"
    r"(?P<rest>/[A-Za-z0-9+=,.@_/-]+)(?P<after>[*?$]?)"
)


def check(graph: Graph) -> Iterator[Finding]:
    entities = _entities(graph)
    if not entities:
        return
    holders: list[tuple[str, str, Any]] = [(r.urn, r.name, r.inputs) for r in graph.resources]
    stack_urn = next((r.urn for r in graph.resources), "")
    holders.append((stack_urn, "the stack's outputs", graph.result.outputs))
    for urn, holder, inputs in holders:
        seen: set[str] = set()
        for written in _arns(inputs):
            match = _ARN.fullmatch(written)
            if match is None or match["after"] or match["account"] != ACCOUNT_ID or written in seen:
                continue
            seen.add(written)
            entity = entities.get((match["kind"], match["rest"].rsplit("/", 1)[-1]))
            if entity is None or entity.urn == urn:
                continue
            real = _arn_of(entity)
            if written.split(":", 2)[2] == real.split(":", 2)[2]:
                continue
            kind = match["kind"]
            yield Finding(
                RULE,
                urn,
                f"{holder} names {kind} {entity.name} as {written!r}, but IAM's ARN for it is {real!r} (an ARN "
                f"carries the {kind}'s path, here {entity.inputs.get('path') or '/'!r}): the written one names no {kind}, "
                "so what uses it fails: AssumeRole / AssumeRoleWithWebIdentity is denied (AccessDenied), a "
                "Principal is refused (Invalid principal in policy), an attachment finds NoSuchEntity, a Resource "
                "grants nothing",
                f"use {entity.name}'s arn output instead of assembling the ARN from its name (or write {real!r})",
            )


def _entities(graph: Graph) -> dict[tuple[str, str], RenderedResource]:
    """The program's IAM entities by (ARN kind, name): the given name, else the generated one."""
    out: dict[tuple[str, str], RenderedResource] = {}
    for resource in graph.resources:
        kind = IAM_ARN_KINDS.get(resource.type)
        if kind is not None and resource.custom:
            name = mock_outputs(resource.type, resource.name, resource.inputs, "")[1].get("name")
            out.setdefault((kind, str(name)), resource)
    return out


def _arn_of(entity: RenderedResource) -> str:
    name = str(mock_outputs(entity.type, entity.name, entity.inputs, "")[1].get("name"))
    return iam_arn(entity.type, name, entity.inputs.get("path"))


def _arns(value: Any) -> Iterator[str]:
    """Every IAM entity ARN in a value: its strings, nested in lists, dicts and JSON documents (with what follows
    the ARN, so that a wildcard shows)."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    for match in _ARN.finditer(text):
        yield match.group(0)
