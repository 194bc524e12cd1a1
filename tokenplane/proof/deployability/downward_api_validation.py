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
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
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
