"""A container that must not run as root runs as a user the kubelet can verify is not root.

The kubelet checks ``runAsNonRoot`` before it starts a container (``pkg/kubelet/kuberuntime``,
``verifyRunAsNonRoot``), from the effective security context (the container's fields over the pod's):

- ``runAsUser: 0``: "container's runAsUser breaks non-root policy";
- no ``runAsUser``, and the image's USER is root (or unset): "container has runAsNonRoot and image will run as
  root";
- no ``runAsUser``, and the image's USER is a name: "container has runAsNonRoot and image has non-numeric user
  (NAME), cannot verify user is non-root".

Each leaves the pod in ``CreateContainerConfigError`` for ever. The first needs no image; the others are judged
for the images whose USER the program knows (``image_files``: ours is 10001, vLLM's is root, and a few
well-known third-party images': the official library images set none, Prometheus' is ``nobody``, the AWS CLI
image's Dockerfile (aws/aws-cli, ``docker/Dockerfile``) sets none, so it runs as root).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.image_files import files
from tokenplane.proof.deployability.process_identity import effective
from tokenplane.proof.deployability.reachability import pod_template

RULE = "run-as-user"


def refusal(pod: dict[str, Any], container: dict[str, Any]) -> str | None:
    """The kubelet's error for this container, or None if it starts (or the image's user is not known)."""
    if effective(pod, container, "runAsNonRoot") is not True:
        return None
    user = effective(pod, container, "runAsUser")
    if user is not None:
        return "container's runAsUser breaks non-root policy" if str(user) == "0" else None
    image = files(str(container.get("image") or ""))  # ours, vLLM's, or a well-known third party's
    if image is None or image.user is None:
        return None
    name = image.user.split(":", 1)[0]
    if name in ("", "0", "root"):
        return "container has runAsNonRoot and image will run as root"
    if not name.isdigit():
        return f"container has runAsNonRoot and image has non-numeric user ({name}), cannot verify user is non-root"
    return None


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        pod = pod_template(workload).get("spec") or {}
        for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
            error = refusal(pod, container)
            if error is None:
                continue
            yield Finding(
                RULE,
                workload.urn,
                f"container {container.get('name')} of {workload.kind} {workload.namespace}/{workload.name} "
                f'({container.get("image")}) has runAsNonRoot: true, and the kubelet refuses to start it: "{error}"; '
                "the pod stays in CreateContainerConfigError",
                "set a numeric non-zero runAsUser (and runAsGroup) in the pod's or container's securityContext "
                "(components/vllm_pool.py runs vLLM as 10001, with HOME and its caches on emptyDirs)",
            )
