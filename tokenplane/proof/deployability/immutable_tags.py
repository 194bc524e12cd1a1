"""An image the program builds and pushes to an IMMUTABLE ECR repository is pushed under a tag that changes with it.

ECR refuses a push that would move a tag of an immutable repository to another image: ``tag invalid: The image tag
'<tag>' already exists in the '<repository>' repository and cannot be overwritten because the repository is
immutable`` (ImageTagAlreadyExistsException; https://docs.aws.amazon.com/AmazonECR/latest/userguide/image-tag-mutability.html).
A ``docker-build`` Image with ``push`` (or a ``docker`` Image, which pushes its ``imageName``) rebuilds and pushes
whenever its context changes, so a fixed tag (``serving``, ``latest``, ``prod``) is pushed once: the first
``pulumi up`` succeeds, and the first one after any change to the image's sources fails at the push, so no fix to the
image can ship. ``IMMUTABLE_WITH_EXCLUSION`` exempts the tags its ``imageTagMutabilityExclusionFilters`` match;
``MUTABLE_WITH_EXCLUSION`` makes only those immutable (wildcard filters, ``*`` for any run of characters).

Only tags that cannot carry anything derived from the image are judged: a tag with no digit at all (a digest, a hash
of the sources, a version, a date or a build number all bring one). It cannot see: a tag the program changes by hand
with each change of the sources (a version without a digit), repositories the program does not create, and pushes
from outside the program.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.images import BUILD, ECR, REPOSITORY
from tokenplane.proof.render import RenderedResource

RULE = "immutable-tag-moves"
DOCKER_IMAGE = "docker:index/image:Image"
FIXED_TAG = re.compile(r"^[A-Za-z._-]+$")  # no digit: nothing of the image's content or version in it


def check(graph: Graph) -> Iterator[Finding]:
    repositories: dict[tuple[str, str | None], RenderedResource] = {}
    for made in graph.of_type(REPOSITORY):
        repositories[(str(made.inputs.get("name") or ""), graph.cloud_region(made.region))] = made
    for image, reference in _pushes(graph):
        match = ECR.match(reference)
        if match is None or match["digest"] or not match["tag"]:
            continue
        tag = match["tag"]
        repo = repositories.get((match["name"], match["region"])) or repositories.get((match["name"], None))
        if repo is None or not FIXED_TAG.match(tag) or not _immutable(repo, tag):
            continue
        yield Finding(
            RULE,
            image.urn,
            f"{image.name} pushes {match['name']}:{tag} to repository {repo.name}, whose tags are immutable "
            f"(imageTagMutability {repo.inputs.get('imageTagMutability')}), under a fixed tag: the first push "
            "succeeds, but the next pulumi up after any change to the image's sources rebuilds it and ECR refuses "
            f"the push (ImageTagAlreadyExistsException: the image tag '{tag}' already exists and cannot be "
            "overwritten because the repository is immutable), so no change to the image can ship",
            f"tag the image with something derived from its content (a hash of its sources, a version bumped with "
            f"them), or make {repo.name} MUTABLE (or exclude the tag with IMMUTABLE_WITH_EXCLUSION) and pin the "
            "pushed digest where it is pulled",
        )


def _pushes(graph: Graph) -> Iterator[tuple[RenderedResource, str]]:
    """Each image reference a build of the program pushes."""
    for build in graph.of_type(BUILD):
        if build.inputs.get("push") is True:
            for tag in build.inputs.get("tags") or []:
                yield build, str(tag)
    for image in graph.of_type(DOCKER_IMAGE):
        if image.inputs.get("skipPush") is not True and image.inputs.get("imageName"):
            yield image, str(image.inputs["imageName"])


def _immutable(repo: RenderedResource, tag: str) -> bool:
    mutability = repo.inputs.get("imageTagMutability")
    filters = [
        str(f.get("filter") or "")
        for f in repo.inputs.get("imageTagMutabilityExclusionFilters") or []
        if isinstance(f, dict)
    ]
    excluded = any(re.fullmatch(".*".join(map(re.escape, f.split("*"))), tag) for f in filters if f)
    if mutability == "IMMUTABLE":
        return True
    if mutability == "IMMUTABLE_WITH_EXCLUSION":
        return bool(filters) and not excluded
    if mutability == "MUTABLE_WITH_EXCLUSION":
        return excluded
    return False
