"""How the members of a StatefulSet reach one another: per-pod DNS names, and the peer ports of clustered stores.

Shared by ``cluster_names`` (a set whose pods are addressed by name needs a headless governing Service) and
``flows`` (each such address is a flow between pods that NetworkPolicies must admit).

- A per-pod DNS name is ``<pod>.<serviceName>[.<namespace>[.svc[.cluster.local]]]``: the StatefulSet controller
  names its pods ``<set>-<ordinal>`` and gives each the set's ``serviceName`` as subdomain, and cluster DNS answers
  for ``<hostname>.<subdomain>`` only when that Service is headless and its endpoints hold the pod
  (https://kubernetes.io/docs/concepts/services-networking/dns-pod-service/#pods). A pod that writes its own name
  (``$HOSTNAME``, ``${HOSTNAME}``, ``$(HOSTNAME)``, or ``POD_NAME`` from the downward API) under the set's Service
  advertises that address to its peers: they connect to it.
- A clustered store's members talk on a port of their own whether or not a URL names it: Qdrant in distributed
  mode (``QDRANT__CLUSTER__ENABLED=true``, or started with ``--bootstrap``) joins and replicates over its p2p port,
  ``cluster.p2p.port``, 6335 unless ``QDRANT__CLUSTER__P2P__PORT`` moves it
  (https://qdrant.tech/documentation/guides/distributed_deployment/; config/config.yaml's ``cluster.p2p.port``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from tokenplane.proof.deployability.graph import Graph, KubeObject

# Bounded as DNS bounds them (a label is at most 63 characters; a URL scheme is short): unbounded runs make the
# search quadratic on a long value without a dot, such as a 1 MiB ConfigMap entry (minutes per value).
_LABEL = r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?"
# The pod's own name as a shell or the kubelet ($(VAR) in command/args) expands it.
_SELF = r"\$\{?(?:HOSTNAME|POD_NAME)\}?|\$\((?:HOSTNAME|POD_NAME)\)"
POD_DNS = re.compile(
    rf"(?:(?P<scheme>[a-z][a-z0-9+.-]{{0,31}})://)?(?<![-\w.])(?P<pod>{_LABEL}|{_SELF})\.(?P<service>{_LABEL})"
    rf"(?:\.(?P<namespace>{_LABEL})(?:\.svc(?:\.cluster\.local)?)?)?(?::(?P<port>\d{{1,5}}))?(?![-\w.$])"
)
SCHEME_PORTS = {"http": 80, "https": 443, "grpc": 80}
QDRANT_P2P_PORT = 6335


@dataclass(frozen=True)
class PodAddress:
    """A per-pod DNS name of ``statefulset``'s pods, as written, and the port it names (None where it names none)."""

    host: str
    statefulset: KubeObject
    service: str
    port: int | None


def governed(graph: Graph, region: str) -> dict[tuple[str, str], list[KubeObject]]:
    """(namespace, Service name) -> the StatefulSets that name it as their ``serviceName``."""
    out: dict[tuple[str, str], list[KubeObject]] = {}
    for obj in graph.kube(region, "StatefulSet"):
        name = (obj.manifest.get("spec") or {}).get("serviceName")
        if isinstance(name, str) and name:
            out.setdefault((obj.namespace, name), []).append(obj)
    return out


def pod_addresses(
    sets: dict[tuple[str, str], list[KubeObject]], text: str, namespace: str, writer: KubeObject | None
) -> Iterator[PodAddress]:
    """The per-pod DNS names of ``sets``' pods in ``text``, written in ``namespace`` by ``writer`` (a pod's own
    name resolves only under the set that runs it)."""
    for match in POD_DNS.finditer(text):
        key = (match["namespace"] or namespace, match["service"])
        port = int(match["port"]) if match["port"] else SCHEME_PORTS.get(match["scheme"] or "")
        for statefulset in sets.get(key, []):
            if match["pod"].startswith("$"):
                ours = writer is not None and writer.urn == statefulset.urn
            else:
                ours = re.fullmatch(rf"{re.escape(statefulset.name)}-\d+", match["pod"]) is not None
            if ours:
                yield PodAddress(match.group(0), statefulset, key[1], port)


def peer_ports(workload: KubeObject) -> Iterator[tuple[int, str]]:
    """(port, why) of each port ``workload``'s members must reach one another on: a clustered store's."""
    if workload.kind != "StatefulSet":
        return
    replicas = (workload.manifest.get("spec") or {}).get("replicas", 1)
    for container in (workload.pod_template().get("spec") or {}).get("containers") or []:
        if "qdrant" not in str(container.get("image") or "").rsplit("/", 1)[-1]:
            continue
        env = {str(e.get("name")): str(e.get("value")) for e in container.get("env") or [] if "value" in e}
        argv = " ".join(str(w) for key in ("command", "args") for w in container.get(key) or [])
        clustered = env.get("QDRANT__CLUSTER__ENABLED", "").lower() == "true" or "--bootstrap" in argv
        port = env.get("QDRANT__CLUSTER__P2P__PORT", str(QDRANT_P2P_PORT))
        if clustered and port.isdigit() and (not isinstance(replicas, int | float) or replicas > 1):
            yield int(port), f"Qdrant in distributed mode: its peers join and replicate over the p2p port {port}"
