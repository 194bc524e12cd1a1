"""No volume hides the files an image runs from.

A volume mounted at a directory replaces what the image has there (Kubernetes, "Volumes": "Volumes mount at the
specified paths within the image"; the image's files below the mount point are not visible). An emptyDir or
ConfigMap mounted at or above the directory holding the container's program, its interpreter or libraries leaves
the runtime nothing to exec: ``exec: "./entrypoint.sh": stat ./entrypoint.sh: no such file or directory``
(runc, the container's StartError), and the pod restarts in CrashLoopBackOff.

Judged, for every container, against the directories every Linux image runs from (``image_files.SYSTEM_DIRS``)
and the directory of an absolute or ``./`` program in ``command``; for the images the program knows
(``image_files``), also their own program directories (qdrant's ``/qdrant``, the serving image's Python). A volume
that an init container writes first (the copy-a-binary pattern) brings the files, and is not judged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.image_files import SYSTEM_DIRS, files, under
from tokenplane.proof.deployability.reachability import pod_template

RULE = "mount-hides-image"


def needed_dirs(container: dict[str, Any]) -> list[str]:
    """The directories whose files the container's process needs from its image."""
    image = files(str(container.get("image") or ""))
    dirs = [*SYSTEM_DIRS, *(image.own_dirs if image is not None else ())]
    command = [str(c) for c in container.get("command") or []]
    program = command[0] if command else None
    if program is None and image is not None and image.entrypoint:
        program = image.entrypoint[0]
    if program is not None and "/" in program:
        workdir = str(container.get("workingDir") or (image.workdir if image is not None else "") or "")
        if program.startswith("/"):
            dirs.append(program.rsplit("/", 1)[0] or "/")
        elif workdir:  # ./entrypoint.sh: found from the working directory (the image's WORKDIR without one)
            relative = program.removeprefix("./").rsplit("/", 1)
            dirs.append(workdir.rstrip("/") + ("/" + relative[0] if len(relative) == 2 else ""))
    return dirs


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        pod = pod_template(workload).get("spec") or {}
        filled = {
            str(m.get("name"))
            for init in pod.get("initContainers") or []
            for m in init.get("volumeMounts") or []
            if not m.get("readOnly")
        }
        for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
            needed = needed_dirs(container)
            for mount in container.get("volumeMounts") or []:
                path = str(mount.get("mountPath") or "")
                if not path or mount.get("subPath") or str(mount.get("name")) in filled:
                    continue
                hidden = [d for d in needed if under(d, path)]
                if not hidden:
                    continue
                yield Finding(
                    RULE,
                    workload.urn,
                    f"container {container.get('name')} of {workload.kind} {workload.namespace}/{workload.name} "
                    f"({container.get('image')}) mounts volume {mount.get('name')} at {path}, which hides the "
                    f"image's own {', '.join(sorted(set(hidden)))}: the runtime finds no program to exec ('no such "
                    "file or directory'), the container never starts and restarts in CrashLoopBackOff",
                    f"mount the volume below the image's files (e.g. {path.rstrip('/')}/data), or mount single "
                    "files with subPath",
                )
