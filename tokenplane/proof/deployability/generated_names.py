"""A value that names one of the program's own AWS resources by its generated name names this stack's one.

Pulumi auto-names a resource ``<logical name>-<7 random hex>`` (and the cloud gives it an ID), a different one in
every stack and on every replacement; the only correct way to refer to it is through its output. A value in that
shape whose logical name is one of the graph's resources, but whose suffix is not the one this render gives it, is
a name copied from another stack's state (``pulumi stack output``, the console) or mistyped: on a fresh stack it
names nothing. AWS then refuses or silently grants nothing, by where the value sits:

- an ID or name input (a subnet, security group, VPC, role, bucket, launch template): the create call fails with
  the service's not-found error (EC2 ``InvalidSubnetID.NotFound`` / ``InvalidGroup.NotFound`` /
  ``InvalidVpcID.NotFound``, IAM ``NoSuchEntity: The role with name X cannot be found``, S3 ``NoSuchBucket``,
  EKS ``InvalidParameterException: ... role ... does not exist``, KMS ``NotFoundException``);
- an ARN in a policy document's ``Resource``: IAM matches the request's ARN character by character (IAM User
  Guide, "IAM JSON policy elements: Resource"), so the statement allows nothing and the call is denied.

The mock render gives every resource a deterministic name of the same shape, and every output-carried reference
resolves to it (``Graph.by_physical_id``, and any other output that names it: ``Graph.by_identifying_output``, e.g.
an RDS instance's ``identifier`` beside its ``id``, the DBI resource id); so any generated-shaped value that resolves
to nothing was written by hand. Values of other shapes (``vpc-0abc...``, a chosen name) are resources made outside the program and are not
judged. Tags are not judged (free text).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, physical_id

RULE = "generated-name-resolves"
# Pulumi's auto-name suffix: a hyphen and seven lowercase hex digits; the mock's IDs add "-id".
GENERATED = re.compile(r"^(?P<logical>[A-Za-z0-9][A-Za-z0-9_.-]*?)-(?P<suffix>[0-9a-f]{7})(?P<id>-id)?$")
SEPARATORS = re.compile(r"[/:,\s]+")  # inside an ARN or a list-like string


def tokens(value: str) -> Iterator[str]:
    """The value, and each part of an ARN or separated list it holds."""
    yield value
    if any(c in value for c in "/:, "):
        yield from (part for part in SEPARATORS.split(value) if part)


def strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, string) of every string in an input value, JSON documents (policies) opened."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k not in {"tags", "tagsAll"}:
                yield from strings(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from strings(v, f"{path}[{i}]")
    elif isinstance(value, str):
        if value.startswith("{"):
            try:
                document = json.loads(value)
            except ValueError:
                document = None
            if isinstance(document, dict):
                yield from strings(document, path)
                return
        yield path, value


def check(graph: Graph) -> Iterator[Finding]:
    own = {r.name: r for r in graph.resources if r.custom and r.type.startswith("aws:")}
    if not own:
        return
    for resource in graph.resources:
        if not resource.custom or not (resource.type.startswith("aws:") or resource.is_kubernetes_object):
            continue
        reported: set[str] = set()
        for path, value in strings(resource.inputs):
            for token in tokens(value):
                match = GENERATED.match(token)
                if match is None or token in reported or _resolves(graph, token):
                    continue
                named = own.get(match.group("logical"))
                if named is None or named.urn == resource.urn:
                    continue
                reported.add(token)
                yield _finding(resource, path, token, named, bool(match.group("id")))


def _resolves(graph: Graph, token: str) -> bool:
    """The token is one of this stack's resources' names: its ID or any output that names it."""
    return token in graph.by_physical_id or token in graph.by_identifying_output


def _finding(resource: RenderedResource, path: str, token: str, named: RenderedResource, is_id: bool) -> Finding:
    actual = physical_id(named.type, named.name)
    actual = actual if is_id else actual.removesuffix("-id")
    in_policy = "Statement" in path
    effect = (
        "the policy statement matches no resource, so IAM denies the calls it was written to allow (AccessDenied)"
        if in_policy
        else "AWS refuses the call with its not-found error (InvalidParameterValue / *.NotFound / NoSuchEntity / "
        "NoSuchBucket / NotFoundException) and pulumi up fails at this resource"
    )
    return Finding(
        RULE,
        resource.urn,
        f"{resource.type.split(':')[1]} {resource.name}'s {path} names {token!r}, the shape of the name Pulumi "
        f"generates for {named.type.split(':')[1]} {named.name}, but this stack's {named.name} is {actual!r}: the "
        f"value was copied from another stack (or mistyped) and names nothing here; {effect}",
        f"pass {named.name}'s output (its id, name or arn) instead of a hard-coded value",
    )
