"""Issue 27, second blind set: invariants over references by key and by name, and the API server's own validation.

Each invariant is shown on defects planted into dev's rendered graph (none of them the held-out cases), each fires
when its defect is put back, and the shipped stacks and correct variants stay clean: ``key-exists`` (a ConfigMap or
Secret key a pod reads), ``storage-class-exists`` (a claim's StorageClass), ``target-exists`` (scaleTargetRef, PDB
selectors, ingressClassName), ``api-validation`` (values the API server rejects that the schema does not see) and
``topic-replication`` (an MSK topic against its brokers and min.insync.replicas), ``record-in-zone`` (a Route 53
record's name against its zone).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec, with_inputs
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import Assumptions, Finding
from tokenplane.proof.render import RenderedResource, RenderResult

pytestmark = pytest.mark.slow  # reads renders of whole stacks
NEW_RULES = (
    "key-exists",
    "storage-class-exists",
    "target-exists",
    "api-validation",
    "topic-replication",
    "record-in-zone",
)


def _findings(result: RenderResult, rule: str, assume: Assumptions | None = None) -> list[Finding]:
    return [f for f in deploy.run(spec("dev"), result, assume) if f.rule == rule]


def _edit(suffix: str, edit: Callable[[dict[str, Any]], None]) -> RenderResult:
    """dev with ``edit`` applied to the inputs of the one resource whose name ends with ``suffix``."""
    hits = [r for r in rendered("dev").resources if r.name.endswith(suffix)]
    assert len(hits) == 1, [r.name for r in hits]
    return mutated(rendered("dev"), lambda r: with_inputs(r, edit) if r is hits[0] else r)


def _plus(*objects: dict[str, Any]) -> RenderResult:
    """dev with extra Kubernetes objects, as a program of one's own would add them."""
    extra = []
    for manifest in objects:
        kind, name = manifest["kind"], manifest["metadata"]["name"]
        group = manifest["apiVersion"] if "/" in manifest["apiVersion"] else f"core/{manifest['apiVersion']}"
        extra.append(
            RenderedResource(
                urn=f"urn:pulumi:dev::tokenplane::kubernetes:{group}:{kind}::planted-{name}",
                type=f"kubernetes:{group}:{kind}",
                name=f"planted-{name}",
                parent=None,
                provider=None,
                region="local",
                inputs=manifest,
                custom=True,
            )
        )
    return mutated(rendered("dev"), lambda r: r, extra=extra)


def _pod(edit: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    return lambda inputs: edit(inputs["spec"]["template"]["spec"])


def _gateway_env(pod: dict[str, Any]) -> list[dict[str, Any]]:
    container = next(c for c in pod["containers"] if c["name"] == "ai-gateway")
    return container.setdefault("env", [])  # type: ignore[no-any-return]


CONFIG = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "gateway-tuning", "namespace": "llm-gateway"},
    "data": {"pool_timeout_s": "30"},
}


def _with_config(edit: Callable[[dict[str, Any]], None]) -> RenderResult:
    """dev, plus a ConfigMap in the gateway's namespace, with ``edit`` applied to the AI gateway's pod."""
    base = _plus(CONFIG)
    gateway = next(r for r in base.resources if r.name.endswith("-ai-gateway-deployment"))

    def change(r: RenderedResource) -> RenderedResource:
        return with_inputs(r, _pod(edit)) if r is gateway else r

    return mutated(base, change)


# --- every key a pod reads is a key of its object -------------------------------------------------------------


def test_a_secret_key_the_gateways_env_secret_does_not_hold_is_reported() -> None:
    def typo(pod: dict[str, Any]) -> None:
        ref = next(e for e in _gateway_env(pod) if "secretKeyRef" in (e.get("valueFrom") or {}))
        ref["valueFrom"]["secretKeyRef"]["key"] = "tokenplane-key-demo"

    found = _findings(_edit("-ai-gateway-deployment", _pod(typo)), "key-exists")
    assert len(found) == 1 and "'tokenplane-key-demo'" in found[0].message, found
    assert "CreateContainerConfigError" in found[0].message and found[0].urn.endswith("-ai-gateway-deployment")


def test_a_config_map_key_with_the_wrong_separator_is_reported_and_the_right_one_is_not() -> None:
    def read(key: str) -> Callable[[dict[str, Any]], None]:
        def edit(pod: dict[str, Any]) -> None:
            ref = {"configMapKeyRef": {"name": "gateway-tuning", "key": key}}
            _gateway_env(pod).append({"name": "POOL_TIMEOUT_S", "valueFrom": ref})

        return edit

    found = _findings(_with_config(read("pool-timeout-s")), "key-exists")
    assert len(found) == 1 and "holds pool_timeout_s" in found[0].message, found
    assert not _findings(_with_config(read("pool_timeout_s")), "key-exists")


def test_a_volume_item_key_the_config_map_lacks_is_reported() -> None:
    def mount(pod: dict[str, Any]) -> None:
        items = [{"key": "pool_timeout_s", "path": "timeout"}, {"key": "retries", "path": "retries"}]
        pod.setdefault("volumes", []).append(
            {"name": "tuning", "configMap": {"name": "gateway-tuning", "items": items}}
        )

    found = _findings(_with_config(mount), "key-exists")
    assert len(found) == 1 and "'retries'" in found[0].message and "volume tuning" in found[0].message, found


def test_a_projected_secret_item_the_secret_lacks_is_reported() -> None:
    def mount(pod: dict[str, Any]) -> None:
        source = {"secret": {"name": "ai-gateway-env-secrets", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}
        pod.setdefault("volumes", []).append({"name": "ca", "projected": {"sources": [source]}})

    found = _findings(_edit("-ai-gateway-deployment", _pod(mount)), "key-exists")
    assert len(found) == 1 and "'ca.crt'" in found[0].message, found


def test_an_optional_key_and_a_secret_of_computed_data_are_not_judged() -> None:
    def optional(pod: dict[str, Any]) -> None:
        ref = {"configMapKeyRef": {"name": "gateway-tuning", "key": "retries", "optional": True}}
        _gateway_env(pod).append({"name": "RETRIES", "valueFrom": ref})

    assert not _findings(_with_config(optional), "key-exists")

    def computed(inputs: dict[str, Any]) -> None:  # a Secret whose data is an output the render cannot see
        inputs.pop("data", None)
        inputs["stringData"] = "<computed>"

    result = _edit("-ai-gateway-env-secrets", computed)
    assert not _findings(result, "key-exists")


# --- every StorageClass a claim names exists ---------------------------------------------------------------------


def _claim(name: str, storage_class: str) -> dict[str, Any]:
    spec_: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}}
    spec_["storageClassName"] = storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "llm-data"},
        "spec": spec_,
    }


def test_a_statefulsets_claim_template_naming_a_class_nothing_creates_is_reported() -> None:
    def typo(inputs: dict[str, Any]) -> None:
        inputs["spec"]["volumeClaimTemplates"][0]["spec"]["storageClassName"] = "gp3-encrypt"

    found = _findings(_edit("-qdrant-statefulset", typo), "storage-class-exists")
    assert len(found) == 1 and "'gp3-encrypt'" in found[0].message, found
    assert "gp2, gp3-encrypted" in found[0].message and found[0].urn.endswith("-qdrant-statefulset")


def test_a_pvc_asking_for_an_unshipped_class_is_reported_and_gp2_or_the_made_class_are_not() -> None:
    found = _findings(_plus(_claim("scratch", "io2")), "storage-class-exists")
    assert len(found) == 1 and "PersistentVolumeClaim llm-data/scratch" in found[0].message, found
    for ok in ("gp2", "gp3-encrypted", ""):
        assert not _findings(_plus(_claim("scratch", ok)), "storage-class-exists"), ok


def test_a_helm_values_storage_class_nothing_creates_is_reported() -> None:
    def typo(inputs: dict[str, Any]) -> None:
        storage = inputs["values"]["prometheus"]["prometheusSpec"]["storageSpec"]
        storage["volumeClaimTemplate"]["spec"]["storageClassName"] = "fast-ssd"

    found = _findings(_edit("-observability-kube-prometheus-stack", typo), "storage-class-exists")
    assert len(found) == 1 and "'fast-ssd'" in found[0].message and "storageSpec" in found[0].message, found


def test_an_existing_clusters_classes_are_not_judged() -> None:
    result = _plus(_claim("scratch", "io2"))
    assert not _findings(result, "storage-class-exists", Assumptions(cluster=True))


# --- references by name between objects ----------------------------------------------------------------------


def _first(kind: str) -> str:
    """The resource name of dev's first object of ``kind``."""
    return next(r.name for r in rendered("dev").resources if r.is_kubernetes_object and r.inputs.get("kind") == kind)


def test_an_hpa_scaling_a_deployment_that_does_not_exist_is_reported() -> None:
    def typo(inputs: dict[str, Any]) -> None:
        inputs["spec"]["scaleTargetRef"]["name"] += "-worker"

    found = _findings(_edit(_first("HorizontalPodAutoscaler"), typo), "target-exists")
    assert len(found) == 1 and "-worker'" in found[0].message and "FailedGetScale" in found[0].message, found


def test_a_scaled_object_naming_the_wrong_kind_is_reported() -> None:
    def wrong_kind(inputs: dict[str, Any]) -> None:
        inputs["spec"]["scaleTargetRef"]["kind"] = "StatefulSet"

    found = _findings(_edit(_first("ScaledObject"), wrong_kind), "target-exists")
    assert len(found) == 1 and "scales StatefulSet" in found[0].message, found


def test_a_pdb_whose_selector_matches_no_pod_is_reported() -> None:
    def typo(inputs: dict[str, Any]) -> None:
        inputs["spec"]["selector"] = {"matchLabels": {"app.kubernetes.io/name": "qdrant-db"}}

    found = _findings(_edit("-qdrant-pdb", typo), "target-exists")
    assert len(found) == 1 and "protects nothing" in found[0].message, found


def test_a_pdb_selecting_by_expression_matches_like_the_api() -> None:
    def expression(operator: str) -> Callable[[dict[str, Any]], None]:
        def edit(inputs: dict[str, Any]) -> None:
            selector = {"key": "app.kubernetes.io/name", "operator": operator, "values": ["qdrant"]}
            inputs["spec"]["selector"] = {"matchExpressions": [selector]}

        return edit

    assert not _findings(_edit("-qdrant-pdb", expression("In")), "target-exists")
    assert _findings(_edit("-qdrant-pdb", expression("NotIn")), "target-exists") == []  # other pods in llm-data
    found = _findings(
        _edit("-qdrant-pdb", lambda i: i["spec"].update(selector={"matchLabels": {"tier": "x"}})), "target-exists"
    )
    assert len(found) == 1, found


def test_a_pdb_for_a_charts_pods_is_not_judged_the_charts_workloads_are_not_in_the_graph() -> None:
    keda = next(r for r in rendered("dev").resources if r.type.endswith("Release") and r.inputs.get("chart") == "keda")
    selector = {"matchLabels": {"app": "keda-operator"}}
    pdb: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "keda-operator", "namespace": keda.inputs["namespace"]},
        "spec": {"selector": selector, "maxUnavailable": 1},
    }
    assert not _findings(_plus(pdb), "target-exists")
    pdb["metadata"]["namespace"] = "llm-data"  # the same PDB where only the program's own pods run
    assert len(_findings(_plus(pdb), "target-exists")) == 1


def _ingress(ingress_class: str) -> dict[str, Any]:
    backend = {"service": {"name": "ai-gateway", "port": {"name": "http"}}}  # the Service's port (80 -> the pod's 8080)
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "public", "namespace": "llm-gateway"},
        "spec": {"ingressClassName": ingress_class, "defaultBackend": backend},
    }


def test_an_ingress_class_no_controller_serves_is_reported_and_the_lb_controllers_alb_is_not() -> None:
    found = _findings(_plus(_ingress("nginx")), "target-exists")
    assert len(found) == 1 and "'nginx'" in found[0].message and "there are: alb" in found[0].message, found
    assert not _findings(_plus(_ingress("alb")), "target-exists")
    made = {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "nginx"}}
    assert not _findings(_plus(_ingress("nginx"), made), "target-exists")


def test_an_ingress_class_renamed_in_the_charts_values_is_followed() -> None:
    def rename(inputs: dict[str, Any]) -> None:
        inputs.setdefault("values", {})["ingressClass"] = "alb-internal"

    base = _edit("-aws-lb-controller", rename)
    ingress = _plus(_ingress("alb")).resources[-1]
    result = dataclasses.replace(base, resources=[*base.resources, ingress])
    found = _findings(result, "target-exists")
    assert len(found) == 1 and "there are: alb-internal" in found[0].message, found


# --- values the API server rejects ---------------------------------------------------------------------------------


def _strategy(rolling: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    return lambda inputs: inputs["spec"].update(strategy={"type": "RollingUpdate", "rollingUpdate": rolling})


def test_a_rolling_update_with_no_surge_and_no_unavailable_is_rejected() -> None:
    for rolling in ({"maxSurge": 0, "maxUnavailable": 0}, {"maxSurge": "0%", "maxUnavailable": 0}):
        found = _findings(_edit("-model-gateway-deployment", _strategy(rolling)), "api-validation")
        assert len(found) == 1 and "may not be 0 when `maxSurge` is 0" in found[0].message, (rolling, found)


def test_a_percent_that_rounds_to_zero_and_the_defaults_are_accepted() -> None:
    # pool-small ships maxSurge 0, maxUnavailable 34% of 1 replica: 0 after rounding, which the server accepts.
    for rolling in ({"maxSurge": 0, "maxUnavailable": "10%"}, {"maxSurge": 0}, {}):
        assert not _findings(_edit("-model-gateway-deployment", _strategy(rolling)), "api-validation"), rolling


def test_a_daemonset_whose_max_unavailable_is_zero_with_the_default_surge_is_rejected() -> None:
    def daemonset(rolling: dict[str, Any]) -> dict[str, Any]:
        labels = {"app": "node-agent"}
        pod = {"containers": [{"name": "agent", "image": "public.ecr.aws/docker/library/busybox:1.36"}]}
        return {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "node-agent", "namespace": "llm-gateway"},
            "spec": {
                "selector": {"matchLabels": labels},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling},
                "template": {"metadata": {"labels": labels}, "spec": pod},
            },
        }

    found = _findings(_plus(daemonset({"maxUnavailable": 0})), "api-validation")
    assert len(found) == 1 and "ValidateRollingUpdateDaemonSet" in found[0].message, found
    assert not _findings(_plus(daemonset({})), "api-validation")  # defaults: maxSurge 0, maxUnavailable 1


def test_a_pdb_with_both_min_available_and_max_unavailable_is_rejected() -> None:
    found = _findings(_edit("-qdrant-pdb", lambda i: i["spec"].update(minAvailable=1)), "api-validation")
    assert len(found) == 1 and "cannot be both set" in found[0].message, found


def test_an_hpa_with_min_above_max_or_zero_min_is_rejected() -> None:
    hpa = _first("HorizontalPodAutoscaler")
    above = _findings(_edit(hpa, lambda i: i["spec"].update(minReplicas=9, maxReplicas=3)), "api-validation")
    assert len(above) == 1 and "maxReplicas 3 below minReplicas 9" in above[0].message, above
    zero = _findings(_edit(hpa, lambda i: i["spec"].update(minReplicas=0)), "api-validation")
    assert len(zero) == 1 and "minReplicas 0" in zero[0].message, zero


# --- every Kafka topic fits its cluster ------------------------------------------------------------------------


def _topic(edit: Callable[[dict[str, Any]], None]) -> RenderResult:
    return _edit("-kafka-topic-batch-jobs", edit)


def _configs(**values: str) -> Callable[[dict[str, Any]], None]:
    return lambda inputs: inputs.update(configs=json.dumps(values))


def test_a_topic_replicated_beyond_the_brokers_is_reported_and_one_at_the_broker_count_is_not() -> None:
    found = _findings(_topic(lambda i: i.update(replicationFactor=5.0)), "topic-replication")
    assert len(found) == 1 and "replication factor 5" in found[0].message and "has 4 brokers" in found[0].message

    def at_brokers(inputs: dict[str, Any]) -> None:
        inputs.update(replicationFactor=4.0, configs=json.dumps({"min.insync.replicas": "2"}))

    ok = _topic(at_brokers)
    assert not _findings(ok, "topic-replication")


def test_devs_old_topics_with_more_in_sync_replicas_than_replicas_are_reported() -> None:
    # dev's topics before issue 27: replication factor 1 against min.insync.replicas 2
    found = _findings(_topic(_configs(**{"min.insync.replicas": "2"})), "topic-replication")
    assert len(found) == 1 and "NOT_ENOUGH_REPLICAS" in found[0].message and "topic's configs" in found[0].message


def test_the_clusters_server_properties_apply_when_the_topic_sets_none() -> None:
    found = _findings(_topic(_configs(**{"retention.ms": "1000"})), "topic-replication")
    assert len(found) == 1 and "server properties" in found[0].message, found


def test_fewer_brokers_than_a_topic_needs_is_reported_on_the_topic() -> None:
    def grow(inputs: dict[str, Any]) -> None:
        inputs.update(replicationFactor=3.0)

    base = _topic(grow)
    cluster = next(r for r in base.resources if r.name.endswith("-kafka-msk"))
    shrunk = mutated(base, lambda r: with_inputs(r, lambda i: i.update(numberOfBrokerNodes=2.0)) if r is cluster else r)
    found = _findings(shrunk, "topic-replication")
    assert len(found) == 1 and found[0].urn.endswith("-kafka-topic-batch-jobs"), found


def test_a_topic_on_a_cluster_the_program_does_not_create_is_not_judged() -> None:
    def elsewhere(inputs: dict[str, Any]) -> None:
        inputs.update(replicationFactor=9.0, clusterArn="arn:aws:kafka:eu-north-1:123456789012:cluster/shared/abc")

    result = _topic(elsewhere)
    topic = next(r for r in result.resources if r.name.endswith("-kafka-topic-batch-jobs"))
    result = mutated(result, lambda r: dataclasses.replace(r, property_dependencies={}) if r is topic else r)
    assert not _findings(result, "topic-replication")


# --- every Route 53 record lies within its zone ---------------------------------------------------------------

ZONE_URN = "urn:pulumi:dev::tokenplane::aws:route53/zone:Zone::acme-zone"


def _records(*names: str, zone_in_graph: bool = True) -> RenderResult:
    """dev plus zone acme.com and one CNAME per name in it."""
    zone = RenderedResource(
        ZONE_URN, "aws:route53/zone:Zone", "acme-zone", None, None, "local", {"name": "acme.com"}, True
    )
    records = [
        RenderedResource(
            urn=f"urn:pulumi:dev::tokenplane::aws:route53/record:Record::record-{i}",
            type="aws:route53/record:Record",
            name=f"record-{i}",
            parent=None,
            provider=None,
            region="local",
            inputs={"zoneId": "Z0123", "name": name, "type": "CNAME", "ttl": 300, "records": ["lb.example.net"]},
            custom=True,
            property_dependencies={"zoneId": [ZONE_URN]},
            dependencies=[ZONE_URN],
        )
        for i, name in enumerate(names)
    ]
    return mutated(rendered("dev"), lambda r: r, extra=[*([zone] if zone_in_graph else []), *records])


@pytest.mark.parametrize("name", ["api.acme.ai", "gateway.example.org.", "acme.co"])
def test_a_record_named_outside_its_zone_is_reported(name: str) -> None:
    found = _findings(_records(name), "record-in-zone")
    assert len(found) == 1 and "a name nobody asked for" in found[0].message, found
    assert f"{name.rstrip('.')}.acme.com" in found[0].message, found[0]


def test_relative_and_full_names_in_the_zone_and_unknown_zones_are_not_judged() -> None:
    assert not _findings(_records("api", "api.acme.com", "acme.com", "API.Acme.com.", "*.acme.com"), "record-in-zone")
    assert not _findings(_records("api.acme.ai", zone_in_graph=False), "record-in-zone")


# --- the shipped stacks stay clean ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["minimal", "dev", "byteion"])
def test_the_shipped_stacks_break_none_of_the_new_invariants(name: str) -> None:
    found = [f for f in deploy.run(spec(name), rendered(name)) if f.rule in NEW_RULES]
    assert not found, found
