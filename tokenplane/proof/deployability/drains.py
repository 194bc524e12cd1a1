"""Every node drain can finish: no PodDisruptionBudget forbids evicting the pods it covers at their fewest replicas.

The eviction API refuses to evict a pod while its budget's ``disruptionsAllowed`` is 0 (currentHealthy minus
desiredHealthy: minAvailable, or the expected pods minus maxUnavailable, percents rounded up as the disruption
controller does). A budget whose minAvailable is at least the replicas it selects, or whose maxUnavailable is 0,
allows none ever: ``kubectl drain``, a managed node group's rolling update (it fails after its PodEvictionFailure
retries) and the Cluster Autoscaler's scale-down all wait on it forever.
https://kubernetes.io/docs/tasks/run-application/configure-pdb/#think-about-how-your-application-reacts-to-disruptions ,
https://docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html

Every budget is read against every Deployment and StatefulSet in its namespace whose pod labels it selects, at the
workload's fewest replicas: its HPA's minReplicas or ScaledObject's minReplicaCount (at least 1: a budget over no
pods blocks nothing), else spec.replicas.

A second rule (``one-disruption-budget``): no pod is selected by two budgets. The eviction API refuses to evict such a
pod at all (500 "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."),
so drains and managed node group updates fail on it whatever the budgets allow. Each pod template the program renders
is read against every budget in its namespace (a policy/v1 budget's empty selector selects every pod there).
https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/ ,
https://kubernetes.io/docs/tasks/run-application/configure-pdb/#arbitrary-controllers-and-selectors ,
kubernetes/kubernetes#75957 (pkg/registry/core/pod/storage/eviction.go: "more than one PodDisruptionBudget").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.model.rollout import resolve
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.topology import selects

RULE = "drain-blocked"
ONE_BUDGET = "one-disruption-budget"


def fewest(graph: Graph, workload: KubeObject) -> int:
    """The fewest replicas ``workload`` may run: its autoscaler's minimum, else spec.replicas; at least 1."""
    for scaler in graph.kube(workload.resource.region, "HorizontalPodAutoscaler", "ScaledObject"):
        if scaler.namespace != workload.namespace:
            continue
        if lookup(scaler.manifest, "spec.scaleTargetRef.name") != workload.name:
            continue
        spec = scaler.manifest.get("spec") or {}
        low = spec.get("minReplicas", 1) if scaler.kind == "HorizontalPodAutoscaler" else spec.get("minReplicaCount", 0)
        return max(int(low or 0), 1)
    replicas = lookup(workload.manifest, "spec.replicas")
    return max(int(1 if replicas is None else replicas), 1)


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        workloads = graph.kube(region, "Deployment", "StatefulSet")
        for budget in graph.kube(region, "PodDisruptionBudget"):
            spec = budget.manifest.get("spec") or {}
            for workload in workloads:
                labels = lookup(workload.manifest, "spec.template.metadata.labels") or {}
                if workload.namespace != budget.namespace or not selects(spec.get("selector"), labels):
                    continue
                least = fewest(graph, workload)
                if spec.get("maxUnavailable") is not None:
                    allowed = resolve(spec["maxUnavailable"], least, round_up=True)
                    why = f"maxUnavailable {spec['maxUnavailable']}"
                else:
                    allowed = least - resolve(spec.get("minAvailable", 0), least, round_up=True)
                    why = f"minAvailable {spec.get('minAvailable')}"
                if allowed <= 0:
                    yield Finding(
                        RULE,
                        budget.urn,
                        f"PodDisruptionBudget {budget.namespace}/{budget.name} ({why}) allows no disruption of "
                        f"{workload.kind} {workload.name} at its {least} replica(s): every node drain (managed node "
                        "group update, Cluster Autoscaler scale-down, kubectl drain) waits on it forever",
                        "set maxUnavailable: 1 (components.kube.pdb) instead of a minAvailable equal to the replicas, "
                        "or run more replicas than minAvailable",
                    )


def _budget_selects(selector: Any, labels: dict[str, str]) -> bool:
    # policy/v1: an empty selector ({}) selects every pod in the namespace; an absent one selects none
    return selector == {} or (isinstance(selector, dict) and selects(selector, labels))


def check_one_budget(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        budgets = graph.kube(region, "PodDisruptionBudget")
        for bearer in graph.pod_bearers(region):
            labels = (bearer.pod_template().get("metadata") or {}).get("labels") or {}
            over = [
                b
                for b in budgets
                if b.namespace == bearer.namespace
                and _budget_selects((b.manifest.get("spec") or {}).get("selector"), labels)
            ]
            if len(over) < 2:
                continue
            names = ", ".join(sorted(b.name for b in over))
            yield Finding(
                ONE_BUDGET,
                bearer.urn,
                f"{bearer.kind} {bearer.namespace}/{bearer.name}'s pods are selected by "
                f'{len(over)} PodDisruptionBudgets ({names}): the eviction API refuses to evict them (500 "This pod '
                'has more than one PodDisruptionBudget, which the eviction subresource does not support"), so every '
                "node drain, managed node group update and Cluster Autoscaler scale-down fails on them",
                "give each pod exactly one budget: narrow the wider PodDisruptionBudget's spec.selector to pods no "
                "other budget selects, or delete it",
            )
