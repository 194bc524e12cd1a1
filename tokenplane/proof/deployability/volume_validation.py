"""A pod's volume sources as ValidateVolumes sees them (part of ``api-validation``).

Sources (kubernetes/kubernetes, pkg/apis/core/validation/validation.go):

- one source per volume (validateVolumeSource: "may not specify more than 1 volume type"); a volume with none is
  not judged, as the v1 defaults make it an emptyDir (SetDefaults_Volume);
- an emptyDir sizeLimit a quantity that is not negative (validateVolumeSource: "SizeLimit field must be a valid
  resource quantity");
- configMap, secret, downwardAPI and projected ``defaultMode`` and each item's ``mode`` in 0-0777
  (validateConfigMapVolumeSource, validateSecretVolumeSource, validateProjectedVolumeSource, validateKeyToPathList:
  "must be a number between 0 and 0777 (octal), both inclusive"): a Python ``0o644`` is 420, and a written ``644``
  is 01204, which the server refuses;
- items' paths relative, with no '..' element and not starting '..' (validateKeyToPathList with
  validateLocalNonReservedPath and validateLocalDescendingPath), and a key given.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import KubeObject
from tokenplane.proof.deployability.object_validation import rejected

SOURCES = frozenset(
    {
        "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi",
        "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI", "fc",
        "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "projected",
        "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image",
    }
)  # fmt: skip
MODE_MAX = 0o777
MODE_ERROR = "must be a number between 0 and 0777 (octal), both inclusive"


def check(obj: KubeObject, where: str, volumes: list[Mapping[str, Any]]) -> Iterator[Finding]:
    for volume in volumes:
        at = f"{where}spec.volumes[{volume.get('name')}]"
        present = sorted(k for k in SOURCES if volume.get(k) is not None)
        if len(present) > 1:
            yield rejected(
                obj,
                f"has {at} with {' and '.join(present)}",
                "validateVolumeSource: Forbidden: may not specify more than 1 volume type",
                "give each volume one source; mount several with a projected volume or as several volumes",
            )
        empty = volume.get("emptyDir")
        if isinstance(empty, dict) and empty.get("sizeLimit") is not None:
            size = syntax.parse_quantity(empty["sizeLimit"])
            if size is None or size < 0:
                yield rejected(
                    obj,
                    f"has {at}.emptyDir.sizeLimit {empty['sizeLimit']!r}",
                    "validateVolumeSource: SizeLimit field must be a valid resource quantity",
                    "write a non-negative quantity such as 10Gi",
                )
        for kind in ("configMap", "secret", "downwardAPI", "projected"):
            source = volume.get(kind)
            if isinstance(source, dict):
                yield from _mode(obj, f"{at}.{kind}.defaultMode", source.get("defaultMode"))
                yield from _items(obj, f"{at}.{kind}", source.get("items"), keyed=kind != "downwardAPI")
        projected = volume.get("projected")
        for i, part in enumerate((projected.get("sources") or []) if isinstance(projected, dict) else []):
            for kind in ("configMap", "secret", "downwardAPI"):
                if isinstance(part, dict) and isinstance(part.get(kind), dict):
                    where_part = f"{at}.projected.sources[{i}].{kind}"
                    yield from _items(obj, where_part, part[kind].get("items"), keyed=kind != "downwardAPI")


def _mode(obj: KubeObject, at: str, value: Any) -> Iterator[Finding]:
    mode = syntax.integer(value)
    if mode is not None and not 0 <= mode <= MODE_MAX:
        hint = f" (did you mean 0o{mode}, which is {int(str(mode), 8)}?)" if set(str(mode)) <= set("01234567") else ""
        yield rejected(
            obj,
            f"has {at} {mode}, which is {oct(mode)} in octal{hint}",
            f"validateKeyToPathList/defaultMode: Invalid value: {MODE_ERROR}",
            "write the mode in octal in code (0o644 in Python, 420 in decimal JSON/YAML)",
        )


def _items(obj: KubeObject, at: str, items: Any, *, keyed: bool) -> Iterator[Finding]:
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        path = str(item.get("path") or "")
        if keyed and not item.get("key"):
            yield rejected(
                obj,
                f"has an {at}.items entry without a key",
                "validateKeyToPathList: key: Required value",
                "name the ConfigMap or Secret key to project",
            )
        problem = (
            "must be a relative path"
            if posixpath.isabs(path)
            else "must not contain '..'"
            if ".." in path.split("/")
            else "must not start with '..'"
            if path.startswith("..")
            else None
        )
        if problem:
            yield rejected(
                obj,
                f"has {at}.items path {path!r}",
                f"validateLocalNonReservedPath: Invalid value: {problem}",
                "give a path relative to the mount, such as config.yaml or conf/app.yaml (set the directory in "
                "mountPath)",
            )
        yield from _mode(obj, f"{at}.items[{item.get('key') or path}].mode", item.get("mode"))
