"""A fieldRef's fieldPath as validateObjectFieldSelector takes it (part of ``api-validation``, called for env vars by
``pod_validation`` and for downwardAPI volume items by ``volume_validation``).

Source: kubernetes/kubernetes pkg/apis/core/validation/validation.go (validateEnvVarValueFrom,
validateDownwardAPIVolumeFile, validateObjectFieldSelector) and pkg/apis/core/pods/helpers.go
(ConvertDownwardAPIFieldLabel). A fieldPath is either one of a fixed list or a subscripted
``metadata.labels['<key>']`` / ``metadata.annotations['<key>']`` (the key a qualified name; an annotation's
lowercased); the lists differ by where the fieldRef is:

- an env var (validEnvDownwardAPIFieldPathExpressions): metadata.name, metadata.namespace, metadata.uid,
  spec.nodeName, spec.serviceAccountName, status.hostIP, status.hostIPs (1.28+), status.podIP, status.podIPs.
  The whole ``metadata.labels`` or ``metadata.annotations`` map is refused ("Unsupported value"): it goes only
  into a downwardAPI volume file (https://kubernetes.io/docs/concepts/workloads/pods/downward-api/);
- a downwardAPI volume item (validVolumeDownwardAPIFieldPathExpressions): metadata.name, metadata.namespace,
  metadata.labels, metadata.annotations, metadata.uid (no spec.* or status.* field).

A path outside ConvertDownwardAPIFieldLabel's own list (``metadata.label``, ``status.podIp``) fails earlier with
"error converting fieldPath: field label not supported", and a subscript on another path with "field label does
not support subscript"; both are refusals. The union over the supported versions is taken (status.hostIPs is not
judged); a fieldRef with an apiVersion other than v1, or a path unknown at render time, is not judged.

A resourceFieldRef, in an env var or a downwardAPI volume item (validateContainerResourceFieldSelector,
validateContainerResourceDivisor): its resource one of limits./requests. cpu, memory, ephemeral-storage, or a
limits.hugepages-/requests.hugepages- name ("Unsupported value": ``cpu`` alone, or an extended resource such as
``limits.nvidia.com/gpu``, is refused); its divisor, where given, 1m or 1 for cpu and 1, 1k-1E, 1Ki-1Ei for memory
and ephemeral-storage. A divisor is compared by value (the server compares its canonical text, so "1024" for
memory is refused there and not here): a miss, never a false finding. In a downwardAPI *volume* item (or a
projected volume's downwardAPI source) the resourceFieldRef must also name its container: a volume belongs to the
pod, not to one container, so ``if volume && len(fs.ContainerName) == 0`` answers
``...resourceFieldRef.containerName: Required value`` (an env var's defaults to its own container;
https://kubernetes.io/docs/concepts/workloads/pods/downward-api/#downwardapi-resourcefieldref). Only a missing or
empty containerName is judged (a name that is no container of the pod is the kubelet's error at mount time, not the
API server's); a containerName unknown at render time is not judged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import KubeObject
from tokenplane.proof.deployability.object_validation import rejected

ENV_PATHS = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
)
VOLUME_PATHS = ("metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid")
# ConvertDownwardAPIFieldLabel's v1 labels: anything else is "field label not supported"
CONVERTIBLE = frozenset({*ENV_PATHS, *VOLUME_PATHS, "spec.restartPolicy", "spec.schedulerName", "status.phase"})
SUBSCRIPTED = re.compile(r"(?P<path>[^\[]+)\['(?P<key>.*)'\]")
SUBSCRIPTABLE = ("metadata.annotations", "metadata.labels")


def check_env(obj: KubeObject, at: str, env: Mapping[str, Any]) -> Iterator[Finding]:
    """One env var at ``at`` (``spec.template.spec.containers[app]``)."""
    source = env.get("valueFrom")
    resource_ref = source.get("resourceFieldRef") if isinstance(source, dict) else None
    if isinstance(resource_ref, dict):
        where = f"{at} env {env.get('name')} valueFrom.resourceFieldRef"
        yield from _resource_field_ref(obj, where, resource_ref, "validateEnvVarValueFrom")
    ref = source.get("fieldRef") if isinstance(source, dict) else None
    if isinstance(ref, dict):
        yield from _field_ref(
            obj,
            f"{at} env {env.get('name')} valueFrom.fieldRef.fieldPath",
            ref,
            ENV_PATHS,
            "validateEnvVarValueFrom",
            "for one label use metadata.labels['<key>'] (one env var per key); the whole map only through a "
            "downwardAPI volume file",
        )


def check_volume_items(obj: KubeObject, at: str, items: Any) -> Iterator[Finding]:
    """A downwardAPI volume's (or projected source's) ``items`` at ``at``."""
    for item in items if isinstance(items, list) else []:
        resource_ref = item.get("resourceFieldRef") if isinstance(item, dict) else None
        if isinstance(resource_ref, dict):
            where = f"{at}.items[{item.get('path')}].resourceFieldRef"
            yield from _resource_field_ref(obj, where, resource_ref, "validateDownwardAPIVolumeFile", volume=True)
        ref = item.get("fieldRef") if isinstance(item, dict) else None
        if isinstance(ref, dict):
            yield from _field_ref(
                obj,
                f"{at}.items[{item.get('path')}].fieldRef.fieldPath",
                ref,
                VOLUME_PATHS,
                "validateDownwardAPIVolumeFile",
                "a downwardAPI file takes metadata.name, namespace, uid, labels or annotations; pass spec.* and "
                "status.* fields as env vars (valueFrom.fieldRef) instead",
            )


RESOURCE_FIELDS = (  # validContainerResourceFieldPathExpressions, sorted as sets.List lists them
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
)
RESOURCE_PREFIXES = ("limits.hugepages-", "requests.hugepages-")
_BINARY = [Decimal(1024) ** n for n in range(1, 7)]
_DECIMAL = [Decimal(1000) ** n for n in range(1, 7)]
DIVISORS: dict[str, tuple[list[Decimal], str]] = {
    "cpu": ([Decimal("0.001"), Decimal(1)], "1m and 1"),
    "memory": ([Decimal(1), *_DECIMAL, *_BINARY], "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei"),
}
DIVISORS["ephemeral-storage"] = DIVISORS["memory"]


def _resource_field_ref(
    obj: KubeObject, where: str, ref: Mapping[str, Any], source: str, *, volume: bool = False
) -> Iterator[Finding]:
    resource = ref.get("resource")
    container = ref.get("containerName", "")
    if volume and isinstance(container, str) and not container:
        yield rejected(
            obj,
            f"has {where} {{resource: {resource!r}}} with no containerName",
            f"{source}/validateContainerResourceFieldSelector: {where}.containerName: Required value",
            "name the container whose limit or request the file reports (resourceFieldRef.containerName): a "
            "downwardAPI volume belongs to the pod, so unlike an env var's it has no container of its own",
        )
    elif isinstance(resource, str) and resource not in RESOURCE_FIELDS and not resource.startswith(RESOURCE_PREFIXES):
        supported = ", ".join(f'"{r}"' for r in RESOURCE_FIELDS)
        text = f'resource: Unsupported value: "{resource}": supported values: {supported}'
        if not resource:
            text = "resource: Required value"
        yield rejected(
            obj,
            f"has {where}.resource {resource!r}",
            f"{source}/validateContainerResourceFieldSelector: {where}.{text}",
            "name the container's own limit or request: limits.cpu, requests.memory, ... (cpu alone is not one; an "
            "extended resource such as a GPU cannot be read this way)",
        )
        return
    divisor = ref.get("divisor")
    kind = resource.split(".", 1)[1] if isinstance(resource, str) and "." in resource else ""
    if divisor is None or kind not in DIVISORS or isinstance(divisor, bool):
        return
    value = syntax.parse_quantity(divisor)
    allowed, words = DIVISORS[kind]
    if value is None or value == 0 or value in allowed:
        return  # a divisor that does not parse is the quantity check's; zero is "unset"
    yield rejected(
        obj,
        f"has {where}.divisor {divisor!r} for {resource}",
        f'validateContainerResourceDivisor: {where}.divisor: Invalid value: "{resource}": only divisor\'s values '
        f"{words} are supported with the {kind} resource",
        f"use one of {words} as the divisor (the value is reported in that unit, rounded up)",
    )


def _field_ref(
    obj: KubeObject, where: str, ref: Mapping[str, Any], allowed: tuple[str, ...], source: str, fix: str
) -> Iterator[Finding]:
    if ref.get("apiVersion") not in (None, "", "v1"):
        return
    path = ref.get("fieldPath")
    if not isinstance(path, str) or not path:
        return
    problem = _problem(path, allowed)
    if problem:
        yield rejected(obj, f"has {where} {path!r}", f"{source}/validateObjectFieldSelector: {problem}", fix)


def _problem(path: str, allowed: tuple[str, ...]) -> str | None:
    subscripted = SUBSCRIPTED.fullmatch(path)
    if subscripted:
        base, key = subscripted["path"], subscripted["key"]
        if base not in SUBSCRIPTABLE:
            return f"fieldPath: Invalid value: {path!r}: error converting fieldPath: field label does not support subscript"
        errors = syntax.is_qualified_name(key.lower() if base == "metadata.annotations" else key)
        return f"Invalid value: {key!r}: {errors[0]}" if errors else None
    if path not in CONVERTIBLE:
        return f"fieldPath: Invalid value: {path!r}: error converting fieldPath: field label not supported: {path}"
    if path not in allowed:
        supported = ", ".join(f'"{p}"' for p in sorted(allowed))
        return f'fieldPath: Unsupported value: "{path}": supported values: {supported}'
    return None
