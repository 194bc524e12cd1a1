"""Two pods that may share a node never hold the same host port.

A host port is a node's own: the scheduler's NodePorts filter refuses a node where another pod already holds the
pod's ``hostPort``/protocol on an overlapping ``hostIP`` ("0/N nodes are available: N node(s) didn't have free ports
for the requested pod ports"), and a pod with ``hostNetwork: true`` holds every ``containerPort`` it declares as a host
port (the API server defaults ``hostPort`` to ``containerPort`` there).
https://kubernetes.io/docs/concepts/configuration/overview/#services ("each <hostIP, hostPort, protocol> combination
must be unique"); kubernetes/kubernetes ``pkg/scheduler/framework/plugins/nodeports/node_ports.go``
(``ErrReason = "node(s) didn't have free ports for the requested pod ports"``).

A DaemonSet puts a pod on every node it may land on, so a second pod there asking the same port stays Pending on
each such node (and the DaemonSet whose pod loses never becomes ready: pulumi's await on its rollout times out).
This rule pairs each DaemonSet holding a host port with every other pod template (the program's, and the DaemonSets
of the charts it installs) asking the same port, where the node groups both may land on overlap
(``scheduling.lands_on``). Two Deployments or StatefulSets sharing a port are left alone: the scheduler spreads
them over nodes while there are enough.

The charts' DaemonSets are read from their values with the charts' defaults (``CHART_DAEMONSETS``):
kube-prometheus-stack's prometheus-node-exporter subchart (prometheus-community/helm-charts,
``charts/kube-prometheus-stack/values.yaml``: ``nodeExporter.enabled: true``;
``charts/prometheus-node-exporter/values.yaml``: ``hostNetwork: true``, ``service.port: 9100``,
``nodeSelector: {kubernetes.io/os: linux}``, ``tolerations: [{effect: NoSchedule, operator: Exists}]``;
``templates/daemonset.yaml`` declares ``containerPort: {{ .Values.service.port }}``). The pod's other host-facing
fields are modelled too, for ``pod_security`` (Pod Security admission): ``hostPID: true``, ``hostIPC: false``,
``securityContext`` {runAsNonRoot, runAsUser/runAsGroup/fsGroup 65534}, ``containerSecurityContext``
{readOnlyRootFilesystem}, and the hostPath volumes the template always mounts (``/proc``, ``/sys``; ``/`` while
``hostRootFsMount.enabled``, true by default).

Cannot see: ports opened by a process in a hostNetwork pod that it does not declare; nodes outside the program's
managed node groups (a region without node groups is not judged); other charts' DaemonSets.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, NODE_GROUP, Graph, lookup
from tokenplane.proof.deployability.scheduling import NodeGroup, lands_on
from tokenplane.proof.deployability.service_addresses import subchart_fullname
from tokenplane.proof.render import RenderedResource

RULE = "host-port-free"
ANY_IP = ("", "0.0.0.0", "::")


@dataclass(frozen=True)
class ChartDaemonSet:
    """A DaemonSet a chart runs with host ports: its subchart's values key, the chart's values path that enables
    it and its default, and the subchart's defaults for the pod fields that place it and the port it holds."""

    subchart: str
    enabled_path: str
    enabled: bool
    host_network: bool
    port_path: str
    port: int
    node_selector: dict[str, str]
    tolerations: tuple[dict[str, str], ...]
    host_pid: bool = False
    host_ipc: bool = False
    # (volume name, host path, the values path that switches it, None where always mounted, and its default)
    host_paths: tuple[tuple[str, str, str | None, bool], ...] = ()
    security_context: tuple[tuple[str, Any], ...] = ()  # the pod's, as the subchart's values default it
    container_security_context: tuple[tuple[str, Any], ...] = ()


CHART_DAEMONSETS: dict[str, tuple[ChartDaemonSet, ...]] = {
    "kube-prometheus-stack": (
        ChartDaemonSet(
            subchart="prometheus-node-exporter",
            enabled_path="nodeExporter.enabled",
            enabled=True,
            host_network=True,
            port_path="service.port",
            port=9100,
            node_selector={"kubernetes.io/os": "linux"},
            tolerations=({"effect": "NoSchedule", "operator": "Exists"},),
            host_pid=True,
            host_ipc=False,
            host_paths=(
                ("proc", "/proc", None, True),
                ("sys", "/sys", None, True),
                ("root", "/", "hostRootFsMount.enabled", True),
            ),
            security_context=(("fsGroup", 65534), ("runAsGroup", 65534), ("runAsNonRoot", True), ("runAsUser", 65534)),
            container_security_context=(("readOnlyRootFilesystem", True),),
        ),
    ),
}


@dataclass(frozen=True)
class PodTemplate:
    """A pod template that may hold host ports: who declares it, its kind and name, and its pod spec."""

    urn: str
    kind: str
    name: str
    pod: dict[str, Any]
    chart: bool = False  # run by a chart the program installs, not declared by the program


def _value(values: Any, path: str, default: Any) -> Any:
    """The value at ``path`` as Helm makes it: the release's, merged into the chart's default where both are maps
    (Helm coalesces maps key by key and replaces everything else)."""
    found = lookup(values, path)
    if isinstance(found, dict) and isinstance(default, dict):
        return {k: v for k, v in {**default, **found}.items() if v is not None}  # null deletes a default key
    return default if found is None else found


def chart_pods(release: RenderedResource) -> list[PodTemplate]:
    """The DaemonSets with host ports the release's chart runs, as its values make them."""
    values = release.inputs.get("values") or {}
    namespace = str(release.inputs.get("namespace") or "default")
    out = []
    for ds in CHART_DAEMONSETS.get(str(release.inputs.get("chart")), ()):
        if not _value(values, ds.enabled_path, ds.enabled):
            continue
        sub = values.get(ds.subchart) if isinstance(values, dict) else None
        sub = sub if isinstance(sub, dict) else {}
        host_network = bool(_value(sub, "hostNetwork", ds.host_network))
        port = _value(sub, ds.port_path, ds.port)
        volumes = [
            {"name": name, "hostPath": {"path": path}}
            for name, path, switch, default in ds.host_paths
            if switch is None or _value(sub, switch, default)
        ]
        container = {
            "name": "node-exporter",
            "ports": [{"containerPort": port, "protocol": "TCP"}],
            "securityContext": _value(sub, "containerSecurityContext", dict(ds.container_security_context)),
        }
        pod = {
            "hostNetwork": host_network,
            "hostPID": bool(_value(sub, "hostPID", ds.host_pid)),
            "hostIPC": bool(_value(sub, "hostIPC", ds.host_ipc)),
            "securityContext": _value(sub, "securityContext", dict(ds.security_context)),
            "nodeSelector": _value(sub, "nodeSelector", ds.node_selector),
            "tolerations": _value(sub, "tolerations", list(ds.tolerations)),
            "affinity": _value(sub, "affinity", {}),
            "containers": [container],
            "volumes": volumes,
        }
        name = f"{namespace}/{subchart_fullname(release, ds.subchart)}"
        out.append(PodTemplate(release.urn, "DaemonSet", f"{name} (chart {release.inputs.get('chart')})", pod, True))
    return out


def host_ports(pod: dict[str, Any]) -> Iterator[tuple[int, str, str, str]]:
    """(port, protocol, hostIP, container) of every host port the pod holds."""
    for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
        for port in (container or {}).get("ports") or []:
            number = port.get("hostPort") or (port.get("containerPort") if pod.get("hostNetwork") else None)
            if isinstance(number, int) and number > 0:
                protocol = str(port.get("protocol") or "TCP")
                yield number, protocol, str(port.get("hostIP") or ""), str(container.get("name"))


def _ips_overlap(a: str, b: str) -> bool:
    return a in ANY_IP or b in ANY_IP or a == b


def _templates(graph: Graph, region: str) -> list[PodTemplate]:
    own = [
        PodTemplate(o.urn, o.kind, f"{o.namespace}/{o.name}", o.pod_template().get("spec") or {})
        for o in graph.pod_bearers(region)
    ]
    charts = [pod for r in graph.of_type(HELM_RELEASE, region) for pod in chart_pods(r)]
    return [t for t in [*own, *charts] if isinstance(t.pod, dict) and any(host_ports(t.pod))]


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        groups = [NodeGroup.of(r, graph) for r in graph.of_type(NODE_GROUP, region)]
        templates = _templates(graph, region)
        for i, daemon in enumerate(templates):
            if daemon.kind != "DaemonSet":
                continue
            for j, other in enumerate(templates):
                if j == i or (other.kind == "DaemonSet" and j < i):
                    continue  # a pair of DaemonSets is reported once
                if (finding := _conflict(daemon, other, groups)) is not None:
                    yield finding


def _conflict(daemon: PodTemplate, other: PodTemplate, groups: list[NodeGroup]) -> Finding | None:
    shared = [g.resource.name for g in groups if lands_on(daemon.pod, g) and lands_on(other.pod, g)]
    if not shared:
        return None
    for port, protocol, ip, container in host_ports(daemon.pod):
        for port2, protocol2, ip2, container2 in host_ports(other.pod):
            if (port, protocol) != (port2, protocol2) or not _ips_overlap(ip, ip2):
                continue
            own = other if daemon.chart else daemon
            return Finding(
                RULE,
                own.urn,
                f"{daemon.kind} {daemon.name} container {container} and {other.kind} {other.name} container "
                f"{container2} both hold host port {port}/{protocol} ({_how(daemon.pod)} and {_how(other.pod)}) on "
                f"the nodes of {', '.join(shared)}, where a DaemonSet runs a pod on every node: on each node the "
                f"second stays Pending ('didn't have free ports for the requested pod ports') and its rollout never "
                "completes",
                f"give {own.kind} {own.name}'s container a free port (or drop hostPort and reach it through a "
                f"Service), or turn the other off where it duplicates it (e.g. a chart's node-exporter: "
                f"nodeExporter.enabled=false)",
            )
    return None


def _how(pod: dict[str, Any]) -> str:
    return "hostNetwork containerPort" if pod.get("hostNetwork") else "hostPort"
