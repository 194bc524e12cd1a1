"""Every image a pod pulls from the program's own registry is pushed there, before the pod is sent.

An image in an ECR repository the program creates (``<account>.dkr.ecr.<region>.amazonaws.com/<name>``) exists
only if the program pushes it: a ``docker-build`` Image with ``push`` whose tags hold that reference (a digest
reference is the build's own output, so it names what was pushed). The repository must exist in the region the
reference names (ECR is regional), and the workload must wait for the push: applied first, its pods sit in
ImagePullBackOff until Pulumi's await runs out.

A container with ``imagePullPolicy: Never`` never pulls at all: on a node that does not already hold the image (every
EKS node the program makes, from an AMI) the pod fails with ErrImageNeverPull.

It cannot see: repositories the program does not create (a prerequisite, or another stack's), public registries,
and pull-through caches.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.reachability import pod_template
from tokenplane.proof.render import RenderedResource

RULE = "image-published"
REPOSITORY = "aws:ecr/repository:Repository"
BUILD = "docker-build:index:Image"
ECR = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com/(?P<name>[^:@]+)"
    r"(?::(?P<tag>[^@]+))?(?:@(?P<digest>sha256:[0-9a-f]+))?$"
)


def check(graph: Graph) -> Iterator[Finding]:
    repositories: dict[str, dict[str | None, RenderedResource]] = {}
    for made in graph.of_type(REPOSITORY):
        repositories.setdefault(str(made.inputs.get("name") or ""), {})[graph.cloud_region(made.region)] = made
    pushes = [b for b in graph.of_type(BUILD) if b.inputs.get("push") is True]
    for region in graph.regions():
        for workload in graph.pod_bearers(region):
            spec = pod_template(workload).get("spec") or {}
            for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
                image = str(container.get("image") or "")
                if container.get("imagePullPolicy") == "Never":
                    yield Finding(
                        RULE,
                        workload.urn,
                        f"{workload.kind} {workload.namespace}/{workload.name} (container {container.get('name')}) "
                        f"pulls {image} with imagePullPolicy Never: the kubelet only starts an image already on the "
                        "node, and EKS nodes (an AMI, a fresh instance on every scale-up) hold none of the program's, so "
                        "the pod fails with ErrImageNeverPull",
                        "drop imagePullPolicy (IfNotPresent is the default for a tag or digest), or set IfNotPresent",
                    )
                match = ECR.match(image)
                if match is None or match["name"] not in repositories:
                    continue  # not the program's registry: a prerequisite or a public image
                what = f"{workload.kind} {workload.namespace}/{workload.name} (container {container.get('name')})"
                # A repository whose region the render cannot tell (a program without a spec) may be the one.
                repo = repositories[match["name"]].get(match["region"]) or repositories[match["name"]].get(None)
                if repo is None:
                    regions = ", ".join(sorted(str(r) for r in repositories[match["name"]]))
                    yield Finding(
                        RULE,
                        workload.urn,
                        f"{what} pulls {image}, but the program creates repository {match['name']} only in {regions}, "
                        f"not in {match['region']}: the pull fails",
                        f"create the repository in {match['region']} (and push there), or pull from the region "
                        "that has it",
                    )
                    continue
                reference = f"{image.split('@', 1)[0]}" if match["tag"] else None
                builds = [
                    b
                    for b in pushes
                    if any(
                        str(t) == reference or (reference is None and str(t).split(":", 1)[0] == image.split("@", 1)[0])
                        for t in b.inputs.get("tags") or []
                    )
                ]
                if not builds:
                    yield Finding(
                        RULE,
                        workload.urn,
                        f"{what} pulls {image} from the program's repository {repo.name}, but nothing the program "
                        "builds pushes that reference: the pods never pull an image (ImagePullBackOff)",
                        "push that tag with a docker-build Image (push=True) whose tags hold it, or pull a tag "
                        "that is pushed",
                    )
                    continue
                if not {b.urn for b in builds} & graph.waits_for(workload.urn):
                    yield Finding(
                        RULE,
                        workload.urn,
                        f"{what} pulls {image}, which {builds[0].name} pushes, but does not wait for the push: on a "
                        "first run its pods sit in ImagePullBackOff until the await runs out",
                        f"take the image reference from {builds[0].name}'s output (its ref or digest), or add "
                        "depends_on on it",
                    )
