"""Every ConfigMap or Secret *key* a pod reads is a key of the object the program creates.

``references-exist`` proves the object is there; this proves the key is. The kubelet resolves a
``configMapKeyRef``/``secretKeyRef`` when it starts the container: a missing key is CreateContainerConfigError
("couldn't find key X in ConfigMap ns/name"), so the pod never starts and the rollout never completes. A volume's
``items[].key`` that the object lacks fails the mount the same way (kubelet's configmap/secret volume plugins:
"configmap references non-existent config key"). ``optional: true`` is exempt, as the kubelet skips it. Only objects
whose keys the graph shows are judged: a Secret whose data is a computed secret output is left alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup

RULE = "key-exists"
# Where each kind keeps its keys (the API's fields; Secret's stringData is merged into data on write).
KEY_FIELDS = {"configmap": ("data", "binaryData"), "secret": ("data", "stringData")}


def keys_of(obj: KubeObject) -> set[str] | None:
    """The object's keys, or None when one of its key fields is not a plain mapping (a computed output)."""
    out: set[str] = set()
    for name in KEY_FIELDS[obj.kind.lower()]:
        value = obj.manifest.get(name)
        if value is None:
            continue
        if not isinstance(value, dict):
            return None
        out |= {str(k) for k in value}
    return out


def key_refs(pod: dict[str, Any]) -> Iterator[tuple[str, str, str, str]]:
    """(kind, object name, key, where) of every non-optional key the pod reads."""
    for container in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
        for env in container.get("env") or []:
            for kind, field in (("secret", "secretKeyRef"), ("configmap", "configMapKeyRef")):
                ref = (env.get("valueFrom") or {}).get(field)
                if ref and not ref.get("optional"):
                    where = f"container {container.get('name')} env {env.get('name')} ({field})"
                    yield kind, str(ref.get("name")), str(ref.get("key")), where
    for volume in pod.get("volumes") or []:
        sources = [("secret", volume.get("secret"), "secretName"), ("configmap", volume.get("configMap"), "name")]
        for source in lookup(volume, "projected.sources") or []:
            sources += [("secret", source.get("secret"), "name"), ("configmap", source.get("configMap"), "name")]
        for kind, ref, name_field in sources:
            if not ref or ref.get("optional"):
                continue
            for item in ref.get("items") or []:
                where = f"volume {volume.get('name')} items[].key"
                yield kind, str(ref.get(name_field)), str(item.get("key")), where


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        objects = {(o.kind.lower(), o.namespace, o.name): o for o in graph.kube(region, "Secret", "ConfigMap")}
        for workload in graph.pod_bearers(region):
            for kind, name, key, where in key_refs(workload.pod_spec()):
                obj = objects.get((kind, workload.namespace, name))
                if obj is None:
                    continue  # a missing object is references-exist's finding
                keys = keys_of(obj)
                if keys is None or key in keys:
                    continue
                held = ", ".join(sorted(keys)) or "no keys"
                yield Finding(
                    RULE,
                    workload.urn,
                    f"{workload.kind} {workload.namespace}/{workload.name} reads key {key!r} of {kind} {name} "
                    f"({where}), which holds {held}: the kubelet cannot start the container "
                    "(CreateContainerConfigError) and the rollout never completes",
                    f"use one of the keys {kind} {name} holds, add {key!r} to it, or mark the reference optional",
                )
