"""The files a container's ConfigMap, Secret and projected volumes put at each path, where the program makes them.

One reading for every rule that judges a file's content by where it is mounted (``htpasswd-hash``'s user files,
``otel_collector_config``'s ``--config`` files): a ConfigMap's ``data``, a Secret's base64 ``data`` and plain
``stringData`` (the values the render keeps out of reports, ``secret_inputs``), ``items`` followed, a ``subPath``
mount taking one key, a projected volume's ConfigMap and Secret sources merged. A volume of an object the program does
not make is unknown (left out); a value redacted or unknown at render time reads as None.
"""

from __future__ import annotations

from typing import Any

from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.secret_validation import decode

REDACTED = "[secret]"  # what the render leaves of a secret value


def mounted_files(
    graph: Graph, workload: KubeObject, pod: dict[str, Any], container: dict[str, Any]
) -> dict[str, str | None]:
    """The files the container's ConfigMap and Secret volumes (of objects the program makes) put at each path."""
    out: dict[str, str | None] = {}
    volumes = {str(v.get("name")): v for v in pod.get("volumes") or [] if isinstance(v, dict)}
    for mount in container.get("volumeMounts") or []:
        path = str(mount.get("mountPath") or "").rstrip("/")
        held = _volume_files(graph, workload.namespace, volumes.get(str(mount.get("name"))) or {})
        if not path or held is None:
            continue
        sub = mount.get("subPath")
        if sub:
            if isinstance(sub, str) and sub in held:
                out[path] = held[sub]
            continue
        for relative, content in held.items():
            out[f"{path}/{relative}"] = content
    return out


def _volume_files(graph: Graph, namespace: str, volume: dict[str, Any]) -> dict[str, str | None] | None:
    """The files a ConfigMap, Secret or projected volume of the program's objects holds; None where one is unknown."""
    projected = lookup(volume, "projected.sources")
    if isinstance(projected, list):
        out: dict[str, str | None] = {}
        for source in projected:
            # A projected source names its Secret by ``name``, not ``secretName`` (ProjectedVolumeSource).
            held = _source_files(graph, namespace, source, "name") if isinstance(source, dict) else None
            if held is None:
                return None
            out |= held
        return out
    return _source_files(graph, namespace, volume, "secretName")


def _source_files(
    graph: Graph, namespace: str, volume: dict[str, Any], secret_key: str
) -> dict[str, str | None] | None:
    for field, kind, key in (("configMap", "ConfigMap", "name"), ("secret", "Secret", secret_key)):
        source = volume.get(field)
        if not isinstance(source, dict):
            continue
        obj = next((o for o in graph.kube(None, kind) if o.name == source.get(key) and o.namespace == namespace), None)
        if obj is None:
            return None
        files = _contents(obj)
        items = source.get("items")
        if items:
            return {str(i.get("path")): files.get(str(i.get("key"))) for i in items if isinstance(i, dict)}
        return files
    return None


def _contents(obj: KubeObject) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    data = obj.resource.secret_inputs.get("data", obj.manifest.get("data")) or {}
    for key, value in data.items() if isinstance(data, dict) else ():
        if obj.kind == "Secret":
            raw = decode(value)[0] if isinstance(value, str) and value != REDACTED else None
            out[str(key)] = raw.decode("utf-8", "replace") if raw is not None else None
        else:
            out[str(key)] = value if isinstance(value, str) else None
    if obj.kind == "Secret":
        plain = obj.resource.secret_inputs.get("stringData", obj.manifest.get("stringData")) or {}
        for key, value in plain.items() if isinstance(plain, dict) else ():
            out[str(key)] = value if isinstance(value, str) and value != REDACTED else None
    return out
