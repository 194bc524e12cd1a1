"""Issue 27's "deploys but wrong" items the platform-contract rule covers, put back, with others of their kind.

Kafka topics below min.insync.replicas, CPU HPAs without metrics-server, GPU node groups Cluster Autoscaler
cannot tell, and IAM statements whose Resource is not an ARN.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import findings, mutated, rendered, with_inputs
from tokenplane.proof.deployability import platform_contract
from tokenplane.proof.render import RenderedResource, RenderResult

pytestmark = pytest.mark.slow  # reads renders of whole stacks
RULE = platform_contract.RULE


def _edit(result: RenderResult, match: Any, edit: Any) -> RenderResult:
    return mutated(result, lambda r: with_inputs(r, edit) if match(r) else r)


def _topics(r: RenderedResource) -> bool:
    return r.type == platform_contract.TOPIC


# --- Kafka ---------------------------------------------------------------------------------------


def test_devs_replication_factor_1_topics_under_the_broker_default_refuse_acks_all() -> None:
    def old(inputs: dict[str, Any]) -> None:
        configs = json.loads(inputs["configs"])
        configs.pop("min.insync.replicas")
        inputs["configs"] = json.dumps(configs)

    found = findings("dev", _edit(rendered("dev"), _topics, old), rule=RULE)
    assert len(found) == 3 and all("NotEnoughReplicas" in f.message for f in found), found
    assert "min.insync.replicas=2" in found[0].message


def test_a_topic_whose_own_min_insync_exceeds_its_replicas_is_reported() -> None:
    def tighten(inputs: dict[str, Any]) -> None:
        inputs["configs"] = json.dumps({**json.loads(inputs["configs"]), "min.insync.replicas": "4"})

    found = findings("byteion", _edit(rendered("byteion"), _topics, tighten), rule=RULE)
    assert found and all("has 3 replica(s) but min.insync.replicas=4" in f.message for f in found), found


def test_a_replication_factor_lowered_below_the_broker_default_is_reported() -> None:
    def lower(inputs: dict[str, Any]) -> None:
        inputs["replicationFactor"] = 1
        configs = json.loads(inputs["configs"])
        configs.pop("min.insync.replicas")
        inputs["configs"] = json.dumps(configs)

    found = findings("minimal", _edit(rendered("minimal"), _topics, lower), rule=RULE)
    assert found and "has 1 replica(s)" in found[0].message, found


# --- metrics API ---------------------------------------------------------------------------------


def _no_metrics_server(result: RenderResult) -> RenderResult:
    return mutated(result, lambda r: None if r.inputs.get("addonName") == "metrics-server" else r)


def test_cpu_hpas_never_act_without_metrics_server() -> None:
    found = findings("minimal", _no_metrics_server(rendered("minimal")), rule=RULE)
    hpas = sorted(f.urn.rsplit("::", 1)[-1] for f in found)
    assert hpas == ["minimal-us-ai-gateway-hpa", "minimal-us-model-gateway-hpa"], hpas
    assert "metrics-server" in found[0].fix


def test_a_metrics_server_helm_release_serves_the_metrics_api_too() -> None:
    result = _no_metrics_server(rendered("minimal"))
    keda = next(r for r in result.resources if r.inputs.get("chart") == "keda")
    release = with_inputs(keda, lambda i: i.update(chart="metrics-server", name="metrics-server"))
    release = type(keda)(**{**keda.__dict__, "urn": keda.urn + "-ms", "inputs": release.inputs})
    assert not findings("minimal", mutated(result, lambda r: r, extra=[release]), rule=RULE)


def test_an_hpa_on_container_memory_needs_metrics_server_as_well() -> None:
    def memory(inputs: dict[str, Any]) -> None:
        inputs["spec"]["metrics"] = [
            {"type": "ContainerResource", "containerResource": {"name": "memory", "container": "x", "target": {}}}
        ]

    is_hpa = lambda r: r.is_kubernetes_object and r.inputs.get("kind") == "HorizontalPodAutoscaler"  # noqa: E731
    found = findings("dev", _edit(_no_metrics_server(rendered("dev")), is_hpa, memory), rule=RULE)
    assert len(found) == 2, found


# --- Cluster Autoscaler's GPU label ---------------------------------------------------------------


def test_gpu_node_groups_without_the_accelerator_label_are_reported() -> None:
    def unlabel(inputs: dict[str, Any]) -> None:
        inputs["labels"].pop(platform_contract.ACCELERATOR_LABEL)

    is_gpu_group = lambda r: r.type == "aws:eks/nodeGroup:NodeGroup" and "-gpu-" in r.name  # noqa: E731
    found = findings("dev", _edit(rendered("dev"), is_gpu_group, unlabel), rule=RULE)
    assert len(found) == 4 and all("Cluster Autoscaler" in f.message for f in found), found


def test_the_system_node_group_needs_no_accelerator_label() -> None:
    assert not findings("dev", rendered("dev"), rule=RULE)


# --- DCGM's pod label -----------------------------------------------------------------------------


def test_a_pod_scrape_without_honor_labels_loses_dcgms_pod_label() -> None:
    def dishonor(inputs: dict[str, Any]) -> None:
        for job in inputs["values"]["prometheus"]["prometheusSpec"]["additionalScrapeConfigs"]:
            job.pop("honor_labels", None)

    is_kps = lambda r: r.inputs.get("chart") == "kube-prometheus-stack"  # noqa: E731
    found = findings("dev", _edit(rendered("dev"), is_kps, dishonor), rule=RULE)
    assert len(found) == 1 and "honor_labels" in found[0].message, found


# --- MSK open monitoring -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exporters", "ports"), [(("jmxExporter",), [11001]), (("jmxExporter", "nodeExporter"), [11001, 11002])]
)
def test_msk_exporters_the_firewall_does_not_open_are_reported(exporters: tuple[str, ...], ports: list[int]) -> None:
    def monitor(inputs: dict[str, Any]) -> None:
        inputs["openMonitoring"] = {"prometheus": {e: {"enabledInBroker": True} for e in exporters}}

    is_msk = lambda r: r.type == "aws:msk/cluster:Cluster"  # noqa: E731
    found = findings("minimal", _edit(rendered("minimal"), is_msk, monitor), rule=RULE)
    assert [int(f.message.split("port ")[1].split(",")[0]) for f in found] == ports, found


# --- IAM resources --------------------------------------------------------------------------------


@pytest.mark.parametrize("resource", ["", "results-bucket", "arn:aws:s3:::"[:-3]])
def test_a_policy_resource_that_is_not_an_arn_is_reported(resource: str) -> None:
    def plant(inputs: dict[str, Any]) -> None:
        document = json.loads(inputs["policy"])
        document["Statement"].append({"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [resource]})
        inputs["policy"] = json.dumps(document)

    def is_policy(r: RenderedResource) -> bool:
        return r.type in platform_contract.POLICY_TYPES and isinstance(r.inputs.get("policy"), str)

    result = rendered("minimal")
    target = next(r for r in result.resources if is_policy(r) and json.loads(r.inputs["policy"]).get("Statement"))
    found = findings("minimal", _edit(result, lambda r: r.urn == target.urn, plant), rule=RULE)
    assert len(found) == 1 and found[0].urn == target.urn and repr(resource) in found[0].message, found


@pytest.mark.parametrize("stack", ["minimal", "dev", "byteion"])
def test_the_shipped_stacks_keep_the_platform_contract(stack: str) -> None:
    assert not findings(stack, rule=RULE)


# --- tenants: the AI gateway is Ready only with a key ---------------------------------------------------------


def _runtime_document(edit: Any) -> Any:
    def change(r: RenderedResource) -> RenderedResource:
        data = r.inputs.get("data") or {}
        if r.type != "kubernetes:core/v1:ConfigMap" or platform_contract.RUNTIME_DOCUMENT not in data:
            return r

        def plant(inputs: dict[str, Any]) -> None:
            inputs["data"][platform_contract.RUNTIME_DOCUMENT] = edit(
                inputs["data"][platform_contract.RUNTIME_DOCUMENT]
            )

        return with_inputs(r, plant)

    return change


def _tenants(value: list[Any] | None) -> Any:
    def edit(text: str) -> str:
        document = json.loads(text)
        if value is None:
            document.pop("tenants", None)
        else:
            document["tenants"] = value
        return json.dumps(document)

    return edit


def _gateways(found: list[Any]) -> set[str]:
    return {f.urn for f in found if "names no tenant" in f.message and "/readyz answers 503" in f.message}


def test_an_ai_gateway_whose_document_names_no_tenant_never_becomes_ready() -> None:
    found = findings("minimal", mutated(rendered("minimal"), _runtime_document(_tenants([]))), rule=RULE)
    assert len(found) == 1 and found[0].urn.endswith("ai-gateway-deployment"), found
    assert "ConfigMap ai-gateway-config" in found[0].message and "tenant" in found[0].fix


def test_every_regions_ai_gateway_without_tenants_is_reported_once() -> None:
    result = rendered("byteion")
    found = findings("byteion", mutated(result, _runtime_document(_tenants(None))), rule=RULE)
    gateways = {
        r.urn
        for r in result.resources
        if r.type == "kubernetes:apps/v1:Deployment" and r.urn.endswith("ai-gateway-deployment")
    }
    assert len(gateways) >= 2 and _gateways(found) == gateways and len(found) == len(gateways), found


def test_only_the_ai_gateway_needs_a_tenant() -> None:
    """The model gateway and the batch workers read the same document but answer /readyz without keys."""
    found = findings("dev", mutated(rendered("dev"), _runtime_document(_tenants([]))), rule=RULE)
    assert found and all(f.urn.endswith("ai-gateway-deployment") for f in found), found


def test_a_runtime_document_unknown_until_apply_is_skipped_not_flagged() -> None:
    found = findings("minimal", mutated(rendered("minimal"), _runtime_document(lambda text: None)), rule=RULE)
    assert not found, found
