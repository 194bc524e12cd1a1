"""What the Kubernetes API server rejects that the schema does not see, and HPAs that never act.

``api-validation`` holds every rendered object to the API server's validation functions (``object_validation``,
``pod_validation``, ``k8s_syntax``); ``utilization-request`` to the HPA controller's calculatePodRequests. Each
planted defect below (written for these tests, none a held-out case) is an object added to minimal's rendered
graph, with a correct twin the rule must not flag; the put-back tests edit minimal's own objects.
"""

from __future__ import annotations

import copy
import dataclasses
from decimal import Decimal
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, with_inputs
from tests.proof.deployability.test_set3_invariants import deployment, plus, rule, shipped, system_pod
from tokenplane.proof.deployability import Finding
from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.render import RenderedResource, RenderResult

API = "api-validation"
HPA = "utilization-request"
GPU = "nvidia.com/gpu"


def _only(result: RenderResult, name: str, planted: str) -> list[Finding]:
    """The rule's findings, each asserted to be about the planted object."""
    found = rule(result, name)
    assert all(f.urn.endswith(f"planted-{planted}") for f in found), found
    return found


def _container(**fields: Any) -> dict[str, Any]:
    cpu = {"cpu": "100m", "memory": "64Mi"}
    return {"name": "app", "image": "nginx:1.27", "resources": {"requests": cpu, "limits": cpu}, **fields}


def _pod(*containers: dict[str, Any], **extra: Any) -> dict[str, Any]:
    pod = system_pod(**extra)
    pod["containers"] = list(containers) or pod["containers"]
    return pod


# --- the syntax functions, against apimachinery's own examples -----------------------------------------------------


@pytest.mark.parametrize(
    ("check", "value", "ok"),
    [
        (syntax.is_dns1123_label, "vllm-chat", True),
        (syntax.is_dns1123_label, "Vllm-chat", False),
        (syntax.is_dns1123_label, "a" * 64, False),
        (syntax.is_dns1123_label, "chat-", False),
        (syntax.is_dns1123_subdomain, "tokenplane.gateway-config", True),
        (syntax.is_dns1123_subdomain, "gateway_config", False),
        (syntax.is_dns1035_label, "status-1", True),
        (syntax.is_dns1035_label, "1-status", False),
        (syntax.is_qualified_name, "app.kubernetes.io/name", True),
        (syntax.is_qualified_name, "tokenplane.io/", False),
        (syntax.is_qualified_name, "a/b/c", False),
        (syntax.is_qualified_name, "Not_A.Domain/name", False),
        (syntax.is_valid_label_value, "", True),
        (syntax.is_valid_label_value, "v" * 63, True),
        (syntax.is_valid_label_value, "v" * 64, False),
        (syntax.is_valid_label_value, "qwen/7b", False),
        (syntax.is_valid_port_name, "metrics", True),
        (syntax.is_valid_port_name, "metrics-exporter", False),  # 16 characters
        (syntax.is_valid_port_name, "8080", False),  # no letter
        (syntax.is_valid_port_name, "http--alt", False),
        (syntax.is_valid_port_name, "HTTP", False),
        (syntax.is_relaxed_env_var_name, "HF_HOME", True),
        (syntax.is_relaxed_env_var_name, "tokenplane.pool-url", True),
        (syntax.is_relaxed_env_var_name, "POOL=chat", False),
        (syntax.is_relaxed_env_var_name, "", False),
    ],
)
def test_syntax_rules_accept_and_reject_like_apimachinery(check: Any, value: str, ok: bool) -> None:
    assert (check(value) == []) is ok, check(value)


@pytest.mark.parametrize(
    ("text", "value"),
    [("500m", Decimal("0.5")), ("64Mi", Decimal(64 * 2**20)), ("1e3", Decimal(1000)), (".5", Decimal("0.5")), (2, 2)],
)
def test_quantities_parse_as_parse_quantity_does(text: object, value: Decimal) -> None:
    assert syntax.parse_quantity(text) == value


@pytest.mark.parametrize("text", ["2 GB", "1.5 cores", "Gi", "1GB", ""])
def test_quantities_parse_quantity_rejects_do_not_parse(text: str) -> None:
    assert syntax.parse_quantity(text) is None
    assert syntax.quantity(text) == 0.0  # the capacity checks count it as nothing instead of crashing


# --- api-validation: workloads ------------------------------------------------------------------------------------


def test_a_selector_that_does_not_match_the_template_labels_is_rejected() -> None:
    planted = deployment("reporting", system_pod())
    planted["spec"]["selector"] = {"matchLabels": {"app.kubernetes.io/name": "report"}}
    found = _only(plus(planted), API, "reporting")
    assert len(found) == 1 and "`selector` does not match template `labels`" in found[0].message, found
    twin = deployment("reporting", system_pod())
    twin["spec"]["selector"] = {
        "matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In", "values": ["reporting", "x"]}]
    }
    assert not rule(plus(twin), API)


def _job(name: str, pod: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "llm-data"},
        "spec": {"template": {"spec": pod}},
    }


def test_a_job_that_would_restart_always_is_rejected_and_one_on_failure_is_not() -> None:
    for policy in ({}, {"restartPolicy": "Always"}):
        found = _only(plus(_job("reindex", _pod(**policy))), API, "reindex")
        assert len(found) == 1 and 'valid values: "OnFailure", "Never"' in found[0].message, (policy, found)
    never = deployment("reporting", _pod(restartPolicy="Never"))
    found = _only(plus(never), API, "reporting")
    assert len(found) == 1 and 'supported values: "Always"' in found[0].message, found
    assert not rule(plus(_job("reindex", _pod(restartPolicy="OnFailure"))), API)


def test_container_names_and_port_names_are_held_to_their_syntax_and_uniqueness() -> None:
    long_port = _container(ports=[{"name": "metrics-exporter", "containerPort": 9100}])
    found = _only(plus(deployment("exporter", _pod(long_port))), API, "exporter")
    assert len(found) == 1 and "must be no more than 15 characters" in found[0].message, found
    twice = _container(ports=[{"name": "http", "containerPort": 80}, {"name": "http", "containerPort": 8080}])
    found = _only(plus(deployment("exporter", _pod(twice))), API, "exporter")
    assert len(found) == 1 and "Duplicate value" in found[0].message, found
    same_name = _pod(_container(), initContainers=[_container()])
    found = _only(plus(deployment("exporter", same_name)), API, "exporter")
    assert len(found) == 1 and "two containers named 'app'" in found[0].message, found
    twin = _pod(
        _container(ports=[{"name": "metrics", "containerPort": 9100}, {"name": "http", "containerPort": 80}]),
        _container(name="sidecar", ports=[{"name": "http", "containerPort": 8080}]),  # per container, not per pod
        initContainers=[_container(name="init-schema")],
    )
    assert not rule(plus(deployment("exporter", twin)), API)


def test_a_request_above_its_limit_is_rejected() -> None:
    over = _container(resources={"requests": {"cpu": "2"}, "limits": {"cpu": "1500m"}})
    found = _only(plus(deployment("reporting", _pod(over))), API, "reporting")
    assert len(found) == 1 and "must be less than or equal to cpu limit of 1500m" in found[0].message, found
    assert not rule(
        plus(
            deployment(
                "reporting", _pod(_container(resources={"requests": {"cpu": "1.5"}, "limits": {"cpu": "1500m"}}))
            )
        ),
        API,
    )


def test_gpus_must_be_whole_and_requested_at_their_limit() -> None:
    cases = {
        "must be equal to nvidia.com/gpu limit of 2": {"requests": {GPU: "1"}, "limits": {GPU: "2"}},
        "Limit must be set for non overcommitable resources": {"requests": {GPU: 1}},
        "must be an integer": {"limits": {GPU: "500m"}},
    }
    for expected, resources in cases.items():
        found = _only(plus(deployment("trainer", _pod(_container(resources=resources)))), API, "trainer")
        assert len(found) == 1 and expected in found[0].message, (resources, found)
    for resources in ({"limits": {GPU: 1}}, {"requests": {GPU: "2"}, "limits": {GPU: 2}}):
        assert not rule(plus(deployment("trainer", _pod(_container(resources=resources)))), API), resources


def test_an_unparseable_quantity_is_rejected_without_stopping_the_other_checks() -> None:
    found = _only(plus(deployment("reporting", system_pod(memory="2 GB"))), API, "reporting")
    assert len(found) == 2 and all("is not a quantity" in f.message for f in found), found  # request and limit


def test_volume_mounts_name_a_volume_of_the_pod_once_per_path() -> None:
    volume = {"name": "cache", "emptyDir": {}}
    missing = _pod(_container(volumeMounts=[{"name": "cahce", "mountPath": "/cache"}]), volumes=[volume])
    found = _only(plus(deployment("reporting", missing)), API, "reporting")
    assert len(found) == 1 and "'cahce', which is not a volume of the pod" in found[0].message, found
    mounts = [{"name": "cache", "mountPath": "/data"}, {"name": "scratch", "mountPath": "/data"}]
    twice = _pod(_container(volumeMounts=mounts), volumes=[volume, {"name": "scratch", "emptyDir": {}}])
    found = _only(plus(deployment("reporting", twice)), API, "reporting")
    assert len(found) == 1 and "two volumes at '/data'" in found[0].message, found
    doubled = _pod(_container(), volumes=[volume, volume])
    found = _only(plus(deployment("reporting", doubled)), API, "reporting")
    assert len(found) == 1 and "declares volume 'cache' twice" in found[0].message, found
    # twin: a StatefulSet mounts its volumeClaimTemplates, which are not in spec.volumes
    sts = deployment("ledger", _pod(_container(volumeMounts=[{"name": "data", "mountPath": "/data"}])))
    sts["kind"] = "StatefulSet"
    sts["spec"]["volumeClaimTemplates"] = [
        {
            "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        }
    ]
    assert not rule(plus(sts), API)


# --- api-validation: metadata and Services ------------------------------------------------------------------------


def _config_map(name: str, **labels: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": "llm-data", "labels": labels}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def _service(name: str, *ports: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "llm-data"},
        "spec": {"selector": {"app.kubernetes.io/name": "reporting"}, "ports": list(ports)},
    }


def test_names_follow_their_kinds_rule() -> None:
    found = _only(plus(_config_map("Gateway_Config")), API, "Gateway_Config")
    assert len(found) == 1 and "NameIsDNSSubdomain" in found[0].message, found
    service = _service("1-status", {"port": 80, "targetPort": 8080})
    found = _only(plus(service), API, "1-status")
    assert len(found) == 1 and "DNS-1035 label" in found[0].message, found
    long_cron = copy.deepcopy(shipped("CronJob", "clickhouse-backup"))
    long_cron["metadata"]["name"] = "c" * 53
    found = _only(plus(long_cron), API, "c" * 53)
    assert len(found) == 1 and "no more than 52 characters" in found[0].message, found
    sts = deployment("ledger.v2", _pod(_container()), replicas=3)
    sts["kind"] = "StatefulSet"
    found = _only(plus(sts), API, "ledger.v2")
    assert len(found) == 1 and "'ledger.v2-2', the pods' hostname" in found[0].message, found
    twin_sts = copy.deepcopy(sts)
    twin_sts["metadata"]["name"] = "ledger-v2"
    twins = [_config_map("gateway.config-v2"), _service("status-1", {"port": 80, "targetPort": 8080}), twin_sts]
    assert not rule(plus(*twins), API)


def test_label_keys_and_values_follow_validate_labels() -> None:
    found = _only(plus(_config_map("prompts", **{"tokenplane.io/model": "qwen/7b"})), API, "prompts")
    assert len(found) == 1 and "a valid label must be an empty string" in found[0].message, found
    found = _only(plus(_config_map("prompts", **{"model": "q" * 64})), API, "prompts")
    assert len(found) == 1 and "no more than 63 characters" in found[0].message, found
    assert not rule(plus(_config_map("prompts", **{"tokenplane.io/model": "qwen-7b", "m": "q" * 63})), API)


def test_service_ports_are_named_when_several_and_unique() -> None:
    unnamed = _service("reporting", {"name": "http", "port": 80}, {"port": 9090})
    found = _only(plus(unnamed), API, "reporting")
    assert len(found) == 1 and "has no name" in found[0].message, found
    dup = _service("reporting", {"name": "http", "port": 80}, {"name": "web", "port": 80})
    found = _only(plus(dup), API, "reporting")
    assert len(found) == 1 and "port 80/TCP twice" in found[0].message, found
    twin = _service("reporting", {"name": "dns", "port": 53, "protocol": "UDP"}, {"name": "dns-tcp", "port": 53})
    assert not rule(plus(twin), API)


def test_env_names_that_no_version_accepts_are_rejected() -> None:
    bad = _container(env=[{"name": "POOL=chat", "value": "1"}])
    found = _only(plus(deployment("reporting", _pod(bad))), API, "reporting")
    assert len(found) == 1 and "other than '='" in found[0].message, found
    assert not rule(plus(deployment("reporting", _pod(_container(env=[{"name": "pool.url", "value": "1"}])))), API)


def _release_named(name: str) -> RenderResult:
    def change(resource: RenderedResource) -> RenderedResource:
        if resource.urn.endswith("minimal-us-keda"):
            return with_inputs(resource, lambda inputs: inputs.update(name=name))
        return resource

    return mutated(rendered("minimal"), change)


def test_a_helm_release_name_helm_refuses_is_reported() -> None:
    found = rule(_release_named("k" * 54), API)
    assert len(found) == 1 and found[0].urn.endswith("minimal-us-keda"), found
    assert "no more than 53 characters" in found[0].message and "ValidateReleaseName" in found[0].message
    assert rule(_release_named("KEDA"), API)
    assert not rule(_release_named("k" * 53), API)


# --- put back into a shipped graph --------------------------------------------------------------------------------


def _edit(kind: str, name: str, edit: Any) -> RenderResult:
    def change(resource: RenderedResource) -> RenderedResource:
        if resource.inputs.get("kind") == kind and resource.inputs["metadata"]["name"] == name:
            return with_inputs(resource, edit)
        return resource

    return mutated(rendered("minimal"), change)


def test_the_shipped_stack_is_clean() -> None:
    assert not rule(rendered("minimal"), API)
    assert not rule(rendered("minimal"), HPA)


def test_put_back_into_minimal_a_template_label_edit_breaks_the_selector() -> None:
    def relabel(inputs: dict[str, Any]) -> None:
        inputs["spec"]["template"]["metadata"]["labels"] = {"app.kubernetes.io/name": "chat"}

    found = rule(_edit("Deployment", "vllm-chat", relabel), API)
    assert [f.urn.rsplit("::", 1)[-1] for f in found] == ["minimal-us-pool-chat-deployment"], found
    assert "`selector` does not match template `labels`" in found[0].message


def test_put_back_into_minimal_a_publish_job_without_restart_policy() -> None:
    job = shipped("Job", "publish-qwen-7b-chat-v1")["metadata"]["name"]
    found = rule(_edit("Job", job, lambda i: i["spec"]["template"]["spec"].pop("restartPolicy")), API)
    assert len(found) == 1 and "restartPolicy unset" in found[0].message, found


def test_put_back_into_minimal_a_gpu_request_below_its_limit() -> None:
    def halve(inputs: dict[str, Any]) -> None:
        resources = inputs["spec"]["template"]["spec"]["containers"][0]["resources"]
        resources.setdefault("requests", {})[GPU] = "0"

    found = rule(_edit("Deployment", "vllm-chat", halve), API)
    assert len(found) == 1 and f"must be equal to {GPU} limit" in found[0].message, found


# --- utilization-request ------------------------------------------------------------------------------------------


def _hpa(target: str, metric: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": target, "namespace": "llm-data"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": 1,
            "maxReplicas": 3,
            "metrics": [metric],
        },
    }


def _resource_metric(name: str, target: dict[str, Any], container: str | None = None) -> dict[str, Any]:
    if container is None:
        return {"type": "Resource", "resource": {"name": name, "target": target}}
    return {"type": "ContainerResource", "containerResource": {"name": name, "container": container, "target": target}}


def _scaled_object(target: str, trigger: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": target, "namespace": "llm-data"},
        "spec": {"scaleTargetRef": {"name": target}, "minReplicaCount": 1, "maxReplicaCount": 3, "triggers": [trigger]},
    }


UTILIZATION = {"type": "Utilization", "averageUtilization": 70}
NO_REQUESTS = {"name": "app", "image": "nginx:1.27"}


def _hpa_findings(*objects: dict[str, Any]) -> list[Finding]:
    found = rule(plus(*objects), HPA)
    assert all(f.urn.rsplit("::", 1)[-1].startswith("planted-") for f in found), found
    return found


def test_a_cpu_utilization_hpa_on_pods_without_cpu_requests_never_scales() -> None:
    found = _hpa_findings(
        deployment("reporting", _pod(NO_REQUESTS)), _hpa("reporting", _resource_metric("cpu", UTILIZATION))
    )
    assert len(found) == 1 and "missing request for cpu in container app" in found[0].message, found
    limits_only = {**NO_REQUESTS, "resources": {"limits": {"cpu": "1"}}}  # the request defaults to the limit
    assert not _hpa_findings(
        deployment("reporting", _pod(limits_only)), _hpa("reporting", _resource_metric("cpu", UTILIZATION))
    )
    average = {"type": "AverageValue", "averageValue": "500m"}  # needs no request
    assert not _hpa_findings(
        deployment("reporting", _pod(NO_REQUESTS)), _hpa("reporting", _resource_metric("cpu", average))
    )


def test_a_keda_cpu_trigger_on_a_pod_with_a_sidecar_without_requests_never_scales() -> None:
    pod = _pod(_container(), {**NO_REQUESTS, "name": "log-shipper"})
    trigger = {"type": "cpu", "metricType": "Utilization", "metadata": {"value": "70"}}
    found = _hpa_findings(deployment("reporting", pod), _scaled_object("reporting", trigger))
    assert len(found) == 1 and "log-shipper" in found[0].message and "ScaledObject" in found[0].message, found
    only_app = {**trigger, "metadata": {"value": "70", "containerName": "app"}}
    assert not _hpa_findings(deployment("reporting", pod), _scaled_object("reporting", only_app))


def test_a_memory_container_resource_target_needs_that_containers_memory_request() -> None:
    pod = _pod(_container(), {"name": "worker", "image": "nginx:1.27", "resources": {"requests": {"cpu": "1"}}})
    worker = _hpa("reporting", _resource_metric("memory", UTILIZATION, container="worker"))
    found = _hpa_findings(deployment("reporting", pod), worker)
    assert len(found) == 1 and "missing request for memory in container worker" in found[0].message, found
    app = _hpa("reporting", _resource_metric("memory", UTILIZATION, container="app"))
    assert not _hpa_findings(deployment("reporting", pod), app)


def test_an_autoscaling_v1_hpa_reads_target_cpu_utilization() -> None:
    hpa = _hpa("reporting", {})
    hpa["apiVersion"] = "autoscaling/v1"
    hpa["spec"] = {**hpa["spec"], "targetCPUUtilizationPercentage": 70}
    del hpa["spec"]["metrics"]
    found = _hpa_findings(deployment("reporting", _pod(NO_REQUESTS)), hpa)
    assert len(found) == 1 and "on cpu utilization" in found[0].message, found


def test_put_back_into_minimal_the_ai_gateway_without_cpu_requests_never_scales() -> None:
    def strip(inputs: dict[str, Any]) -> None:
        for container in inputs["spec"]["template"]["spec"]["containers"]:
            for part in ("requests", "limits"):
                (container.get("resources") or {}).get(part, {}).pop("cpu", None)

    found = rule(_edit("Deployment", "ai-gateway", strip), HPA)
    assert len(found) == 1 and found[0].urn.endswith("HorizontalPodAutoscaler::minimal-us-ai-gateway-hpa"), found
    assert "missing request for cpu" in found[0].message


def test_findings_name_the_resource_the_error_and_the_fix() -> None:
    planted = deployment("reporting", _pod(NO_REQUESTS))
    planted["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    for finding in [
        *rule(plus(planted), API),
        *_hpa_findings(planted, _hpa("reporting", _resource_metric("cpu", UTILIZATION))),
    ]:
        assert finding.urn.startswith("urn:pulumi:") and finding.fix and "reporting" in finding.message
    assert dataclasses.asdict(rule(plus(planted), API)[0])["rule"] == API


def _data_object(kind: str, data: dict[str, str]) -> dict[str, Any]:
    field = "stringData" if kind == "Secret" else "data"
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": "planted-data", "namespace": "llm-gateway"},
        field: data,
    }


@pytest.mark.parametrize("kind", ["ConfigMap", "Secret"])
@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"model.json": "x" * (2 * 1024 * 1024)}, "must have at most 1048576 bytes"),
        ({"prompts/system.txt": "hello"}, "IsConfigMapKey"),
        ({"model.json": "x" * (512 * 1024), "system.txt": "hello"}, None),
    ],
)
def test_a_config_map_or_secret_the_api_server_refuses_is_found(
    kind: str, data: dict[str, str], said: str | None
) -> None:
    found = [f for f in rule(plus(_data_object(kind, data)), API) if "planted-data" in f.message]
    assert (said is None and found == []) or (len(found) == 1 and said in found[0].message), found


@pytest.mark.parametrize(("policy", "found"), [("Never", True), ("IfNotPresent", False)])
def test_an_image_the_kubelet_is_told_never_to_pull_is_found(policy: str, found: bool) -> None:
    manifest = deployment("planted-never-pull", {"containers": [_container(imagePullPolicy=policy)]})
    said = [f for f in rule(plus(manifest), "image-published") if "planted-never-pull" in f.message]
    assert bool(said) == found and all("ErrImageNeverPull" in f.message for f in said), said


@pytest.mark.parametrize(
    ("probe", "field", "said"),
    [
        ("livenessProbe", {"successThreshold": 2}, "successThreshold must be 1"),
        ("startupProbe", {"successThreshold": 3}, "successThreshold must be 1"),
        ("readinessProbe", {"successThreshold": 2}, None),
        ("readinessProbe", {"periodSeconds": 0}, "greater than or equal to 1"),
        ("livenessProbe", {"successThreshold": 1, "periodSeconds": 10}, None),
    ],
)
def test_probe_values_the_api_server_refuses_are_found(probe: str, field: dict[str, int], said: str | None) -> None:
    check = {"httpGet": {"path": "/", "port": 8080}, **field}
    manifest = deployment("planted-probe", {"containers": [_container(**{probe: check})]})
    found = [f for f in rule(plus(manifest), API) if "planted-probe" in f.message]
    assert (said is None and found == []) or (len(found) == 1 and said in found[0].message), found
