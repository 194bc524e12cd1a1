"""Every StorageClass a volume claim names is one the program creates or one EKS ships.

A PersistentVolumeClaim whose ``storageClassName`` names no StorageClass stays Pending forever (the PV controller
finds no provisioner: "storageclass.storage.k8s.io \"X\" not found"), and so does every pod that mounts it. The
claims read: PVCs, StatefulSets' ``volumeClaimTemplates``, and ``storageClassName`` anywhere in the values of a Helm
release the program installs (charts pass it to their claims, as kube-prometheus-stack's ``storageSpec`` does).
EKS creates one StorageClass itself, ``gp2`` (https://docs.aws.amazon.com/eks/latest/userguide/storage-classes.html);
every other one is made by the program or not at all. An empty name asks for no class (static binding); an absent one
for the default class, which this check does not judge. Programs deploying into an existing cluster
(``--assume cluster``) may use its classes, so they are not judged either.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, lookup

RULE = "storage-class-exists"
EKS_SHIPPED = frozenset({"gp2"})
CLASS_FIELD = "storageClassName"


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
        made = {o.name for o in graph.kube(region, "StorageClass")}
        claims: list[tuple[str, str, str]] = []  # (urn, who, class)
        for pvc in graph.kube(region, "PersistentVolumeClaim"):
            if isinstance(name := lookup(pvc.manifest, f"spec.{CLASS_FIELD}"), str):
                claims.append((pvc.urn, f"PersistentVolumeClaim {pvc.namespace}/{pvc.name}", name))
        for sts in graph.kube(region, "StatefulSet"):
            for template in lookup(sts.manifest, "spec.volumeClaimTemplates") or []:
                if isinstance(name := lookup(template, f"spec.{CLASS_FIELD}"), str):
                    who = f"StatefulSet {sts.namespace}/{sts.name} volumeClaimTemplate {lookup(template, 'metadata.name')}"
                    claims.append((sts.urn, who, name))
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
