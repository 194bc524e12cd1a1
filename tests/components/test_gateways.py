"""AI gateway and model gateway: hardened Deployments configured by the spec itself."""

from __future__ import annotations

from typing import Any

import pytest

from tests.components.conftest import containers, k8s_objects, named, rendered, spec
from tokenplane.components.gateway import replica_bounds
from tokenplane.components.gateway_config import GatewayConfig
from tokenplane.components.naming import checksum
from tokenplane.proof.render import REDACTED, RenderResult
from tokenplane.runtime_env import Var
from tokenplane.serving.gateway.runtime import METERING_WAIT_S
from tokenplane.serving.gateway.server import DRAIN_TIMEOUT_S
from tokenplane.spec import PlatformSpec, WorkloadClass

NS = "llm-gateway"
APPS = ["ai-gateway", "model-gateway"]
BYTEION_REGIONS = [r.name for r in spec("byteion").regions]


def obj(result: RenderResult, kind: str, name: str, region: str | None = None) -> dict[str, Any]:
    return named((o for o in k8s_objects(result, kind, region) if o["metadata"].get("namespace") == NS), name)


def ingress_peers(policy: dict[str, Any]) -> list[dict[str, Any] | None]:
    return [peer for rule in policy["spec"]["ingress"] for peer in rule.get("from", [None])]


@pytest.mark.parametrize("app", APPS)
def test_gateway_deployment_runs_in_the_gateway_namespace(dev: RenderResult, app: str) -> None:
    deployment = obj(dev, "Deployment", app)
    assert [c["name"] for c in containers(deployment)] == [app], f"{deployment['_urn']} runs {containers(deployment)}"


@pytest.mark.parametrize("app", APPS)
def test_gateway_config_is_the_spec_itself(dev: RenderResult, app: str) -> None:
    config = obj(dev, "ConfigMap", f"{app}-config")
    loaded = PlatformSpec.model_validate_json(config["data"]["platform.json"])
    assert loaded == spec("dev"), f"{config['_urn']} holds a platform.json that differs from stacks/dev.yaml"


@pytest.mark.parametrize("region", BYTEION_REGIONS)
@pytest.mark.parametrize("app", APPS)
def test_gateway_config_names_the_region_it_serves(byteion: RenderResult, app: str, region: str) -> None:
    config = obj(byteion, "ConfigMap", f"{app}-config", region)
    assert config["data"]["region"] == region, f"{config['_urn']} says it serves {config['data']['region']}"


@pytest.mark.parametrize("app", APPS)
def test_gateway_pods_roll_when_their_config_changes(dev: RenderResult, app: str) -> None:
    config = obj(dev, "ConfigMap", f"{app}-config")
    deployment = obj(dev, "Deployment", app)
    annotation = deployment["spec"]["template"]["metadata"]["annotations"].get("tokenplane.io/config-checksum")
    assert annotation == checksum(config["data"]), (
        f"{deployment['_urn']} carries config checksum {annotation}, not that of {config['_urn']}"
    )


@pytest.mark.parametrize("app", APPS)
def test_gateway_container_cannot_write_its_image_or_escalate(dev: RenderResult, app: str) -> None:
    deployment = obj(dev, "Deployment", app)
    [container] = containers(deployment)
    context = container.get("securityContext", {})
    expected = {"runAsNonRoot": True, "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False}
    assert {k: context.get(k) for k in expected} == expected, f"{deployment['_urn']} runs with {context}"


@pytest.mark.parametrize("app", APPS)
def test_gateway_is_autoscaled_by_an_hpa(dev: RenderResult, app: str) -> None:
    hpa = obj(dev, "HorizontalPodAutoscaler", app)
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", app), f"{hpa['_urn']} scales {target}"
    assert 0 < hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"], f"{hpa['_urn']} bounds {hpa['spec']}"


@pytest.mark.parametrize("app", APPS)
def test_gateway_has_a_disruption_budget(dev: RenderResult, app: str) -> None:
    pdb = obj(dev, "PodDisruptionBudget", app)
    assert pdb["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": app}, f"{pdb['_urn']}"


@pytest.mark.parametrize("app", APPS)
def test_gateway_connection_secret_is_redacted_in_the_render(dev: RenderResult, app: str) -> None:
    secret = obj(dev, "Secret", f"{app}-connections")
    values = secret.get("stringData", {})
    assert set(values) == {"REDIS_URL", "KAFKA_BOOTSTRAP_SERVERS"}, f"{secret['_urn']} holds {sorted(values)}"
    assert set(values.values()) == {REDACTED}, f"{secret['_urn']} renders a secret value in the clear"


@pytest.mark.parametrize("app", APPS)
def test_gateway_reads_its_connections_from_its_secret(dev: RenderResult, app: str) -> None:
    deployment = obj(dev, "Deployment", app)
    [container] = containers(deployment)
    assert container.get("envFrom") == [{"secretRef": {"name": f"{app}-connections"}}], (
        f"{deployment['_urn']} takes env from {container.get('envFrom')}"
    )


def test_model_gateway_admits_only_the_ai_gateway_batch_workers_and_monitoring(dev: RenderResult) -> None:
    policy = obj(dev, "NetworkPolicy", "model-gateway-ingress")

    def peer(namespace: str, app: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}
        return out | ({"podSelector": {"matchLabels": {"app.kubernetes.io/name": app}}} if app else {})

    expected = [peer(NS, "ai-gateway"), peer("llm-batch", "batch-workers"), peer("monitoring")]
    assert ingress_peers(policy) == expected, f"{policy['_urn']} admits {ingress_peers(policy)}"


@pytest.mark.parametrize("region", BYTEION_REGIONS)
def test_only_the_ai_gateway_is_exposed_through_a_load_balancer(byteion: RenderResult, region: str) -> None:
    balancers = [s for s in k8s_objects(byteion, "Service", region) if s["spec"].get("type") == "LoadBalancer"]
    found = [(s["metadata"].get("namespace"), s["metadata"]["name"]) for s in balancers]
    assert found == [(NS, "ai-gateway")], f"{region} exposes {found}: {[s['_urn'] for s in balancers]}"


@pytest.mark.parametrize("region", BYTEION_REGIONS)
@pytest.mark.parametrize("app", APPS)
def test_gateway_image_is_pinned_by_digest(byteion: RenderResult, app: str, region: str) -> None:
    deployment = obj(byteion, "Deployment", app, region)
    [container] = containers(deployment)
    assert "@sha256:" in container["image"], f"{deployment['_urn']} runs {container['image']}, not pinned by digest"


@pytest.mark.parametrize("region", BYTEION_REGIONS)
@pytest.mark.parametrize("app", APPS)
def test_gateway_image_is_pulled_from_its_own_regions_registry(byteion: RenderResult, app: str, region: str) -> None:
    deployment = obj(byteion, "Deployment", app, region)
    [container] = containers(deployment)
    cloud = spec("byteion").region(region).cloud_region
    assert f".dkr.ecr.{cloud}.amazonaws.com/" in container["image"], (
        f"{deployment['_urn']} pulls {container['image']} from outside {cloud}"
    )


def env_of(deployment: dict[str, Any]) -> dict[str, Any]:
    [container] = containers(deployment)
    return {e["name"]: e.get("value") for e in container.get("env", [])}


@pytest.mark.parametrize(("name", "region"), [("dev", "local"), *(("byteion", r) for r in BYTEION_REGIONS)])
def test_ai_gateway_replicas_size_their_shares_by_the_hpa_floor(name: str, region: str) -> None:
    result = rendered(name)
    deployment = obj(result, "Deployment", "ai-gateway", region)
    hpa = obj(result, "HorizontalPodAutoscaler", "ai-gateway", region)
    floor = hpa["spec"]["minReplicas"]
    told = env_of(deployment).get("TOKENPLANE_GATEWAY_REPLICAS")
    assert told == str(floor), f"{deployment['_urn']} says {told} replicas; {hpa['_urn']} keeps at least {floor}"
    assert floor == replica_bounds(GatewayConfig.from_spec(spec(name), region))[0], f"{hpa['_urn']} floor is {floor}"


@pytest.mark.parametrize("region", BYTEION_REGIONS)
def test_model_gateway_processes_find_their_peers_and_themselves(byteion: RenderResult, region: str) -> None:
    # Each prefers the vLLM replicas it owns among its peers (serving/modelgw/discovery.py): the peers are a
    # headless Service's DNS answer, and the pod's own IP (the downward API) says which of them it is.
    deployment = obj(byteion, "Deployment", "model-gateway", region)
    [container] = containers(deployment)
    env = {e["name"]: e for e in container.get("env", [])}
    assert env[Var.POD_IP.value].get("valueFrom") == {"fieldRef": {"fieldPath": "status.podIP"}}, env.get("POD_IP")
    service = obj(byteion, "Service", "model-gateway-peers", region)
    assert env[Var.MODEL_GATEWAY_PEERS.value]["value"] == f"model-gateway-peers.{NS}.svc"
    assert service["spec"].get("clusterIP") == "None", f"{service['_urn']} is not headless: {service['spec']}"
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items(), f"{service['_urn']} selects no model gateway pod"


@pytest.mark.parametrize("region", BYTEION_REGIONS)
def test_the_model_gateways_callers_deal_over_its_processes_through_its_headless_service(
    byteion: RenderResult, region: str
) -> None:
    # Through the ClusterIP Service kube-proxy picks a process per keep-alive connection, and the uneven shares that
    # gives miss class A's SLO (serving/modelgw/peers.py); through the headless one the callers deal per request.
    callers = [obj(byteion, "Deployment", "ai-gateway", region)] + [
        d for d in k8s_objects(byteion, "Deployment", region) if d["metadata"]["name"] == "batch-workers"
    ]
    for caller in callers:
        url = env_of(caller)[Var.MODEL_GATEWAY_URL.value]
        assert url == f"http://model-gateway-peers.{NS}.svc:8080", f"{caller['_urn']} calls {url}"
    assert obj(byteion, "Service", "model-gateway-peers", region)["spec"].get("clusterIP") == "None"


def test_model_gateway_is_not_told_a_replica_count_it_does_not_read(dev: RenderResult) -> None:
    deployment = obj(dev, "Deployment", "model-gateway")
    env = env_of(deployment)
    assert "TOKENPLANE_GATEWAY_REPLICAS" not in env, f"{deployment['_urn']} sets {sorted(env)}"
    assert "TOKENPLANE_FILES_BUCKET" not in env, f"{deployment['_urn']} serves no files but is given a bucket"


@pytest.mark.parametrize("region", BYTEION_REGIONS)
def test_a_region_without_batch_workers_turns_the_batch_api_off_and_one_with_them_keeps_files_in_s3(
    byteion: RenderResult, region: str
) -> None:
    platform = spec("byteion")
    serves_batch = any(WorkloadClass.D in platform.pool(p.pool).classes for p in platform.region(region).pools)
    env = env_of(obj(byteion, "Deployment", "ai-gateway", region))
    if serves_batch:
        assert env.get("TOKENPLANE_FILES_BUCKET") and "TOKENPLANE_BATCH_API" not in env, f"{region}: {sorted(env)}"
    else:
        assert env.get("TOKENPLANE_BATCH_API") == "off" and "TOKENPLANE_FILES_BUCKET" not in env, (
            f"{region} runs no batch workers, yet its gateway has {sorted(env)}"
        )


def test_the_gateway_pods_grace_period_covers_its_drain_and_the_metering_after_it(dev: RenderResult) -> None:
    """A SIGKILL before the sink closes loses the usage events of the streams the drain cut."""
    deployment = obj(dev, "Deployment", "ai-gateway")
    pod = deployment["spec"]["template"]["spec"]
    [container] = containers(deployment)
    pre_stop = container["lifecycle"]["preStop"]["exec"]["command"][-1]
    assert pre_stop.startswith("sleep ")
    needed = int(pre_stop.removeprefix("sleep ")) + DRAIN_TIMEOUT_S + METERING_WAIT_S
    assert needed < pod["terminationGracePeriodSeconds"], (needed, pod["terminationGracePeriodSeconds"])
