"""PersistentVolumeClaims and StorageClasses as their validators see them (part of ``api-validation``).

Sources (kubernetes/kubernetes):

- PersistentVolumeClaim (pkg/apis/core/validation/validation.go, ValidatePersistentVolumeClaimSpec): at least one
  access mode ("at least 1 access mode is required"), each ReadWriteOnce, ReadOnlyMany, ReadWriteMany or
  ReadWriteOncePod, ReadWriteOncePod alone ("may not use ReadWriteOncePod with other access modes"); a
  resources.requests[storage] that is given and above zero (ValidatePositiveQuantityValue: "must be greater than
  zero"); volumeMode Block or Filesystem; a storageClassName, where written non-empty, a DNS-1123 subdomain
  (ValidateClassName); a dataSource / dataSourceRef with a name and a kind, the kind PersistentVolumeClaim when no
  apiGroup is given (validateDataSource: "must be 'PersistentVolumeClaim' when referencing the default apiGroup"),
  and the two equal where both are written ("must match dataSourceRef"). The same spec rules hold a pod's
  ``ephemeral.volumeClaimTemplate`` (validateEphemeralVolumeSource, ValidatePersistentVolumeClaimTemplate), read
  through ``claim_spec`` by ``volume_validation``;
- StorageClass (pkg/apis/storage/validation/validation.go, ValidateStorageClass): reclaimPolicy Delete or Retain
  (validateReclaimPolicy), volumeBindingMode Immediate or WaitForFirstConsumer (validateVolumeBindingMode, after
  the default Immediate); a provisioner, where written, non-empty and a qualified name once lower-cased
  (validateProvisioner).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.object_validation import problems, rejected, unsupported

ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
VOLUME_MODES = ("Block", "Filesystem")
RECLAIM_POLICIES = ("Delete", "Retain")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")


def check(graph: Graph) -> Iterator[Finding]:
    for obj in graph.kube_objects:
        if obj.kind == "PersistentVolumeClaim" and isinstance(obj.manifest.get("spec"), dict):
            yield from claim_spec(obj, "spec", obj.manifest["spec"])
        elif obj.kind == "StorageClass":
            yield from _class(obj)


def _quoted(values: tuple[str, ...]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def claim_spec(obj: KubeObject, at: str, spec: Mapping[str, Any]) -> Iterator[Finding]:
    """ValidatePersistentVolumeClaimSpec on a PVC's spec (``at`` "spec") or a claim template's."""
    modes = spec.get("accessModes") or []
    modes = modes if isinstance(modes, list) else []
    if not modes:
        yield rejected(
            obj,
            f"has no {at}.accessModes",
            f"ValidatePersistentVolumeClaimSpec: {at}.accessModes: Required value: at least 1 access mode is required",
            "set spec.accessModes, e.g. [ReadWriteOnce] for an EBS volume",
        )
    for mode in modes:
        if mode not in ACCESS_MODES:
            yield unsupported(
                obj,
                f"{at}.accessModes entry",
                mode,
                ACCESS_MODES,
                "ValidatePersistentVolumeClaimSpec",
                "use ReadWriteOnce, ReadOnlyMany, ReadWriteMany or ReadWriteOncePod (case matters)",
            )
    if "ReadWriteOncePod" in modes and len(set(modes)) > 1:
        yield rejected(
            obj,
            f"has {at}.accessModes {modes}",
            "ValidatePersistentVolumeClaimSpec: may not use ReadWriteOncePod with other access modes",
            "keep ReadWriteOncePod alone, or drop it",
        )
    storage = lookup(spec, "resources.requests.storage") if isinstance(spec.get("resources"), dict) else None
    if storage is None:
        yield rejected(
            obj,
            f"has no {at}.resources.requests.storage",
            f"ValidatePersistentVolumeClaimSpec: {at}.resources[storage]: Required value",
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
            f"{at}.volumeMode",
            mode,
            VOLUME_MODES,
            "ValidatePersistentVolumeClaimSpec",
            "use Filesystem (the default) or Block",
        )
    name = spec.get("storageClassName")
    if isinstance(name, str) and name:  # "" asks for no class (a pre-bound volume)
        fix = (
            "name a StorageClass by its metadata.name: lowercase letters, digits, '-' and '.' (gp3, not gp3_encrypted)"
        )
        yield from problems(
            obj, f"{at}.storageClassName", name, syntax.is_dns1123_subdomain, "ValidatePersistentVolumeClaimSpec", fix
        )
    sources = {f: spec[f] for f in ("dataSource", "dataSourceRef") if isinstance(spec.get(f), dict)}
    for field, source in sources.items():
        yield from _data_source(obj, f"{at}.{field}", source)
    if len(sources) == 2 and {k: v for k, v in sources["dataSource"].items() if v} != {
        k: v for k, v in sources["dataSourceRef"].items() if v and k != "namespace"
    }:
        yield rejected(
            obj,
            f"has {at}.dataSource and {at}.dataSourceRef that differ",
            f'ValidatePersistentVolumeClaimSpec: {at}: Invalid value: "dataSource": must match dataSourceRef',
            "write the source once, in dataSourceRef (the server copies it to dataSource), or make them equal",
        )


def _data_source(obj: KubeObject, at: str, source: Mapping[str, Any]) -> Iterator[Finding]:
    """validateDataSource / validateDataSourceRef: a name and a kind; the core group only for a PVC."""
    for field in ("name", "kind"):
        if source.get(field) == "":
            yield rejected(
                obj,
                f"has {at} without a {field}",
                f"validateDataSource: {at}.{field}: Required value",
                f"set {at}.{field}",
            )
    kind = source.get("kind")
    if isinstance(kind, str) and kind and not source.get("apiGroup") and kind != "PersistentVolumeClaim":
        yield rejected(
            obj,
            f"has {at}.kind {kind!r} without an apiGroup",
            f"validateDataSource: {at}: Invalid value: \"{kind}\": must be 'PersistentVolumeClaim' when referencing "
            "the default apiGroup",
            "give the kind's API group (a VolumeSnapshot's is snapshot.storage.k8s.io)"
            if kind == "VolumeSnapshot"
            else "give the kind's API group in apiGroup",
        )


def _class(obj: KubeObject) -> Iterator[Finding]:
    for field, allowed, source in (
        ("reclaimPolicy", RECLAIM_POLICIES, "validateReclaimPolicy"),
        ("volumeBindingMode", BINDING_MODES, "validateVolumeBindingMode"),
    ):
        value = obj.manifest.get(field)
        if value not in (None, "") and value not in allowed:
            yield unsupported(obj, field, value, allowed, source, f"use {' or '.join(allowed)} (case matters)")
    provisioner = obj.manifest.get("provisioner")
    if provisioner == "":
        yield rejected(
            obj,
            "has an empty provisioner",
            "validateProvisioner: provisioner: Required value",
            "name the CSI driver that provisions the volumes, e.g. ebs.csi.aws.com",
        )
    elif isinstance(provisioner, str):
        fix = "name the driver as it registers itself, e.g. ebs.csi.aws.com or efs.csi.aws.com"
        yield from problems(
            obj, "provisioner", provisioner.lower(), syntax.is_qualified_name, "validateProvisioner", fix
        )
