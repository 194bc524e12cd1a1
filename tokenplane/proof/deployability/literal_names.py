"""A name written out where an AWS input takes a reference names one of the program's own resources, not a typo of it.

An input that takes a reference (``clusterName``, ``roleName``, ``bucket``, an ARN: ``first_run.takes_reference``)
may name a resource made outside the program, which an offline check cannot know; so a name that matches nothing
here is not judged by itself. But one that is one or two edits from a name the program gives one of its own
resources (``acme-ue`` beside the cluster ``acme-eu``), and matches none, is a typo of it: nothing outside would
be named so. AWS then refuses the call (EKS ``ResourceNotFoundException: No cluster found for name``, IAM
``NoSuchEntity``, S3 ``NoSuchBucket``), or, in a policy's ARN, matches nothing and allows nothing.

Names Pulumi generates (``<logical>-<7 hex>``) are ``generated-name-resolves``'s, and are left to it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.first_run import ARN, REFERENCE_SUFFIXES, literal_strings, named, takes_reference
from tokenplane.proof.deployability.generated_names import GENERATED
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.typos import near_miss

RULE = "literal-name-resolves"


def check(graph: Graph) -> Iterator[Finding]:
    chosen = [
        r for r in graph.resources if r.custom and r.type.startswith("aws:") and isinstance(r.inputs.get("name"), str)
    ]
    names = {str(r.inputs["name"]) for r in chosen}
    for resource in graph.resources:
        if not resource.custom or not resource.type.startswith("aws:"):
            continue
        for key, value in literal_strings(resource.inputs):
            arn = ARN.match(value)
            if arn is None and not takes_reference(key):
                continue
            if arn is not None and (arn.group(1) == "aws" or "*" in value):
                continue  # AWS-managed, or a pattern
            name = value if arn is None else re.split(r"[/:]", arn.group(2))[-1]
            if named(graph, value) is not None or name in names or GENERATED.match(name):
                continue
            # Only a resource of the kind the input takes: a domain name is not a typo of a record's name.
            kind = _service(value) if arn is not None else _stem(key)
            of_kind = {str(r.inputs["name"]): r for r in chosen if kind and _is_kind(r.type, kind, arn is not None)}
            typo_of = near_miss(name, set(of_kind))
            if typo_of is None:
                continue
            target = of_kind[typo_of]
            yield Finding(
                RULE,
                resource.urn,
                f"{resource.name}'s {key} names {name!r}, which nothing in this program makes; the program names "
                f"its {target.type.rsplit(':', 1)[-1]} {target.name} {typo_of!r}, one or two edits away: AWS refuses "
                "the call (not found) or, in an ARN, matches nothing",
                f"pass {target.name}'s output (its .name, .arn or .id) instead of the written-out {name!r}",
            )


def _stem(key: str) -> str:
    """What an input names, lowercased: ``clusterName`` -> ``cluster``, ``roleArns`` -> ``role``."""
    for suffix in sorted(REFERENCE_SUFFIXES, key=len, reverse=True):
        if key.endswith(suffix) and key != suffix:
            return key.removesuffix(suffix).lower()
    return key.lower()


def _service(arn: str) -> str:
    return arn.split(":")[2]


def _is_kind(typ: str, kind: str, by_service: bool) -> bool:
    """Whether a resource of type ``aws:<module>/<x>:<Kind>`` is what ``kind`` names: an ARN's service is the
    module; an input's stem is (in) the type's name."""
    module, _, last = typ.removeprefix("aws:").partition(":")
    if by_service:
        return module.split("/", 1)[0] == kind
    return kind in last.lower()
