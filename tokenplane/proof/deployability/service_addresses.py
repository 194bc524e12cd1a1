"""Every in-cluster address a controller or a pod is told names a Service that will exist, also among a chart's.

A name that resolves to nothing fails quietly: KEDA's Prometheus scaler gets ``dial tcp: lookup
prometheus-server.monitoring.svc on 172.20.0.10:53: no such host``, marks the trigger failed
(KEDAScalerFailed) and never scales, and a pod's client gets the same error on every call. ``flow-allowed`` judges
namespaces that hold only the program's own objects; a namespace where Helm charts also create Services was left
alone, because the graph only sees each chart as a release. This rule knows the Services of the charts the platform
installs there, from their templates, so that such a namespace is judged too:

- kube-prometheus-stack (prometheus-community/helm-charts, ``charts/kube-prometheus-stack/templates``:
  ``prometheus/service.yaml`` "<fullname>-prometheus", ``alertmanager/service.yaml`` "<fullname>-alertmanager",
  ``prometheus-operator/service.yaml`` "<fullname>-operator"; the operator's own ``prometheus-operated`` and
  ``alertmanager-operated``; and its subcharts grafana, kube-state-metrics and prometheus-node-exporter, each named
  by Helm's ``fullname``: the release's name when it contains the chart's, else "<release>-<chart>");
- keda (kedacore/charts, ``keda/templates``: ``keda-operator``, ``keda-operator-metrics-apiserver``,
  ``keda-admission-webhooks``).

The addresses read are ``http://NAME.NAMESPACE.svc[:PORT]`` (``flows.SERVICE_URL``) in containers' env values and in
KEDA triggers' metadata. A namespace with a release of any other chart, or one assumed to exist already, is not
judged (its Services are not all known).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.flows import SERVICE_URL
from tokenplane.proof.deployability.graph import HELM_RELEASE, POD_KINDS, Graph, KubeObject, lookup
from tokenplane.proof.deployability.reachability import chart_fullname, pod_template
from tokenplane.proof.render import RenderedResource

RULE = "service-address"
SUBCHART_LIMIT = 63
# Each chart's Services: "{fullname}" is the chart's Helm fullname, "{sub:CHART}" a subchart's.
CHART_SERVICES: dict[str, tuple[str, ...]] = {
    "kube-prometheus-stack": (
        "{fullname}-prometheus",
        "{fullname}-alertmanager",
        "{fullname}-operator",
        "prometheus-operated",
        "alertmanager-operated",
        "{sub:grafana}",
        "{sub:kube-state-metrics}",
        "{sub:prometheus-node-exporter}",
    ),
    "keda": ("keda-operator", "keda-operator-metrics-apiserver", "keda-admission-webhooks"),
}
TRIGGER_KINDS = ("ScaledObject", "ScaledJob")


@dataclass(frozen=True)
class ChartService:
    """A Service a chart makes whose spec is read from the release's values: ``values_path`` is the key of its
    ``service`` block (type, port), each default the chart's own."""

    template: str
    values_path: str
    port: int
    port_name: str
    type: str = "ClusterIP"


# The Services a backend may name, from the charts' templates and values: kube-prometheus-stack's
# templates/prometheus/service.yaml and templates/alertmanager/service.yaml (ports 9090 and 9093, named by
# prometheusSpec.portName / alertmanagerSpec.portName, "http-web"; type ``*.service.type``, ClusterIP), and
# grafana's templates/service.yaml (grafana/helm-charts: service.type ClusterIP, service.port 80, service.portName
# "service", which kube-prometheus-stack's values set to "http-web").
CHART_SERVICE_SPECS: dict[str, tuple[ChartService, ...]] = {
    "kube-prometheus-stack": (
        ChartService("{fullname}-prometheus", "prometheus.service", 9090, "http-web"),
        ChartService("{fullname}-alertmanager", "alertmanager.service", 9093, "http-web"),
        ChartService("{sub:grafana}", "grafana.service", 80, "http-web"),
    ),
}


def chart_service_manifests(release: RenderedResource) -> list[dict[str, Any]]:
    """The Service manifests (name, namespace, type, ports) of the release's chart where its values say them."""
    values = release.inputs.get("values") or {}
    namespace = str(release.inputs.get("namespace") or "default")
    out = []
    for spec in CHART_SERVICE_SPECS.get(str(release.inputs.get("chart")), ()):
        block = lookup(values, spec.values_path) or {}
        block = block if isinstance(block, dict) else {}
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": _service_name(release, spec.template), "namespace": namespace},
                "spec": {
                    "type": block.get("type") or spec.type,
                    "ports": [
                        {"name": block.get("portName") or spec.port_name, "port": block.get("port") or spec.port}
                    ],
                },
            }
        )
    return out


def _service_name(release: RenderedResource, template: str) -> str:
    if template.startswith("{sub:"):
        return subchart_fullname(release, template.removeprefix("{sub:").removesuffix("}"))
    return template.format(fullname=chart_fullname(release))


def chart_services(release: RenderedResource) -> set[str] | None:
    """The Services a release's chart creates, None for a chart this rule does not know."""
    templates = CHART_SERVICES.get(str(release.inputs.get("chart")))
    if templates is None:
        return None
    return {_service_name(release, template) for template in templates}


def subchart_fullname(release: RenderedResource, chart: str) -> str:
    """Helm's fullname of subchart ``chart`` in ``release``: its fullnameOverride, else the release name with the
    chart's name (or nameOverride) appended unless it holds it already."""
    values = (release.inputs.get("values") or {}).get(chart) or {}
    if isinstance(values, dict) and values.get("fullnameOverride"):
        return str(values["fullnameOverride"])[:SUBCHART_LIMIT].rstrip("-")
    name = str(release.inputs.get("name") or release.name)
    chart = str(values.get("nameOverride") or chart) if isinstance(values, dict) else chart
    return (name if chart in name else f"{name}-{chart}")[:SUBCHART_LIMIT].rstrip("-")


def known_services(graph: Graph, region: str | None, namespace: str) -> set[str] | None:
    """Every Service that will exist in ``namespace``, or None where that cannot be known (no chart there: then
    ``flow-allowed`` judges it; a chart this rule does not know; a namespace that exists already)."""
    if namespace in graph.assumed.namespaces:
        return None
    releases = [
        r for r in graph.of_type(HELM_RELEASE, region) if str(r.inputs.get("namespace") or "default") == namespace
    ]
    if not releases:
        return None
    names = {o.name for o in graph.kube(region, "Service") if o.namespace == namespace}
    for release in releases:
        services = chart_services(release)
        if services is None:
            return None
        names |= services
    return names


def addresses(obj: KubeObject, *, words: bool = False) -> Iterator[tuple[str, str]]:
    """(where, value) of every string a pod's env or a KEDA trigger's metadata holds; ``words``: also each word of
    its containers' command and args."""
    if obj.kind in TRIGGER_KINDS:
        for trigger in (obj.manifest.get("spec") or {}).get("triggers") or []:
            for key, value in ((trigger or {}).get("metadata") or {}).items():
                if isinstance(value, str):
                    yield f"trigger {trigger.get('name') or trigger.get('type')} metadata.{key}", value
        return
    pod = pod_template(obj).get("spec") or {}
    for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
        for entry in container.get("env") or []:
            if isinstance(entry.get("value"), str):
                yield f"container {container.get('name')} env {entry.get('name')}", entry["value"]
        for field in ("command", "args") if words else ():
            for word in container.get(field) or []:
                if isinstance(word, str):
                    yield f"container {container.get('name')}'s {field}", word


def check(graph: Graph) -> Iterator[Finding]:
    for obj in graph.kube(None, *POD_KINDS, *TRIGGER_KINDS):
        region = obj.resource.region
        for where, value in addresses(obj):
            for match in SERVICE_URL.finditer(value):
                name, namespace = match["name"], match["namespace"]
                known = known_services(graph, region, namespace)
                if known is None or name in known:
                    continue
                yield _finding(obj, where, f"{name}.{namespace}.svc", sorted(known))


def _finding(obj: KubeObject, where: str, host: str, known: list[Any]) -> Finding:
    effect = (
        "KEDA's scaler fails on every poll (KEDAScalerFailed) and the workload is never scaled on it"
        if obj.kind in TRIGGER_KINDS
        else "every call from the pod fails"
    )
    return Finding(
        RULE,
        obj.urn,
        f"{obj.kind} {obj.namespace}/{obj.name}'s {where} names {host}, which no Service answers: the cluster DNS "
        f"says 'no such host' and {effect} (Services in {host.split('.')[1]}: {', '.join(known)})",
        f"point it at one of the Services that exist (e.g. {known[0] if known else 'the chart Service'}), or create it",
    )
