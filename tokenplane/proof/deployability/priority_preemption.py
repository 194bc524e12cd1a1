"""No pod outranks serving on serving's GPU nodes: a pod of higher priority that may preempt would evict a vLLM
replica whenever its node group is full.

Kubernetes' scheduler (https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/): a pod's
priority is its ``priorityClassName``'s PriorityClass ``value``; a pod without one gets the ``globalDefault`` class's
value, else 0. When a pending pod fits no node, the scheduler preempts (evicts) pods of lower priority on a node it
may land on to make room, unless the pending pod's class has ``preemptionPolicy: Never`` (the default is
PreemptLowerPriority). So a workload in a class above the vLLM pools' priority, whose nodeSelector, required node
affinity and tolerations admit a node group a pool's pods run on, takes a serving replica down each time that group
is full (the Cluster Autoscaler is not waited for: preemption comes first). A pool's group runs at its placement's
maximum at peak, and an evicted replica is back only after a node, its image and its weights (minutes).

Serving pods are tokenplane's inference workloads, the vLLM pools (``app.kubernetes.io/part-of: tokenplane``,
component ``inference``). The gateways are not: they run on the autoscaled system group, and a preempted gateway pod
is replaced in seconds beside its peers (set 11's status page in a high class beside them was written as correct). Judged: every other pod bearer the program creates
(Deployments, StatefulSets, Jobs, CronJobs, Pods) whose priority is known and higher than a serving pod's that shares
a node group with it. Not judged: DaemonSets (one pod per node, sized into the node's capacity by design), pods in
the reserved ``system-*`` classes (cluster-critical add-ons are meant to win), serving pods against each other (a
tiered choice), a class the program does not create (its value is not in the graph), priorities set by Helm charts'
values, and nodes other than the graph's EKS managed node groups (Karpenter, self-managed).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph, KubeObject
from tokenplane.proof.deployability.scheduling import NodeGroup, lands_on

RULE = "priority-preempts-serving"
SERVING_COMPONENTS = ("inference",)
SYSTEM_PREFIX = "system-"
SYSTEM_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}


def int_value(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def priority_classes(graph: Graph, region: str) -> dict[str, tuple[int | None, str, bool]]:
    """The program's PriorityClasses in ``region``: name -> (value, preemptionPolicy, globalDefault)."""
    out: dict[str, tuple[int | None, str, bool]] = {}
    for obj in graph.kube(region, "PriorityClass"):
        policy = obj.manifest.get("preemptionPolicy") or "PreemptLowerPriority"
        out[obj.name] = (int_value(obj.manifest.get("value")), str(policy), obj.manifest.get("globalDefault") is True)
    return out


def pod_priority(
    pod: dict[str, Any], classes: dict[str, tuple[int | None, str, bool]]
) -> tuple[int | None, str, str | None]:
    """A pod's (priority, preemptionPolicy, class name); priority None where it is not known at render time."""
    name = pod.get("priorityClassName")
    if name in (None, ""):
        defaults = [(n, c) for n, c in classes.items() if c[2]]
        if len(defaults) > 1:
            return None, "", None
        if defaults:
            default_name, (value, policy, _) = defaults[0]
            return value, policy, default_name
        return 0, "PreemptLowerPriority", None
    if not isinstance(name, str):
        return None, "", None
    if name in SYSTEM_CLASSES:
        return SYSTEM_CLASSES[name], "PreemptLowerPriority", name
    if name not in classes:
        return None, "", name
    value, policy, _ = classes[name]
    return value, policy, name


def _is_serving(obj: KubeObject) -> bool:
    labels = (obj.pod_template().get("metadata") or {}).get("labels") or {}
    return (
        isinstance(labels, dict)
        and labels.get("app.kubernetes.io/part-of") == "tokenplane"
        and labels.get("app.kubernetes.io/component") in SERVING_COMPONENTS
    )


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        classes = priority_classes(graph, region)
        if not classes:
            continue  # every pod at 0 (or a system class): no user class can outrank serving
        groups = [NodeGroup.of(r, graph) for r in graph.of_type(NODE_GROUP, region)]
        bearers = [o for o in graph.pod_bearers(region) if not o.is_patch and o.pod_template()]
        serving: list[tuple[KubeObject, int, list[NodeGroup]]] = []
        for obj in bearers:
            if _is_serving(obj):
                value, _, _ = pod_priority(obj.pod_spec(), classes)
                if value is not None:
                    serving.append((obj, value, [g for g in groups if lands_on(obj.pod_spec(), g)]))
        for obj in bearers:
            if obj.kind == "DaemonSet" or _is_serving(obj):
                continue
            pod = obj.pod_spec()
            value, policy, name = pod_priority(pod, classes)
            if value is None or name is None or name.startswith(SYSTEM_PREFIX) or policy == "Never":
                continue
            mine = [g for g in groups if lands_on(pod, g)]
            for victim, below, theirs in serving:
                shared = [g for g in mine if g in theirs]
                if value <= below or not shared:
                    continue
                group = shared[0].resource.name
                yield Finding(
                    RULE,
                    obj.urn,
                    f"{obj.kind} {obj.namespace}/{obj.name} runs in PriorityClass {name} (value {value}, "
                    f"preemptionPolicy {policy}), above serving {victim.kind} {victim.namespace}/{victim.name}'s "
                    f"priority {below}, and may land on its node group {group}: when that group is full the "
                    "scheduler preempts (evicts) serving replicas to place it, taking serving capacity down",
                    f"give {name} a value at most {below} (serving's priority) or preemptionPolicy: Never, or keep "
                    "the workload off serving's nodes (its nodeSelector/tolerations), or give serving a higher class",
                )
                break
