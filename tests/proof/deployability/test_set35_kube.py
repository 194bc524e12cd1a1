"""The rules set 35's Kubernetes misses led to (written after its blind run, so not held out), planted in the shipped
dev render beside correct twins: a port protocol not written in capitals, on a container or a Service port
(api-validation), and an nginx image run with an argv that drops the CMD's ``-g 'daemon off;'`` (image-command). The
planted defects differ from the held-out cases' (a Deployment's container port "tcp"; nginx-unprivileged run with
command ["nginx"]): "udp", "Tcp" and "HTTP" on containers, init containers and Services of other kinds; the official
nginx image by other names, nginx by path, through the entrypoint with args alone, ``nginx-debug``, ``daemon on;``,
other -g directives."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import api_validation, image_commands
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
KINDS = {
    "Deployment": "kubernetes:apps/v1:Deployment",
    "StatefulSet": "kubernetes:apps/v1:StatefulSet",
    "DaemonSet": "kubernetes:apps/v1:DaemonSet",
    "Job": "kubernetes:batch/v1:Job",
    "Pod": "kubernetes:core/v1:Pod",
    "Service": "kubernetes:core/v1:Service",
}


def _workload(kind: str, name: str, containers: list[dict[str, Any]], **pod: Any) -> RenderedResource:
    labels = {"app.kubernetes.io/name": name}
    pod_spec = {"containers": containers, **pod}
    metadata = {"name": name, "namespace": "llm-batch"}
    if kind == "Pod":
        manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {**metadata, "labels": labels}, "spec": pod_spec}
        return planted(STACK, KINDS[kind], name, manifest, region=REGION)
    spec: dict[str, Any] = {"template": {"metadata": {"labels": labels}, "spec": pod_spec}}
    if kind != "Job":
        spec["selector"] = {"matchLabels": labels}
    if kind == "StatefulSet":
        spec["serviceName"] = name
    api = "batch/v1" if kind == "Job" else "apps/v1"
    manifest = {"apiVersion": api, "kind": kind, "metadata": metadata, "spec": spec}
    return planted(STACK, KINDS[kind], name, manifest, region=REGION)


def _container(image: str = "busybox:1.36", **fields: Any) -> dict[str, Any]:
    return {"name": "app", "image": image, **fields}


# --- api-validation: a port's protocol ---------------------------------------------------------------------------


def _protocol_findings(*resources: RenderedResource) -> list[str]:
    return [f.message for f in planted_findings(api_validation.check, *resources) if ".protocol" in f.message]


@pytest.mark.parametrize(
    ("kind", "protocol", "init"),
    [("Deployment", "udp", False), ("StatefulSet", "Tcp", True), ("DaemonSet", "HTTP", False), ("Pod", "sctp", False)],
)
def test_a_container_port_protocol_is_tcp_udp_or_sctp_in_capitals(kind: str, protocol: str, init: bool) -> None:
    port = {"name": "dns", "containerPort": 5353.0, "protocol": protocol}  # a float, as Pulumi may send an int
    container = _container(ports=[{"containerPort": 80, "protocol": "TCP"}, port])
    pod: dict[str, Any] = {"initContainers": [{**container, "name": "init"}]} if init else {}
    main = _container() if init else container
    name = f"planted-protocol-{kind.lower()}"
    [message] = _protocol_findings(_workload(kind, name, [main], **pod))
    assert f"{'initContainers[init]' if init else 'containers[app]'}.ports[1].protocol {protocol!r}" in message, message
    assert f'validateContainerPorts: Unsupported value: "{protocol}": supported values: "SCTP", "TCP", "UDP"' in (
        message
    ), message


def test_container_ports_in_capitals_or_without_protocol_are_accepted() -> None:
    ports = [
        {"containerPort": 53, "protocol": "UDP"},
        {"containerPort": 80, "protocol": "TCP"},
        {"containerPort": 132, "protocol": "SCTP"},
        {"containerPort": 8080},
    ]
    twin = _workload("Deployment", "planted-protocol-twin", [_container(ports=ports)])
    assert _protocol_findings(twin) == []


def _service(name: str, ports: list[dict[str, Any]], kind: str = "ClusterIP") -> RenderedResource:
    manifest = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "llm-batch"},
        "spec": {"type": kind, "selector": {"app": name}, "ports": ports},
    }
    return planted(STACK, KINDS["Service"], name, manifest, region=REGION)


@pytest.mark.parametrize(
    ("protocol", "kind"), [("tcp", "ClusterIP"), ("Udp", "NodePort"), ("sctp", "LoadBalancer"), ("HTTPS", "ClusterIP")]
)
def test_a_service_port_protocol_is_tcp_udp_or_sctp_in_capitals(protocol: str, kind: str) -> None:
    ports = [{"name": "web", "port": 80, "protocol": "TCP"}, {"name": "other", "port": 9000, "protocol": protocol}]
    [message] = _protocol_findings(_service(f"planted-svc-{protocol.lower()}", ports, kind))
    assert f"spec.ports[1].protocol {protocol!r}" in message, message
    assert f'validateServicePort: Unsupported value: "{protocol}"' in message, message


def test_service_ports_in_capitals_or_without_protocol_are_accepted() -> None:
    ports = [
        {"name": "dns", "port": 53, "protocol": "UDP"},
        {"name": "web", "port": 80},
        {"name": "sctp", "port": 132, "protocol": "SCTP"},
    ]
    assert _protocol_findings(_service("planted-svc-twin", ports)) == []


# --- image-command: nginx kept in the foreground ----------------------------------------------------------------


def _daemon_findings(*resources: RenderedResource) -> list[str]:
    found = planted_findings(image_commands.check, *resources)
    return [f.message for f in found if "daemon" in f.message]


@pytest.mark.parametrize(
    ("kind", "image", "fields"),
    [
        ("Deployment", "nginx:1.27.4", {"command": ["/usr/sbin/nginx"]}),
        # args alone go through the image's /docker-entrypoint.sh, which execs them
        ("StatefulSet", "docker.io/library/nginx:stable-alpine", {"args": ["nginx", "-g", "pid /tmp/nginx.pid;"]}),
        ("DaemonSet", "public.ecr.aws/nginx/nginx-unprivileged:1.27", {"command": ["nginx-debug", "-g", "daemon on;"]}),
        ("Pod", "nginx@sha256:" + "0" * 64, {"command": ["nginx"], "args": ["-e", "stderr", "-q"]}),
        (
            "Deployment",
            "nginxinc/nginx-unprivileged:1.26",
            {"command": ["nginx", "-g", "daemon off;", "-g", "daemon on;"]},
        ),
    ],
)
def test_nginx_run_without_daemon_off_exits_at_once(kind: str, image: str, fields: dict[str, Any]) -> None:
    name = f"planted-nginx-{kind.lower()}"
    [message] = _daemon_findings(_workload(kind, name, [_container(image, **fields)]))
    assert f"{kind} llm-batch/{name}" in message, message
    assert "replaces the image's CMD ['nginx', '-g', 'daemon off;']" in message, message
    assert "forks into the background" in message and "CrashLoopBackOff" in message, message


def test_a_sidecar_init_container_running_nginx_daemonized_is_judged_too() -> None:
    sidecar = _container("nginx:1.27", name="proxy", restartPolicy="Always", command=["nginx"])
    [message] = _daemon_findings(
        _workload("Deployment", "planted-nginx-sidecar", [_container()], initContainers=[sidecar])
    )
    assert "container proxy of Deployment" in message, message


@pytest.mark.parametrize(
    ("kind", "image", "fields", "pod"),
    [
        ("Deployment", "nginx:1.27", {"command": ["nginx", "-g", "daemon off;"]}, {}),
        ("Deployment", "nginx:1.27", {"command": ["nginx", "-gdaemon off; pid /tmp/nginx.pid;"]}, {}),
        ("Deployment", "nginx:1.27", {}, {}),  # the image's own CMD
        ("Deployment", "nginxinc/nginx-unprivileged:1.27", {"args": ["nginx", "-g", "daemon off;"]}, {}),
        ("Deployment", "nginx:1.27", {"command": ["nginx", "-t"]}, {}),  # tests the config, serves nothing
        ("Deployment", "nginx:1.27", {"command": ["sh", "-c", "nginx"]}, {}),  # a shell: not judged
        ("Deployment", "nginx:1.27", {"command": ["nginx", "-c", "/config/nginx.conf"]}, {}),
        (
            "Deployment",
            "nginx:1.27",
            {"command": ["nginx"], "volumeMounts": [{"name": "conf", "mountPath": "/etc/nginx"}]},
            {"volumes": [{"name": "conf", "configMap": {"name": "conf"}}]},
        ),
        ("Job", "nginx:1.27", {"command": ["nginx"]}, {"restartPolicy": "Never"}),  # an exit 0 completes a Job
        ("Deployment", "bitnami/nginx:1.27", {"command": ["nginx"]}, {}),  # an image the program does not know
        ("Deployment", "busybox:1.36", {"command": ["nginx"]}, {}),
    ],
)
def test_nginx_kept_in_the_foreground_or_not_known_is_not_judged(
    kind: str, image: str, fields: dict[str, Any], pod: dict[str, Any]
) -> None:
    assert _daemon_findings(_workload(kind, "planted-nginx-twin", [_container(image, **fields)], **pod)) == []
