"""Where the scheduler would put a pod: node labels against selectors and affinity, taints against tolerations.

Only the required parts count (nodeSelector, requiredDuringScheduling node
affinity, NoSchedule/NoExecute taints): preferences cannot keep a pod Pending.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.k8s_syntax import quantity
from tokenplane.proof.render import RenderedResource

# EKS spells taint effects in upper snake case; Kubernetes in camel case.
EKS_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


@dataclass(frozen=True)
class NodeGroup:
    """The labels and taints every node of one EKS managed node group carries."""

    resource: RenderedResource
    labels: Mapping[str, str]
    taints: tuple[tuple[str, str, str], ...]  # key, value, Kubernetes effect

    @classmethod
    def of(cls, resource: RenderedResource) -> NodeGroup:
        labels = {str(k): str(v) for k, v in (resource.inputs.get("labels") or {}).items()}
        taints = tuple(
            (str(t.get("key")), str(t.get("value", "")), EKS_EFFECTS.get(str(t.get("effect")), str(t.get("effect"))))
            for t in resource.inputs.get("taints") or []
        )
        return cls(resource, labels, taints)


def _expression_matches(labels: Mapping[str, str], expr: Mapping[str, Any]) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), [str(v) for v in expr.get("values") or []]
    present = key in labels
    if op == "In":
        return present and labels[str(key)] in values
    if op == "NotIn":
        return not present or labels[str(key)] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    return False  # Gt/Lt on our labels never apply; an unknown operator matches nothing, as in the API server


def affinity_matches(labels: Mapping[str, str], pod: Mapping[str, Any]) -> bool:
    """True if a node with ``labels`` satisfies the pod's nodeSelector and required node affinity."""
    for key, value in (pod.get("nodeSelector") or {}).items():
        if labels.get(key) != str(value):
            return False
    required = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    # Terms are ORed; the expressions of one term are ANDed.
    return any(all(_expression_matches(labels, e) for e in term.get("matchExpressions") or []) for term in terms)


def tolerates(pod: Mapping[str, Any], taints: tuple[tuple[str, str, str], ...]) -> bool:
    """True if the pod tolerates every NoSchedule/NoExecute taint."""
    tolerations = pod.get("tolerations") or []
    for key, value, effect in taints:
        if effect == "PreferNoSchedule":
            continue
        if not any(_tolerates(t, key, value, effect) for t in tolerations):
            return False
    return True


def _tolerates(t: Mapping[str, Any], key: str, value: str, effect: str) -> bool:
    if t.get("effect") not in (None, "", effect):
        return False
    if t.get("operator") == "Exists":
        return t.get("key") in (None, "", key)
    return t.get("key") == key and str(t.get("value", "")) == value


def lands_on(pod: Mapping[str, Any], group: NodeGroup) -> bool:
    return affinity_matches(group.labels, pod) and tolerates(pod, group.taints)


def requested(pod: Mapping[str, Any], resource_name: str) -> float:
    """The most any one container (init containers included) requests of ``resource_name``."""
    most = 0.0
    for container in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
        resources = container.get("resources") or {}
        value = (resources.get("limits") or {}).get(resource_name) or (resources.get("requests") or {}).get(
            resource_name
        )
        if value is not None:
            most = max(most, quantity(value))
    return most
