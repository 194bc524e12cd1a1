"""A serving container is given what its process needs at start: the variables it requires, a spec file that
exists, a region of that spec, and writable directories where it writes.

Every serving process starts in ``tokenplane.runtime_env.load_spec_from_env`` (``TOKENPLANE_CONFIG`` set, the file
present and valid, ``TOKENPLANE_REGION`` one of its regions), and some require more through
``RuntimeEnv.required`` (``serving/gateway/runtime.py``, ``serving/batch/__main__.py``,
``serving/finops/__main__.py``: ``KAFKA_BOOTSTRAP_SERVERS``, ``TOKENPLANE_FINOPS_STORE``); the AI gateway and the
batch workers open their Kafka spool at start (``serving/events/spool.py``: ``directory.mkdir``). A miss raises
``ConfigError`` ("TOKENPLANE_CONFIG is not set", "... does not exist") or ``OSError`` (``[Errno 30] Read-only file
system``, ``[Errno 13] Permission denied``: the image's ``/var`` is root's and the process runs as 10001), the
process exits, and the pod restarts in CrashLoopBackOff without ever turning Ready. ``REQUIRES`` and ``WRITES`` are
read from that code (a test holds them to it).

A variable counts as given by ``env`` (a value or a ``valueFrom``) or by an ``envFrom`` source: one the program
renders with visible keys gives those keys; any other may give anything and is trusted. A file counts as present on
a volume: a ConfigMap or Secret the program renders must hold the key the path names. A directory is writable on a
volume that is not read-only (ConfigMap, Secret, downward API and projected volumes never are), else on the root
filesystem when it is writable and the process may write there (root, or ``/tmp`` and the image user's home).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.image_files import SERVING, SERVING_USER_HOME, files, under
from tokenplane.proof.deployability.known_images import serving_module
from tokenplane.proof.deployability.reachability import pod_template
from tokenplane.runtime_env import DEFAULT_SPOOL_DIR, Var

RULE = "runtime-contract"
GATEWAY, MODELGW, FINOPS, BATCH = (f"tokenplane.serving.{m}" for m in ("gateway", "modelgw", "finops", "batch"))
# What each serving module cannot start without (load_spec_from_env's CONFIG, and each ``required`` call).
REQUIRES: dict[str, tuple[Var, ...]] = {
    GATEWAY: (Var.CONFIG, Var.KAFKA_BOOTSTRAP_SERVERS),
    MODELGW: (Var.CONFIG,),
    FINOPS: (Var.CONFIG, Var.KAFKA_BOOTSTRAP_SERVERS, Var.FINOPS_STORE),
    BATCH: (Var.CONFIG, Var.KAFKA_BOOTSTRAP_SERVERS),
}
# The directories each creates at start, by the variable that moves them, with its default.
WRITES: dict[str, tuple[tuple[Var, str], ...]] = {
    GATEWAY: ((Var.SPOOL_DIR, DEFAULT_SPOOL_DIR),),
    BATCH: ((Var.SPOOL_DIR, DEFAULT_SPOOL_DIR),),
}
READ_ONLY_VOLUMES = ("configMap", "secret", "downwardAPI", "projected")
ROOT_WRITABLE_FOR_ANYONE = ("/tmp", "/var/tmp")


@dataclass(frozen=True)
class Env:
    """A container's environment as far as the program can tell."""

    values: dict[str, str | None]  # name -> value (None: from valueFrom or an envFrom source, value unknown)
    open_ended: bool  # an envFrom source whose keys the program cannot see: any variable may be set


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        pod = pod_template(workload).get("spec") or {}
        for container in pod.get("containers") or []:
            if files(str(container.get("image") or "")) is not SERVING:
                continue
            module = serving_module(container)
            if module not in REQUIRES:
                continue
            env = _env(graph, workload, container)
            for problem in _problems(graph, workload, pod, container, module, env):
                yield Finding(
                    RULE,
                    workload.urn,
                    f"container {container.get('name')} of {workload.kind} {workload.namespace}/{workload.name} runs "
                    f"{module}, which exits at start: {problem[0]}; the pod restarts in CrashLoopBackOff and never "
                    "turns Ready",
                    problem[1],
                )


def _problems(
    graph: Graph, workload: KubeObject, pod: dict[str, Any], container: dict[str, Any], module: str, env: Env
) -> Iterator[tuple[str, str]]:
    for var in REQUIRES[module]:
        if var.value not in env.values and not env.open_ended:
            yield (
                f'"{var.value} is not set" (ConfigError)',
                f"set {var.value} in the container's env (components/gateway.py gives it to every serving pod)",
            )
        elif env.values.get(var.value) == "":
            yield f'"{var.value} is not set" (an empty value counts as unset)', f"give {var.value} a value"
    config = env.values.get(Var.CONFIG.value)
    if config:
        yield from _config_file(graph, workload, pod, container, config, env)
    for var, default in WRITES.get(module, ()):
        directory = env.values.get(var.value) or default
        if var.value in env.values and env.values[var.value] is None:
            continue  # from a Secret or ConfigMap: the value is not known
        reason = _unwritable(pod, container, directory)
        if reason is not None:
            yield (
                f"it creates {directory} ({var.value}) and gets {reason}",
                f"mount a writable volume (an emptyDir) at {directory}, as components/gateway.py does",
            )


def _config_file(
    graph: Graph, workload: KubeObject, pod: dict[str, Any], container: dict[str, Any], path: str, env: Env
) -> Iterator[tuple[str, str]]:
    mounts = [m for m in container.get("volumeMounts") or [] if under(path, str(m.get("mountPath") or "\0"))]
    if not mounts:
        yield (
            f'"{Var.CONFIG.value}={path} does not exist" (no volume is mounted there, and the image has no spec)',
            "mount the ConfigMap holding platform.json (GatewayConfig's) and point TOKENPLANE_CONFIG at its file",
        )
        return
    mount = max(mounts, key=lambda m: len(str(m["mountPath"])))
    volume = next((v for v in pod.get("volumes") or [] if v.get("name") == mount.get("name")), None) or {}
    source_kind = "configMap" if "configMap" in volume else "secret" if "secret" in volume else None
    if source_kind is None:
        return
    source = volume[source_kind]
    name = str(source.get("name") or source.get("secretName") or "")
    keys = _keys(graph, workload, "ConfigMap" if source_kind == "configMap" else "Secret", name)
    if keys is None:
        return
    files_there = {str(i.get("path")): str(i.get("key")) for i in source.get("items") or []} or {k: k for k in keys}
    if mount.get("subPath"):
        at_file = path.rstrip("/") == str(mount["mountPath"]).rstrip("/")
        key = files_there.get(str(mount["subPath"])) if at_file else None
    else:
        key = files_there.get(path[len(str(mount["mountPath"]).rstrip("/")) + 1 :])
    present = key is not None and key in keys
    if not present:
        yield (
            f'"{Var.CONFIG.value}={path} does not exist" ({source_kind} {name} mounted at {mount["mountPath"]} '
            f"holds {', '.join(sorted(files_there)) or 'nothing'})",
            f"point {Var.CONFIG.value} at a file the {source_kind} holds, or add that key to it",
        )
        return
    region = env.values.get(Var.REGION.value)
    regions = _spec_regions(graph, workload, source_kind, name, str(key))
    if region and regions and region not in regions:
        yield (
            f'"{Var.REGION.value}={region} is not a region of the spec; choose one of {regions}" (ConfigError)',
            f"set {Var.REGION.value} to one of {regions}",
        )


def _unwritable(pod: dict[str, Any], container: dict[str, Any], directory: str) -> str | None:
    """Why the process cannot create ``directory``, or None where it can."""
    mounts = [m for m in container.get("volumeMounts") or [] if under(directory, str(m.get("mountPath") or "\0"))]
    if mounts:
        mount = max(mounts, key=lambda m: len(str(m["mountPath"])))
        volume = next((v for v in pod.get("volumes") or [] if v.get("name") == mount.get("name")), None) or {}
        if mount.get("readOnly") is True or any(kind in volume for kind in READ_ONLY_VOLUMES):
            return f"'[Errno 30] Read-only file system' (volume {mount.get('name')} is read-only)"
        return None
    security = {**(pod.get("securityContext") or {}), **(container.get("securityContext") or {})}
    if security.get("readOnlyRootFilesystem") is True:
        return "'[Errno 30] Read-only file system' (readOnlyRootFilesystem, and no volume is mounted there)"
    user = str(security.get("runAsUser", SERVING.user))
    if user == "0" or any(under(directory, d) for d in ROOT_WRITABLE_FOR_ANYONE):
        return None
    if user == SERVING.user and under(directory, SERVING_USER_HOME):
        return None
    return f"'[Errno 13] Permission denied' (UID {user}; the image's directories there are root's)"


def _env(graph: Graph, workload: KubeObject, container: dict[str, Any]) -> Env:
    values: dict[str, str | None] = {}
    open_ended = False
    for source in container.get("envFrom") or []:
        prefix = str(source.get("prefix") or "")
        for field, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
            if field in source:
                keys = _keys(graph, workload, kind, str((source[field] or {}).get("name") or ""))
                if keys is None:
                    open_ended = True
                else:
                    values.update({f"{prefix}{k}": None for k in keys})
    for entry in container.get("env") or []:
        name = str(entry.get("name"))
        value = entry.get("value")
        values[name] = str(value) if value is not None else (None if entry.get("valueFrom") else "")
    return Env(values, open_ended)


def _object(graph: Graph, workload: KubeObject, kind: str, name: str) -> KubeObject | None:
    region = workload.resource.region
    return next((o for o in graph.kube(region, kind) if o.name == name and o.namespace == workload.namespace), None)


def _keys(graph: Graph, workload: KubeObject, kind: str, name: str) -> set[str] | None:
    """The keys of a ConfigMap or Secret the program renders in the workload's namespace; None if it does not (or
    they are not visible)."""
    found = _object(graph, workload, kind, name)
    if found is None:
        return None
    keys: set[str] = set()
    for field in ("data", "stringData", "binaryData"):
        data = found.manifest.get(field)
        if data is not None and not isinstance(data, dict):
            return None
        keys |= set(data or {})
    return keys


def _spec_regions(graph: Graph, workload: KubeObject, kind: str, name: str, key: str) -> list[str]:
    """The region names of the spec a rendered ConfigMap's ``key`` holds as JSON ([] where not readable)."""
    found = _object(graph, workload, "ConfigMap" if kind == "configMap" else "Secret", name)
    text = ((found.manifest.get("data") or {}) if found is not None else {}).get(key)
    try:
        spec = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return []
    regions = spec.get("regions") if isinstance(spec, dict) else None
    return [str(r["name"]) for r in regions if isinstance(r, dict) and "name" in r] if isinstance(regions, list) else []
