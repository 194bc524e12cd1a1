"""A NetworkPolicy that admits a Service's port, where the Service sends to another pod port, admits nothing.

A NetworkPolicy is enforced on the pod's own traffic, after kube-proxy (or the CNI's service handling) has
translated the Service's address and ``port`` to a pod's address and ``targetPort``. The API says so of
``NetworkPolicyPort.port``: "This can either be a numerical or named port on a pod"
(networking.k8s.io/v1; https://kubernetes.io/docs/concepts/services-networking/network-policies/). So an
ingress rule for port 80 in front of pods that listen on 8080 behind a Service ``80 -> 8080`` matches no
packet: the rule's peers, which the policy was written to let in, call the Service and are dropped by the
default-deny.

Each such rule is a declared flow: its peers (the pods the graph has that match them, or one stand-in per
peer when none does) -> the Service's port -> the pod's port, judged by ``reachability``'s model on the pod
port like every other ``flow-allowed`` flow. Headless Services are left alone (clients reach the pods on
their own port, with no translation), as are pods that declare the policy's port themselves.

A named port in an ingress rule is resolved against each selected pod's own container ports ("a numerical or
named port on a pod"): where no pod the policy selects names a port so, the rule admits nothing, and its peers
are dropped by the default deny. Judged where every selected pod is one of the program's own.

It cannot see: peers written as ipBlocks or matchExpressions (no stand-in can be built for them), port ranges
(``endPort``), and Services made by Helm charts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import KubeObject
from tokenplane.proof.deployability.reachability import (
    NAMESPACE_NAME_LABEL,
    Pod,
    Region,
    Service,
    describe_peer,
    selects,
)

FLOW = "flow-allowed"  # flows.FLOW: the same invariant, for flows a policy declares


def check(region: Region) -> Iterator[Finding]:
    headless = {
        s.urn
        for s in region.graph.kube(region.name, "Service")
        if (s.manifest.get("spec") or {}).get("clusterIP") == "None"
    }
    for policy in region.policies:
        spec = policy.manifest.get("spec") or {}
        targets = [
            p
            for p in region.pods
            if p.workload is not None and p.namespace == policy.namespace and selects(spec.get("podSelector"), p.labels)
        ]
        for rule in spec.get("ingress") or []:
            if not region.has_release_in(policy.namespace):  # else a chart's pods, not in the graph, may name it
                yield from _unnamed(policy, rule, targets)
            for entry in rule.get("ports") or []:
                port = entry.get("port")
                if (
                    isinstance(port, bool)
                    or not isinstance(port, int | float)
                    or entry.get("endPort")
                    or str(entry.get("protocol", "TCP")) != "TCP"
                ):
                    continue
                for target in targets:
                    if int(port) in _listens(target):
                        continue
                    for service in region.services:
                        if service.urn in headless or target not in region.backends(service):
                            continue
                        pod_port = _translated(service, target, int(port))
                        if pod_port is not None and pod_port != port:
                            yield from _judge(region, policy, rule, service, target, int(port), pod_port)


def _unnamed(policy: KubeObject, rule: dict[str, Any], targets: list[Pod]) -> Iterator[Finding]:
    """An ingress rule's named port that no pod the policy selects names: the rule admits nothing."""
    if not targets:
        return
    names = {str(n) for t in targets for n in _port_names(t)}
    for entry in rule.get("ports") or []:
        port = entry.get("port")
        if isinstance(port, str) and not port.isdigit() and port not in names:
            yield Finding(
                FLOW,
                policy.urn,
                f"NetworkPolicy {policy.namespace}/{policy.name} admits named port {port!r}, which no pod it selects "
                f"names ({', '.join(sorted({t.name for t in targets}))}: ports {', '.join(sorted(names)) or 'none named'}): "
                "a named port is resolved against the pod's own container ports, so the rule admits nothing and "
                "its peers' traffic stays denied",
                f"name the container port {port!r}, or give the rule the pod's port (one of: "
                f"{', '.join(sorted(names)) or 'its containerPort number'})",
            )


def _port_names(pod: Pod) -> set[str]:
    spec = pod.workload.pod_template().get("spec") or {} if pod.workload is not None else {}
    return {str(p["name"]) for c in spec.get("containers") or [] for p in c.get("ports") or [] if p.get("name")}


def _listens(pod: Pod) -> set[int]:
    """Every container port the pod declares, named or not."""
    spec = pod.workload.pod_template().get("spec") or {} if pod.workload is not None else {}
    return {
        int(p["containerPort"])
        for c in spec.get("containers") or []
        for p in c.get("ports") or []
        if isinstance(p.get("containerPort"), int | float)
    }


def _translated(service: Service, pod: Pod, port: int) -> int | None:
    """The pod port the Service sends its ``port`` to (None: it has no such port, or names none the pod has)."""
    entry = next((p for p in service.ports if p.port == port), None)
    if entry is None:
        return None
    if isinstance(entry.target, int | float) or str(entry.target).isdigit():
        return int(entry.target)
    return pod.ports.get(str(entry.target))


def _judge(
    region: Region,
    policy: KubeObject,
    rule: dict[str, Any],
    service: Service,
    target: Pod,
    port: int,
    pod_port: int,
) -> Iterator[Finding]:
    for peer in rule.get("from") or [{}]:
        sources = _sources(region, policy.namespace, peer)
        verdicts = [(s, region.pod_ingress(s, target, pod_port)) for s in sources]
        # Only the destination's side: a source's own egress policy is judged by the flows it declares itself.
        blocked = [(s, v) for s, v in verdicts if not v.allowed and v.direction == "ingress"]
        if not blocked:
            continue
        named = next((n for n, p in target.ports.items() if p == pod_port), None)
        verdict = blocked[0][1]
        yield Finding(
            FLOW,
            policy.urn,
            f"NetworkPolicy {policy.namespace}/{policy.name} admits {describe_peer(peer) if peer else 'anyone'} on "
            f"TCP {port}, the port of Service {service.namespace}/{service.name}; but a policy's ports are the pod's "
            f"ports, matched after the Service has sent {port} to {target}:{pod_port}: the declared flow "
            f"{', '.join(str(s) for s, _ in blocked[:3])} -> {service.name}.{service.namespace}.svc:{port} -> "
            f"{target}:{pod_port} is blocked ({'; '.join(verdict.blockers)}), so every call from them is dropped",
            f"admit port {pod_port}{f' (or the named port {named!r})' if named else ''} in that rule, the port the "
            f"pod listens on behind the Service",
        )


def _sources(region: Region, namespace: str, peer: dict[str, Any]) -> list[Pod]:
    """The graph's pods a peer matches; or one stand-in built from its selectors when none does."""
    if "ipBlock" in peer:
        return []
    real = [
        p
        for p in region.pods
        if p.workload is not None
        and (
            selects(peer["namespaceSelector"], region.namespace_labels(p.namespace))
            if "namespaceSelector" in peer
            else p.namespace == namespace
        )
        and selects(peer.get("podSelector"), p.labels)
    ]
    if real:
        return real
    selectors = [peer.get("namespaceSelector") or {}, peer.get("podSelector") or {}]
    if any(s.get("matchExpressions") for s in selectors):
        return []
    ns = namespace
    if "namespaceSelector" in peer:
        wanted = selectors[0].get("matchLabels") or {}
        ns = str(wanted.get(NAMESPACE_NAME_LABEL) or "")
        if not ns:
            ns = next((n for n, labels in region.namespaces.items() if selects(selectors[0], labels)), "")
        if not ns:
            return []
    labels = {str(k): str(v) for k, v in (selectors[1].get("matchLabels") or {}).items()}
    return [Pod(f"stand-in:{ns}", ns, f"a pod matching {describe_peer(peer)}", labels, {})]
