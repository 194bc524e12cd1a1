"""A utilization target scales only pods whose containers request that resource.

The API server accepts an HPA (or a KEDA ScaledObject, whose cpu and memory triggers KEDA turns into an HPA's
Resource metrics) with a ``Utilization`` target on any workload. The HPA controller computes utilization as usage
over the pods' requests, and when a container of the target's pods has no request for the resource it stops:
"failed to get cpu utilization: missing request for cpu in container app of Pod ..." (kubernetes
pkg/controller/podautoscaler/replica_calculator.go, calculatePodRequests), condition ScalingActive False,
FailedGetResourceMetric. The workload never scales, however loaded. A limit without a request stands for the request
(the API server defaults one from the other); a ``ContainerResource`` metric (or a trigger's ``containerName``)
needs the request only in that container; an ``AverageValue`` target needs none. Targets not in the graph (a
chart's) are not judged.

``scaled-container``: a ``ContainerResource`` metric (or a KEDA cpu/memory trigger's ``containerName``, which KEDA
turns into one) reads the named container's usage from the metrics API, whatever its target type. A name that is no
container of the scale target's pod template matches nothing: the HPA controller reports
FailedGetContainerResourceMetric ("container ... not present in metrics for pod", kubernetes
pkg/controller/podautoscaler/metrics/client.go, getContainerMetrics), ScalingActive False, and the workload stays at
its minimum under any load (https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/#container-resource-metrics:
"the name of the container in the pods whose resource usage is to be tracked"). Init containers are not read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup

RULE = "utilization-request"
CONTAINER = "scaled-container"
SCALABLE = ("Deployment", "StatefulSet", "ReplicaSet")


def _hpa_targets(hpa: KubeObject) -> list[tuple[str, str | None]]:
    """(resource, container or None) of each utilization target of an HPA (autoscaling/v1 or v2)."""
    spec = hpa.manifest.get("spec") or {}
    out: list[tuple[str, str | None]] = []
    if spec.get("targetCPUUtilizationPercentage") is not None:
        out.append(("cpu", None))
    for metric in spec.get("metrics") or []:
        kind = metric.get("type")
        source = metric.get("resource" if kind == "Resource" else "containerResource") or {}
        if kind in ("Resource", "ContainerResource") and lookup(source, "target.type") == "Utilization":
            out.append((str(source.get("name")), source.get("container") if kind == "ContainerResource" else None))
    return out


def _named_containers(scaler: KubeObject) -> list[tuple[str, str, str]]:
    """(resource, container, field) of each metric or trigger naming one container, whatever its target type."""
    out: list[tuple[str, str, str]] = []
    if scaler.kind == "HorizontalPodAutoscaler":
        for i, metric in enumerate(lookup(scaler.manifest, "spec.metrics") or []):
            source = metric.get("containerResource") or {}
            if metric.get("type") == "ContainerResource" and source.get("container"):
                out.append((str(source.get("name")), str(source["container"]), f"spec.metrics[{i}].containerResource"))
        return out
    for i, trigger in enumerate(lookup(scaler.manifest, "spec.triggers") or []):
        name = (trigger.get("metadata") or {}).get("containerName")
        if trigger.get("type") in ("cpu", "memory") and name:
            out.append((str(trigger["type"]), str(name), f"spec.triggers[{i}].metadata.containerName"))
    return out


def _keda_targets(scaled: KubeObject) -> list[tuple[str, str | None]]:
    """KEDA's cpu/memory scalers: metricType (or the deprecated metadata.type) Utilization is the default."""
    out: list[tuple[str, str | None]] = []
    for trigger in lookup(scaled.manifest, "spec.triggers") or []:
        metadata = trigger.get("metadata") or {}
        metric_type = trigger.get("metricType") or metadata.get("type") or "Utilization"
        if trigger.get("type") in ("cpu", "memory") and metric_type == "Utilization":
            out.append((str(trigger["type"]), metadata.get("containerName") or None))
    return out


def _requests(container: Mapping[str, Any], resource: str) -> bool:
    resources = container.get("resources") or {}
    return any(resource in (resources.get(part) or {}) for part in ("requests", "limits"))


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        workloads = {(w.namespace, w.kind, w.name): w for w in graph.kube(region, *SCALABLE)}
        scalers = [(s, _hpa_targets(s)) for s in graph.kube(region, "HorizontalPodAutoscaler")]
        scalers += [(s, _keda_targets(s)) for s in graph.kube(region, "ScaledObject")]
        for scaler, targets in scalers:
            ref = lookup(scaler.manifest, "spec.scaleTargetRef") or {}
            workload = workloads.get((scaler.namespace, str(ref.get("kind") or "Deployment"), str(ref.get("name"))))
            if workload is None:
                continue
            containers = lookup(workload.manifest, "spec.template.spec.containers") or []
            for resource, only in targets:
                missing = [
                    str(c.get("name"))
                    for c in containers
                    if (only is None or c.get("name") == only) and not _requests(c, resource)
                ]
                if missing:
                    yield _finding(scaler, workload, resource, missing)


def check_container(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        workloads = {(w.namespace, w.kind, w.name): w for w in graph.kube(region, *SCALABLE)}
        for scaler in graph.kube(region, "HorizontalPodAutoscaler", "ScaledObject"):
            ref = lookup(scaler.manifest, "spec.scaleTargetRef") or {}
            workload = workloads.get((scaler.namespace, str(ref.get("kind") or "Deployment"), str(ref.get("name"))))
            if workload is None:
                continue
            names = [str(c.get("name")) for c in lookup(workload.manifest, "spec.template.spec.containers") or []]
            for resource, container, at in _named_containers(scaler):
                if container in names:
                    continue
                yield Finding(
                    CONTAINER,
                    scaler.urn,
                    f"{scaler.kind} {scaler.namespace}/{scaler.name} {at} reads the {resource} of container "
                    f"{container!r}, but the pods of {workload.kind} {workload.name} run only {', '.join(names)}: the "
                    "metrics API has no such container, so the HPA controller reports FailedGetContainerResourceMetric "
                    "(container not present in metrics), sets ScalingActive False and never scales it",
                    f"name one of the pod template's containers ({', '.join(names)}) in {at}, or scale on a Resource "
                    "metric (all containers)",
                )


def _finding(scaler: KubeObject, workload: KubeObject, resource: str, missing: list[str]) -> Finding:
    return Finding(
        RULE,
        scaler.urn,
        f"{scaler.kind} {scaler.namespace}/{scaler.name} scales {workload.kind} {workload.name} on {resource} "
        f"utilization, but container(s) {', '.join(missing)} request no {resource}: the HPA controller reports "
        f'"missing request for {resource} in container {missing[0]}" (calculatePodRequests), sets ScalingActive '
        "False and never scales it",
        f"set resources.requests.{resource} on every container of {workload.kind} {workload.name} (utilization is "
        "usage over request), or scale on an AverageValue target",
    )
