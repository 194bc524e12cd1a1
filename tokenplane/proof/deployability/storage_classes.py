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

A claim on an EBS class must also ask for a volume the type takes: sizes gp2 1-16,384 GiB, gp3 1-65,536 (since
September 2025), io1 4-16,384, io2 4-65,536, st1/sc1 125-16,384, standard 1-1,024; and the class's ``iops`` and
``throughput`` within the type's range and its ratio to the claim's size: gp3 3,000-80,000 IOPS and at most 500
per GiB above its 3,000 baseline, 125-2,000 MiB/s and at most 0.25 MiB/s per IOPS above its 125 baseline; io1
100-64,000 IOPS and 50 per GiB; io2 100-256,000 and 1,000 per GiB (EBS User Guide, "Amazon EBS volume types";
the CSI driver passes ``iops`` and ``throughput`` to CreateVolume as they are:
https://github.com/kubernetes-sigs/aws-ebs-csi-driver/blob/master/docs/parameters.md). CreateVolume is refused
otherwise (InvalidParameterValue) and the claim stays Pending, and so does every pod that mounts it. Each upper
limit is the newest AWS publishes: an older, lower one could only miss a refusal, never invent one.

The EBS CSI driver's own IOPS rules (https://github.com/kubernetes-sigs/aws-ebs-csi-driver/blob/master/docs/parameters.md,
``CreateDisk`` and ``capIOPS`` in pkg/cloud/cloud.go): an io1 or io2 volume needs an IOPS figure, and the driver
sends none unless the class sets ``iops`` or ``iopsPerGB`` (EC2 answers "InvalidParameterCombination: The parameter
iops must be specified for io2 volumes"); a class may not set both ("invalid StorageClass parameters; specify either
IOPS or IOPSPerGb, not both"); ``iopsPerGB`` times the claim's GiB above the type's maximum or its ratio (io1 50:1,
io2 1,000:1) is capped by the driver, but below the type's minimum (io1/io2 100, gp3 3,000) it is sent as it is and
refused, unless ``allowAutoIOPSPerGBIncrease`` is "true" (then the driver raises it to the minimum). Parameter keys
are case-insensitive to the driver.

Programs deploying into an existing cluster (``--assume cluster``) may use its classes, so they are not judged.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
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
    "gp3": (1, 65_536),
    "io1": (4, 16_384),
    "io2": (4, 65_536),
    "st1": (125, 16_384),
    "sc1": (125, 16_384),
    "standard": (1, 1_024),
}
GIB = 2**30
IOPS_REQUIRED = frozenset({"io1", "io2"})  # EC2 creates these only with an IOPS figure


@dataclass(frozen=True)
class Performance:
    """What one EBS volume type takes beyond its size: provisioned IOPS and throughput (MiB/s)."""

    iops: tuple[int, int]
    iops_per_gib: int
    iops_baseline: int = 0  # provisioned at any size (gp3's 3,000)
    throughput: tuple[int, int] | None = None
    throughput_per_iops: float = 0.0
    throughput_baseline: int = 0


EBS_PERFORMANCE = {
    "gp3": Performance((3_000, 80_000), 500, 3_000, (125, 2_000), 0.25, 125),
    "io1": Performance((100, 64_000), 50),
    "io2": Performance((100, 256_000), 1_000),
}


def classes_in_values(value: Any, path: str = "values") -> Iterator[tuple[str, str]]:
    """(field path, class name) of every storageClassName in a Helm release's values."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == CLASS_FIELD and isinstance(item, str):
                yield f"{path}.{key}", item
            else:
                yield from classes_in_values(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from classes_in_values(item, f"{path}[{i}]")


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
            for path, name in classes_in_values(release.inputs.get("values")):
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
        parameters = storage_class.manifest.get("parameters") or {}
        refused = _iops_refusal(volume_type, gib, parameters) or _refusal(volume_type, gib, parameters)
        if not low <= gib <= high:
            refused = (
                f"which takes {low:,}-{high:,} GiB (InvalidParameterValue)",
                f"request {low:,}-{high:,} GiB, or use a volume type that takes {gib:g} GiB (gp3: 1-65,536)",
            )
        if refused is not None:
            why, fix = refused
            yield Finding(
                RULE,
                urn,
                f"{who} asks for {gib:g} GiB of StorageClass {storage_class.name} (EBS {volume_type}), {why}: the CSI "
                "driver's CreateVolume is refused and the claim stays Pending, and so does every pod that mounts it",
                fix,
            )


def _iops_refusal(volume_type: str, gib: float, parameters: dict[str, Any]) -> tuple[str, str] | None:
    """Why the CSI driver or EC2 refuses the class's IOPS parameters (or their absence) for ``gib``; None if fine."""
    lowered = {str(k).lower(): v for k, v in parameters.items()}
    iops, per_gib = _number(lowered.get("iops")), _number(lowered.get("iopspergb"))
    if iops is not None and per_gib is not None:
        return (
            f"whose parameters set both iops ({iops:g}) and iopsPerGB ({per_gib:g}) (the driver: invalid StorageClass "
            "parameters; specify either IOPS or IOPSPerGb, not both)",
            "keep one of iops and iopsPerGB in the StorageClass's parameters",
        )
    limits = EBS_PERFORMANCE.get(volume_type)
    if limits is None:
        return None
    if volume_type in IOPS_REQUIRED and not iops and not per_gib:
        return (
            f"whose parameters set neither iops nor iopsPerGB, so the driver sends no IOPS figure, which {volume_type} "
            f"requires (InvalidParameterCombination: The parameter iops must be specified for {volume_type} volumes)",
            f'set the StorageClass\'s parameters.iopsPerGB (with allowAutoIOPSPerGBIncrease: "true") or parameters.iops '
            f"(at least {limits.iops[0]:,} IOPS, at most {limits.iops_per_gib:,} per GiB)",
        )
    auto = str(lowered.get("allowautoiopspergbincrease", "")).lower() == "true"
    if per_gib and per_gib * int(gib) < limits.iops[0] and not auto:
        return (
            f"with iopsPerGB {per_gib:g}, {per_gib * int(gib):g} IOPS, below {volume_type}'s minimum of "
            f"{limits.iops[0]:,} (InvalidParameterValue; the driver raises it only with allowAutoIOPSPerGBIncrease)",
            f'set parameters.allowAutoIOPSPerGBIncrease: "true", or raise iopsPerGB to at least '
            f"{-(-limits.iops[0] // max(int(gib), 1)):,}",
        )
    return None


def _refusal(volume_type: str, gib: float, parameters: dict[str, Any]) -> tuple[str, str] | None:
    """Why EBS refuses the class's ``iops``/``throughput`` for a volume of ``gib``, and the fix; None if it takes them."""
    limits = EBS_PERFORMANCE.get(volume_type)
    iops, throughput = _number(parameters.get("iops")), _number(parameters.get("throughput"))
    if limits is None:
        return None
    if iops is not None:
        low, high = limits.iops
        most = max(limits.iops_baseline, min(high, limits.iops_per_gib * gib))
        if not low <= iops <= most:
            return (
                f"with iops {iops:g}, where {volume_type} takes {low:,}-{high:,} IOPS and at most {limits.iops_per_gib} per "
                f"GiB ({most:,.0f} for {gib:g} GiB)",
                f"set the class's iops to {low:,}-{most:,.0f}, or request at least {iops / limits.iops_per_gib:,.0f} GiB",
            )
    if throughput is not None and limits.throughput is not None:
        low, high = limits.throughput
        provisioned = iops if iops is not None else limits.iops_baseline
        most = max(limits.throughput_baseline, min(high, limits.throughput_per_iops * provisioned))
        if not low <= throughput <= most:
            return (
                f"with throughput {throughput:g} MiB/s at {provisioned:g} IOPS, where {volume_type} takes {low:,}-{high:,} "
                f"MiB/s and at most {limits.throughput_per_iops} MiB/s per IOPS ({most:,.0f})",
                f"set the class's throughput to {low:,}-{most:,.0f} MiB/s, or raise its iops",
            )
    return None


def _number(value: Any) -> float | None:
    try:
        return float(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def _is_default(storage_class: KubeObject) -> bool:
    annotations = lookup(storage_class.manifest, "metadata.annotations") or {}
    return str(annotations.get(DEFAULT_ANNOTATION, "")).lower() == "true"


def _version(value: Any) -> tuple[int, int] | None:
    try:
        major, minor = str(value).split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return None
