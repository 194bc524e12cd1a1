"""An ECR pull-through cache rule for an upstream that requires authentication names its credentials.

ECR caches some upstream registries anonymously and others only with credentials: Amazon ECR Public
(``public.ecr.aws``), the Kubernetes registry (``registry.k8s.io``) and Quay (``quay.io``) need none; Docker Hub
(``registry-1.docker.io``), GitHub Container Registry (``ghcr.io``), GitLab Container Registry
(``registry.gitlab.com``), Microsoft Azure Container Registry (``*.azurecr.io``) and Chainguard (``cgr.dev``) need a
Secrets Manager secret (https://docs.aws.amazon.com/AmazonECR/latest/userguide/pull-through-cache.html); a private
ECR upstream needs an IAM role (``customRoleArn``), not judged here. Without ``credentialArn``, CreatePullThroughCacheRule answers
UnsupportedUpstreamRegistryException ("The specified upstream registry requires authentication"), so the rule is
never created (https://docs.aws.amazon.com/AmazonECR/latest/userguide/pull-through-cache-creating-rule.html).

The secret's name must begin with ``ecr-pullthroughcache/`` and it must be in the rule's account and Region (the same
page; CloudFormation's ``CredentialArn`` pattern is ``arn:aws:secretsmanager:...:secret:ecr-pullthroughcache/...``):
judged where the ARN is a literal, or names a secret of the program whose name is known at render time.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "ecr-pull-through-credentials"
RULE_TYPE = "aws:ecr/pullThroughCacheRule:PullThroughCacheRule"
SECRET = "aws:secretsmanager/secret:Secret"
PREFIX = "ecr-pullthroughcache/"
# Upstream URL patterns that require a Secrets Manager secret (the user guide's list above).
AUTHENTICATED = {
    "registry-1.docker.io": "Docker Hub",
    "ghcr.io": "GitHub Container Registry",
    "registry.gitlab.com": "GitLab Container Registry",
    "*.azurecr.io": "Azure Container Registry",
    "cgr.dev": "Chainguard Registry",
}


def check(graph: Graph) -> Iterator[Finding]:
    for rule in graph.of_type(RULE_TYPE):
        url = str(rule.inputs.get("upstreamRegistryUrl") or "").lower().removeprefix("https://").rstrip("/")
        upstream = next((name for pattern, name in AUTHENTICATED.items() if fnmatch.fnmatchcase(url, pattern)), None)
        credential = rule.inputs.get("credentialArn")
        if upstream is not None and not credential:
            yield Finding(
                RULE,
                rule.urn,
                f"pull-through cache rule {rule.name} caches {upstream} ({url}), an upstream that requires "
                "authentication, without credentialArn: CreatePullThroughCacheRule answers "
                "UnsupportedUpstreamRegistryException and the rule is never created",
                f"store the {upstream} credentials (username and accessToken) in a Secrets Manager secret named "
                f"{PREFIX}<name> in the rule's region and pass its ARN as credential_arn",
            )
        name = _secret_name(graph, rule, credential)
        if credential and name is not None and not name.startswith(PREFIX):
            yield Finding(
                RULE,
                rule.urn,
                f"pull-through cache rule {rule.name} names the secret {name!r} as its credentials, but ECR takes "
                f"only secrets whose name begins with {PREFIX}: CreatePullThroughCacheRule refuses the ARN "
                "(ValidationException, or the secret is reported invalid) and the rule is never created",
                f"name the secret {PREFIX}{name.rsplit('/', 1)[-1]} (a secret cannot be renamed: create it anew)",
            )


def _secret_name(graph: Graph, rule: RenderedResource, credential: object) -> str | None:
    """The name of the secret ``credentialArn`` names: from a literal ARN (``...:secret:NAME-xxxxxx``), or the
    program's secret the input was computed from, where its name is known; None when unknown."""
    urns = rule.property_dependencies.get("credentialArn", [])
    secrets = [graph.by_urn[u] for u in urns if u in graph.by_urn and graph.by_urn[u].type == SECRET]
    secrets += [s for s in graph.by_physical_ids(credential) if s.type == SECRET]
    for secret in secrets:
        if isinstance(secret.inputs.get("name"), str):
            return str(secret.inputs["name"])
        if isinstance(secret.inputs.get("namePrefix"), str):
            return str(secret.inputs["namePrefix"])
        return secret.name  # autonamed: the logical name and a random suffix
    if isinstance(credential, str) and ":secret:" in credential and credential.startswith("arn:"):
        # A secret's ARN ends in its name and a six-character suffix Secrets Manager adds.
        named = credential.split(":secret:", 1)[1]
        return named.rsplit("-", 1)[0] if "-" in named else named
    return None
