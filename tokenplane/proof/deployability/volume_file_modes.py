"""Every file a container is given from a Secret, ConfigMap or projected volume, it can read (and run, if it is
the container's command).

The kubelet writes such a volume's files owned by root, group root, with the volume's ``defaultMode`` (the API
server's default 0644) or an item's own ``mode``
(https://kubernetes.io/docs/concepts/configuration/secret/#secret-files-permissions). Only when the pod sets
``securityContext.fsGroup`` does it then give the files that group and OR in 0440 (pkg/volume/volume_linux.go
``SetVolumeOwnership``, read-only mask; kubernetes/kubernetes#57923: "defaultMode: 256 ... results in files with
0440"), and it adds the group to every container's process. So, with no fsGroup, a process whose user is not 0
reads the file through its group bits only if it runs with group 0 (``runAsGroup``/``supplementalGroups``), else
through its other bits: ``defaultMode: 0400`` (or 0600, 0440) leaves uid 101 with ``Permission denied``. The pod
is Ready (a probe rarely reads the file) and the application fails at its first use of it: nginx answers 500 on
every request behind ``auth_basic_user_file``, a TLS server cannot load its key. A script run from such a volume
also needs an execute bit its process has (``exec: permission denied``, the container never starts).

``mounted-file-readable``: the process's user is the container's ``runAsUser``, else the pod's, else the image's
USER where ``known_images`` knows it (unknown: not judged); its group ``runAsGroup`` likewise, else the image's;
with the group unknown, either the group or the other bits are taken to suffice. A root process reads anything
(CAP_DAC_OVERRIDE) unless it drops ALL capabilities, when the owner bits apply. Not judged: downwardAPI and
service-account token projections, and objects outside the program (their keys are not known: the mode of the
volume is judged all the same).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.image_files import under
from tokenplane.proof.deployability.image_mounts import program_path
from tokenplane.proof.deployability.process_identity import identity, numeric

RULE = "mounted-file-readable"
DEFAULT_MODE = (
    0o644  # SecretVolumeSourceDefaultMode, ConfigMapVolumeSourceDefaultMode, ProjectedVolumeSourceDefaultMode
)
READ, EXEC = 4, 1


def _files(volume: dict[str, Any]) -> list[tuple[str | None, int]] | None:
    """(path in the volume, mode) of each file the volume declares a mode for; path None: every other key of the
    object, at the default mode. None: not a Secret, ConfigMap or projected volume."""
    sources: list[dict[str, Any]] = []
    default: Any
    if isinstance(volume.get("secret"), dict) or isinstance(volume.get("configMap"), dict):
        source = volume.get("secret") or volume.get("configMap") or {}
        sources, default = [source], source.get("defaultMode", DEFAULT_MODE)
    elif isinstance(volume.get("projected"), dict):
        default = lookup(volume, "projected.defaultMode") or DEFAULT_MODE
        for projection in lookup(volume, "projected.sources") or []:
            for field in ("secret", "configMap"):
                if isinstance(projection, dict) and isinstance(projection.get(field), dict):
                    sources.append(projection[field])
    else:
        return None
    if not isinstance(default, int):
        return []
    out: list[tuple[str | None, int]] = []
    for source in sources:
        items = [i for i in source.get("items") or [] if isinstance(i, dict)]
        for item in items:
            mode = item.get("mode", default)
            if isinstance(mode, int):
                out.append((str(item.get("path")), mode))
        if not items:
            out.append((None, default))
    return out


def _allowed(mode: int, want: int, user: int, groups: set[int | None], file_group: int, drops_all: bool) -> bool:
    """Whether a process of ``user`` with ``groups`` (None: a group not known) may ``want`` a file of root and
    ``file_group`` with ``mode``."""
    if user == 0:
        if not drops_all:
            return want != EXEC or bool(mode & 0o111)
        return bool((mode >> 6) & want)
    group_bits, other_bits = bool((mode >> 3) & want), bool(mode & want)
    if file_group in groups:
        return group_bits
    if None in groups:
        return group_bits or other_bits
    return other_bits


def _drops_all(container: dict[str, Any]) -> bool:
    caps = lookup(container, "securityContext.capabilities") or {}
    dropped = {str(c).upper() for c in caps.get("drop") or []}
    added = {str(c).upper() for c in caps.get("add") or []}
    return "ALL" in dropped and not added & {"DAC_OVERRIDE", "DAC_READ_SEARCH", "ALL"}


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        pod = workload.pod_spec()
        fs_group = numeric(lookup(pod, "securityContext.fsGroup"))
        supplemental = {
            g for g in map(numeric, lookup(pod, "securityContext.supplementalGroups") or []) if g is not None
        }
        volumes = {str(v.get("name")): v for v in pod.get("volumes") or [] if isinstance(v, dict)}
        for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
            user, group = identity(pod, container)
            if user is None:
                continue
            groups: set[int | None] = {group, *supplemental, *([fs_group] if fs_group is not None else [])}
            program = program_path(container)
            for mount in container.get("volumeMounts") or []:
                volume = volumes.get(str(mount.get("name")))
                files = _files(volume) if volume is not None else None
                if not files:
                    continue
                yield from _judge(workload, container, mount, files, user, groups, fs_group, program)


def _judge(
    workload: KubeObject,
    container: dict[str, Any],
    mount: dict[str, Any],
    files: list[tuple[str | None, int]],
    user: int,
    groups: set[int | None],
    fs_group: int | None,
    program: str | None,
) -> Iterator[Finding]:
    path = str(mount.get("mountPath") or "").rstrip("/")
    sub_path = mount.get("subPath")
    if sub_path:
        named = [(p, m) for p, m in files if p == sub_path]
        files = named or [(sub_path, m) for p, m in files if p is None]
    file_group = fs_group if fs_group is not None else 0
    drops_all = _drops_all(container)
    for relative, declared in files:
        mode = declared | 0o440 if fs_group is not None else declared
        shown = path if sub_path else f"{path}/{relative}" if relative else f"{path}/*"
        wants = [(READ, "read")]
        if program is not None and (program == shown or (not sub_path and relative is None and under(program, path))):
            wants.append((EXEC, "execute"))
        for want, verb in wants:
            if _allowed(mode, want, user, groups, file_group, drops_all):
                continue
            owner = f"root:{file_group}" if fs_group is not None else "root:root (the pod sets no fsGroup)"
            yield Finding(
                RULE,
                workload.urn,
                f"{workload.kind} {workload.namespace}/{workload.name} container {container.get('name')} runs as "
                f"user {user} and is given {shown} from volume {mount.get('name')} with mode {declared:04o}, owned "
                f"by {owner}: the process cannot {verb} it (Permission denied), so it fails at the file's first use "
                "while its pods may still report Ready",
                f"give the pod a securityContext.fsGroup the process has (the kubelet then makes the files "
                f"group-readable by it), or a mode whose bits let user {user} {verb} it (e.g. defaultMode: "
                f"{'0555' if want == EXEC else '0444'})",
            )
