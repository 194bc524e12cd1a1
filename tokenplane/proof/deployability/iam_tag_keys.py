"""An IAM role's or user's tags (with its provider's default tags) hold no two keys that differ only by case.

IAM treats the tag keys of users and roles case-insensitively while it preserves their case
(https://docs.aws.amazon.com/IAM/latest/UserGuide/id_tags.html, "Case sensitivity": you cannot have separate
``Department`` and ``department`` keys on a user or role). The AWS provider merges its ``defaultTags`` into each
resource's ``tags`` by exact key, so a resource key that spells a default tag's key in another case is sent beside
it, and ``CreateRole`` / ``CreateUser`` (``TagRole`` / ``TagUser`` on an update) refuse the request with InvalidInput
"Duplicate tag keys found. Please note that Tag keys are case insensitive."
(https://github.com/github-aws-runners/terraform-aws-github-runner/pull/1346 for the same error from default tags;
https://github.com/aws/aws-cdk/issues/26253: IAM refuses both keys in one request, while tagging them one at a time
replaces the first).
The same holds for two keys of the resource's own ``tags`` that differ only by case.

Only roles and users are judged: IAM's page says the other IAM resource types' keys are case sensitive, and so are
most services' (EC2's ``Name`` and ``name`` are two tags), which are not judged. It cannot see default tags a
provider gets at apply time (a value unknown to the render is not judged), and ``ignoreTags``.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.backup_selection import json_value, tag_map
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.render import RenderedResource

RULE = "iam-tag-keys-case"
# The IAM resource types whose tag keys IAM compares without case.
CASE_INSENSITIVE = {"aws:iam/role:Role": "CreateRole", "aws:iam/user:User": "CreateUser"}
PROVIDER = "pulumi:providers:aws"


def check(graph: Graph) -> Iterator[Finding]:
    defaults = {
        p.urn: tag_map(lookup(json_value(p.inputs.get("defaultTags")), "tags")) for p in graph.of_type(PROVIDER)
    }
    for typ, call in CASE_INSENSITIVE.items():
        for resource in graph.of_type(typ):
            own = resource.inputs.get("tags")
            if own is not None and not isinstance(own, dict):
                continue  # not known at render time
            own_keys = [str(k) for k in own or {}]
            base = _provider_defaults(resource, defaults)
            # The provider merges by exact key: a resource key equal to a default's replaces it.
            merged = [(k, "default tags") for k in base if k not in own_keys] + [(k, "tags") for k in own_keys]
            seen: dict[str, tuple[str, str]] = {}
            for key, where in merged:
                first = seen.setdefault(key.lower(), (key, where))
                if first[0] == key:
                    continue
                yield Finding(
                    RULE,
                    resource.urn,
                    f"{typ.rsplit(':', 1)[-1]} {resource.name}'s {where} key {key!r} and its {first[1]} key "
                    f"{first[0]!r} differ only by case: the provider sends both, and IAM's tag keys of roles and "
                    f"users are case-insensitive, so {call} fails with InvalidInput (Duplicate tag keys found. "
                    "Please note that Tag keys are case insensitive.)",
                    f"spell the key as {first[0]!r} (a default tag's key: drop it from the resource's tags or set "
                    "the value under the same spelling), or remove one of the two",
                )


def _provider_defaults(resource: RenderedResource, defaults: dict[str, dict[str, str | None]]) -> list[str]:
    if not resource.provider:
        return []
    urn = "::".join(resource.provider.split("::")[:4])  # urn:pulumi:STACK, PROJECT, TYPE, NAME[, ID]
    return [str(k) for k in defaults.get(urn, {})]
