"""A store that keeps its data keeps it on a volume that outlives the pod.

``store-data-durable``: an emptyDir "is initially empty ... When a Pod is removed from a node for any reason, the
data in the emptyDir is deleted permanently" (https://kubernetes.io/docs/concepts/storage/volumes/#emptydir). A
database whose data directory is an emptyDir deploys and works, then loses everything at the first drain, eviction,
node replacement or rollout. Judged only where the container asks for persistence, for the stores whose data
directory the program knows from their official images:

- Redis or Valkey with an append-only file (``--appendonly yes``) or RDB snapshots (``--save`` with a schedule) on
  the command line; its data directory is ``--dir``, else the image's WORKDIR ``/data``
  (https://redis.io/docs/latest/operate/oss_and_stack/management/persistence/; the docker-library image's
  Dockerfile: ``WORKDIR /data``). A cache (no ``--appendonly yes``, ``--save ""``) is not judged, nor a Redis
  configured from a file the program cannot read;
- PostgreSQL: ``PGDATA``, else ``/var/lib/postgresql/data`` (docker-library postgres, "PGDATA");
- MySQL and MariaDB: ``/var/lib/mysql``; MongoDB: ``/data/db`` (their official images' VOLUME);
- Qdrant: ``QDRANT__STORAGE__STORAGE_PATH``, else ``/qdrant/storage`` (qdrant docs, "Installation": "-v
  $(pwd)/qdrant_storage:/qdrant/storage").

The volume judged is the one mounted at the data directory or the nearest directory above it; a directory on no
volume is not judged here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.known_images import image_name, literal_env

RULE = "store-data-durable"

# Official image repository (the image name's last path segment) -> (store, data directory, env overriding it).
DATABASES: dict[str, tuple[str, str, str | None]] = {
    "postgres": ("PostgreSQL", "/var/lib/postgresql/data", "PGDATA"),
    "postgresql": ("PostgreSQL", "/var/lib/postgresql/data", "PGDATA"),
    "mysql": ("MySQL", "/var/lib/mysql", None),
    "mariadb": ("MariaDB", "/var/lib/mysql", None),
    "mongo": ("MongoDB", "/data/db", None),
    "qdrant": ("Qdrant", "/qdrant/storage", "QDRANT__STORAGE__STORAGE_PATH"),
}
REDIS_LIKE = {"redis": "Redis", "valkey": "Valkey"}
REDIS_DATA_DIR = "/data"  # the docker-library image's WORKDIR, where redis-server writes with no --dir


def _flag(argv: list[str], name: str) -> list[str] | None:
    """The values after ``--name`` (up to the next flag), or None when the flag is absent; last one wins."""
    found: list[str] | None = None
    for i, arg in enumerate(argv):
        if arg == f"--{name}":
            found = []
            for value in argv[i + 1 :]:
                if value.startswith("--"):
                    break
                found.append(value)
    return found


def _redis(argv: list[str]) -> tuple[str, str] | None:
    """(what asks for persistence, data dir) for a redis-server command line, or None for a cache."""
    appendonly = _flag(argv, "appendonly")
    save = _flag(argv, "save")
    asks = []
    if appendonly and appendonly[0].lower() == "yes":
        asks.append("--appendonly yes")
    if save and any(v.strip('"') for v in save):
        asks.append(f"--save {' '.join(save)}")
    if not asks:
        return None
    directory = _flag(argv, "dir")
    return " and ".join(asks), (directory[0] if directory else REDIS_DATA_DIR)


def data_store(container: dict[str, Any]) -> tuple[str, str, str] | None:
    """(store, why it keeps data, data directory) for a container the rule judges, else None."""
    name = image_name(str(container.get("image") or ""))
    env = literal_env(container)
    if name in REDIS_LIKE:
        argv = [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]
        redis = _redis(argv)
        return None if redis is None else (REDIS_LIKE[name], f"is started with {redis[0]}", redis[1])
    if name in DATABASES:
        store, default, variable = DATABASES[name]
        override = env.get(variable) if variable else None
        return store, "is a database", override or default
    return None


def volume_at(container: dict[str, Any], directory: str) -> tuple[str, str] | None:
    """(volume name, mount path) of the mount holding ``directory``: the deepest at or above it."""
    best: tuple[str, str] | None = None
    for mount in container.get("volumeMounts") or []:
        path = str(mount.get("mountPath") or "").rstrip("/") or "/"
        if mount.get("subPath") and path != directory.rstrip("/"):
            continue
        holds = directory == path or directory.startswith(path.rstrip("/") + "/")
        if holds and (best is None or len(path) > len(best[1])):
            best = (str(mount.get("name")), path)
    return best


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        spec = workload.pod_template().get("spec") or {}
        volumes = {str(v.get("name")): v for v in spec.get("volumes") or [] if isinstance(v, dict)}
        for container in spec.get("containers") or []:
            yield from _container(workload, container, volumes)


def _container(workload: KubeObject, container: dict[str, Any], volumes: dict[str, Any]) -> Iterator[Finding]:
    store = data_store(container)
    if store is None:
        return
    kind, why, directory = store
    held = volume_at(container, directory)
    if held is None or "emptyDir" not in volumes.get(held[0], {}):
        return
    volume, path = held
    yield Finding(
        RULE,
        workload.urn,
        f"container {container.get('name')} of {workload.kind} {workload.namespace}/{workload.name} runs {kind}, "
        f"which {why} and keeps its data in {directory}, on emptyDir volume {volume} (mounted at {path}): an "
        "emptyDir is deleted with the pod, so every drain, eviction, node replacement or rollout loses the data",
        f"put {directory} on a PersistentVolumeClaim (a StatefulSet's volumeClaimTemplates, one per replica), or, "
        "for a cache, turn persistence off",
    )
