"""Every pod fits a node it may land on, and autoscaler maxima fit the node groups: CPU requests and GPUs.

A pod is scheduled onto one node: if no single node of the groups its selectors and tolerations allow offers
its requests (the containers' sum, or the largest init container; CPU against the node's allocatable after the
kubelet's reservation, GPUs against the instance's), it stays Pending however far the group scales.

An HPA or KEDA ScaledObject may scale a Deployment to its maxReplicas; the
Cluster Autoscaler can add nodes only up to each node group's maxSize. If the
pods at their maxima request more than the node groups can hold, the extra
replicas stay Pending exactly when load peaks. A workload that lands on no node
group at all stays Pending from the start.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from tokenplane.allocatable import PLANNABLE_SHARE, plannable_cpu
from tokenplane.catalog import instance_type
from tokenplane.errors import CatalogError
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph, KubeObject, lookup, need
from tokenplane.proof.deployability.k8s_syntax import quantity
from tokenplane.proof.deployability.pod_fits import fits_nowhere
from tokenplane.proof.deployability.scheduling import ZONE, NodeGroup, affinity_matches, lands_on, requested, tolerates

RULE = "node-capacity"
REPLICATED = ("Deployment", "StatefulSet")  # the kinds whose replicas hold nodes for good, summed against maxSize
GPU = "nvidia.com/gpu"


def pod_cpu(pod: dict[str, object]) -> float:
    """A pod's CPU request as the scheduler counts it: the containers' sum, or the largest init container."""

    def total(containers: object) -> list[float]:
        return [
            quantity(lookup(c, "resources.requests.cpu") or 0)
            for c in (containers if isinstance(containers, list) else [])
        ]

    return max(sum(total(pod.get("containers"))), *total(pod.get("initContainers")), 0.0)


def maxima(graph: Graph, region: str) -> dict[tuple[str, str], int]:
    """(namespace, Deployment name) -> the most replicas its HPA or ScaledObject may ask for."""
    out = {}
    for scaler in graph.kube(region, "HorizontalPodAutoscaler", "ScaledObject"):
        spec = scaler.manifest.get("spec") or {}
        most = spec.get("maxReplicas", spec.get("maxReplicaCount"))
        target = lookup(spec, "scaleTargetRef.name")
        if most is not None and target:
            out[(scaler.namespace, str(target))] = int(most)
    return out


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        groups = [NodeGroup.of(r, graph) for r in graph.of_type(NODE_GROUP, region)]
        most = maxima(graph, region)
        demand: dict[tuple[str, ...], list[tuple[KubeObject, int, float, float]]] = defaultdict(list)
        # Every pod-bearing kind must land somewhere (a Job's or a CronJob's pod is Pending just the same); only
        # the long-running replicated kinds are summed against maxSize. A DaemonSet that matches no node makes no
        # pod at all, so it is never Pending.
        for workload in graph.pod_bearers(region):
            if workload.kind == "DaemonSet":
                continue
            pod = workload.pod_spec()
            targets = tuple(sorted(g.resource.urn for g in groups if lands_on(pod, g)))
            if targets and fits_nowhere(graph, workload) is not None:
                continue  # one pod larger than any node: pod-fits-node reports it, and no maxSize would help
            if targets and workload.kind in REPLICATED:
                replicas = most.get(
                    (workload.namespace, workload.name), int(workload.manifest.get("spec", {}).get("replicas", 1))
                )
                demand[targets].append((workload, replicas, pod_cpu(pod), requested(pod, GPU)))
            elif (
                not targets and groups
            ):  # with no node group in the graph, the program deploys onto nodes it does not show
                yield Finding(
                    RULE,
                    workload.urn,
                    f"{workload.kind} {workload.namespace}/{workload.name} lands on none of the node groups in "
                    f"{region} ({', '.join(g.resource.name for g in groups)}): {_why_not(pod, groups)}, so its "
                    "pods stay Pending (the scheduler reports 'untolerated taint' or 'didn't match Pod's node "
                    "affinity/selector', and the Cluster Autoscaler's node templates carry the same labels and "
                    "taints, so no scale-up helps)",
                    "give a VllmPool the GpuNodeGroup it runs on (nodes=...), or match a node group's labels "
                    "and tolerate its taints",
                )
        by_urn = {g.resource.urn: g for g in groups}
        for targets, pods in demand.items():
            yield from _fits(graph, [by_urn[u] for u in targets], pods)


def _why_not(pod: dict[str, object], groups: list[NodeGroup]) -> str:
    """Per group, the first thing that keeps the pod off it: the selector, or a taint it does not tolerate."""
    reasons = []
    for g in groups:
        if not affinity_matches(g.labels, pod, g.possible):
            zones = g.possible.get(ZONE)
            where = f" (its nodes' zones: {', '.join(sorted(zones))})" if zones else ""
            reasons.append(f"{g.resource.name}: its labels do not match the pod's node selector or affinity{where}")
            continue
        untolerated = [f"{k}={v}:{e}" for k, v, e in g.taints if not tolerates(pod, ((k, v, e),))]
        reasons.append(f"{g.resource.name}: the pod tolerates no {', '.join(untolerated)} taint")
    return "; ".join(reasons)


def _gpus(instance: str) -> int:
    try:
        return instance_type(instance).gpus
    except CatalogError:
        return 0  # a CPU instance type: not in the GPU catalog


def _fits(graph: Graph, groups: list[NodeGroup], pods: list[tuple[KubeObject, int, float, float]]) -> Iterator[Finding]:
    cpu_capacity = gpu_capacity = 0.0
    for g in groups:
        nodes = float(
            need(g.resource, lookup(g.resource.inputs, "scalingConfig.maxSize"), "scalingConfig.maxSize", "capacity")
        )
        instance = str(
            need(g.resource, (g.resource.inputs.get("instanceTypes") or [None])[0], "instanceTypes", "capacity")
        )
        try:
            cpu_capacity += nodes * plannable_cpu(instance)
        except KeyError:
            return  # a type no catalog sizes: its capacity is unknown, so nothing is judged (not a finding)
        gpu_capacity += nodes * _gpus(instance)
    cpu = sum(n * c for _, n, c, _ in pods)
    names = ", ".join(g.resource.name for g in groups)
    # Ties (the two gateways scale alike) go to the first name in order, so the report is the same every render.
    largest = min(pods, key=lambda p: (-p[1] * p[2], p[0].namespace, p[0].name))
    if cpu > cpu_capacity:
        yield Finding(
            RULE,
            largest[0].urn,
            f"at their autoscaling maxima the pods that land on {names} request {cpu:.1f} vCPUs, but at maxSize "
            f"those nodes offer {cpu_capacity:.1f} (allocatable x {PLANNABLE_SHARE} for DaemonSets and add-ons); "
            f"the largest share is {largest[0].kind} {largest[0].name} ({largest[1]} x {largest[2]:g})",
            "raise the node group's maxSize or instance size, or lower the maxima",
        )
    gpus = sum(n * g for _, n, _, g in pods)
    if gpus > gpu_capacity and gpus:
        yield Finding(
            RULE,
            largest[0].urn,
            f"at their maxima the pods on {names} request {gpus:.0f} {GPU}, but the nodes hold {gpu_capacity:.0f}",
            "raise the GPU node group's maxSize",
        )
