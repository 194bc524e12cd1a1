"""No volume hides the files an image runs from.

A volume mounted at a directory replaces what the image has there (Kubernetes, "Volumes": "Volumes mount at the
specified paths within the image"; the image's files below the mount point are not visible). An emptyDir or
ConfigMap mounted at or above the directory holding the container's program, its interpreter or libraries leaves
the runtime nothing to exec: ``exec: "./entrypoint.sh": stat ./entrypoint.sh: no such file or directory``
(runc, the container's StartError), and the pod restarts in CrashLoopBackOff.

Judged, for every container, against the directories every Linux image runs from (``image_files.SYSTEM_DIRS``)
and the directory of an absolute or ``./`` program in ``command``; for the images the program knows
(``image_files``), also their own program directories (qdrant's ``/qdrant``, the serving image's Python). A volume
that an init container writes first (the copy-a-binary pattern) brings the files, and is not judged; nor is the
program's own directory where the mounted ConfigMap, Secret or projected volume holds the program itself (a script
run from a ConfigMap: ``command: [/scripts/run.sh]`` with the ConfigMap's ``run.sh`` mounted at ``/scripts``).

The same holds for the configuration a known image's process reads at start (``known_images.CONFIG_FILES``): the
nginx images' nginx reads ``/etc/nginx/nginx.conf`` (unless ``-c``/``-p`` say otherwise), which includes the image's
``mime.types``. A volume mounted at ``/etc/nginx`` (or above) that does not itself hold ``nginx.conf`` hides it:
a ConfigMap or Secret volume holds exactly its keys (or its ``items``' paths), an emptyDir nothing
(https://kubernetes.io/docs/concepts/storage/volumes/#configmap), and nginx exits at start with ``[emerg] open()
"/etc/nginx/nginx.conf" failed (2: No such file or directory)``: CrashLoopBackOff. A ``subPath`` mount (one file),
a volume an init container fills, or an object outside the program (its keys unknown) is not judged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.image_commands import nginx_options
from tokenplane.proof.deployability.image_files import SYSTEM_DIRS, files, under
from tokenplane.proof.deployability.known_images import config_files
from tokenplane.proof.deployability.reachability import pod_template

RULE = "mount-hides-image"


def program_path(container: dict[str, Any]) -> str | None:
    """The absolute path of the program the container runs, where its ``command`` (or its known image's entrypoint)
    names one by an absolute or relative path; None for a bare name (found on ``PATH``, under the system dirs)."""
    image = files(str(container.get("image") or ""))
    command = [str(c) for c in container.get("command") or []]
    program = command[0] if command else None
    if program is None and image is not None and image.entrypoint:
        program = image.entrypoint[0]
    if program is None or "/" not in program:
        return None
    if program.startswith("/"):
        return program
    workdir = str(container.get("workingDir") or (image.workdir if image is not None else "") or "")
    # ./entrypoint.sh: found from the working directory (the image's WORKDIR without one)
    return workdir.rstrip("/") + "/" + program.removeprefix("./") if workdir else None


def needed_dirs(container: dict[str, Any]) -> list[str]:
    """The directories whose files the container's process needs from its image."""
    image = files(str(container.get("image") or ""))
    dirs = [*SYSTEM_DIRS, *(image.own_dirs if image is not None else ())]
    program = program_path(container)
    if program is not None:
        dirs.append(program.rsplit("/", 1)[0] or "/")
    return dirs


def _volume_keys(graph: Graph, namespace: str, source: dict[str, Any], kind: str) -> set[str] | None:
    """The file names a ConfigMap or Secret volume source (or projection) puts in its directory; None: not known
    (an object outside the program, which the reference rules judge)."""
    if source.get("items"):
        return {str(item.get("path")) for item in source["items"] if isinstance(item, dict)}
    name = str(source.get("name") or source.get("secretName") or "")
    for obj in graph.kube(None, kind):
        if obj.name == name and obj.namespace == namespace:
            return {str(k) for field in ("data", "binaryData", "stringData") for k in obj.manifest.get(field) or {}}
    return None


def brings(graph: Graph, namespace: str, volume: dict[str, Any], relative: str) -> bool:
    """Whether ``volume`` itself holds the file ``relative`` to its mount point (or may: an object it names that
    the program does not declare)."""
    sources = [(volume.get("configMap"), "ConfigMap"), (volume.get("secret"), "Secret")]
    for projection in lookup(volume, "projected.sources") or []:
        sources += [(projection.get("configMap"), "ConfigMap"), (projection.get("secret"), "Secret")]
    for source, kind in sources:
        if isinstance(source, dict):
            keys = _volume_keys(graph, namespace, source, kind)
            if keys is None or relative in keys:
                return True
    return False


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
            yield from _hidden_config(graph, workload, pod, container, filled)
            needed = needed_dirs(container)
            for mount in container.get("volumeMounts") or []:
                path = str(mount.get("mountPath") or "")
                if not path or mount.get("subPath") or str(mount.get("name")) in filled:
                    continue
                hidden = [d for d in needed if under(d, path)]
                program = program_path(container)
                if program is not None and under(program, path):
                    volume: dict[str, Any] = next(
                        (v for v in pod.get("volumes") or [] if v.get("name") == mount.get("name")), {}
                    )
                    if brings(graph, workload.namespace, volume, program[len(path.rstrip("/")) + 1 :]):
                        hidden = [d for d in hidden if d != program.rsplit("/", 1)[0]]
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


def _hidden_config(
    graph: Graph, workload: KubeObject, pod: dict[str, Any], container: dict[str, Any], filled: set[str]
) -> Iterator[Finding]:
    """A volume over the directory of the config file a known image's process reads, which does not hold it."""
    image = str(container.get("image") or "")
    config = config_files(image)
    options = nginx_options(container)
    if config is None or options is None or options.keys() & {"c", "p"}:
        return
    conf, includes = config
    for mount in container.get("volumeMounts") or []:
        path = str(mount.get("mountPath") or "").rstrip("/") or "/"
        if not mount.get("mountPath") or mount.get("subPath") or str(mount.get("name")) in filled:
            continue
        if path == conf or not under(conf, path):
            continue
        volume: dict[str, Any] = next((v for v in pod.get("volumes") or [] if v.get("name") == mount.get("name")), {})
        if brings(graph, workload.namespace, volume, conf[len(path.rstrip("/")) + 1 :]):
            continue
        also = [
            f
            for f in includes
            if under(f, path) and not brings(graph, workload.namespace, volume, f[len(path.rstrip("/")) + 1 :])
        ]
        hidden = ", ".join([conf, *also])
        yield Finding(
            RULE,
            workload.urn,
            f"container {container.get('name')} of {workload.kind} {workload.namespace}/{workload.name} ({image}) "
            f"mounts volume {mount.get('name')} at {path}, which hides the image's {hidden} and does not hold "
            f'{conf.rsplit("/", 1)[-1]} itself: nginx exits at start with [emerg] open() "{conf}" failed (2: No '
            "such file or directory), the container restarts in CrashLoopBackOff and the workload never becomes "
            "available (Pulumi's await times out)",
            f"mount the volume at a directory the image's {conf.rsplit('/', 1)[-1]} includes (e.g. "
            f"{conf.rsplit('/', 1)[0]}/conf.d for server blocks), or mount single files with subPath",
        )
