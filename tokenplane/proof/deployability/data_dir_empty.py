"""A store whose first start needs an empty data directory is not given a fresh filesystem's root as that directory.

``data-dir-empty``: the official PostgreSQL image (``postgres``) runs ``initdb`` on first start, and initdb refuses a
data directory that exists and is not empty (PostgreSQL src/bin/initdb/initdb.c: 'directory "%s" exists but is not
empty', then warn_on_mount_point: 'It contains a lost+found directory, perhaps due to it being a mount point. Using a
mount point directly as the data directory is not recommended. Create a subdirectory under the mount point.').
A new ext2/3/4 filesystem holds ``lost+found`` at its root (mke2fs(8)), and the EBS CSI driver formats a new volume
ext4 unless the class's ``csi.storage.k8s.io/fstype`` (or ``fsType``) says otherwise
(https://github.com/kubernetes-sigs/aws-ebs-csi-driver/blob/master/docs/parameters.md). So a PGDATA that is exactly the
mount point of a claim on such a class makes the first start fail, the pod crash-loop, and the workload never become
ready: Pulumi times out waiting for it. The image's docs say so and give the fix
(https://hub.docker.com/_/postgres, "PGDATA": "if the data volume you're using is a filesystem mountpoint (like with
GCE persistent disks), or remote folder that cannot be chowned to the postgres user (like some NFS mounts), or
contains folders/files (e.g. lost+found), Postgres initdb requires a subdirectory to be created within the
mountpoint to contain the data"; docker-library/docs postgres/content.md).

The data directory is ``PGDATA`` written in the container's env, else the image's default for its tag's major
version: ``/var/lib/postgresql/data`` before 18, ``/var/lib/postgresql/MAJOR/docker`` from 18
(https://github.com/docker-library/postgres/pull/1259). Not judged: a tag whose major version the program does not
say (``latest``, a digest), a PGDATA set from a Secret, ConfigMap or envFrom, a replaced entrypoint (``command``),
other images (bitnami's ``postgresql`` keeps its data in ``/bitnami/postgresql/data``, a subdirectory of its mount),
a subPath mount (the kubelet creates that directory empty), an emptyDir (empty at start), a claim restored from a
snapshot or another claim (``dataSource``), a pod whose init containers mount the same volume (they may prepare it),
and a claim on a class the program does not make or on a provisioner other than EBS's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.known_images import image_name, literal_env

RULE = "data-dir-empty"
EBS = frozenset({"ebs.csi.aws.com", "kubernetes.io/aws-ebs"})
EKS_SHIPPED = {"gp2": {"provisioner": "kubernetes.io/aws-ebs"}}  # EKS's gp2 class: in-tree EBS, ext4
LOST_FOUND_FS = frozenset({"ext2", "ext3", "ext4"})  # mke2fs makes lost+found; xfs does not
DEFAULT_FS = "ext4"  # the EBS CSI driver's default fstype
MODERN_LAYOUT = 18  # the first major whose image keeps PGDATA in /var/lib/postgresql/MAJOR/docker
POSTGRES_TAG = re.compile(r"^(\d+)(?:[.-]|$)")


def postgres_data_dir(container: Mapping[str, Any]) -> str | None:
    """The data directory of an official ``postgres`` container, or None where the program does not say it."""
    image = str(container.get("image") or "")
    if image_name(image) != "postgres" or container.get("command") or container.get("envFrom"):
        return None
    if any(isinstance(e, dict) and e.get("name") == "PGDATA" for e in container.get("env") or []):
        return literal_env(dict(container)).get("PGDATA")
    tail = image.rsplit("/", 1)[-1]
    tag = tail.split("@", 1)[0].split(":", 1)[1] if ":" in tail.split("@", 1)[0] else ""
    major = POSTGRES_TAG.match(tag)
    if major is None:
        return None
    version = int(major.group(1))
    return f"/var/lib/postgresql/{version}/docker" if version >= MODERN_LAYOUT else "/var/lib/postgresql/data"


def _classes(graph: Graph, region: str | None) -> dict[str, Mapping[str, Any]]:
    classes: dict[str, Mapping[str, Any]] = dict(EKS_SHIPPED)
    classes.update({c.name: c.manifest for c in graph.kube(region, "StorageClass")})
    return classes


def _filesystem(klass: Mapping[str, Any]) -> str | None:
    """The filesystem a new volume of an EBS class is formatted with; None for another provisioner."""
    if klass.get("provisioner") not in EBS:
        return None
    parameters = klass.get("parameters") or {}
    chosen = parameters.get("csi.storage.k8s.io/fstype") or parameters.get("fsType") or parameters.get("fstype")
    return str(chosen or DEFAULT_FS).lower()


def _claim(graph: Graph, workload: KubeObject, volume: str, spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The claim spec behind pod volume ``volume``: a volumeClaimTemplate of a StatefulSet or a named PVC."""
    declared = {str(v.get("name")): v for v in spec.get("volumes") or [] if isinstance(v, dict)}
    if volume in declared:
        name = lookup(declared[volume], "persistentVolumeClaim.claimName")
        for pvc in graph.kube(workload.resource.region, "PersistentVolumeClaim"):
            if name and pvc.name == name and pvc.namespace == workload.namespace:
                return pvc.manifest.get("spec") or {}
        return None
    if workload.kind == "StatefulSet":
        for template in lookup(workload.manifest, "spec.volumeClaimTemplates") or []:
            if lookup(template, "metadata.name") == volume:
                return template.get("spec") or {}
    return None


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        spec = workload.pod_template().get("spec") or {}
        prepared = {str(m.get("name")) for c in spec.get("initContainers") or [] for m in c.get("volumeMounts") or []}
        for container in spec.get("containers") or []:
            directory = postgres_data_dir(container)
            if directory is None:
                continue
            for mount in container.get("volumeMounts") or []:
                path = str(mount.get("mountPath") or "").rstrip("/")
                volume = str(mount.get("name"))
                if path != directory.rstrip("/") or mount.get("subPath") or mount.get("subPathExpr"):
                    continue
                if volume in prepared:
                    continue
                yield from _judge(graph, workload, container, volume, directory, spec)


def _judge(
    graph: Graph, workload: KubeObject, container: Mapping[str, Any], volume: str, directory: str, spec: Any
) -> Iterator[Finding]:
    claim = _claim(graph, workload, volume, spec)
    if claim is None or claim.get("dataSource") or claim.get("dataSourceRef") or claim.get("volumeMode") == "Block":
        return
    class_name = claim.get("storageClassName")
    klass = _classes(graph, workload.resource.region).get(str(class_name)) if class_name else None
    filesystem = _filesystem(klass) if klass is not None else None
    if filesystem not in LOST_FOUND_FS:
        return
    yield Finding(
        RULE,
        workload.urn,
        f"container {container.get('name')} of {workload.kind} {workload.namespace}/{workload.name} runs PostgreSQL "
        f"({container.get('image')}) with its data directory (PGDATA) {directory} exactly at the mount point of "
        f"volume {volume}, a claim on StorageClass {class_name!r} whose new volumes are formatted {filesystem} with "
        "lost+found at the root: initdb refuses a non-empty data directory, so the first start fails, the pod "
        "crash-loops and the workload never becomes ready",
        f"set PGDATA to a subdirectory of the mount (env PGDATA={directory.rstrip('/')}/pgdata), or mount the "
        "volume with a subPath",
    )
