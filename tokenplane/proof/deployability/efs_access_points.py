"""An EFS access point's root directory exists, and its POSIX user may write there (``efs-access-point-root``).

An access point (``aws.efs.AccessPoint``) exposes ``rootDirectory.path`` as the root of every NFS mount made through
it, and makes every request as its ``posixUser``. Two things the API takes without complaint then fail at mount or
write time (EFS user guide, "Creating the root directory for an access point",
https://docs.aws.amazon.com/efs/latest/ug/enforce-root-directory-access-point.html, and
https://docs.aws.amazon.com/efs/latest/ug/API_RootDirectory.html / API_CreationInfo.html):

- **No directory.** "Amazon EFS creates a root directory only if you have provided the CreationInfo: OwnUid, OwnGID,
  and permissions for the directory. If you do not provide this information, Amazon EFS does not create the root
  directory. If the root directory does not exist, attempts to mount using the access point will fail" (the EFS CSI
  driver's mount reports ``access denied by server``). A file system the program creates holds nothing but ``/``,
  so an access point of it rooted elsewhere without ``creationInfo`` fails every mount, unless something of the
  program could make the directory first: another access point of the file system rooted at that path or above it
  (its creation info, or its clients' ``mkdir``), a PersistentVolume that mounts the file system without an access
  point, or an ``efs-ap`` StorageClass on it (the driver's own access points): then it is not judged.
- **A directory its user cannot write.** "When you use an access point, Amazon EFS enforces the POSIX user ... for all
  file system requests made through the access point" (https://docs.aws.amazon.com/efs/latest/ug/enforce-identity-
  access-points.html), and permissions apply as on any POSIX file system: the directory EFS creates from
  ``creationInfo`` (owner ``ownerUid:ownerGid``, mode ``permissions``) lets the POSIX user create files only where
  the mode's class that applies to it (owner if its uid is the owner, else group if its gid or a secondary gid is
  the group, else other) has both write and search (``w`` and ``x``); otherwise every create returns EACCES. Judged
  only where a pod of the program mounts the access point read-write (an ``efs.csi.aws.com`` PersistentVolume whose
  ``volumeHandle`` names it, bound to a claim a pod mounts without ``readOnly``): a read-only share of a
  root-owned directory is a fine design. A POSIX user of uid 0 is not judged (root is not held to the mode bits).

It cannot see: directories made outside the program (an administrator's ``mkdir`` through a root mount), file systems
the program does not create, values unknown at render time, and access points mounted outside the cluster (the
second rule is judged only on a pod's read-write mount).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup, number
from tokenplane.proof.render import RenderedResource

RULE = "efs-access-point-root"
FILE_SYSTEM = "aws:efs/fileSystem:FileSystem"
ACCESS_POINT = "aws:efs/accessPoint:AccessPoint"
EFS_DRIVER = "efs.csi.aws.com"
WRITE, SEARCH = 0o2, 0o1


def check(graph: Graph) -> Iterator[Finding]:
    points = graph.of_type(ACCESS_POINT)
    for point in points:
        fs = _file_system(graph, point)
        path = _path(point)
        if fs is None or path is None or path == "/":
            continue
        if _created_elsewhere(graph, point, fs, path, points):
            continue
        info = lookup(point.inputs, "rootDirectory.creationInfo")
        if info is None:
            yield _never_created(point, fs, path)
        elif isinstance(info, dict):
            yield from _unwritable(graph, point, path, info)


def _file_system(graph: Graph, point: RenderedResource) -> RenderedResource | None:
    found = [r for r in graph.referenced(point, "fileSystemId") if r.type == FILE_SYSTEM]
    return found[0] if len(found) == 1 else None


def _path(point: RenderedResource) -> str | None:
    path = lookup(point.inputs, "rootDirectory.path")
    if path is None and "rootDirectory" not in point.inputs:
        return "/"  # EFS's default root
    if not isinstance(path, str) or not path.startswith("/"):
        return None
    return "/" + "/".join(p for p in path.split("/") if p)


def _covers(outer: str, inner: str) -> bool:
    return outer in ("/", inner) or inner.startswith(outer + "/")


def _handle_names(graph: Graph, pv: KubeObject) -> list[RenderedResource]:
    csi = lookup(pv.manifest, "spec.csi") or {}
    handle = csi.get("volumeHandle") if csi.get("driver") == EFS_DRIVER else None
    return graph.by_physical_ids(handle.split(":")) if isinstance(handle, str) else []


def _created_elsewhere(
    graph: Graph, point: RenderedResource, fs: RenderedResource, path: str, points: list[RenderedResource]
) -> bool:
    """Whether something else of the program could make ``path`` on ``fs`` first."""
    for other in points:
        if other.urn == point.urn or _file_system(graph, other) is not fs:
            continue
        other_path = _path(other)
        if other_path is None or _covers(other_path, path):
            return True
    for pv in graph.kube(None, "PersistentVolume"):
        named = _handle_names(graph, pv)
        if fs in named and not any(r.type == ACCESS_POINT for r in named):
            return True  # the file system's root mounted by a pod, which may mkdir
    for sc in graph.kube(None, "StorageClass"):
        params = sc.manifest.get("parameters") or {}
        if sc.manifest.get("provisioner") == EFS_DRIVER and fs in graph.by_physical_ids(params.get("fileSystemId")):
            return True
    return False


def _never_created(point: RenderedResource, fs: RenderedResource, path: str) -> Finding:
    return Finding(
        RULE,
        point.urn,
        f"every mount through access point {point.name} fails: its root directory {path} does not exist on "
        f"{fs.name}, a file system this program creates (a new file system holds only /), and EFS creates an access "
        "point's root directory only when rootDirectory.creationInfo is given (If you do not provide CreationInfo and "
        "the specified RootDirectory does not exist, attempts to mount the file system using the access point will "
        "fail; the CSI mount reports access denied by server)",
        f"give {point.name} rootDirectory.creationInfo (ownerUid, ownerGid and permissions, e.g. the posixUser's "
        "uid and gid with 750) so that EFS creates the directory on first mount",
    )


def _mode(value: Any) -> int | None:
    if isinstance(value, str) and 3 <= len(value) <= 4 and all(c in "01234567" for c in value):
        return int(value, 8) & 0o777
    return None


def _unwritable(graph: Graph, point: RenderedResource, path: str, info: dict[str, Any]) -> Iterator[Finding]:
    user = point.inputs.get("posixUser")
    if not isinstance(user, dict):
        return
    uid, gid = number(user.get("uid")), number(user.get("gid"))
    owner, group, mode = number(info.get("ownerUid")), number(info.get("ownerGid")), _mode(info.get("permissions"))
    raw_secondary = user.get("secondaryGids") or []
    if not isinstance(raw_secondary, list):
        return
    secondary = [number(g) for g in raw_secondary]
    if mode is None or None in (uid, gid, owner, group) or None in secondary or uid == 0:
        return
    if uid == owner:
        bits, who = (mode >> 6) & 0o7, "its owner"
    elif gid == group or group in secondary:
        bits, who = (mode >> 3) & 0o7, "its group"
    else:
        bits, who = mode & 0o7, "others"
    if bits & WRITE and bits & SEARCH:
        return
    writer = next(_read_write_mounts(graph, point), None)
    if writer is None:
        return
    perms = info.get("permissions")
    yield Finding(
        RULE,
        point.urn,
        f"every write through access point {point.name} fails with EACCES: EFS creates its root directory {path} "
        f"owned by {owner:g}:{group:g} with mode {perms}, and the access point makes every request as its posixUser "
        f"{uid:g}:{gid:g}, to whom the mode gives {who}' bits {_rwx(bits)} (creating a file needs w and x); "
        f"{writer.kind} {writer.namespace}/{writer.name} mounts it read-write",
        f"set {point.name}'s rootDirectory.creationInfo to the posixUser ({uid:g}:{gid:g}) as owner (e.g. 750), "
        "or give the posixUser's class write and search in permissions",
    )


def _rwx(bits: int) -> str:
    return "".join(c if bits & b else "-" for c, b in (("r", 4), ("w", 2), ("x", 1)))


def _read_write_mounts(graph: Graph, point: RenderedResource) -> Iterator[KubeObject]:
    """Pod bearers that mount ``point`` read-write through an EFS CSI PersistentVolume and its bound claim."""
    claims = graph.kube(None, "PersistentVolumeClaim")
    for pv in graph.kube(None, "PersistentVolume"):
        if point not in _handle_names(graph, pv) or lookup(pv.manifest, "spec.csi.readOnly") is True:
            continue
        if set(lookup(pv.manifest, "spec.accessModes") or []) == {"ReadOnlyMany"}:
            continue
        ref = lookup(pv.manifest, "spec.claimRef") or {}
        for claim in claims:
            named = (claim.manifest.get("spec") or {}).get("volumeName") == pv.name
            if not (named or (ref.get("name") == claim.name and ref.get("namespace") == claim.namespace)):
                continue
            for bearer in graph.pod_bearers():
                if bearer.namespace == claim.namespace and _mounts_read_write(bearer, claim.name):
                    yield bearer


def _mounts_read_write(bearer: KubeObject, claim: str) -> bool:
    pod = bearer.pod_spec()
    volumes = [
        v["name"]
        for v in pod.get("volumes") or []
        if (v.get("persistentVolumeClaim") or {}).get("claimName") == claim
        and (v.get("persistentVolumeClaim") or {}).get("readOnly") is not True
    ]
    containers = [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]
    return any(
        m.get("name") in volumes and m.get("readOnly") is not True
        for c in containers
        for m in c.get("volumeMounts") or []
    )
