"""Label selectors as ValidateLabelSelector sees them (part of ``api-validation``).

Source: kubernetes/kubernetes staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/validation/validation.go,
ValidateLabelSelector and ValidateLabelSelectorRequirement: matchLabels are labels (ValidateLabels: IsQualifiedName
keys, IsValidLabelValue values); each matchExpressions entry has an operator In, NotIn, Exists or DoesNotExist, case
and all ("operator: Invalid value: \"in\": not a valid selector operator"), values with In and NotIn
("values: Required value: must be specified when `operator` is 'In' or 'NotIn'") and none with Exists and
DoesNotExist ("values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"), a key that
is a qualified name (ValidateLabelName), and values that are label values (on create; AllowInvalidLabelValueInSelector
only keeps old objects updatable). The schema checks none of this (operator is a free string).

Read where the validators call it on create: a Deployment's, StatefulSet's, DaemonSet's, ReplicaSet's and Job's
spec.selector (ValidateDeploymentSpec, ValidateStatefulSetSpec, ValidateDaemonSetSpec, ValidateReplicaSetSpec,
validateJobSpec), a PodDisruptionBudget's spec.selector (ValidatePodDisruptionBudgetSpec), a NetworkPolicy's
podSelector and its peers' podSelector and namespaceSelector (ValidateNetworkPolicySpec, ValidateNetworkPolicyPeer),
and a pod template's pod (anti-)affinity terms' labelSelector and namespaceSelector (validatePodAffinityTerm).
Cannot see: topologySpreadConstraints' labelSelector and a PersistentVolumeClaim's selector (not read here); a
value unknown at render time (not a string) is not judged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.object_validation import check_labels, problems, rejected

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
SPEC_VALIDATORS = {
    "Deployment": "ValidateDeploymentSpec",
    "StatefulSet": "ValidateStatefulSetSpec",
    "DaemonSet": "ValidateDaemonSetSpec",
    "ReplicaSet": "ValidateReplicaSetSpec",
    "Job": "validateJobSpec",
    "PodDisruptionBudget": "ValidatePodDisruptionBudgetSpec",
}
AFFINITIES = ("podAffinity", "podAntiAffinity")


def check(graph: Graph) -> Iterator[Finding]:
    """The object-level selectors; the pod templates' are ``check_pod``'s (from ``pod_validation``)."""
    for obj in graph.kube_objects:
        if obj.kind in SPEC_VALIDATORS:
            yield from check_selector(
                obj, "spec.selector", lookup(obj.manifest, "spec.selector"), SPEC_VALIDATORS[obj.kind]
            )
        elif obj.kind == "NetworkPolicy":
            spec = obj.manifest.get("spec") or {}
            yield from check_selector(obj, "spec.podSelector", spec.get("podSelector"), "ValidateNetworkPolicySpec")
            for direction, peers in (("ingress", "from"), ("egress", "to")):
                for i, rule in enumerate(spec.get(direction) or []):
                    for j, peer in enumerate((rule or {}).get(peers) or [] if isinstance(rule, dict) else []):
                        for kind in ("podSelector", "namespaceSelector"):
                            if isinstance(peer, dict):
                                at = f"spec.{direction}[{i}].{peers}[{j}].{kind}"
                                yield from check_selector(obj, at, peer.get(kind), "ValidateNetworkPolicyPeer")


def check_pod(obj: KubeObject, where: str, pod: Mapping[str, Any]) -> Iterator[Finding]:
    """validatePodAffinityTerm on each pod (anti-)affinity term of a pod spec at ``where``."""
    for affinity in AFFINITIES:
        spec = lookup(pod, f"affinity.{affinity}")
        if not isinstance(spec, dict):
            continue
        terms = [
            (f"requiredDuringSchedulingIgnoredDuringExecution[{i}]", t)
            for i, t in enumerate(spec.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        ]
        terms += [
            (f"preferredDuringSchedulingIgnoredDuringExecution[{i}].podAffinityTerm", t.get("podAffinityTerm"))
            for i, t in enumerate(spec.get("preferredDuringSchedulingIgnoredDuringExecution") or [])
            if isinstance(t, dict)
        ]
        for at, term in terms:
            if isinstance(term, dict):
                for kind in ("labelSelector", "namespaceSelector"):
                    field = f"{where}spec.affinity.{affinity}.{at}.{kind}"
                    yield from check_selector(obj, field, term.get(kind), "validatePodAffinityTerm")


def check_selector(obj: KubeObject, field: str, selector: Any, validator: str) -> Iterator[Finding]:
    if not isinstance(selector, dict):
        return
    source = f"{validator}/ValidateLabelSelector"
    yield from check_labels(obj, f"{field}.matchLabels", selector.get("matchLabels"))
    expressions = selector.get("matchExpressions")
    for i, expression in enumerate(expressions if isinstance(expressions, list) else []):
        if not isinstance(expression, dict):
            continue
        at = f"{field}.matchExpressions[{i}]"
        operator, values = expression.get("operator"), expression.get("values")
        if isinstance(operator, str) and operator not in OPERATORS:
            yield rejected(
                obj,
                f"has {at}.operator {operator!r}",
                f"{source}: {at}.operator: Invalid value: {operator!r}: not a valid selector operator",
                "write one of In, NotIn, Exists, DoesNotExist (case matters; Gt and Lt are node selectors' only)",
            )
        elif operator in ("In", "NotIn") and isinstance(values, list | type(None)) and not values:
            yield rejected(
                obj,
                f"has {at} with operator {operator} and no values",
                f"{source}: {at}.values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "list the values to match, or use Exists / DoesNotExist to match on the key alone",
            )
        elif operator in ("Exists", "DoesNotExist") and isinstance(values, list) and values:
            yield rejected(
                obj,
                f"has {at} with operator {operator} and values {values}",
                f"{source}: {at}.values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                "drop values (Exists matches on the key alone), or use In to match values",
            )
        fix = "a key is [prefix/]name (name at most 63 of [A-Za-z0-9-_.]); a value at most 63 of the same"
        if isinstance(expression.get("key"), str):
            yield from problems(obj, f"{at}.key", expression["key"], syntax.is_qualified_name, source, fix)
        for value in values if isinstance(values, list) else []:
            if isinstance(value, str):
                yield from problems(obj, f"{at}.values", value, syntax.is_valid_label_value, source, fix)
