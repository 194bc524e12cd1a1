"""OpenSearch Serverless collections CreateCollection accepts: a valid name, and an encryption policy made first that
covers it.

- ``opensearch-serverless-names``: a collection's ``name`` (``aws.opensearch.ServerlessCollection``) is "Length
  Constraints: Minimum length of 3. Maximum length of 32. Pattern: ^[a-z][a-z0-9-]+$"
  (https://docs.aws.amazon.com/opensearch-service/latest/ServerlessAPIReference/API_CreateCollection.html), and a
  security policy's (``aws.opensearch.ServerlessSecurityPolicy``) likewise 3-32 characters of the same pattern
  (https://docs.aws.amazon.com/opensearch-service/latest/ServerlessAPIReference/API_CreateSecurityPolicy.html);
  anything else is refused with ValidationException and ``pulumi up`` fails there.
- ``opensearch-serverless-encryption``: "A collection must have an encryption policy that matches its name before it
  can be created" (https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-encryption.html):
  CreateCollection fails with ValidationException "No matching security policy of encryption type found for
  collection name: NAME. Please create security policy of encryption type for this collection." A policy of type
  ``encryption`` covers the collections its ``Rules[]`` of ``ResourceType: collection`` name in ``Resource``
  (``collection/NAME``, or ``collection/PREFIX*``: the service's wildcard is a suffix). Judged where the program makes
  an encryption policy and every one's document is known: no policy covering the collection, or the covering ones
  created without the collection waiting for them (``depends_on`` or an input from them): on the first ``up``
  Pulumi creates both at once and CreateCollection can run first.

Cannot see: encryption policies made outside the program (so a program with none of its own is not judged), and
policy documents known only at apply time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

NAMES = "opensearch-serverless-names"
ENCRYPTION = "opensearch-serverless-encryption"
COLLECTION = "aws:opensearch/serverlessCollection:ServerlessCollection"
POLICY = "aws:opensearch/serverlessSecurityPolicy:ServerlessSecurityPolicy"
NAME = re.compile(r"^[a-z][a-z0-9-]+$")
LENGTH = (3, 32)


def check_names(graph: Graph) -> Iterator[Finding]:
    for typ, call, what in (
        (COLLECTION, "CreateCollection", "collection"),
        (POLICY, "CreateSecurityPolicy", "security policy"),
    ):
        for resource in graph.of_type(typ):
            name = resource.inputs.get("name")
            if not isinstance(name, str):
                continue
            low, high = LENGTH
            wrong = []
            if not low <= len(name) <= high:
                wrong.append(f"is {len(name)} characters (3 to 32 allowed)")
            if not NAME.match(name):
                wrong.append("is not lowercase letters, digits and hyphens starting with a letter (^[a-z][a-z0-9-]+$)")
            if not wrong:
                continue
            yield Finding(
                NAMES,
                resource.urn,
                f"OpenSearch Serverless {what} {resource.name} is named {name!r}, which {' and '.join(wrong)}: "
                f"{call} refuses it (ValidationException) and `pulumi up` fails there",
                f"name the {what} with 3 to 32 lowercase letters, digits and hyphens, starting with a letter",
            )


def _patterns(policy: RenderedResource) -> list[str] | None:
    """The collection name patterns an encryption policy's rules cover; None when its document is not known."""
    value = policy.inputs.get("policy")
    try:
        document = json.loads(value) if isinstance(value, str) else None
    except json.JSONDecodeError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get("Rules"), list):
        return None
    out: list[str] = []
    for rule in document["Rules"]:
        if not isinstance(rule, dict) or str(rule.get("ResourceType", "")).lower() != "collection":
            continue
        resources = rule.get("Resource")
        for resource in resources if isinstance(resources, list) else [resources]:
            if isinstance(resource, str) and resource.startswith("collection/"):
                out.append(resource.removeprefix("collection/"))
    return out


def _covers(pattern: str, name: str) -> bool:
    return name.startswith(pattern[:-1]) if pattern.endswith("*") else name == pattern


def check_encryption(graph: Graph) -> Iterator[Finding]:
    policies = [p for p in graph.of_type(POLICY) if p.inputs.get("type") == "encryption"]
    if not policies:
        return
    patterns: dict[str, list[str]] = {}
    for policy in policies:
        found = _patterns(policy)
        if found is None:
            return  # a document known only at apply time: it may cover anything
        patterns[policy.urn] = found
    for collection in graph.of_type(COLLECTION):
        name = collection.inputs.get("name")
        if not isinstance(name, str) or not name:
            continue
        covering = [p for p in policies if any(_covers(x, name) for x in patterns[p.urn])]
        if not covering:
            named = "; ".join(
                f"{p.inputs.get('name') or p.name}: {', '.join(f'collection/{x}' for x in patterns[p.urn]) or 'none'}"
                for p in policies
            )
            yield Finding(
                ENCRYPTION,
                collection.urn,
                f"OpenSearch Serverless collection {name} matches no encryption policy's rules ({named}): "
                'CreateCollection fails with ValidationException "No matching security policy of encryption type '
                f"found for collection name: {name}. Please create security policy of encryption type for this "
                'collection." and `pulumi up` fails there',
                f"add collection/{name} (or a prefix pattern such as collection/{name.rsplit('-', 1)[0]}*) to an "
                "encryption policy's Rules[].Resource",
            )
            continue
        waited = graph.waits_for(collection.urn)
        if not any(p.urn in waited for p in covering):
            yield Finding(
                ENCRYPTION,
                collection.urn,
                f"OpenSearch Serverless collection {name} does not wait for its encryption policy "
                f"{covering[0].inputs.get('name') or covering[0].name}: on the first `pulumi up` both are created at "
                'once and CreateCollection can run first, failing with ValidationException "No matching security '
                f'policy of encryption type found for collection name: {name}"',
                f"create the collection with depends_on=[{covering[0].name}]",
            )
