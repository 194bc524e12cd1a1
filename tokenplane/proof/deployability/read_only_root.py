"""A container with a read-only root filesystem has a writable volume wherever its image writes.

With ``securityContext.readOnlyRootFilesystem: true`` the container's root is mounted read-only (Kubernetes, "Configure
a Security Context for a Pod or Container"); only its volumes are writable. A process that creates its pid file or
temp directories on the root fails at start (nginx: ``[emerg] mkdir() "/tmp/client_temp" failed (30: Read-only
file system)``), the container restarts in CrashLoopBackOff, the pods never turn Ready and the workload's await
times out.

Judged only for the images whose writes the program knows (``known_images.WRITES``: the official nginx image and
nginx-unprivileged, from their docs) running their own process (no ``command`` or ``args``), and only when no volume
replaces the configuration that decides those paths (``/etc/nginx/nginx.conf``). A written directory is writable
when a volume that is not ``readOnly`` is mounted at it or at a directory above it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.known_images import ALIASES, CONFIGS, writes
from tokenplane.proof.deployability.reachability import pod_template

RULE = "read-only-root"


def _under(path: str, mount: str) -> bool:
    mount = mount.rstrip("/") or "/"
    return mount in ("/", path) or path.startswith(f"{mount}/")


def unwritable(container: dict[str, Any]) -> list[str]:
    """The directories the container's image writes that its read-only root leaves unwritable ([] when none, when
    the root is writable, or when the program does not know the image's writes)."""
    if (container.get("securityContext") or {}).get("readOnlyRootFilesystem") is not True:
        return []
    if container.get("command") or container.get("args"):
        return []  # another process than the image's own: its writes are not known
    written = writes(str(container.get("image") or ""))
    if written is None:
        return []
    mounts = [m for m in container.get("volumeMounts") or [] if isinstance(m, dict) and m.get("mountPath")]
    paths = [str(m["mountPath"]) for m in mounts]
    if any(_under(config, path) for config in CONFIGS.get(written, ()) for path in paths):
        return []  # its configuration is the program's own: the paths it writes may have moved
    writable = [str(m["mountPath"]) for m in mounts if m.get("readOnly") is not True]
    return [
        directory
        for directory in written
        if not any(_under(d, path) for d in (directory, ALIASES.get(directory, directory)) for path in writable)
    ]


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        pod = pod_template(workload).get("spec") or {}
        for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
            missing = unwritable(container)
            if not missing:
                continue
            yield Finding(
                RULE,
                workload.urn,
                f"container {container.get('name')} of {workload.kind} {workload.namespace}/{workload.name} "
                f"({container.get('image')}) has readOnlyRootFilesystem: true, and its image writes to "
                f"{', '.join(missing)} at start, where no writable volume is mounted: the process fails with "
                "'Read-only file system', the container restarts in CrashLoopBackOff and the pods never turn Ready",
                f"mount an emptyDir at {', '.join(missing)} (the image's docs: https://hub.docker.com/_/nginx "
                "'Running nginx in read-only mode', https://github.com/nginxinc/docker-nginx-unprivileged#readme)",
            )
