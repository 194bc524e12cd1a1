"""Every topology spread constraint counts its own workload's pods, and every pod anti-affinity term selects some pods.

A ``topologySpreadConstraint`` spreads only the pods its ``labelSelector`` matches: "labelSelector is used to find
matching Pods. Pods that match this label selector are counted to determine the number of Pods in their
corresponding topology domain" (https://kubernetes.io/docs/concepts/scheduling-eviction/topology-spread-constraints/#spread-constraint-definition).
The scheduler turns an absent selector into one that matches nothing (``metav1.LabelSelectorAsSelector(nil)`` is
``labels.Nothing()``, kubernetes pkg/scheduler/framework/plugins/podtopologyspread/common.go,
``filterTopologySpreadConstraints``), and adds the incoming pod to a domain's count only where the selector matches
the pod's own labels (filtering.go, ``selfMatchNum``). So a constraint with no selector, or with one that does not
match the workload's own pod template, counts none of its replicas: every placement satisfies maxSkew, all replicas
may land in one zone (or node), and a zone outage or a drain takes the whole workload down, its PodDisruptionBudget
notwithstanding. ``pulumi up`` succeeds; the spread the program asked for is simply not there. Constraints that name
``matchLabelKeys`` (whose values come from the incoming pod's labels at admission) are left alone, and so is an empty
selector ``{}`` (it counts every pod of the namespace, the workload's among them).

A pod anti-affinity term (required or preferred) with no ``labelSelector`` likewise selects no pod ("A null label selector matches no objects", LabelSelector in
https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/label-selector/; the scheduler's
``newAffinityTerm`` builds it with ``LabelSelectorAsSelector``), so it repels nothing. One whose selector matches other pods is left alone: keeping
away from another workload is a legitimate use.
https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#inter-pod-affinity-and-anti-affinity

It cannot see: spreads in Helm charts' values (the chart's templates decide what they render).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.reachability import selects
from tokenplane.proof.deployability.selectors import show

RULE = "spread-selects-own"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def check(graph: Graph) -> Iterator[Finding]:
    for bearer in graph.pod_bearers():
        template = bearer.pod_template()
        spec = template.get("spec")
        if not isinstance(spec, dict):
            continue
        raw = (template.get("metadata") or {}).get("labels") or {}
        labels = {str(k): str(v) for k, v in raw.items()}
        for i, spread in enumerate(spec.get("topologySpreadConstraints") or []):
            if isinstance(spread, dict):
                yield from _spread(bearer, labels, i, spread)
        yield from _anti_affinity(bearer, spec)


def _spread(bearer: KubeObject, labels: dict[str, str], i: int, spread: dict[str, Any]) -> Iterator[Finding]:
    if spread.get("matchLabelKeys"):
        return
    selector = spread.get("labelSelector")
    if selector is not None and selects(selector, labels):
        return
    where = f"{bearer.kind} {bearer.namespace}/{bearer.name}"
    at = f"topologySpreadConstraints[{i}] (topologyKey {spread.get('topologyKey')})"
    what = (
        "has no labelSelector, so it counts no pod"
        if selector is None
        else f"has a labelSelector {show(selector)} that does not match the pod template's labels {_show_labels(labels)}"
    )
    yield Finding(
        RULE,
        bearer.urn,
        f"{where}'s {at} {what}: none of its own replicas are counted, every placement satisfies maxSkew, and all "
        "of them may land in one domain, so one zone outage or node drain takes the whole workload down",
        f"set the constraint's labelSelector to the pod template's labels (matchLabels {_show_labels(labels)}), "
        "or add matchLabelKeys",
    )


def _anti_affinity(bearer: KubeObject, spec: dict[str, Any]) -> Iterator[Finding]:
    anti = (spec.get("affinity") or {}).get("podAntiAffinity") or {}
    terms = [(f"{REQUIRED}[{i}]", t) for i, t in enumerate(anti.get(REQUIRED) or [])]
    terms += [
        (f"{PREFERRED}[{i}].podAffinityTerm", (w or {}).get("podAffinityTerm"))
        for i, w in enumerate(anti.get(PREFERRED) or [])
    ]
    for at, term in terms:
        if not isinstance(term, dict) or term.get("labelSelector") is not None or term.get("matchLabelKeys"):
            continue
        yield Finding(
            RULE,
            bearer.urn,
            f"{bearer.kind} {bearer.namespace}/{bearer.name}'s affinity.podAntiAffinity.{at} (topologyKey "
            f"{term.get('topologyKey')}) has no labelSelector, which matches no pod: the term keeps the pods away "
            "from nothing, and its replicas may share one node or zone",
            "set the term's labelSelector to the labels of the pods it should keep away from (its own pod "
            "template's, to spread the replicas)",
        )


def _show_labels(labels: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in labels.items()) + "}"
