"""Every StorageClass a volume claim names is one the program creates or one EKS ships.

A PersistentVolumeClaim whose ``storageClassName`` names no StorageClass stays Pending forever (the PV controller
finds no provisioner: "storageclass.storage.k8s.io \"X\" not found"), and so does every pod that mounts it. The
claims read: PVCs, StatefulSets' ``volumeClaimTemplates``, and ``storageClassName`` anywhere in the values of a Helm
release the program installs (charts pass it to their claims, as kube-prometheus-stack's ``storageSpec`` does).
EKS creates one StorageClass itself, ``gp2`` (https://docs.aws.amazon.com/eks/latest/userguide/storage-classes.html);
every other one is made by the program or not at all. An empty name asks for no class (static binding). An absent
one asks for the default class: from Kubernetes 1.30 on, EKS no longer marks its ``gp2`` as the default ("new
clusters created on 1.30 ... will not have the gp2 StorageClass annotated as default", EKS 1.30 release notes,
https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions-standard.html), so on such a cluster a claim
without a class binds only where the program marks one of its own ``storageclass.kubernetes.io/is-default-class:
"true"``; otherwise it stays Pending ("no persistent volumes available for this claim and no storage class is
set").

A claim on an EBS class must also ask for a size the volume type takes: gp2/gp3 1-16,384 GiB, io1 4-16,384,
io2 4-65,536, st1/sc1 125-16,384, standard 1-1,024 (EBS User Guide, "Amazon EBS volume types"); the CSI driver's
CreateVolume is refused otherwise (InvalidParameterValue) and the claim stays Pending.

Programs deploying into an existing cluster (``--assume cluster``) may use its classes, so they are not judged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, KubeObject, lookup
from tokenplane.proof.deployability.k8s_syntax import parse_quantity

RULE = "storage-class-exists"
EKS_SHIPPED = frozenset({"gp2"})
CLASS_FIELD = "storageClassName"
DEFAULT_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
GP2_DEFAULT_BEFORE = (1, 30)  # EKS marks gp2 as the default class on clusters created before 1.30
EBS_PROVISIONERS = frozenset({"ebs.csi.aws.com", "kubernetes.io/aws-ebs"})
# EBS volume type -> the sizes it takes, GiB (inclusive).
EBS_SIZES_GIB = {
    "gp2": (1, 16_384),
    "gp3": (1, 16_384),
    "io1": (4, 16_384),
    "io2": (4, 65_536),
    "st1": (125, 16_384),
    "sc1": (125, 16_384),
    "standard": (1, 1_024),
}
GIB = 2**30


def _in_values(value: Any, path: str = "values") -> Iterator[tuple[str, str]]:
    """(field path, class name) of every storageClassName in a Helm release's values."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == CLASS_FIELD and isinstance(item, str):
                yield f"{path}.{key}", item
            else:
                yield from _in_values(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _in_values(item, f"{path}[{i}]")


def check(graph: Graph) -> Iterator[Finding]:
    if graph.assumed.cluster:
        return
    for region in graph.regions():
        classes = {o.name: o for o in graph.kube(region, "StorageClass")}
        made = set(classes)
        claims: list[tuple[str, str, str]] = []  # (urn, who, class)
        specs: list[tuple[str, str, dict[str, Any]]] = []  # (urn, who, claim spec): every claim the program makes
        for pvc in graph.kube(region, "PersistentVolumeClaim"):
            specs.append((pvc.urn, f"PersistentVolumeClaim {pvc.namespace}/{pvc.name}", pvc.manifest.get("spec") or {}))
        for sts in graph.kube(region, "StatefulSet"):
            for template in lookup(sts.manifest, "spec.volumeClaimTemplates") or []:
                who = f"StatefulSet {sts.namespace}/{sts.name} volumeClaimTemplate {lookup(template, 'metadata.name')}"
                specs.append((sts.urn, who, template.get("spec") or {}))
        for urn, who, claim in specs:
            if isinstance(name := claim.get(CLASS_FIELD), str):
                claims.append((urn, who, name))
        yield from _defaulted(graph, region, specs, classes)
        yield from _sizes(specs, classes)
        for release in graph.of_type(HELM_RELEASE, region):
            for path, name in _in_values(release.inputs.get("values")):
                claims.append((release.urn, f"Helm release {release.name} ({path})", name))
        for urn, who, name in claims:
            if not name or name in made or name in EKS_SHIPPED:
                continue
            known = ", ".join(sorted(made | EKS_SHIPPED))
            yield Finding(
                RULE,
                urn,
                f"{who} asks for StorageClass {name!r}, which the program does not create and EKS does not ship "
                f"(there are: {known}): the claim stays Pending, and so does every pod that mounts it",
                f"name one of {known}, or create StorageClass {name!r} in the program",
            )


def _defaulted(
    graph: Graph, region: str, specs: list[tuple[str, str, dict[str, Any]]], classes: dict[str, KubeObject]
) -> Iterator[Finding]:
    """Claims that name no class, on a cluster that has no default one."""
    if any(_is_default(c) for c in classes.values()):
        return
    versions = [_version(c.inputs.get("version")) for c in graph.of_type(EKS_CLUSTER, region)]
    if not versions or any(v is None or v < GP2_DEFAULT_BEFORE for v in versions):
        return  # no EKS cluster of the program's here, or one whose gp2 is still the default
    for urn, who, claim in specs:
        if CLASS_FIELD in claim or claim.get("volumeName"):
            continue  # a class named (an empty one: static binding), or a volume bound by name
        yield Finding(
            RULE,
            urn,
            f"{who} names no StorageClass, so it asks for the cluster's default, and there is none: EKS stopped "
            "marking gp2 as the default from Kubernetes 1.30 and the program marks none of its own, so the claim "
            "stays Pending (no storage class is set), and so does every pod that mounts it",
            f"set storageClassName (one of: {', '.join(sorted({*classes, *EKS_SHIPPED}))}), or annotate the "
            f'StorageClass meant as the default {DEFAULT_ANNOTATION}: "true"',
        )


def _sizes(specs: list[tuple[str, str, dict[str, Any]]], classes: dict[str, KubeObject]) -> Iterator[Finding]:
    """Claims on an EBS class of the program's own asking for a size its volume type does not take."""
    for urn, who, claim in specs:
        storage_class = classes.get(str(claim.get(CLASS_FIELD)))
        if storage_class is None or storage_class.manifest.get("provisioner") not in EBS_PROVISIONERS:
            continue
        volume_type = str((storage_class.manifest.get("parameters") or {}).get("type") or "gp3").lower()
        size = parse_quantity(lookup(claim, "resources.requests.storage"))
        if volume_type not in EBS_SIZES_GIB or size is None:
            continue
        low, high = EBS_SIZES_GIB[volume_type]
        gib = float(size) / GIB
        if not low <= gib <= high:
            yield Finding(
                RULE,
                urn,
                f"{who} asks for {gib:g} GiB of StorageClass {storage_class.name} (EBS {volume_type}), which takes "
                f"{low:,}-{high:,} GiB: the CSI driver's CreateVolume is refused (InvalidParameterValue) and the claim "
                "stays Pending, and so does every pod that mounts it",
                f"request {low:,}-{high:,} GiB, or use a volume type that takes {gib:g} GiB (gp3: 1-16,384)",
            )


def _is_default(storage_class: KubeObject) -> bool:
    annotations = lookup(storage_class.manifest, "metadata.annotations") or {}
    return str(annotations.get(DEFAULT_ANNOTATION, "")).lower() == "true"


def _version(value: Any) -> tuple[int, int] | None:
    try:
        major, minor = str(value).split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return None
