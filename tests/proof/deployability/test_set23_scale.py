"""The rules set 23's autoscaler misses led to (written after its blind run, so not held out), each planted in
minimal's render beside its correct twin: a ContainerResource metric (or a KEDA cpu/memory trigger's containerName)
naming a container the scale target's pods lack (scaled-container), and a KEDA Prometheus query returning one series
per pod (keda-query-single)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, with_inputs
from tests.proof.deployability.test_set3_invariants import STACK, deployment, plus, rule, system_pod
from tokenplane.proof.deployability.keda_queries import shape
from tokenplane.proof.render import RenderedResource

CONTAINER = "scaled-container"
QUERY = "keda-query-single"

# --- scaled-container ---------------------------------------------------------------------------------------------


def _hpa(container: str, target_type: str) -> dict[str, Any]:
    target = {"type": "Utilization", "averageUtilization": 70} if target_type == "Utilization" else {}
    if target_type == "AverageValue":
        target = {"type": "AverageValue", "averageValue": "500m"}
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "planted-scaled", "namespace": "llm-data"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "planted-scaled"},
            "minReplicas": 1,
            "maxReplicas": 3,
            "metrics": [
                {
                    "type": "ContainerResource",
                    "containerResource": {"name": "cpu", "container": container, "target": target},
                }
            ],
        },
    }


def _scaled_object(container: str) -> dict[str, Any]:
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "planted-scaled", "namespace": "llm-data"},
        "spec": {
            "scaleTargetRef": {"name": "planted-scaled"},
            "minReplicaCount": 1,
            "maxReplicaCount": 3,
            "triggers": [
                {"type": "memory", "metricType": "Utilization", "metadata": {"value": "70", "containerName": container}}
            ],
        },
    }


@pytest.mark.parametrize(
    ("scaler", "flagged"),
    [
        (_hpa("embedder", "Utilization"), True),
        (_hpa("embedder", "AverageValue"), True),
        (_hpa("app", "Utilization"), False),
        (_hpa("app", "AverageValue"), False),
        (_scaled_object("embedder"), True),
        (_scaled_object("app"), False),
    ],
)
def test_a_container_resource_metric_names_a_container_of_the_pods(scaler: dict[str, Any], flagged: bool) -> None:
    found = rule(plus(deployment("planted-scaled", system_pod()), scaler), CONTAINER)
    assert all(f.urn.endswith("planted-scaled") for f in found), found
    assert bool(found) == flagged, found
    if flagged:
        message = found[0].message
        assert "'embedder'" in message and "run only app" in message and "FailedGetContainerResourceMetric" in message
        assert "containerResource" in message or "containerName" in message
        assert "name one of the pod template's containers (app)" in found[0].fix


# --- keda-query-single --------------------------------------------------------------------------------------------

POOL = "minimal-us-pool-chat-scaler"


def _pool_query(query: str) -> Any:
    """minimal with its chat pool's kv-cache-usage trigger querying ``query``."""

    def edit(inputs: dict[str, Any]) -> None:
        for trigger in inputs["spec"]["triggers"]:
            if trigger["name"] == "kv-cache-usage":
                trigger["metadata"]["query"] = query

    def change(r: RenderedResource) -> RenderedResource:
        return with_inputs(r, edit) if r.name == POOL else r

    return mutated(rendered(STACK), change)


@pytest.mark.parametrize(
    ("query", "flagged"),
    [
        ('vllm:kv_cache_usage_perc{pool="chat"}', True),
        ('max_over_time(vllm:kv_cache_usage_perc{pool="chat"}[2m])', True),
        ('avg by (pod) (vllm:kv_cache_usage_perc{pool="chat"})', True),
        ('avg(vllm:kv_cache_usage_perc{pool="chat"})', False),
        ('avg by (pool) (vllm:kv_cache_usage_perc{pool="chat"})', False),
        ('topk(1, vllm:kv_cache_usage_perc{pool="chat"})', False),
        ('max(max_over_time(vllm:kv_cache_usage_perc{pool="chat"}[2m])) or vector(0)', False),
        ("scalar(vllm:kv_cache_usage_perc) * 2", False),
        ("$unreadable(", False),
    ],
)
def test_a_keda_prometheus_query_returns_one_element(query: str, flagged: bool) -> None:
    found = rule(_pool_query(query), QUERY)
    assert all(f.urn.endswith(POOL) for f in found), found
    assert bool(found) == flagged, found
    if flagged:
        assert "trigger kv-cache-usage" in found[0].message and "returned multiple elements" in found[0].message
        assert "metadata.query" in found[0].fix and "sum(" in found[0].fix


def test_the_shipped_pool_queries_are_one_element_each() -> None:
    assert not rule(rendered(STACK), QUERY)


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("rate(x[2m])", "many"),
        ("sum(rate(x[2m]))", "one"),
        ("1000 * histogram_quantile(0.95, sum by (le) (rate(x_bucket[2m])))", "one"),
        ("histogram_quantile(0.95, rate(x_bucket[2m]))", "many"),
        ("sum(rate(a[1m])) / clamp_min(sum(rate(b[1m])), 1e-9)", "one"),
        ("sum without (pod) (x)", "many"),
        ("x * on() group_left sum(y)", "many"),
        ("sum(x) > bool 3", "one"),
        ("2", "scalar"),
    ],
)
def test_the_shape_of_a_query(query: str, kind: str) -> None:
    found = shape(query, lambda s: f"{s} from many pods")
    assert found is not None and found.kind == kind, found
