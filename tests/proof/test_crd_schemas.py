"""Custom resources are validated against the CRD schema their pinned chart installs, read from its source."""

from __future__ import annotations

import json
from typing import Any

from tokenplane import package_data
from tokenplane.components.pins import KEDA_CHART, KUBE_PROMETHEUS_STACK_CHART
from tokenplane.proof.render import validate_manifest

SCALED_OBJECT: dict[str, Any] = {
    "apiVersion": "keda.sh/v1alpha1",
    "kind": "ScaledObject",
    "metadata": {"name": "vllm-small", "namespace": "llm-serving"},
    "spec": {
        "scaleTargetRef": {"name": "vllm-small"},
        "minReplicaCount": 1,
        "maxReplicaCount": 4,
        "triggers": [{"type": "prometheus", "metadata": {"query": "sum(up)", "threshold": "1"}}],
    },
}


def _with(path: str, value: Any) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads(json.dumps(SCALED_OBJECT))
    *parents, last = path.split(".")
    node = manifest
    for part in parents:
        node = node[part]
    node[last] = value
    return manifest


def test_the_scaled_object_schema_is_the_pinned_charts_crd() -> None:
    schema = json.loads(package_data.path(package_data.KEDA_SCHEMA).read_text(encoding="utf-8"))
    assert f"chart {KEDA_CHART[1]}," in schema["$comment"] and "scripts/crd_schema.py" in schema["$comment"]


def test_a_correct_scaled_object_validates() -> None:
    assert validate_manifest(SCALED_OBJECT, "1.35") is None


def test_a_misspelt_field_a_wrong_type_and_a_missing_target_are_refused() -> None:
    typo = validate_manifest(_with("spec.minReplicaCont", 1), "1.35")
    assert typo is not None and "minReplicaCont" in typo, typo
    wrong_type = validate_manifest(_with("spec.pollingInterval", "30s"), "1.35")
    assert wrong_type is not None and "spec.pollingInterval" in wrong_type, wrong_type
    spec = dict(SCALED_OBJECT["spec"])
    del spec["scaleTargetRef"]
    missing = validate_manifest({**SCALED_OBJECT, "spec": spec}, "1.35")
    assert missing is not None and "scaleTargetRef" in missing, missing


SERVICE_MONITOR: dict[str, Any] = {
    "apiVersion": "monitoring.coreos.com/v1",
    "kind": "ServiceMonitor",
    "metadata": {"name": "ai-gateway", "namespace": "llm-gateway"},
    "spec": {
        "selector": {"matchLabels": {"app.kubernetes.io/name": "ai-gateway"}},
        "endpoints": [{"port": "metrics", "interval": "15s", "honorLabels": True}],
    },
}


def test_a_correct_service_monitor_validates_against_kube_prometheus_stacks_crd() -> None:
    assert validate_manifest(SERVICE_MONITOR, "1.35") is None
    schema = json.loads(
        package_data.path(package_data.CRD_SCHEMAS[("monitoring.coreos.com/v1", "ServiceMonitor")]).read_text()
    )
    assert f"kube-prometheus-stack-{KUBE_PROMETHEUS_STACK_CHART[1]}," in schema["$comment"]


def test_a_service_monitor_with_a_misspelt_endpoint_field_is_refused() -> None:
    endpoint = {"port": "metrics", "honourLabels": True}
    error = validate_manifest({**SERVICE_MONITOR, "spec": {**SERVICE_MONITOR["spec"], "endpoints": [endpoint]}}, "1.35")
    assert error is not None and "honourLabels" in error, error


def test_a_prometheus_rule_without_an_expression_is_refused() -> None:
    rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "r", "namespace": "monitoring"},
        "spec": {"groups": [{"name": "g", "rules": [{"alert": "A"}]}]},
    }
    error = validate_manifest(rule, "1.35")
    assert error is not None and "expr" in error, error


SECURITY_GROUP_POLICY: dict[str, Any] = {
    "apiVersion": "vpcresources.k8s.aws/v1beta1",
    "kind": "SecurityGroupPolicy",
    "metadata": {"name": "ai-gateway", "namespace": "llm-gateway"},
    "spec": {
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "ai-gateway"}},
        "securityGroups": {"groupIds": ["sg-0123456789abcdef0"]},
    },
}


def test_a_security_group_policy_validates_against_eks_own_crd_and_needs_no_chart() -> None:
    # EKS installs this CRD on every cluster: a correct one is no render error, and a misspelt field still is.
    assert validate_manifest(SECURITY_GROUP_POLICY, "1.35") is None
    spec = {**SECURITY_GROUP_POLICY["spec"], "securityGroups": {"groupIDs": ["sg-0123456789abcdef0"]}}
    error = validate_manifest({**SECURITY_GROUP_POLICY, "spec": spec}, "1.35")
    assert error is not None and "groupIDs" in error, error
    no_groups = {**SECURITY_GROUP_POLICY, "spec": {**SECURITY_GROUP_POLICY["spec"], "securityGroups": {"groupIds": []}}}
    assert validate_manifest(no_groups, "1.35") is not None
