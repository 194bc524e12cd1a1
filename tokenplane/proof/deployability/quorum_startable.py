"""A quorum store's StatefulSet can start all its members before any of them is Ready.

``quorum-startable``: with ``podManagementPolicy: OrderedReady`` (the default) the StatefulSet controller creates
pod N+1 only once pod N is Running and Ready
(https://kubernetes.io/docs/concepts/workloads/controllers/statefulset/#pod-management-policies). An etcd member
bootstrapping a cluster of several members (``--initial-cluster`` with more than one member, ``--initial-cluster-state
new``, etcd's default) has no leader until a quorum of its peers is up, and its ``/health`` answers 503
``{"health":"false","reason":"RAFT NO LEADER"}`` without one (etcd's ``server/etcdserver/api/etcdhttp/health.go``,
``checkLeader``, unless asked ``?serializable=true``); ``/readyz`` makes a linearizable read, which needs a leader
too, and ``etcdctl endpoint health`` fails the same way. A readiness probe of that
kind keeps pod 0 not Ready for ever, so pods 1 and 2 are never created, the cluster never forms, and Pulumi's wait
on the StatefulSet times out (bitnami/charts#1299: etcd needs ``Parallel``; loft-sh/vcluster#229).

Judged for etcd containers (the image ``etcd`` or a command running ``etcd``) in a StatefulSet of more than one
replica whose readiness probe needs quorum. A readiness probe that does not (a TCP socket, ``/livez``) or none at all
lets the members start one by one and is not reported. ZooKeeper and Consul are not judged here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.deployability.known_images import image_name, literal_env

RULE = "quorum-startable"
# etcd's HTTP endpoints that answer 503 without a leader (etcd's op-guide, "Health Check").
QUORUM_PATHS = ("/health", "/readyz")


def _argv(container: dict[str, Any]) -> list[str]:
    return [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]


def _flag(argv: list[str], env: dict[str, str], name: str) -> str | None:
    """An etcd flag's value: ``--name=v`` or ``--name v`` on the command line, else its ``ETCD_NAME`` variable."""
    for i, arg in enumerate(argv):
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
        if arg == f"--{name}" and i + 1 < len(argv):
            return argv[i + 1]
    return env.get("ETCD_" + name.upper().replace("-", "_"))


def _is_etcd(container: dict[str, Any]) -> bool:
    if image_name(str(container.get("image") or "")) == "etcd":
        return True
    command = [str(c) for c in container.get("command") or []]
    return bool(command) and command[0].rsplit("/", 1)[-1] == "etcd"


def bootstrap_members(container: dict[str, Any]) -> int:
    """How many members an etcd container bootstraps a new cluster with; 0 when it does not (or is no etcd)."""
    if not _is_etcd(container):
        return 0
    argv, env = _argv(container), literal_env(container)
    if (_flag(argv, env, "initial-cluster-state") or "new") != "new":
        return 0
    cluster = _flag(argv, env, "initial-cluster")
    return len([m for m in (cluster or "").split(",") if "=" in m])


def needs_quorum(probe: Any) -> str | None:
    """What in a readiness probe needs the cluster's quorum, or None."""
    path = lookup(probe, "httpGet.path")
    route, _, query = str(path or "/").partition("?")
    # ?serializable=true (and /readyz's ?exclude=...) answer from the member alone.
    if isinstance(lookup(probe, "httpGet"), dict) and route in QUORUM_PATHS and not query:
        return f"GET {path}"
    command = " ".join(str(c) for c in lookup(probe, "exec.command") or [])
    if "etcdctl" in command and "endpoint health" in command:
        return f"exec {command!r}"
    return None


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.kube(None, "StatefulSet"):
        spec = workload.manifest.get("spec") or {}
        policy = spec.get("podManagementPolicy") or "OrderedReady"
        replicas = spec.get("replicas", 1)
        if policy != "OrderedReady" or not isinstance(replicas, int) or replicas < 2:
            continue
        for container in workload.pod_spec().get("containers") or []:
            members = bootstrap_members(container)
            probe = needs_quorum(container.get("readinessProbe"))
            if members < 2 or probe is None:
                continue
            yield Finding(
                RULE,
                workload.urn,
                f"StatefulSet {workload.namespace}/{workload.name} starts {replicas} etcd members one by one "
                f"(spec.podManagementPolicy {policy}), but container {container.get('name')} bootstraps a new "
                f"{members}-member cluster (--initial-cluster-state new) and its readinessProbe ({probe}) answers "
                f"503 until a quorum of members has elected a leader: {workload.name}-0 never becomes Ready, "
                f"{workload.name}-1 is never created, and the StatefulSet never converges",
                "set spec.podManagementPolicy: Parallel so all members start at once, with publishNotReadyAddresses: "
                "true on the headless Service so they resolve one another before any is Ready (or probe readiness "
                "on something that needs no quorum, such as a tcpSocket on the client port)",
            )
