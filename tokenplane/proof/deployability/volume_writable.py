"""A container that runs as a non-root user can write the EBS volume it mounts read-write.

The EBS CSI driver formats a new volume (ext4 by default) and mounts it with its root directory owned by
``root:root``, mode 0755: only root can create files there. The kubelet changes that only when the pod sets
``securityContext.fsGroup``: it then makes the volume's files group-owned by that group and group-writable, and
adds the group to every container's process (the driver's CSIDriver object declares
``fsGroupPolicy: ReadWriteOnceWithFSType``, https://github.com/kubernetes-sigs/aws-ebs-csi-driver, and
https://kubernetes.io/docs/tasks/configure-pod-container/security-context/#set-the-security-context-for-a-pod).
``runAsGroup`` and ``supplementalGroups`` do not change the volume's ownership. So a container whose user is not 0
(``runAsUser`` on the container or the pod, else the image's USER where the program knows it) that mounts such a
volume without ``readOnly``, in a pod with no ``fsGroup``, fails its first write (``Permission denied``) and
crash-loops: Qdrant, ClickHouse, Postgres and the like never become Ready.

The volumes read: a StatefulSet's ``volumeClaimTemplates`` and ``persistentVolumeClaim`` volumes whose claim the
program creates, on a StorageClass whose provisioner is EBS's (``access_modes.EBS``; EKS's shipped ``gp2``
included). It cannot see: claims on classes the program does not create, images whose user it does not know (a
container without ``runAsUser``: passed), an init container that prepares the volume (one that mounts it and runs
as root is taken to do so), and images whose entrypoint changes the owner itself while still root.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability import access_modes
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.process_identity import identity
from tokenplane.proof.deployability.reachability import pod_template

RULE = "volume-writable"


def _ebs_volumes(graph: Graph, obj: KubeObject, pod: dict[str, Any], provisioners: dict[str, str]) -> dict[str, str]:
    """The pod's volumes that are EBS claims, by volume name, with the StorageClass they ask for."""

    def ebs(spec: dict[str, Any]) -> str | None:
        name = spec.get("storageClassName")
        return str(name) if name and provisioners.get(str(name)) in access_modes.EBS else None

    out: dict[str, str] = {}
    if obj.kind == "StatefulSet":
        for template in lookup(obj.manifest, "spec.volumeClaimTemplates") or []:
            if (cls := ebs(template.get("spec") or {})) is not None:
                out[str(lookup(template, "metadata.name"))] = cls
    claims = {
        c.name: c for c in graph.kube(obj.resource.region, "PersistentVolumeClaim") if c.namespace == obj.namespace
    }
    for volume in pod.get("volumes") or []:
        claim = claims.get(str(lookup(volume, "persistentVolumeClaim.claimName")))
        if claim is not None and (cls := ebs(claim.manifest.get("spec") or {})) is not None:
            out[str(volume.get("name"))] = cls
    return out


def _prepared(pod: dict[str, Any], volume: str) -> bool:
    """An init container that mounts the volume and runs as root (to chown it, say) is taken to prepare it."""
    return any(
        any(m.get("name") == volume for m in init.get("volumeMounts") or []) and identity(pod, init)[0] in (0, None)
        for init in pod.get("initContainers") or []
    )


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        provisioners = dict(access_modes.EKS_SHIPPED)
        provisioners.update({c.name: str(c.manifest.get("provisioner")) for c in graph.kube(region, "StorageClass")})
        for obj in graph.pod_bearers(region):
            pod = pod_template(obj).get("spec") or {}
            if (pod.get("securityContext") or {}).get("fsGroup") is not None:
                continue
            volumes = _ebs_volumes(graph, obj, pod, provisioners)
            for container in pod.get("containers") or []:
                user, _ = identity(pod, container)
                if not user:
                    continue
                for mount in container.get("volumeMounts") or []:
                    name = str(mount.get("name"))
                    if name not in volumes or mount.get("readOnly") is True or _prepared(pod, name):
                        continue
                    yield Finding(
                        RULE,
                        obj.urn,
                        f"{obj.kind} {obj.namespace}/{obj.name}: container {container.get('name')} runs as user "
                        f"{user} and mounts volume {name} (an EBS volume of StorageClass {volumes[name]!r}) at "
                        f"{mount.get('mountPath')} read-write, but the pod sets no securityContext.fsGroup: the "
                        "driver's new filesystem is owned by root (0755), so its first write fails with Permission "
                        "denied and the container crash-loops",
                        f"set the pod's securityContext.fsGroup (e.g. fsGroup: {user}) so the kubelet makes the "
                        "volume group-writable, or mount it readOnly if the container only reads it",
                    )
