"""ECR repositories are the stack's own; no account-wide singleton is managed by one stack.

Two stacks in one account (staging and prod, or two teams) must not share a
repository name, and ``aws.ecr.ReplicationConfiguration`` is one object per
registry (account and region): a second stack's silently replaces the first's
rules, and destroying either stack deletes both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

RULE = "ecr-per-stack"
REPOSITORY = "aws:ecr/repository:Repository"
REGISTRY_SINGLETONS = ("aws:ecr/replicationConfiguration:ReplicationConfiguration",)


def check(graph: Graph) -> Iterator[Finding]:
    # Without a spec there is no platform name to hold repository names to; the other rules still apply.
    platform = graph.spec.platform.name if graph.spec is not None else None
    repos = graph.of_type(REPOSITORY)
    names = Counter((r.region, str(r.inputs.get("name") or r.name)) for r in repos)
    for repo in repos:
        name = str(repo.inputs.get("name") or "")
        if (
            platform
            and name
            and platform not in name.split("/", maxsplit=1)[0].split("-")
            and not name.startswith(f"{platform}/")
        ):
            yield Finding(
                RULE,
                repo.urn,
                f"repository name {name!r} does not include the platform name {platform!r}: a second stack in "
                "the account would adopt or clash with it",
                f"name it {platform}/{name} (or leave the name to Pulumi's autonaming)",
            )
        if names[(repo.region, name or repo.name)] > 1:
            yield Finding(RULE, repo.urn, f"repository {name!r} is declared twice in one region", "name each once")
    for singleton in REGISTRY_SINGLETONS:
        for resource in graph.of_type(singleton):
            yield Finding(
                RULE,
                resource.urn,
                f"{singleton.rsplit(':', 1)[-1]} is one object per registry: another stack's overwrites these rules, "
                "and destroying either stack removes both",
                "push the image to a repository in each region instead of replicating through the registry",
            )
