"""The rules set 40's scheduling, downward API and Kafka misses led to (written after its blind run, so not held out),
each planted in dev's render beside its correct twin: a downwardAPI volume's resourceFieldRef without containerName
(api-validation), a PriorityClass above serving on serving's node groups (priority-preempts-serving) and an MSK
topic whose min.insync.replicas equals its replication factor (topic-replication). The planted defects are of other
resources and values than the held-out cases' (Deployments, StatefulSets and Jobs for the downward API; a Job on
the large pool, a bare Pod on the embed pool; replication factors 2 and 4,
and one taken from the cluster's server properties)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import api_validation, kafka_topics, priority_preemption
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
TYPES = {
    "Deployment": "kubernetes:apps/v1:Deployment",
    "StatefulSet": "kubernetes:apps/v1:StatefulSet",
    "DaemonSet": "kubernetes:apps/v1:DaemonSet",
    "Job": "kubernetes:batch/v1:Job",
    "Pod": "kubernetes:core/v1:Pod",
    "PriorityClass": "kubernetes:scheduling.k8s.io/v1:PriorityClass",
}


def _workload(kind: str, name: str, pod: dict[str, Any]) -> RenderedResource:
    labels = {"app.kubernetes.io/name": name}
    spec = {"containers": [{"name": "app", "image": "busybox:1.36"}], **pod}
    metadata = {"name": name, "namespace": "llm-batch"}
    template = {"metadata": {"labels": labels}, "spec": spec}
    manifest: dict[str, Any]
    if kind == "Pod":
        manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {**metadata, "labels": labels}, "spec": spec}
    elif kind == "Job":
        spec["restartPolicy"] = "Never"
        manifest = {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": {"template": template}}
    else:
        body: dict[str, Any] = {"template": template, "selector": {"matchLabels": labels}}
        if kind == "StatefulSet":
            body["serviceName"] = name
        manifest = {"apiVersion": "apps/v1", "kind": kind, "metadata": metadata, "spec": body}
    return planted(STACK, TYPES[kind], name, manifest, region=REGION)


# --- api-validation: a downwardAPI volume's resourceFieldRef names its container --------------------------------


def _downward(ref: dict[str, Any], *, projected: bool) -> dict[str, Any]:
    source = {"downwardAPI": {"items": [{"path": "limit", "resourceFieldRef": ref}]}}
    volume = {"name": "podinfo", "projected": {"sources": [source]}} if projected else {"name": "podinfo", **source}
    return {"volumes": [volume]}


def _dapi_messages(resource: RenderedResource) -> list[str]:
    return [f.message for f in planted_findings(api_validation.check, resource) if "containerName" in f.message]


@pytest.mark.parametrize(
    ("kind", "ref", "projected"),
    [
        ("Deployment", {"resource": "limits.cpu", "divisor": "1m"}, False),
        ("StatefulSet", {"resource": "requests.memory"}, True),
        ("Job", {"resource": "limits.ephemeral-storage", "containerName": ""}, False),
    ],
)
def test_a_downward_api_volume_resource_field_ref_without_its_container_is_refused(
    kind: str, ref: dict[str, Any], projected: bool
) -> None:
    [message] = _dapi_messages(_workload(kind, "planted-dapi-res", _downward(ref, projected=projected)))
    assert "resourceFieldRef.containerName: Required value" in message, message
    assert "validateContainerResourceFieldSelector" in message and "the API server rejects it" in message, message


@pytest.mark.parametrize("projected", [False, True])
def test_a_downward_api_volume_resource_field_ref_naming_its_container_is_accepted(projected: bool) -> None:
    pod = _downward({"resource": "limits.memory", "divisor": "1Mi", "containerName": "app"}, projected=projected)
    assert _dapi_messages(_workload("Deployment", "planted-dapi-res-ok", pod)) == []


def test_an_env_resource_field_ref_without_container_name_is_accepted() -> None:
    container = {"name": "app", "image": "busybox:1.36"}
    container["env"] = [{"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}}]
    pod = {"containers": [container]}
    assert _dapi_messages(_workload("Deployment", "planted-env-res-ok", pod)) == []


# --- priority-preempts-serving -----------------------------------------------------------------------------------


def _class(name: str, value: float, policy: str | None = None, *, default: bool = False) -> RenderedResource:
    manifest: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": default,
    }
    if policy is not None:
        manifest["preemptionPolicy"] = policy
    return planted(STACK, TYPES["PriorityClass"], f"planted-pc-{name}", manifest, region=REGION)


GPU_TOLERATION = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def _on_pool(pool: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "tokenplane.io/pool", "operator": "In", "values": [pool]}]}
    return {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}},
        "tolerations": GPU_TOLERATION,
    }


def _preempting(*extra: RenderedResource) -> list[str]:
    return [f.message for f in planted_findings(priority_preemption.check, *extra)]


@pytest.mark.parametrize(
    ("cls", "workload", "says"),
    [
        (
            _class("finetune", 1.0, "PreemptLowerPriority"),
            _workload("Job", "planted-finetune", {"priorityClassName": "finetune", **_on_pool("large")}),
            "vllm-large",
        ),
        (
            _class("embed-backfill", 100000),
            _workload(
                "Pod",
                "planted-embed-backfill",
                {
                    "priorityClassName": "embed-backfill",
                    "nodeSelector": {"tokenplane.io/pool": "embed"},
                    "tolerations": [{"operator": "Exists"}],
                },
            ),
            "vllm-embed",
        ),
    ],
)
def test_a_class_above_serving_on_serving_nodes_is_reported(
    cls: RenderedResource, workload: RenderedResource, says: str
) -> None:
    [message] = _preempting(cls, workload)
    assert "preempts (evicts) serving replicas" in message and says in message and "priority 0" in message, message


def test_a_global_default_class_above_serving_is_reported_for_pods_without_a_class() -> None:
    # the default applies to serving too: only a pod whose class is above the default is judged, so a workload of
    # an explicit higher class beside default-classed serving pods is the defect
    found = _preempting(
        _class("everyone", 10, default=True),
        _class("reindex", 11),
        _workload("StatefulSet", "planted-reindex", {"priorityClassName": "reindex", **_on_pool("medium")}),
    )
    assert len(found) == 1 and "priority 10" in found[0] and "vllm-medium" in found[0], found


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ((_class("sweeps", 1000, "Never"), _on_pool("small")), "never preempts"),
        ((_class("sweeps", -100), _on_pool("small")), "below serving"),
        ((_class("sweeps", 0), _on_pool("small")), "equal to serving"),
        ((_class("sweeps", 1000), {"nodeSelector": {"tokenplane.io/pool": "small"}}), "no GPU toleration"),
        ((_class("sweeps", 1000), {"nodeSelector": {"tokenplane.io/node-role": "batch"}}), "no such node group"),
        # a CPU workload on the system group beside the gateways: a preempted gateway pod is back in seconds
        ((_class("sweeps", 500), {}), "beside the gateways only"),
    ],
)
def test_a_class_that_cannot_preempt_serving_is_not_reported(extra: tuple[Any, dict[str, Any]], why: str) -> None:
    cls, placement = extra
    workload = _workload("Job", "planted-sweeps", {"priorityClassName": "sweeps", **placement})
    assert _preempting(cls, workload) == [], why


def test_system_classes_daemonsets_and_unknown_classes_are_not_judged() -> None:
    found = _preempting(
        _class("node-agents", 5000),
        _workload(
            "DaemonSet", "planted-agent", {"priorityClassName": "node-agents", "tolerations": [{"operator": "Exists"}]}
        ),
        _workload("Deployment", "planted-critical", {"priorityClassName": "system-cluster-critical"}),
        _workload("Deployment", "planted-elsewhere", {"priorityClassName": "made-by-another-stack"}),
    )
    assert found == [], found


# --- topic-replication: min.insync.replicas below the replication factor ------------------------------------------

CLUSTER = "urn:pulumi:dev::tokenplane::tokenplane:kafka:Kafka$aws:msk/cluster:Cluster::dev-local-kafka-msk"


def _topic(name: str, factor: float, insync: str | None) -> RenderedResource:
    configs = {"retention.ms": "86400000"} | ({"min.insync.replicas": insync} if insync is not None else {})
    inputs = {
        "clusterArn": "arn:aws:kafka:eu-north-1:123456789012:cluster/dev-local-kafka-msk-d8f3e11/ffdd6a3e-1",
        "name": name,
        "partitionCount": 12.0,
        "replicationFactor": factor,
        "configs": json.dumps(configs),
    }
    return planted(
        STACK,
        "aws:msk/topic:Topic",
        f"planted-{name}",
        inputs,
        region=REGION,
        property_dependencies={"clusterArn": [CLUSTER]},
    )


@pytest.mark.parametrize(
    ("factor", "insync", "source"),
    [(2.0, "2", "the topic's configs"), (4.0, "4", "the topic's configs"), (2.0, None, "server properties")],
)
def test_min_insync_equal_to_the_replication_factor_is_reported(factor: float, insync: str | None, source: str) -> None:
    [finding] = planted_findings(kafka_topics.check, _topic("planted.results", factor, insync))
    assert "NOT_ENOUGH_REPLICAS" in finding.message and "rolling update" in finding.message, finding
    assert source in finding.message and f"min.insync.replicas to {int(factor) - 1}" in finding.fix, finding


@pytest.mark.parametrize(("factor", "insync"), [(3.0, "2"), (4.0, "3"), (1.0, "1"), (3.0, None)])
def test_min_insync_below_the_replication_factor_is_clean(factor: float, insync: str | None) -> None:
    assert planted_findings(kafka_topics.check, _topic("planted.results", factor, insync)) == []
