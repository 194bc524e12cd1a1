"""GatewayConfig: the gateways take tenants, routing and pools, built by hand or from a spec.

From a spec, the serving pods' runtime document is that spec byte for byte (the stacks'
render does not change); by hand, it is the region assembled from the parts, validated as
a spec file is, with problems named by the config's own fields.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pulumi
import pytest

from tests.components.conftest import k8s_objects, rendered, spec
from tokenplane.components import AiGateway, GatewayArgs, GatewayConfig, ModelGateway, Namespace, ServingDeps
from tokenplane.components.gateway import replica_bounds, runtime_config
from tokenplane.errors import SpecError, SpecLoadError
from tokenplane.proof.testing import render_function
from tokenplane.spec import (
    Budget,
    ClassSpec,
    Environment,
    Jurisdiction,
    Placement,
    Platform,
    PlatformSpec,
    Pool,
    Region,
    RegistryModel,
    Routing,
    Tenant,
    Tier,
    TokenRange,
    WorkloadClass,
)

SERVING_APPS = ["ai-gateway", "model-gateway", "batch-workers", "finops-consumer"]
MODEL = RegistryModel(
    name="qwen-7b-chat",
    version="v1",
    preset="qwen2.5-7b",
    uri="s3://acme-models/qwen-7b-chat/v1/",
    sha256="5f1a9c0e2b7d4c38a6e1f0b9d2c7a4e6f8b1d3c5a7e9f0b2d4c6e8a0b1c3d5e7",
    tokenizer="Qwen/Qwen2.5-7B-Instruct",
    prompt_contract="chat-v1",
)
CHAT = Pool(name="chat", tier=Tier.SMALL, model=MODEL.name, gpu="L4", classes=[WorkloadClass.A])
INTERACTIVE = ClassSpec(
    share=1.0, prompt_tokens=TokenRange(min=50, max=1000), output_tokens=TokenRange(min=20, max=400), ttft_p95_ms=500
)
EU = Region(
    name="eu",
    cloud_region="eu-central-1",
    azs=["eu-central-1a", "eu-central-1b"],
    jurisdiction=Jurisdiction.EU,
    traffic_share=1.0,
    pools=[Placement(pool="chat", min_replicas=1, max_replicas=2)],
)
ACME = Tenant(name="acme", rpm=600, tpm=200_000, allowed_tiers=[Tier.SMALL], api_key_secret="env://ACME_API_KEY")


def by_hand(**changes: Any) -> GatewayConfig:
    parts: dict[str, Any] = {
        "name": "acme",
        "region": EU,
        "pools": [CHAT],
        "models": [MODEL],
        "workload_classes": {WorkloadClass.A: INTERACTIVE},
        "routing": Routing(mix={Tier.SMALL: 1.0}),
        "budget": Budget(max_usd_per_hour=20),
        "peak_rps": 5,
        "environment": Environment.DEV,
    }
    return GatewayConfig(**(parts | changes))


@pytest.mark.parametrize("name", ["dev", "minimal", "byteion"])
def test_from_a_spec_every_serving_pod_reads_that_spec_byte_for_byte(name: str) -> None:
    platform, result = spec(name), rendered(name)
    expected = platform.model_dump_json(exclude_none=True)
    configs = [
        c for c in k8s_objects(result, "ConfigMap") if c["metadata"]["name"].removesuffix("-config") in SERVING_APPS
    ]
    assert {c["metadata"]["name"] for c in configs} >= {"ai-gateway-config", "model-gateway-config"}
    for config in configs:
        assert config["data"]["platform.json"] == expected, f"{config['_urn']} holds another document than {name}"


def test_from_a_spec_each_region_is_its_own_and_unknown_ones_are_listed() -> None:
    byteion = spec("byteion")
    for region in byteion.regions:
        config = GatewayConfig.from_spec(byteion, region.name)
        assert config.region is region and config.document is byteion
        assert runtime_config(config)["region"] == region.name
    with pytest.raises(SpecError, match=r"us-east"):
        GatewayConfig.from_spec(byteion, "mars")


def test_a_config_from_a_spec_cannot_drift_from_it() -> None:
    # A tenant added to a spec's config but not to the spec: the pods would read the spec, without the tenant.
    config = GatewayConfig.from_spec(spec("minimal"), "us")
    with pytest.raises(SpecLoadError, match=r"GatewayConfig: tenants: differs from platform_spec's"):
        dataclasses.replace(config, tenants=[ACME])


def test_by_hand_the_document_is_the_region_as_a_spec_built_in_code_would_be() -> None:
    # What examples/single-region built in code before GatewayConfig: its pods must read the same bytes.
    before = PlatformSpec(
        platform=Platform(name="acme", environment=Environment.DEV, peak_rps=5),
        budget=Budget(max_usd_per_hour=20),
        regions=[EU],
        models=[MODEL],
        pools=[CHAT],
        workload_classes={WorkloadClass.A: INTERACTIVE},
        routing=Routing(mix={Tier.SMALL: 1.0}),
    )
    config = by_hand()
    assert config.document.model_dump_json(exclude_none=True) == before.model_dump_json(exclude_none=True)
    assert config.platform_spec is None and replica_bounds(config) == (2, 6)


def test_by_hand_a_bad_part_is_named_by_the_configs_own_field() -> None:
    with pytest.raises(SpecLoadError) as caught:
        by_hand(region=EU.model_copy(update={"traffic_share": 0.5}), pools=[CHAT.model_copy(update={"model": "gone"})])
    message = str(caught.value)
    assert "GatewayConfig: pools[0].model" in message and "gone" in message, message
    assert "GatewayConfig: region: traffic_share sums to 0.5" in message, message


def test_the_gateways_take_their_tenants_and_providers_from_the_config() -> None:
    config = by_hand(tenants=[ACME])

    def program() -> None:
        deps = _deps(config)
        gateway = Namespace.existing("llm-gateway")
        models = ModelGateway("mg", GatewayArgs(deps=deps, namespace=gateway), pulumi.ResourceOptions())
        AiGateway("ai", GatewayArgs(deps=deps, namespace=gateway, model_gateway_url=models.url))

    stack = render_function(program, cloud_region="eu-central-1")
    env = stack.kube("Deployment", "ai-gateway", "llm-gateway")["spec"]["template"]["spec"]["containers"][0]["env"]
    keys = {e["name"]: e["valueFrom"]["secretKeyRef"]["name"] for e in env if "valueFrom" in e}
    assert keys == {"ACME_API_KEY": "ai-gateway-env-secrets"}, keys  # the tenant's key, from its env Secret
    data = stack.kube("ConfigMap", "model-gateway-config", "llm-gateway")["data"]
    assert json.loads(data["platform.json"])["tenants"][0]["name"] == "acme" and data["region"] == "eu"


def _deps(config: GatewayConfig) -> ServingDeps:
    return ServingDeps(
        config=config,
        image="registry.example/serving@sha256:" + "0" * 64,
        redis_url="rediss://redis:6379",
        kafka_bootstrap="kafka:9098",
        kafka_cluster_arn="arn:aws:kafka:eu-central-1:123456789012:cluster/acme/0",
        qdrant_url="http://qdrant:6333",
        oidc_provider_arn="arn:aws:iam::123456789012:oidc-provider/oidc.example",
        oidc_issuer="https://oidc.example",
        account_id="123456789012",
        tags={},
    )


def test_pool_urls_are_keyed_by_the_pools_the_region_places() -> None:
    # The processes read POOL_URL_<POOL> by pool name: a URL keyed by the model's name would reach nobody.
    deps, gateway = _deps(by_hand()), Namespace.existing("llm-gateway")
    GatewayArgs(deps=deps, namespace=gateway, pool_urls={CHAT.name: "http://vllm-chat:8000"})
    with pytest.raises(ValueError, match=rf"'{MODEL.name}' is not a pool placed in region 'eu' \(its pools: 'chat'\)"):
        GatewayArgs(deps=deps, namespace=gateway, pool_urls={MODEL.name: "http://vllm-chat:8000"})
