"""The rules set 32's Service, dashboard and Job misses led to (written after its blind run, so not held out), each
planted in a shipped render beside its correct twin: a Service whose link variables are ones vLLM reads
(service-link-collision), a headless Service whose port is not the pods' (headless-service-port), a dashboard
ConfigMap without the sidecar's label (dashboard-loaded) and an awaited object that never gets ready on its own
(awaited-can-be-ready). The planted defects are of other resources and values than the held-out cases' (Services
named vllm-dp-master and vllm-nixl-side-channel, a headless numeric 9000 -> 8000, a dashboard with rows in a Secret's
neighbour namespace, a Job with parallelism 0 and a paused Deployment)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.proof.deployability.test_set3_invariants import deployment, plus, rule, shipped, system_pod
from tokenplane.proof.render import RenderedResource

SERVING = "llm-serving"
POOL = {"app.kubernetes.io/name": "vllm-chat"}


def _found(name: str, *objects: dict[str, Any]) -> list[str]:
    return [f.message for f in rule(plus(*objects), name)]


def _linked(*objects: dict[str, Any]) -> list[str]:
    """service-link-collision's findings with the shipped pool's ``enableServiceLinks: false`` taken out (the
    Kubernetes default put back), beside ``objects``."""
    pool = shipped("Deployment", "vllm-chat")
    del pool["spec"]["template"]["spec"]["enableServiceLinks"]
    return [f.message for f in rule(plus(*objects, change=lambda r: _replace(r, pool)), "service-link-collision")]


def _service(name: str, namespace: str = SERVING, **spec: Any) -> dict[str, Any]:
    body = {"selector": POOL, "ports": [{"name": "http", "port": 8000, "targetPort": "http"}], **spec}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace}, "spec": body}


# service-link-collision ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("service", "variable"),
    [
        (_service("vllm-dp-master", ports=[{"name": "dp", "port": 13345}]), "VLLM_DP_MASTER_PORT"),
        (_service("vllm-nixl-side-channel", ports=[{"port": 5557}]), "VLLM_NIXL_SIDE_CHANNEL_PORT"),
        (_service("vllm", selector={"app": "other"}, ports=[{"name": "metrics", "port": 9400}]), "VLLM_PORT"),
    ],
)
def test_a_service_whose_links_are_variables_vllm_reads_is_reported(service: dict[str, Any], variable: str) -> None:
    found = _linked(service)
    assert len(found) == 1 and variable in found[0] and "vllm-chat" in found[0], found


@pytest.mark.parametrize(
    "service",
    [
        _service("chat-api"),  # CHAT_API_*: no variable vLLM reads
        _service("vllm", namespace="llm-data"),  # links reach only pods of the Service's namespace
        _service("vllm", clusterIP="None"),  # headless: no cluster IP, no links
    ],
)
def test_a_service_whose_links_vllm_does_not_read_is_not_reported(service: dict[str, Any]) -> None:
    assert _linked(service) == []


def test_the_shipped_pool_takes_no_service_links_so_a_service_named_vllm_is_harmless() -> None:
    # The shipped pools set enableServiceLinks: false (VllmPool); with the default put back, the same Service fires.
    assert shipped("Deployment", "vllm-chat")["spec"]["template"]["spec"]["enableServiceLinks"] is False
    assert rule(plus(_service("vllm")), "service-link-collision") == []
    assert len(_linked(_service("vllm"))) == 1


def _replace(resource: RenderedResource, manifest: dict[str, Any]) -> RenderedResource:
    if resource.inputs.get("kind") == "Deployment" and resource.inputs["metadata"]["name"] == "vllm-chat":
        return dataclasses.replace(resource, inputs=manifest)
    return resource


# headless-service-port -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ports",
    [
        [{"name": "http", "port": 9000, "targetPort": 8000}],
        [{"name": "web", "port": 443, "targetPort": "http"}],
        [{"name": "ok", "port": 8000}, {"name": "alt", "port": 8080, "targetPort": "http"}],
    ],
)
def test_a_headless_service_that_translates_a_port_is_reported(ports: list[dict[str, Any]]) -> None:
    found = _found("headless-service-port", _service("chat-peers", clusterIP="None", ports=ports))
    assert len(found) == 1 and "kube-proxy translates no port" in found[0], found


@pytest.mark.parametrize(
    "service",
    [
        _service("chat-peers", clusterIP="None"),  # 8000 -> http (8000)
        _service("chat-peers", clusterIP="None", ports=[{"name": "http", "port": 8000}]),
        _service("chat-alias", ports=[{"name": "http", "port": 80, "targetPort": "http"}]),  # a cluster IP translates
    ],
)
def test_a_headless_service_on_the_pods_port_is_not_reported(service: dict[str, Any]) -> None:
    assert _found("headless-service-port", service) == []


# dashboard-loaded: a dashboard without any sidecar label ---------------------------------------------------------


def _board(
    name: str, namespace: str = "monitoring", labels: dict[str, str] | None = None, **body: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {"team": "ml"}},
        "data": {f"{name}.json": json.dumps({"title": name, **body})},
    }


@pytest.mark.parametrize(
    "board",
    [
        _board("gateway-latency", panels=[{"type": "stat"}]),
        _board("legacy-rows", rows=[{"panels": []}]),
        _board("in-serving", namespace=SERVING, labels={}, panels=[]),
    ],
)
def test_a_dashboard_without_the_sidecar_label_is_reported(board: dict[str, Any]) -> None:
    found = _found("dashboard-loaded", board)
    assert len(found) == 1 and "dashboard model" in found[0] and "grafana_dashboard" in found[0], found


@pytest.mark.parametrize(
    "board",
    [
        _board("labelled", labels={"grafana_dashboard": "1"}, panels=[]),
        _board("not-a-board", settings={"a": 1}),  # JSON, but no dashboard model
    ],
)
def test_a_labelled_dashboard_or_other_json_is_not_reported(board: dict[str, Any]) -> None:
    assert _found("dashboard-loaded", board) == []


# awaited-can-be-ready --------------------------------------------------------------------------------------------


def _job(name: str, annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    pod = {**system_pod(), "restartPolicy": "Never"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "llm-data", **({"annotations": annotations} if annotations else {})},
        "spec": {"template": {"spec": pod}, **spec},
    }


def _paused(name: str, replicas: int = 1) -> dict[str, Any]:
    manifest = deployment(name, system_pod(), replicas=replicas)
    manifest["spec"]["paused"] = True
    return manifest


@pytest.mark.parametrize(
    ("obj", "says"),
    [
        (_job("reindex", suspend=True, backoffLimit=0), "spec.suspend: true"),
        (_job("warmup", parallelism=0), "spec.parallelism: 0"),
        (_paused("canary"), "spec.paused: true"),
        (_paused("standby", replicas=0), "spec.paused: true"),
    ],
)
def test_an_awaited_object_that_never_gets_ready_is_reported(obj: dict[str, Any], says: str) -> None:
    found = _found("awaited-can-be-ready", obj)
    assert len(found) == 1 and says in found[0] and "waits out the await timeout" in found[0], found


@pytest.mark.parametrize(
    "obj",
    [
        _job("reindex", {"pulumi.com/skipAwait": "true"}, suspend=True),
        _job("reindex", suspend=False, parallelism=1),
        deployment("scaled-down", system_pod(), replicas=0),
    ],
)
def test_an_awaited_object_that_can_get_ready_is_not_reported(obj: dict[str, Any]) -> None:
    assert _found("awaited-can-be-ready", obj) == []
