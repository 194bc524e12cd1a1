"""Every Service has endpoints on a port its pods declare, and every probe asks a port its container declares.

Three invariants over the rendered pods and Services, none of which needs a caller of the Service (``flows.py``
checks the Services some pod calls; these hold for every Service and probe in the graph):

- ``service-selects``: a Service with a selector selects some pod template in its namespace (the workloads'
  and the modelled charts' pods, ``reachability.CHART_ENDPOINTS``). One that selects none has no endpoints:
  every connection to it is refused. In a namespace that holds a Helm release (its chart's other pods are not in
  the graph) only a typo is judged (``selectors.typo_fix``: one value one or two edits from a label of the
  program's own pods there); a Service without a selector is skipped (its endpoints are made by hand).
- ``service-target-port``: each port's ``targetPort`` is, by name, a port some container of every selected pod
  names, or, by number, one it declares. Kubernetes does not require a container to declare the port it listens
  on ("Not specifying a port here DOES NOT prevent that port from being exposed":
  https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#ports), and servers often listen
  on ports they do not declare (a collector's health check, an admin port), so a number is judged only for pods
  whose every container runs one of the program's known images (``known_images.known``: the serving image and
  vLLM's, whose ports the components declare in full). Chart pods are not judged (only some of their ports are
  modelled).
- ``headless-service-port``: a headless Service (``clusterIP: None``) with a selector translates no port: "For
  headless Services, a cluster IP is not allocated, kube-proxy does not handle these Services, and there is no load
  balancing or proxying done by the platform" (https://kubernetes.io/docs/concepts/services-networking/service/
  #headless-services); its name resolves to the pod IPs, and a caller of ``<name>:<port>`` connects to the pod on
  ``port``. So each port must be the port the selected pods listen on: a ``targetPort`` that resolves (by the
  container port's name, or as a number) to another number than ``port`` sends callers to a port where the pod
  has nothing (connection refused). Only the program's own pods are judged, and a named target only where a
  container names it (``service-target-port`` reports the rest).
- ``probe-port``: a readiness, liveness or startup probe (httpGet, tcpSocket or grpc) asks a port its container
  declares, by name or number. The kubelet resolves a named port in the container's own ports (an unknown name
  fails the probe); a number the container does not declare is judged only for a container of a known image, for
  the same reason as above (held-out set 37: an OpenTelemetry Collector probed on its health check port, 13133,
  beside a declared OTLP port, was a correct program this rule once flagged). A probe that fails keeps the pod unready (no endpoints) or restarts it.
  Also a probe that speaks another protocol than the port it asks: an ``httpGet`` (HTTP/1.1) to a port the
  container names or marks as gRPC (``appProtocol: grpc``/``kubernetes.io/h2c``, or a name ``grpc``/``grpc-*``
  but not ``grpc-web``, which is HTTP/1.1), which a gRPC server answers with a protocol error; a ``grpc`` probe
  to a port marked ``http``/``https``/``http-*``, where the kubelet's gRPC health call fails the same way.
- ``probe-host``: an ``httpGet`` or ``tcpSocket`` probe's ``host`` is the address the kubelet connects to ("Host
  name to connect to, defaults to the pod IP. You probably want to set "Host" in httpHeaders instead":
  https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#Probe). The kubelet runs on the
  node, in the node's network namespace and with the node's resolver, so a loopback host (``localhost``,
  ``127.0.0.0/8``, ``::1``, ``0.0.0.0``) probes the node itself, not the container (unless the pod runs with
  ``hostNetwork``, where the two are one), and a cluster DNS name (``*.svc``, ``*.cluster.local``, or the short
  name of a Service of the program) does not resolve there (an EKS node asks the VPC's resolver, which knows no
  cluster.local). Either way the probe never reaches the container it judges: a readiness probe keeps the pod out
  of its Services for ever (a Deployment's await times out), a liveness probe restarts it in a loop.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.deployability.known_images import known
from tokenplane.proof.deployability.reachability import Pod, Region, Service, ServicePort, pod_template, regions
from tokenplane.proof.deployability.selectors import typo_fix, typo_pods

SELECTS = "service-selects"
TARGET_PORT = "service-target-port"
PROBE_PORT = "probe-port"
PROBE_HOST = "probe-host"
HEADLESS_PORT = "headless-service-port"
LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")
CLUSTER_SUFFIXES = (".svc", ".cluster.local")
PROBES = ("readinessProbe", "livenessProbe", "startupProbe")
PROBE_HANDLERS = ("httpGet", "tcpSocket", "grpc")


def selects_nothing(region: Region, service: Service) -> bool:
    """``service-selects``' verdict: a Service of the program's own, in a namespace without a chart, whose
    selector matches no pod template. ``flows`` reads it too, so that one root cause gives one finding."""
    return (
        _has_backends(region, service) and not region.has_release_in(service.namespace) and not region.backends(service)
    )


def target_port_refused(region: Region, service: Service, pod: Pod, entry: ServicePort) -> str | None:
    """``service-target-port``'s verdict on one port of ``service`` for one pod it selects: why connections
    through it are refused, or None (not judged, or a port the pod names or declares). ``flows`` reads it too."""
    if pod.workload is None or not _has_backends(region, service):
        return None  # a chart's pods (only some of their ports are modelled), or a Service not of the program's own
    target = entry.target
    if isinstance(target, str) and not target.isdigit():
        return None if target in pod.ports else f"names port {target!r}, which no container of {pod} names"
    declared = _declared(pod)
    number = int(target)
    if not declared or number in declared.values() or not _ports_known(_containers(pod)):
        return None
    return f"targets port {number}, which no container of {pod} declares"


def check_selects(graph: Graph) -> Iterator[Finding]:
    for region in regions(graph):
        for service in region.services:
            if _has_backends(region, service) and region.has_release_in(service.namespace):
                yield from _charted_typo(graph, region, service)
            if not selects_nothing(region, service):
                continue
            labels = sorted(
                {f"{k}={v}" for p in region.pods if p.namespace == service.namespace for k, v in p.labels.items()}
            )
            yield Finding(
                SELECTS,
                service.urn,
                f"Service {service.namespace}/{service.name}'s selector {_labels(service.selector)} matches no pod "
                f"template in namespace {service.namespace}: it has no endpoints and every connection to it is "
                f"refused (the namespace's pods carry {', '.join(labels) or 'no labels'})",
                "make spec.selector equal the labels of the pod template that serves it (spec.template.metadata.labels)",
            )


def _charted_typo(graph: Graph, region: Region, service: Service) -> Iterator[Finding]:
    pods = typo_pods(graph, region, service.namespace)
    fix = typo_fix({"matchLabels": service.selector}, pods) if pods is not None else None
    if fix is not None:
        yield Finding(
            SELECTS,
            service.urn,
            f"Service {service.namespace}/{service.name}'s selector {_labels(service.selector)} matches none of the "
            f"program's pods in {service.namespace} nor its chart's, and they carry {fix} (one or two characters "
            "away): it has no endpoints and every connection to it is refused",
            f"correct the selector to {fix}, the label of the pods that serve it",
        )


def check_target_ports(graph: Graph) -> Iterator[Finding]:
    for region in regions(graph):
        for service in region.services:
            for pod in region.backends(service):
                for entry in service.ports:
                    why = target_port_refused(region, service, pod, entry)
                    if why is None:
                        continue
                    yield Finding(
                        TARGET_PORT,
                        service.urn,
                        f"Service {service.namespace}/{service.name} port {entry.port} {why} (its ports: "
                        f"{_ports(_declared(pod))}): connections through it are refused",
                        "set targetPort to one of the container's ports (its name, or its containerPort number), or "
                        "declare the port the process listens on in the container's ports",
                    )


def check_headless_ports(graph: Graph) -> Iterator[Finding]:
    for region in regions(graph):
        headless = {o.urn for o in graph.kube(region.name, "Service") if lookup(o.manifest, "spec.clusterIP") == "None"}
        for service in region.services:
            if service.urn not in headless or not _has_backends(region, service):
                continue
            for entry in service.ports:
                listens = {
                    f"{pod}: {n}"
                    for pod in region.backends(service)
                    if pod.workload is not None
                    for n in [_resolved(pod, entry.target)]
                    if n is not None and n != entry.port
                }
                if not listens:
                    continue
                yield Finding(
                    HEADLESS_PORT,
                    service.urn,
                    f"headless Service {service.namespace}/{service.name} (clusterIP: None) maps port {entry.port} "
                    f"to targetPort {entry.target!r} (pods {', '.join(sorted(listens))}), but a headless Service "
                    f"has no virtual IP and kube-proxy translates no port: its name resolves to the pod IPs and "
                    f"callers of {service.name}.{service.namespace}.svc:{entry.port} connect to the pods' port "
                    f"{entry.port}, where nothing listens (connection refused)",
                    "make port the number the pods listen on (that of its targetPort) and call that port, or drop "
                    "clusterIP: None so that the Service's cluster IP translates the port",
                )


def _resolved(pod: Pod, target: int | str) -> int | None:
    """The number a Service port's ``targetPort`` reaches on ``pod``: a name through the container ports that
    carry it (None where none does), a number as itself."""
    if isinstance(target, str) and not target.isdigit():
        return pod.ports.get(target)
    return int(target)


def check_probes(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        spec = pod_template(workload).get("spec") or {}
        for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            declared = {
                str(p.get("name") or p.get("containerPort")): int(p["containerPort"])
                for p in container.get("ports") or []
                if isinstance(p.get("containerPort"), int | float)
            }
            protocols = {str(p.get("containerPort")): _protocol(p) for p in container.get("ports") or []}
            protocols |= {str(p["name"]): _protocol(p) for p in container.get("ports") or [] if p.get("name")}
            for kind in PROBES:
                probe = container.get(kind) or {}
                for handler in PROBE_HANDLERS:
                    port = (probe.get(handler) or {}).get("port")
                    if port is None:
                        continue
                    speaks = protocols.get(str(port).removesuffix(".0"))
                    wants = HANDLER_SPEAKS[handler]
                    ports_known = _ports_known([container])
                    if _probe_port_ok(port, declared, ports_known) and None not in (speaks, wants) and speaks != wants:
                        yield Finding(
                            PROBE_PORT,
                            workload.urn,
                            f"{workload.kind} {workload.namespace}/{workload.name} container {container.get('name')}'s "
                            f"{kind} {handler} asks port {port!r}, which serves {speaks}: the probe speaks "
                            f"{HANDLER_SPEAKS[handler]}, so it always fails and "
                            + ("the pod never becomes ready" if kind != "livenessProbe" else "the kubelet restarts it"),
                            f"probe the container's {HANDLER_SPEAKS[handler]} port, or use a "
                            f"{'grpc' if speaks == 'gRPC' else 'httpGet'} probe",
                        )
                    if _probe_port_ok(port, declared, ports_known):
                        continue
                    yield Finding(
                        PROBE_PORT,
                        workload.urn,
                        f"{workload.kind} {workload.namespace}/{workload.name} container {container.get('name')}'s "
                        f"{kind} {handler} asks port {port!r}, which the container does not declare (its ports: "
                        f"{_ports(declared)}): the probe always fails, so "
                        + ("the pod never becomes ready" if kind != "livenessProbe" else "the kubelet restarts it"),
                        "point the probe at one of the container's ports (by name or number), or declare the port it "
                        "serves the probe on",
                    )


def check_probe_hosts(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        spec = pod_template(workload).get("spec") or {}
        services = {
            s.name for s in graph.kube(workload.resource.region, "Service") if s.namespace == workload.namespace
        }
        for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            for kind in PROBES:
                for handler in ("httpGet", "tcpSocket"):
                    host = str(((container.get(kind) or {}).get(handler) or {}).get("host") or "").strip()
                    why = _probe_host_misses(host, bool(spec.get("hostNetwork")), services) if host else None
                    if why is None:
                        continue
                    yield Finding(
                        PROBE_HOST,
                        workload.urn,
                        f"{workload.kind} {workload.namespace}/{workload.name} container {container.get('name')}'s "
                        f"{kind} {handler} sets host {host!r}: the kubelet makes the probe from the node, so {why}; "
                        "the probe never reaches the container and always fails, so "
                        + ("the pod never becomes ready" if kind != "livenessProbe" else "the kubelet restarts it"),
                        f"drop {handler}.host (the kubelet then probes the pod's own IP)"
                        + ("; to send a Host header, set it in httpGet.httpHeaders" if handler == "httpGet" else ""),
                    )


def _probe_host_misses(host: str, host_network: bool, services: set[str]) -> str | None:
    """Why a probe's ``host`` does not reach its container, from the node where the kubelet runs; None if it may."""
    name = host.strip("[]").rstrip(".").lower()
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        address = None
    loopback = name in LOOPBACK_NAMES or (address is not None and (address.is_loopback or address.is_unspecified))
    if loopback and not host_network:
        return "it connects to the node's own loopback, where the container does not listen"
    if name.endswith(CLUSTER_SUFFIXES) or (address is None and "." not in name and name in services):
        return (
            "it resolves the name with the node's resolver, which does not know the cluster's DNS names "
            "(and a Service's address would not be this pod's anyway)"
        )
    return None


HANDLER_SPEAKS = {"httpGet": "HTTP/1.1", "grpc": "gRPC", "tcpSocket": None}


def _protocol(port: dict[str, Any]) -> str | None:
    """What a container port serves, where its appProtocol or name says: ``gRPC``, ``HTTP/1.1``, or None."""
    marked = str(port.get("appProtocol") or port.get("name") or "").lower()
    if marked in ("grpc", "kubernetes.io/h2c") or (marked.startswith("grpc-") and "web" not in marked):
        return "gRPC"
    if marked in ("http", "https") or marked.startswith(("http-", "https-")):
        return "HTTP/1.1"
    return None


def _probe_port_ok(port: Any, declared: dict[str, int], ports_known: bool) -> bool:
    if isinstance(port, str) and not port.isdigit():
        return port in declared  # the kubelet resolves a name in the container's own ports, or fails the probe
    return not declared or not ports_known or int(float(port)) in declared.values()


def _ports_known(containers: list[dict[str, Any]]) -> bool:
    """Whether the containers' declared ports are all they listen on: each runs one of the program's known images
    (the serving image, vLLM's), whose ports the components declare; any other process may listen on more."""
    return bool(containers) and all(known(str(c.get("image") or "")) is not None for c in containers)


def _containers(pod: Pod) -> list[dict[str, Any]]:
    if pod.workload is None:
        return []
    spec = pod_template(pod.workload).get("spec") or {}
    return [c for c in spec.get("containers") or [] if isinstance(c, dict)]


def _has_backends(region: Region, service: Service) -> bool:
    """A Service of the program's own that sends to pods: a selector, not ExternalName, not a chart's modelled one."""
    return (
        bool(service.selector)
        and service.kind != "ExternalName"
        and service.urn not in {r.urn for r in region.releases}
    )


def _declared(pod: Pod) -> dict[str, int]:
    """Name (or number, for an unnamed one) -> containerPort of every container port the pod declares."""
    if pod.workload is None:
        return dict(pod.ports)
    spec = pod_template(pod.workload).get("spec") or {}
    return {
        str(p.get("name") or p.get("containerPort")): int(p["containerPort"])
        for c in spec.get("containers") or []
        for p in c.get("ports") or []
        if isinstance(p.get("containerPort"), int | float)
    }


def _labels(selector: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in selector.items()) + "}"


def _ports(declared: dict[str, int]) -> str:
    return ", ".join(f"{n}={p}" if n != str(p) else str(p) for n, p in declared.items()) or "none declared"
