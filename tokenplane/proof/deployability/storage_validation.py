"""PersistentVolumeClaims and StorageClasses as their validators see them (part of ``api-validation``).

Sources (kubernetes/kubernetes):

- PersistentVolumeClaim (pkg/apis/core/validation/validation.go, ValidatePersistentVolumeClaimSpec): at least one
  access mode ("at least 1 access mode is required"), each ReadWriteOnce, ReadOnlyMany, ReadWriteMany or
  ReadWriteOncePod, ReadWriteOncePod alone ("may not use ReadWriteOncePod with other access modes"); a
  resources.requests[storage] that is given and above zero (ValidatePositiveQuantityValue: "must be greater than
  zero"); volumeMode Block or Filesystem;
- StorageClass (pkg/apis/storage/validation/validation.go, ValidateStorageClass): reclaimPolicy Delete or Retain
  (validateReclaimPolicy), volumeBindingMode Immediate or WaitForFirstConsumer (validateVolumeBindingMode, after
  the default Immediate).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.object_validation import rejected, unsupported

ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
VOLUME_MODES = ("Block", "Filesystem")
RECLAIM_POLICIES = ("Delete", "Retain")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")


def check(graph: Graph) -> Iterator[Finding]:
    for obj in graph.kube_objects:
        if obj.kind == "PersistentVolumeClaim" and isinstance(obj.manifest.get("spec"), dict):
            yield from _claim(obj, obj.manifest["spec"])
        elif obj.kind == "StorageClass":
            yield from _class(obj)


def _quoted(values: tuple[str, ...]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def _claim(obj: KubeObject, spec: Mapping[str, Any]) -> Iterator[Finding]:
    modes = spec.get("accessModes") or []
    modes = modes if isinstance(modes, list) else []
    if not modes:
        yield rejected(
            obj,
            "has no spec.accessModes",
            "ValidatePersistentVolumeClaimSpec: spec.accessModes: Required value: at least 1 access mode is required",
            "set spec.accessModes, e.g. [ReadWriteOnce] for an EBS volume",
        )
    for mode in modes:
        if mode not in ACCESS_MODES:
            yield unsupported(
                obj,
                "spec.accessModes entry",
                mode,
                ACCESS_MODES,
                "ValidatePersistentVolumeClaimSpec",
                "use ReadWriteOnce, ReadOnlyMany, ReadWriteMany or ReadWriteOncePod (case matters)",
            )
    if "ReadWriteOncePod" in modes and len(set(modes)) > 1:
        yield rejected(
            obj,
            f"has spec.accessModes {modes}",
            "ValidatePersistentVolumeClaimSpec: may not use ReadWriteOncePod with other access modes",
            "keep ReadWriteOncePod alone, or drop it",
        )
    storage = lookup(spec, "resources.requests.storage") if isinstance(spec.get("resources"), dict) else None
    if storage is None:
        yield rejected(
            obj,
            "has no spec.resources.requests.storage",
            "ValidatePersistentVolumeClaimSpec: spec.resources[storage]: Required value",
            "request the volume's size in spec.resources.requests.storage, e.g. 20Gi",
        )
    elif (size := syntax.parse_quantity(storage)) is not None and size <= 0:
        yield rejected(
            obj,
            f"requests storage {storage!r}",
            "ValidatePersistentVolumeClaimSpec: ValidatePositiveQuantityValue: must be greater than zero",
            "request a positive size, e.g. 20Gi",
        )
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        yield unsupported(
            obj,
            "spec.volumeMode",
            mode,
            VOLUME_MODES,
            "ValidatePersistentVolumeClaimSpec",
            "use Filesystem (the default) or Block",
        )


def _class(obj: KubeObject) -> Iterator[Finding]:
    for field, allowed, source in (
        ("reclaimPolicy", RECLAIM_POLICIES, "validateReclaimPolicy"),
        ("volumeBindingMode", BINDING_MODES, "validateVolumeBindingMode"),
    ):
        value = obj.manifest.get(field)
        if value not in (None, "") and value not in allowed:
            yield unsupported(obj, field, value, allowed, source, f"use {' or '.join(allowed)} (case matters)")
