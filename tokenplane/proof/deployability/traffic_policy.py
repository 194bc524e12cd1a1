"""A Service with ``internalTrafficPolicy: Local`` has a backend on every node its callers may run on.

With Local, kube-proxy sends a pod's traffic to the Service only to endpoints on that pod's own node, "dropping the
traffic if there are no local endpoints" (the Service API reference;
https://kubernetes.io/docs/concepts/services-networking/service-traffic-policy/): a caller on a node without a
backend sees its connections hang and time out, even while other nodes serve. That holds only for node agents: a
DaemonSet whose placement covers the caller's. A Deployment's or StatefulSet's few replicas sit on a few nodes, so
callers elsewhere (a Job on whichever node has room, more of them as the autoscaler adds nodes) fail. ``pulumi up``
succeeds.

A caller is a pod whose command, args or env name the Service (``service_names``: ``NAME.NAMESPACE[.svc...]``, or
its short name in its own namespace). A DaemonSet backend covers a caller when it has no required node affinity and
its nodeSelector is a subset of the caller's.

It cannot see: callers that read the address from a file or ConfigMap, taints that keep a DaemonSet off a node, and
callers outside the program.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.reachability import selects
from tokenplane.proof.deployability.service_names import named_services

RULE = "internal-traffic-local"


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        local = [
            s
            for s in graph.kube(region, "Service")
            if lookup(s.manifest, "spec.internalTrafficPolicy") == "Local" and lookup(s.manifest, "spec.selector")
        ]
        if not local:
            continue
        bearers = graph.pod_bearers(region)
        calls = {w.urn: list(named_services(graph, region, w)) for w in bearers}
        for service in local:
            selector = {"matchLabels": lookup(service.manifest, "spec.selector")}
            backends = [
                w
                for w in bearers
                if w.namespace == service.namespace
                and selects(selector, lookup(w.pod_template(), "metadata.labels") or {})
            ]
            if not backends:
                continue  # a Service that selects nothing is another rule's finding
            for caller in bearers:
                if caller in backends:
                    continue
                named = next(
                    (n for n in calls[caller.urn] if (n.namespace, n.name) == (service.namespace, service.name)), None
                )
                if named is None or any(_covers(b, caller) for b in backends):
                    continue
                kinds = ", ".join(sorted(f"{b.kind} {b.name}" for b in backends))
                yield Finding(
                    RULE,
                    service.urn,
                    f"Service {service.namespace}/{service.name} sets spec.internalTrafficPolicy: Local, and "
                    f"{caller.kind} {caller.namespace}/{caller.name} calls it ({named.where}: {named.host!r}), but its "
                    f"backends ({kinds}) are not on every node the caller may run on: kube-proxy drops a caller's "
                    "traffic when its node has no local endpoint, so its calls hang and fail on most nodes",
                    "drop internalTrafficPolicy (Cluster, the default, routes to every ready endpoint); keep Local only "
                    "for a DaemonSet backend that runs on every node its callers run on",
                )


def _covers(backend: KubeObject, caller: KubeObject) -> bool:
    """A DaemonSet backend placed on every node the caller may be placed on."""
    if backend.kind != "DaemonSet":
        return False
    pod: dict[str, Any] = backend.pod_template().get("spec") or {}
    if lookup(pod, "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"):
        return False
    wanted = (pod.get("nodeSelector") or {}).items()
    have = ((caller.pod_template().get("spec") or {}).get("nodeSelector") or {}).items()
    return all(item in have for item in wanted)
