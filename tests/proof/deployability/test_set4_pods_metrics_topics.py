"""Issue 27, fourth blind set: every pod-bearing kind lands on a node group, an HPA's metrics API is served, and
the topics the platform produces to exist; planted into minimal's rendered graph.

None of the planted defects is a set-4 program; each test fails when its check (or its part of a check) is
removed, and each has a correct twin the check must not flag.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, with_inputs
from tests.proof.deployability.test_set3_invariants import STACK, plus, rule, shipped, system_pod
from tokenplane.proof.deployability import platform_contract
from tokenplane.proof.render import RenderedResource, RenderResult

# --- node-capacity: every pod-bearing kind lands on a node group ---------------------------------------------------


def _gpu_pod(*, tolerate: bool) -> dict[str, Any]:
    """The chat pool's placement (its required node affinity), with or without the GPU taint's toleration."""
    pod: dict[str, Any] = copy.deepcopy(shipped("Deployment", "vllm-chat")["spec"]["template"]["spec"])
    resources = {"cpu": "500m", "memory": "512Mi", "nvidia.com/gpu": "1"}
    pod["containers"] = [{"name": "smi", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi"]}]
    pod["containers"][0]["resources"] = {"requests": resources, "limits": resources}
    pod.pop("initContainers", None)
    pod["restartPolicy"] = "Never"
    if not tolerate:
        pod.pop("tolerations")
    return pod


def _meta(name: str) -> dict[str, Any]:
    return {"name": name, "namespace": "llm-serving", "labels": {"app.kubernetes.io/name": name}}


def job(name: str, pod: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(name), "spec": {"template": {"spec": pod}}}


def cron_job(name: str, pod: dict[str, Any]) -> dict[str, Any]:
    template = {"spec": {"template": {"spec": pod}}}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": _meta(name),
        "spec": {"schedule": "0 * * * *", "jobTemplate": template},
    }


def bare_pod(name: str, pod: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": _meta(name), "spec": pod}


def daemon_set(name: str, pod: dict[str, Any]) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": name}
    spec = {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": pod}}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": _meta(name), "spec": spec}


@pytest.mark.parametrize("make", [job, cron_job, bare_pod], ids=["Job", "CronJob", "Pod"])
def test_a_gpu_pod_without_the_gpu_taints_toleration_lands_nowhere_whatever_makes_it(make: Any) -> None:
    found = rule(plus(make("gpu-smoke", _gpu_pod(tolerate=False))), "node-capacity")
    assert [f.urn.rsplit("::", 1)[-1] for f in found] == ["planted-gpu-smoke"], found
    assert "nvidia.com/gpu=true:NoSchedule" in found[0].message, found
    assert "labels do not match" in found[0].message and "stay Pending" in found[0].message, found
    # the twin: with the pool's toleration the pod lands on the GPU group, and no check objects
    assert not rule(plus(make("gpu-smoke", _gpu_pod(tolerate=True))), "node-capacity")
    assert not rule(plus(make("gpu-smoke", _gpu_pod(tolerate=True))), "pod-fits-node")


def test_a_job_selecting_a_node_role_no_group_has_lands_nowhere() -> None:
    found = rule(plus(job("report", system_pod(nodeSelector={"tokenplane.io/node-role": "batch"}))), "node-capacity")
    assert len(found) == 1 and "Job llm-serving/report" in found[0].message, found
    assert not rule(plus(job("report", system_pod())), "node-capacity")


def test_a_cron_job_whose_pod_no_node_holds_is_pod_fits_nodes_finding() -> None:
    huge = cron_job("rollup", system_pod(memory="40Gi"))
    assert [f.urn.rsplit("::", 1)[-1] for f in rule(plus(huge), "pod-fits-node")] == ["planted-rollup"]
    assert not rule(plus(cron_job("rollup", system_pod(memory="8Gi"))), "pod-fits-node")


def test_a_daemon_set_matching_no_node_makes_no_pod_so_nothing_is_pending() -> None:
    assert not rule(plus(daemon_set("agent", _gpu_pod(tolerate=False))), "node-capacity")


# --- platform-contract: an HPA's metric needs the API that serves it ------------------------------------------------


def _hpa(metric: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "status-page", "namespace": "llm-data"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "status-page"},
            "minReplicas": 2,
            "maxReplicas": 6,
            "metrics": [metric],
        },
    }


TARGET = {"type": "AverageValue", "averageValue": "50"}
PODS = {"type": "Pods", "pods": {"metric": {"name": "nginx_http_requests_per_second"}, "target": TARGET}}
OBJECT = {
    "type": "Object",
    "object": {
        "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "status-page"},
        "metric": {"name": "requests_per_second"},
        "target": {"type": "Value", "value": "100"},
    },
}
EXTERNAL = {"type": "External", "external": {"metric": {"name": "queue_messages_ready"}, "target": TARGET}}


def _api_service(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": f"v1beta1.{group}"},
        "spec": {"group": group, "version": "v1beta1", "service": {"name": "adapter", "namespace": "monitoring"}},
    }


def _adapter(values: dict[str, Any]) -> RenderedResource:
    """A prometheus-adapter Helm release, made from minimal's KEDA release."""
    keda = next(r for r in rendered(STACK).resources if r.inputs.get("chart") == "keda")
    release = with_inputs(
        keda, lambda i: i.update(chart="prometheus-adapter", name="prometheus-adapter", values=values)
    )
    return dataclasses.replace(release, urn=keda.urn + "-adapter", name="planted-prometheus-adapter")


def _with(result: RenderResult, *extra: RenderedResource) -> RenderResult:
    return mutated(result, lambda r: r, extra=list(extra))


def _metric_findings(result: RenderResult) -> list[str]:
    return [f.message for f in rule(result, "platform-contract") if "HorizontalPodAutoscaler llm-data/" in f.message]


@pytest.mark.parametrize(
    ("metric", "api", "reason"),
    [
        (PODS, "custom.metrics.k8s.io", "FailedGetPodsMetric"),
        (OBJECT, "custom.metrics.k8s.io", "FailedGetObjectMetric"),
        (EXTERNAL, "external.metrics.k8s.io", "FailedGetExternalMetric"),  # KEDA's is installed, and not enough
    ],
)
def test_an_hpa_on_a_metric_no_adapter_serves_never_scales(metric: dict[str, Any], api: str, reason: str) -> None:
    found = _metric_findings(plus(_hpa(metric)))
    assert len(found) == 1 and api in found[0] and reason in found[0], found
    # the twin: an APIService registers the group (an adapter installed by hand)
    assert not _metric_findings(plus(_hpa(metric), _api_service(api)))


def test_prometheus_adapters_chart_serves_custom_metrics_and_external_only_with_external_rules() -> None:
    pods, external = plus(_hpa(PODS)), plus(_hpa(EXTERNAL))
    assert not _metric_findings(_with(pods, _adapter({})))
    assert _metric_findings(_with(external, _adapter({})))
    rules = {"rules": {"external": [{"seriesQuery": "queue_messages_ready", "metricsQuery": "sum(<<.Series>>)"}]}}
    assert not _metric_findings(_with(external, _adapter(rules)))


def test_minimals_cpu_hpas_are_served_by_metrics_server() -> None:
    assert not _metric_findings(rendered(STACK))
    assert not rule(rendered(STACK), "platform-contract")


# --- platform-contract: the runtime document's topics exist where brokers do not create them -----------------------


def _edit(result: RenderResult, match: Any, edit: Any) -> RenderResult:
    return mutated(result, lambda r: with_inputs(r, edit) if match(r) else r)


def _topic_findings(result: RenderResult) -> dict[str, str]:
    """Workload name -> message, for the findings about missing topics."""
    return {
        f.urn.rsplit("::", 1)[-1]: f.message
        for f in rule(result, "platform-contract")
        if "UNKNOWN_TOPIC_OR_PARTITION" in f.message
    }


def _drop_topics(*names: str) -> RenderResult:
    def drop(r: RenderedResource) -> RenderedResource | None:
        if r.type == platform_contract.TOPIC and (not names or r.inputs.get("name") in names):
            return None
        return r

    return mutated(rendered(STACK), drop)


def _runtime_documents(r: RenderedResource) -> bool:
    return r.is_kubernetes_object and platform_contract.RUNTIME_DOCUMENT in (r.inputs.get("data") or {})


def test_without_topics_every_process_that_reads_the_runtime_document_is_reported() -> None:
    found = _topic_findings(_drop_topics())
    assert len(found) == 3, found  # both gateways and the FinOps consumer
    assert all("audit-events, batch-jobs, usage-events" in m for m in found.values()), found


def test_one_missing_topic_is_named_alone() -> None:
    found = _topic_findings(_drop_topics("audit-events"))
    assert found and all("topic(s) audit-events that" in m for m in found.values()), found


def test_a_runtime_document_naming_a_topic_nobody_creates_is_reported_and_its_topic_twin_is_not() -> None:
    def rename(inputs: dict[str, Any]) -> None:
        document = json.loads(inputs["data"][platform_contract.RUNTIME_DOCUMENT])
        for topic in document["queues"]["topics"]:
            if topic["purpose"] == "usage":
                topic["name"] = "usage-v2"
        inputs["data"][platform_contract.RUNTIME_DOCUMENT] = json.dumps(document)

    renamed = _edit(rendered(STACK), _runtime_documents, rename)
    found = _topic_findings(renamed)
    assert found and all("topic(s) usage-v2 that" in m for m in found.values()), found
    usage = next(r for r in renamed.resources if r.type == platform_contract.TOPIC and "usage" in r.name)
    created = with_inputs(usage, lambda i: i.update(name="usage-v2"))
    assert not _topic_findings(_with(renamed, dataclasses.replace(created, urn=usage.urn + "-v2")))


def test_brokers_that_create_topics_on_first_use_need_none_declared() -> None:
    def auto_create(inputs: dict[str, Any]) -> None:
        inputs["serverProperties"] = inputs["serverProperties"].replace(
            "auto.create.topics.enable=false", "auto.create.topics.enable=true"
        )

    is_configuration = lambda r: r.type == platform_contract.MSK_CONFIGURATION  # noqa: E731
    assert not _topic_findings(_edit(_drop_topics(), is_configuration, auto_create))
    assert not _topic_findings(rendered(STACK))


def test_a_program_without_an_msk_cluster_is_not_judged() -> None:
    no_msk = mutated(_drop_topics(), lambda r: None if r.type == platform_contract.MSK_CLUSTER else r)
    assert not _topic_findings(no_msk)
