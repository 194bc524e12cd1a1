"""An image's tag is one its publisher's documented tag scheme makes, for the images whose scheme is known.

A registry cannot be asked offline, but some projects publish every image from one workflow whose tag patterns are
public, so a tag outside them was never pushed: every pull fails (ErrImagePull, then ImagePullBackOff: "manifest
unknown"), no replica becomes ready and Pulumi's await runs out.

Text Embeddings Inference (``ghcr.io/huggingface/text-embeddings-inference``): its README's image table names
``cpu-1.9``, ``turing-1.9``, ``1.9``, ``86-1.9``, ``89-1.9``, ``hopper-1.9`` (and ``-grpc`` variants), and its
``.github/workflows/build.yaml`` tags each hardware's image with docker/metadata-action patterns
``<prefix>{{version}}``, ``<prefix>{{major}}.{{minor}}``, ``<prefix>latest`` and ``<prefix>sha-<commit>`` (each
with ``-grpc`` for the gRPC build; the prefixes, ``cpu-``, ``turing-``, ``86-``, ``hopper-``, ``cuda-`` and others,
come from ``.github/workflows/matrix.json``). metadata-action's ``{{version}}`` is the git tag's version without its
``v`` (the release ``v1.6.0`` is tagged ``1.6.0`` and ``1.6``: https://github.com/docker/metadata-action#typesemver),
so a tag whose version is written ``v1.6`` (``cpu-v1.6``, as on the GitHub release page) does not exist, nor one
naming the major version alone.

Bitnami (``docker.io/bitnami/*``): from August 28th, 2025, over two weeks, Bitnami moved every existing image,
"including older or versioned tags (e.g., 2.50.0, 10.6)", from the public catalogue to ``docker.io/bitnamilegacy``
(no longer updated); what stays free under ``docker.io/bitnami`` is published "only under the 'latest' tag"
(bitnami/containers#83267, "Upcoming changes to the Bitnami catalog"; the maintainers confirm the removal in
bitnami/charts#36599). Versioned tags (``1.67.0-debian-12-r0``, ``16.4.0``) are served to Bitnami Secure Images
subscribers only, from their own registry, so a pull of one from Docker Hub's ``bitnami`` namespace is not found.

It cannot see: images of other publishers (not judged), tags a publisher pushed by hand, tags removed since, a
version that was never released, and a reference pinned by digest (the digest is what is pulled).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.reachability import pod_template

RULE = "image-tag-published"
TEI = "ghcr.io/huggingface/text-embeddings-inference"
# Docker Hub's bitnami namespace, however the reference spells Docker Hub (a bare "bitnami/x" is docker.io's).
BITNAMI = re.compile(r"^(?:(?:docker\.io|index\.docker\.io|registry-1\.docker\.io)/)?bitnami/[^/]+$")
# A hardware prefix (``cpu-``, ``86-``, ``cpu-arm64-``; some early matrix entries had none, or no dash: ``hpu``),
# then a release (X.Y or X.Y.Z, a pre-release on X.Y.Z), latest or a commit, then the gRPC build's suffix.
TEI_TAG = re.compile(
    r"^(?:[a-z0-9]+-)*(?:hpu|ipex)?"
    r"(?:\d+\.\d+|\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?|latest|sha-[0-9a-f]+)"
    r"(?:[-+]grpc)?$"
)
_VERSION_WITH_V = re.compile(r"(?:^|-)v(\d+\.\d+(?:\.\d+)?)")


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        for workload in graph.pod_bearers(region):
            spec = pod_template(workload).get("spec") or {}
            for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
                image = str(container.get("image") or "")
                if "@" in image or ":" not in image.rsplit("/", 1)[-1]:
                    continue  # a digest is pulled as is; no tag is "latest"
                repository, tag = image.rsplit(":", 1)
                if BITNAMI.match(repository) and tag != "latest":
                    yield _bitnami(workload, str(container.get("name")), image, repository, tag)
                    continue
                if repository != TEI or TEI_TAG.match(tag):
                    continue
                written = _VERSION_WITH_V.search(tag)
                hint = (
                    f" (the release is v{written[1]}, but its images are tagged without the v: "
                    f"{tag.replace('v' + written[1], written[1])})"
                    if written
                    else ""
                )
                yield Finding(
                    RULE,
                    workload.urn,
                    f"{workload.kind} {workload.namespace}/{workload.name} (container {container.get('name')}) pulls "
                    f"{image}, a tag Text Embeddings Inference never publishes: its images are tagged "
                    f"<hardware prefix><X.Y or X.Y.Z> (cpu-1.6, 1.6, 86-1.6, 89-1.6, hopper-1.6, turing-1.6){hint}; "
                    "every pull fails (ImagePullBackOff: manifest unknown) and no replica becomes ready",
                    "use a tag from the TEI README's image table, e.g. "
                    + (tag.replace("v" + written[1], written[1]) if written else "cpu-1.6"),
                )


def _bitnami(workload: KubeObject, container: str, image: str, repository: str, tag: str) -> Finding:
    name = repository.rsplit("/", 1)[-1]
    return Finding(
        RULE,
        workload.urn,
        f"{workload.kind} {workload.namespace}/{workload.name} (container {container}) pulls {image}, a versioned "
        "tag Bitnami no longer publishes on Docker Hub: since September 2025 (bitnami/containers#83267) "
        "docker.io/bitnami keeps only 'latest' and its versioned images moved to docker.io/bitnamilegacy "
        "(unmaintained); the pull fails (not found: ImagePullBackOff) and no replica becomes ready",
        f"pull the upstream project's own image, mirror docker.io/bitnamilegacy/{name}:{tag} into your ECR "
        "(frozen, no security updates), or use a Bitnami Secure Images subscription's registry",
    )
