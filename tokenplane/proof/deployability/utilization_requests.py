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

``average-value-reachable``: an ``AverageValue`` target is a quantity of the resource per pod, not a percentage: the
HPA controller scales to ceil(sum of the pods' usage / target) (kubernetes pkg/controller/podautoscaler/
replica_calculator.go, GetRawResourceReplicas; https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/
#support-for-resource-metrics), and KEDA's cpu and memory triggers with ``metricType: AverageValue`` parse
``value`` as a resource.Quantity (``"70"`` is 70 cores) and hand it to the HPA as ``target.averageValue``
(https://keda.sh/docs/latest/scalers/cpu/: "When using AverageValue, the target value is the target value of the
average of the metric across all relevant pods (quantity)"; kedacore/keda pkg/scalers/cpu_memory_scaler.go). A pod's
usage cannot exceed the sum of its containers' limits (CPU is throttled at the limit, memory is OOM-killed), so a
target above it is never reached: the workload stays at its minimum under any load. Judged where every container
read (all of them, or the metric's one container) has a limit for the resource. Cannot see: a container without a
limit (it may use up to its node's capacity), a chart's target.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup

RULE = "utilization-request"
CONTAINER = "scaled-container"
AVERAGE = "average-value-reachable"
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


def _scaled(graph: Graph) -> Iterator[tuple[KubeObject, KubeObject]]:
    """Each HPA and ScaledObject with the workload of its scaleTargetRef, where the program has that workload."""
    for region in graph.regions():
        workloads = {(w.namespace, w.kind, w.name): w for w in graph.kube(region, *SCALABLE)}
        for scaler in graph.kube(region, "HorizontalPodAutoscaler", "ScaledObject"):
            ref = lookup(scaler.manifest, "spec.scaleTargetRef") or {}
            workload = workloads.get((scaler.namespace, str(ref.get("kind") or "Deployment"), str(ref.get("name"))))
            if workload is not None:
                yield scaler, workload


def check_container(graph: Graph) -> Iterator[Finding]:
    for scaler, workload in _scaled(graph):
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


def _average_targets(scaler: KubeObject) -> list[tuple[str, str | None, Any, str]]:
    """(resource, container or None, target quantity, field) of each AverageValue cpu/memory target."""
    out: list[tuple[str, str | None, Any, str]] = []
    if scaler.kind == "HorizontalPodAutoscaler":
        for i, metric in enumerate(lookup(scaler.manifest, "spec.metrics") or []):
            kind = metric.get("type")
            source = metric.get("resource" if kind == "Resource" else "containerResource") or {}
            if kind in ("Resource", "ContainerResource") and lookup(source, "target.type") == "AverageValue":
                container = source.get("container") if kind == "ContainerResource" else None
                at = f"spec.metrics[{i}].{'resource' if kind == 'Resource' else 'containerResource'}.target"
                out.append((str(source.get("name")), container, lookup(source, "target.averageValue"), at))
        return out
    for i, trigger in enumerate(lookup(scaler.manifest, "spec.triggers") or []):
        metadata = trigger.get("metadata") or {}
        metric_type = trigger.get("metricType") or metadata.get("type") or "Utilization"
        if trigger.get("type") in ("cpu", "memory") and metric_type == "AverageValue":
            at = f"spec.triggers[{i}] (metricType AverageValue) metadata.value"
            out.append((str(trigger["type"]), metadata.get("containerName") or None, metadata.get("value"), at))
    return out


def check_average(graph: Graph) -> Iterator[Finding]:
    for scaler, workload in _scaled(graph):
        containers = lookup(workload.manifest, "spec.template.spec.containers") or []
        for resource, only, target, at in _average_targets(scaler):
            value = syntax.parse_quantity(target) if isinstance(target, str | int | float) else None
            read = [c for c in containers if only is None or c.get("name") == only]
            limits = [syntax.parse_quantity(lookup(c, f"resources.limits.{resource}")) for c in read]
            if value is None or not read or any(v is None for v in limits):
                continue
            ceiling = sum((v for v in limits if v is not None), Decimal(0))
            if value <= ceiling:
                continue
            shown = ", ".join(f"{c.get('name')}: {lookup(c, f'resources.limits.{resource}')}" for c in read)
            percent = (
                " (a percentage is metricType Utilization)"
                if scaler.kind == "ScaledObject"
                else " (a percentage is target.type Utilization with averageUtilization)"
            )
            yield Finding(
                AVERAGE,
                scaler.urn,
                f"{scaler.kind} {scaler.namespace}/{scaler.name} {at} is {target!r}, an AverageValue target: a "
                f"quantity of {resource} per pod ({format(value.normalize(), 'f')}{' cores' if resource == 'cpu' else ' bytes'}), "
                "not a "
                f"percentage, while each pod of {workload.kind} {workload.name} can use at most "
                f"{format(ceiling.normalize(), 'f')}{' cores' if resource == 'cpu' else ' bytes'} "
                f"(its limits, {shown}): the average never reaches the target, so the HPA never scales it out "
                "under any load",
                f"use a Utilization target for a percentage{percent}, or an AverageValue below the pod's "
                f"limits (e.g. {_share(resource, ceiling)}, 70 % of them)",
            )


def _share(resource: str, ceiling: Decimal) -> str:
    """70 % of a pod's limits, as a quantity: millicores of CPU, mebibytes of memory."""
    if resource == "cpu":
        return f"{int(ceiling * 700)}m"
    return f"{int(ceiling * Decimal('0.7') / 2**20)}Mi"
