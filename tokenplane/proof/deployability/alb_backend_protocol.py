"""An ALB Ingress speaks to its targets the protocol they serve.

The AWS Load Balancer Controller creates each target group of an ALB Ingress with the protocol of
``alb.ingress.kubernetes.io/backend-protocol`` (HTTP by default; a backend Service's own annotation overrides the
Ingress's: https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/ingress/annotations/
#backend-protocol). With HTTPS the ALB opens a TLS connection to each target: a target that serves plain HTTP fails
the handshake, and the ALB answers every request it forwards there with 502 Bad Gateway
(https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-troubleshooting.html
#http-502-issues: "The load balancer encountered an SSL handshake error ... when connecting to a target"). With
HTTP to a port that serves only TLS, nginx answers every request 400 ("The plain HTTP request was sent to HTTPS
port"), so health checks fail and clients get no page. ``pulumi up`` succeeds either way: the load balancer is
built and never serves.

A backend's protocol is known for the program's own pods only: nginx (``nginx``, ``nginxinc/nginx-unprivileged``)
whose config files the program mounts (``nginx_listen``: every ``listen`` of the target port without ``ssl`` is
plain HTTP, every one with it TLS only), and the program's known servers (``known_images.get_routes``: the serving
image's modules and vLLM's OpenAI server, uvicorn without ``--ssl-keyfile``/``--ssl-certfile``), which serve plain
HTTP. It cannot see: images other than those, nginx configs from outside the program (or an image's own), Services
of other namespaces or without a selector, and pods of Helm charts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.known_images import get_routes
from tokenplane.proof.deployability.lb_permissions import is_alb
from tokenplane.proof.deployability.nginx_listen import listens

RULE = "alb-backend-protocol"
ANNOTATION = "alb.ingress.kubernetes.io/backend-protocol"
TLS_FLAGS = ("--ssl-keyfile", "--ssl-certfile", "ssl_keyfile", "ssl_certfile")
PLAIN, TLS = "HTTP", "HTTPS"


def check(graph: Graph) -> Iterator[Finding]:
    for ingress in graph.kube(None, "Ingress"):
        if not is_alb(ingress):
            continue
        region = ingress.resource.region
        own = _annotations(ingress.manifest).get(ANNOTATION)
        services = {s.name: s for s in graph.kube(region, "Service") if s.namespace == ingress.namespace}
        seen: set[tuple[str, str]] = set()
        for backend in _backends(ingress.manifest):
            service = services.get(str(lookup(backend, "name") or ""))
            if service is None:
                continue
            wanted = _annotations(service.manifest).get(ANNOTATION, own)
            protocol = (wanted if isinstance(wanted, str) else PLAIN).strip().upper()
            if protocol not in (PLAIN, TLS):
                continue  # controller-values reports it
            target = _target(service.manifest, lookup(backend, "port") or {})
            if target is None or (service.name, str(target)) in seen:
                continue
            seen.add((service.name, str(target)))
            served = _served(graph, region, service, target)
            if served is None or served[0] == protocol:
                continue
            serves, why = served
            key = ANNOTATION if isinstance(wanted, str) else f"{ANNOTATION} (unset: HTTP)"
            effect = (
                "the ALB's TLS handshake with every target fails and each request it forwards gets 502 Bad Gateway"
                if protocol == TLS
                else "nginx answers each request 400 (The plain HTTP request was sent to HTTPS port), so health "
                "checks fail and no client gets a page"
            )
            yield Finding(
                RULE,
                ingress.urn,
                f"ALB Ingress {ingress.namespace}/{ingress.name} sends {protocol} ({key}) to Service {service.name} "
                f"port {target}, where {why} serves {serves} only: {effect}; `pulumi up` succeeds and the load "
                "balancer never serves",
                f"set {ANNOTATION}: {serves} (on the Ingress or the Service {service.name})"
                + (", or serve TLS on that port" if protocol == TLS else ""),
            )


def _annotations(manifest: dict[str, Any]) -> dict[str, Any]:
    return lookup(manifest, "metadata.annotations") or {}


def _backends(manifest: dict[str, Any]) -> Iterator[dict[str, Any]]:
    default = lookup(manifest, "spec.defaultBackend.service")
    if isinstance(default, dict):
        yield default
    for rule in lookup(manifest, "spec.rules") or []:
        for path in lookup(rule, "http.paths") or []:
            service = lookup(path, "backend.service")
            if isinstance(service, dict):
                yield service


def _target(service: dict[str, Any], port: dict[str, Any]) -> int | str | None:
    """The Service port's targetPort (a number or a container port's name) the Ingress backend's port names."""
    for entry in lookup(service, "spec.ports") or []:
        number = entry.get("port")
        if (port.get("name") is not None and port.get("name") == entry.get("name")) or (
            isinstance(port.get("number"), int | float) and number == port.get("number")
        ):
            target = entry.get("targetPort", number)
            if isinstance(target, float):
                target = int(target)
            return target if isinstance(target, int | str) else None
    return None


def _served(graph: Graph, region: str | None, service: KubeObject, target: int | str) -> tuple[str, str] | None:
    """The protocol every selected pod serves on ``target`` (and what says so), or None where any is unknown."""
    selector = lookup(service.manifest, "spec.selector")
    if not isinstance(selector, dict) or not selector:
        return None
    verdicts: set[str] = set()
    why = ""
    for workload in graph.workloads(region):
        if workload.namespace != service.namespace:
            continue
        labels = lookup(workload.pod_template(), "metadata.labels") or {}
        if any(labels.get(k) != v for k, v in selector.items()):
            continue
        pod = workload.pod_spec()
        found = _container_port(pod, target)
        if found is None:
            return None
        container, port = found
        verdict = _protocol(graph, workload, pod, container, port)
        if verdict is None:
            return None
        verdicts.add(verdict[0])
        why = f"{workload.kind} {workload.name}'s container {container.get('name')} ({verdict[1]})"
    if len(verdicts) != 1:
        return None
    return verdicts.pop(), why


def _container_port(pod: dict[str, Any], target: int | str) -> tuple[dict[str, Any], int] | None:
    for container in pod.get("containers") or []:
        for port in container.get("ports") or []:
            number = port.get("containerPort")
            if not isinstance(number, int | float):
                continue
            if (isinstance(target, str) and port.get("name") == target) or (
                isinstance(target, int) and int(number) == target
            ):
                return container, int(number)
    return None


def _protocol(
    graph: Graph, workload: KubeObject, pod: dict[str, Any], container: dict[str, Any], port: int
) -> tuple[str, str] | None:
    image = str(container.get("image") or "")
    found = listens(graph, workload, pod, container)
    if found is not None:
        on_port = [item for item in found if item.port == port]
        if not on_port:
            return None
        tls = {item.tls for item in on_port}
        if len(tls) != 1:
            return None
        files = ", ".join(sorted({item.file for item in on_port}))
        return (
            (TLS, f"its mounted {files} listens on {port} with ssl")
            if tls.pop()
            else (
                PLAIN,
                f"its mounted {files} listens on {port} without ssl",
            )
        )
    if get_routes(container) is not None:
        argv = " ".join(str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])])
        if any(flag in argv for flag in TLS_FLAGS):
            return None
        return PLAIN, f"the program's known server {image}, plain HTTP"
    return None
