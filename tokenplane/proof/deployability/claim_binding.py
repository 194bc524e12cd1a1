"""A claim that names its volume (``spec.volumeName``) can bind to it: the PV controller's own conditions.

A PersistentVolumeClaim with ``volumeName`` is never provisioned: the controller binds it to that PersistentVolume
or leaves it Pending. It binds only when the volume satisfies the claim (kubernetes
``pkg/controller/volume/persistentvolume/pv_controller.go``, ``checkVolumeSatisfyClaim``): the volume's capacity is
at least the claim's storage request ("requested PV is too small"), the two name the same StorageClass
("storageClassName does not match": ``""`` on both for static provisioning, as the Mountpoint for S3 and EBS drivers'
static examples write it), the same volumeMode ("incompatible volumeMode", Filesystem when unset) and the claim's
access modes are among the volume's ("incompatible accessMode"); and the volume's ``claimRef``, when set, names this
claim. Otherwise ``syncUnboundClaim`` records ``VolumeMismatch`` ("Cannot bind to requested volume ...") and retries
forever: the claim stays Pending, and so does every pod that mounts it (pulumi-kubernetes' await on their Deployment
times out).

Judged: claims whose ``volumeName`` is a PersistentVolume of the program in the same cluster, on values written in
the program. A claim whose class is unset is not judged on its class (the DefaultStorageClass admission may set it,
and which class is the default is the cluster's). It cannot see volumes made outside the program.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.k8s_syntax import parse_quantity

RULE = "claim-binds"
FILESYSTEM = "Filesystem"


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        volumes = {v.name: v for v in graph.kube(region, "PersistentVolume") if v.name}
        for claim in graph.kube(region, "PersistentVolumeClaim"):
            wanted = lookup(claim.manifest, "spec.volumeName")
            if isinstance(wanted, str) and wanted in volumes:
                reasons = mismatches(claim, volumes[wanted])
                if reasons:
                    yield Finding(
                        RULE,
                        claim.urn,
                        f"PersistentVolumeClaim {claim.namespace}/{claim.name} names volume {wanted}, which does "
                        f"not satisfy it ({'; '.join(reasons)}): the PV controller never binds them (VolumeMismatch, "
                        f'"Cannot bind to requested volume {wanted!r}"), so the claim and every pod that mounts it '
                        "stay Pending",
                        'make the claim ask what the volume offers: the same storageClassName ("" on both for a '
                        "static volume), access modes among the volume's, a request within its capacity, the same "
                        "volumeMode",
                    )


def mismatches(claim: KubeObject, volume: KubeObject) -> list[str]:
    """Why ``volume`` does not satisfy ``claim``, in checkVolumeSatisfyClaim's words; [] when it does."""
    spec: dict[str, Any] = claim.manifest.get("spec") or {}
    pv: dict[str, Any] = volume.manifest.get("spec") or {}
    out: list[str] = []
    requested = parse_quantity(lookup(spec, "resources.requests.storage"))
    capacity = parse_quantity(lookup(pv, "capacity.storage"))
    if requested is not None and capacity is not None and capacity < requested:
        out.append(
            f"requested PV is too small: {lookup(pv, 'capacity.storage')} < {lookup(spec, 'resources.requests.storage')}"
        )
    asked = spec.get("storageClassName")
    offered = pv.get("storageClassName", "")
    if isinstance(asked, str) and isinstance(offered, str) and asked != offered:
        out.append(f"storageClassName does not match: the claim's {asked!r}, the volume's {offered!r}")
    if (spec.get("volumeMode") or FILESYSTEM) != (pv.get("volumeMode") or FILESYSTEM):
        out.append("incompatible volumeMode")
    modes, has = spec.get("accessModes") or [], pv.get("accessModes") or []
    if isinstance(modes, list) and isinstance(has, list) and has and not set(map(str, modes)) <= set(map(str, has)):
        out.append(f"incompatible accessMode: {sorted(map(str, modes))} not among {sorted(map(str, has))}")
    ref = pv.get("claimRef")
    if (
        isinstance(ref, dict)
        and ref.get("name")
        and (ref.get("name"), ref.get("namespace") or claim.namespace)
        != (
            claim.name,
            claim.namespace,
        )
    ):
        out.append(f"the volume's claimRef names {ref.get('namespace')}/{ref.get('name')}")
    return out
