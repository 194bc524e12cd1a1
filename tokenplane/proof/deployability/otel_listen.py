"""A collector's OTLP receiver that a Service fronts listens on the pod's address, not on its loopback.

Since OpenTelemetry Collector v0.104.0 the feature gate ``component.UseLocalHostAsDefaultHost`` is on by default
(beta in v0.104.0, then stable and removed: opentelemetry-collector#8510, PR #10352, contrib PR #33658), so a server
component without an ``endpoint`` binds ``localhost``: the OTLP receiver's ``protocols.grpc`` defaults to
``localhost:4317`` and ``protocols.http`` to ``localhost:4318`` (receiver/otlpreceiver README; contrib issue #34394).
In a pod that is the pod's own loopback: a Service's endpoints are the pod IP, so every connection through the Service
(or from another pod) is refused while the collector, whose health check may listen elsewhere, stays Ready and
``pulumi up`` succeeds. An endpoint written as ``localhost``/``127.0.0.0/8``/``[::1]`` does the same in any version.

Judged where the whole configuration is known (``otel_collector_config.collectors``), the receiver is ``otlp`` (or
``otlp/<name>``) in some pipeline, and a Service in the workload's namespace selects its pods on a port whose target
is the protocol's port (by number, or by a container port's name); the default endpoint only where the image tag is
a release at or after 0.104.0 whose argv does not turn the gate off (``--feature-gates=-component.
UseLocalHostAsDefaultHost``, possible while it was beta). Cannot see: an endpoint from ``${env:...}`` or another variable (the pod IP pattern
is right), an image without a version tag, other receivers' defaults, callers that reach the pod by other means.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.graph import number as as_number
from tokenplane.proof.deployability.otel_collector_config import (
    Collector,
    collectors,
    component_type,
    receivers_in_use,
    section,
)

RULE = "otel-receiver-loopback"
LOCALHOST_DEFAULT = (0, 104, 0)  # the first release with component.UseLocalHostAsDefaultHost on by default
GATE = "component.UseLocalHostAsDefaultHost"
OTLP_PORTS = {"grpc": 4317, "http": 4318}


def check(graph: Graph) -> Iterator[Finding]:
    for collector in collectors(graph):
        receivers = section(collector.config, "receivers")
        for rid in sorted(receivers_in_use(collector.config)):
            if component_type(rid) != "otlp" or rid not in receivers:
                continue
            protocols = (receivers.get(rid) or {}).get("protocols")
            if not isinstance(protocols, dict):
                continue
            for protocol, default_port in OTLP_PORTS.items():
                if protocol not in protocols:
                    continue
                settings = protocols.get(protocol)
                endpoint = settings.get("endpoint") if isinstance(settings, dict) else None
                found = _loopback(collector, endpoint, default_port)
                if found is None:
                    continue
                address, why = found
                port = int(address.rsplit(":", 1)[1])
                service = _fronting(graph, collector, port)
                if service is not None:
                    yield _finding(collector, rid, protocol, address, why, service, port)


def _loopback(collector: Collector, endpoint: Any, default_port: int) -> tuple[str, str] | None:
    """(the address it binds, why) where the receiver listens on loopback; None where not, or not known."""
    if endpoint is None:
        version = collector.version
        if version is None or version < LOCALHOST_DEFAULT or _gate_off(collector):
            return None
        shown = ".".join(map(str, version))
        return (
            f"localhost:{default_port}",
            f"it gives no endpoint, and since v0.104.0 (this image is {shown}) the component.UseLocalHostAsDefaultHost "
            "gate makes the default host localhost",
        )
    if not isinstance(endpoint, str) or "${" in endpoint or ":" not in endpoint:
        return None
    host, _, port = endpoint.rpartition(":")
    host = host.strip("[]")
    if not port.isdigit():
        return None
    try:
        loop = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return None
    return (f"{host}:{port}", f"its endpoint is {endpoint}") if loop else None


def _gate_off(collector: Collector) -> bool:
    """Whether the argv turns the gate off (``--feature-gates=-component.UseLocalHostAsDefaultHost``, while beta)."""
    words = [*(collector.container.get("command") or []), *(collector.container.get("args") or [])]
    return any(isinstance(w, str) and f"-{GATE}" in w for w in words)


def _fronting(graph: Graph, collector: Collector, port: int) -> KubeObject | None:
    """A Service in the collector's namespace that selects its pods on a port that targets ``port``."""
    workload = collector.workload
    labels = (workload.pod_template().get("metadata") or {}).get("labels") or {}
    named = {
        str(p.get("name")): as_number(p.get("containerPort"))
        for c in (workload.pod_template().get("spec") or {}).get("containers") or []
        for p in c.get("ports") or []
        if isinstance(p, dict) and p.get("name")
    }
    for service in graph.kube(workload.resource.region, "Service"):
        spec = service.manifest.get("spec") or {}
        selector = spec.get("selector")
        if service.namespace != workload.namespace or not isinstance(selector, dict) or not selector:
            continue
        if any(labels.get(k) != v for k, v in selector.items()):
            continue
        for entry in spec.get("ports") or []:
            target = entry.get("targetPort", entry.get("port")) if isinstance(entry, dict) else None
            resolved = named.get(target) if isinstance(target, str) else as_number(target)
            if resolved == port:
                return service
    return None


def _finding(
    collector: Collector, rid: str, protocol: str, address: str, why: str, service: KubeObject, port: int
) -> Finding:
    return Finding(
        RULE,
        collector.workload.urn,
        f"{collector.where}: receiver {rid}'s {protocol} server listens on {address} ({why}): that is the pod's "
        f"loopback, but Service {service.namespace}/{service.name} sends to the pod IP on {port}, so every "
        "connection through it is refused while the pods stay Ready, and no data reaches the pipeline",
        f"set receivers.{rid}.protocols.{protocol}.endpoint to the pod IP (${{env:MY_POD_IP}}:{port}, MY_POD_IP "
        f"from the downward API status.podIP) or 0.0.0.0:{port}",
    )
