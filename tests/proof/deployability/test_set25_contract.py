"""Set 25's platform-contract misses, refused where the Args are built.

``VectorDbArgs(environment="production")`` fell to the non-prod branch (one
Qdrant replica, the default volume), and ``model_gateway_url=".../v1"`` made
every request ``/v1/v1/...``, a 404. Both are component arguments, so the fix
is in the components (``tokenplane.components.arguments``): construction
raises, and ``tokenplane check`` reports the program error with its message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pytest

from tests.components.conftest import spec
from tokenplane.components import GatewayArgs, GatewayConfig, Namespace, ServingDeps
from tokenplane.components.batch_workers import BatchWorkersArgs
from tokenplane.components.clickhouse import ClickHouseArgs
from tokenplane.components.kafka import KafkaArgs
from tokenplane.components.network import PrivateSubnets
from tokenplane.components.redis import RedisArgs
from tokenplane.components.vector_db import VectorDbArgs
from tokenplane.errors import SpecError
from tokenplane.spec import Environment

DATA = Namespace.existing("data")
SUBNETS = PrivateSubnets(azs=["eu-central-1a"], vpc_id="vpc-1", vpc_cidr="10.0.0.0/16", subnet_ids=[])
MODEL_GATEWAY = "http://model-gateway-peers.llm-gateway.svc:8080"

# Each component that sizes by the environment, built with the value given.
BUILDERS: dict[str, Callable[[Any], Any]] = {
    "VectorDbArgs": lambda env: VectorDbArgs(environment=env, namespace=DATA),
    "RedisArgs": lambda env: RedisArgs(environment=env, subnets=SUBNETS, tags={}),
    "KafkaArgs": lambda env: KafkaArgs(environment=env, subnets=SUBNETS, topics=[], tags={}),
    "ClickHouseArgs": lambda env: ClickHouseArgs(
        environment=env,
        namespace=DATA,
        backup_bucket="registry",
        backup_every_hours=6,
        region="eu",
        cluster=cast(Any, None),
        clients=[],
        tags={},
    ),
}


@pytest.mark.parametrize("owner", sorted(BUILDERS))
@pytest.mark.parametrize("environment", ["dev", "staging", "prod", Environment.PROD, Environment.DEV])
def test_a_known_environment_builds(owner: str, environment: str) -> None:
    built = BUILDERS[owner](environment)
    assert Environment(built.environment) == Environment(environment)  # kept as given, not coerced away


@pytest.mark.parametrize("owner", sorted(BUILDERS))
@pytest.mark.parametrize("environment", ["production", "Prod", "stage", ""])
def test_an_unknown_environment_is_refused_naming_the_argument_value_and_allowed(owner: str, environment: str) -> None:
    with pytest.raises(SpecError) as raised:
        BUILDERS[owner](environment)
    message = str(raised.value)
    assert f"{owner}.environment={environment!r} is not an environment" in message
    assert "allowed: 'dev', 'staging', 'prod'" in message
    assert "spec.platform.environment" in message  # the fix


def test_production_is_told_to_mean_prod() -> None:
    with pytest.raises(ValueError, match=r"did you mean 'prod'\?"):
        VectorDbArgs(environment=cast(Any, "production"), namespace=DATA)


def _deps() -> ServingDeps:
    platform = spec("dev")
    return ServingDeps(
        config=GatewayConfig.from_spec(platform, platform.regions[0].name),
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


def _gateway(**changes: Any) -> GatewayArgs:
    return GatewayArgs(deps=_deps(), namespace=Namespace.existing("llm-gateway"), **changes)


def _batch(url: str) -> BatchWorkersArgs:
    return BatchWorkersArgs(deps=_deps(), namespace=Namespace.existing("llm-batch"), model_gateway_url=url)


BASE_URL_TAKERS: dict[str, Callable[[str], Any]] = {
    "GatewayArgs": lambda url: _gateway(model_gateway_url=url),
    "BatchWorkersArgs": _batch,
}


@pytest.mark.parametrize("owner", sorted(BASE_URL_TAKERS))
@pytest.mark.parametrize("url", [MODEL_GATEWAY, MODEL_GATEWAY + "/", "https://models.example:443"])
def test_a_model_gateway_base_url_builds(owner: str, url: str) -> None:
    assert BASE_URL_TAKERS[owner](url).model_gateway_url == url


@pytest.mark.parametrize("owner", sorted(BASE_URL_TAKERS))
@pytest.mark.parametrize("suffix", ["/v1", "/v1/", "/v1/chat/completions", "/?x=1"])
def test_a_model_gateway_url_with_a_path_is_refused_with_its_base(owner: str, suffix: str) -> None:
    with pytest.raises(ValueError) as raised:
        BASE_URL_TAKERS[owner](MODEL_GATEWAY + suffix)
    message = str(raised.value)
    assert f"{owner}.model_gateway_url={MODEL_GATEWAY + suffix!r} is not a base URL" in message
    assert f"pass scheme, host and port only ({MODEL_GATEWAY!r})" in message  # the fix
    assert "/v1/v1/" in message and "404" in message  # why


def test_the_ai_gateway_without_a_model_gateway_url_builds() -> None:
    assert _gateway().model_gateway_url == ""  # the model gateway then runs in the AI gateway's process


def test_a_literal_pool_url_with_v1_is_refused_and_several_replicas_pass() -> None:
    pool = _deps().config.region.pools[0].pool
    _gateway(pool_urls={pool: "http://10.0.0.1:8000,http://10.0.0.2:8000/"})
    with pytest.raises(ValueError, match=rf"GatewayArgs.pool_urls\['{pool}'\]='http://10.0.0.2:8000/v1' is not a base"):
        _gateway(pool_urls={pool: "http://10.0.0.1:8000,http://10.0.0.2:8000/v1"})
