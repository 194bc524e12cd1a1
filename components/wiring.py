"""Args read from the components that provide their parts, so that none is passed twice or mixed up.

Apart from the components it reads, so that importing them stays free of cycles (``Cluster`` sizes its
system nodes from the workloads' modules, which import the gateways').
"""

from __future__ import annotations

from typing import Any

from tokenplane.components import kube
from tokenplane.components.ai_gateway import AiGateway
from tokenplane.components.cluster import Cluster
from tokenplane.components.gateway import ServingDeps
from tokenplane.components.gateway_config import GatewayConfig
from tokenplane.components.images import Images
from tokenplane.components.kafka import Kafka
from tokenplane.components.naming import NS_GATEWAY
from tokenplane.components.redis import Redis
from tokenplane.components.vector_db import VectorDb
from tokenplane.components.vllm_pool import DEFAULT_CLIENTS
from tokenplane.spec import PlatformSpec, Region


def serving_deps(
    *,
    config: GatewayConfig,
    images: Images,
    cluster: Cluster,
    redis: Redis,
    kafka: Kafka,
    vector_db: VectorDb,
    tags: dict[str, str] | None = None,
    otel_endpoint: str = "",
) -> ServingDeps:
    """The gateways' and batch workers' ``ServingDeps``, from the region's components.

    Args:
        config: the serving processes' runtime config: tenants, routing, pools, and the region they serve
            (``GatewayConfig``, by hand or ``GatewayConfig.from_spec(spec, region)``).
        images: the serving image (its copy in the config's region, by digest) and the AWS account it lives
            in, for the IAM policies' ARNs.
        cluster: its OIDC provider gives the pods their IAM roles.
        redis: rate limits, quotas and the exact cache.
        kafka: usage, audit and batch-job events.
        vector_db: the semantic cache.
        tags: AWS tags on the IAM roles.
        otel_endpoint: the OTLP collector (``Observability.otlp_endpoint``); empty for none.
    """
    return ServingDeps(
        config=config,
        image=images.ref(config.region.cloud_region),
        redis_url=redis.url,
        kafka_bootstrap=kafka.bootstrap_brokers,
        kafka_cluster_arn=kafka.cluster_arn,
        qdrant_url=vector_db.url,
        oidc_provider_arn=cluster.oidc_provider_arn,
        oidc_issuer=cluster.oidc_issuer,
        account_id=images.account_id,
        tags=tags or {},
        otel_endpoint=otel_endpoint,
    )


def embedding_pool(spec: PlatformSpec, region: Region) -> str | None:
    """The pool the AI gateway's semantic cache embeds prompts with, when the cache is on and the pool runs here.

    The gateway calls that pool itself (``POOL_URL_<POOL>``, serving/gateway/runtime.py), not through the model
    gateway: without the URL the cache falls back to the lexical embedder, and without a NetworkPolicy peer the
    pool refuses the call.
    """
    semantic = spec.cache.semantic
    pool = semantic.embedding_pool if semantic.enabled else None
    return pool if pool is not None and any(p.pool == pool for p in region.pools) else None


def pool_clients(spec: PlatformSpec, region: Region, pool: str) -> list[dict[str, Any]]:
    """The NetworkPolicy peers that call ``pool``: the model gateway and Prometheus, and the AI gateway for the
    semantic cache's embedding pool."""
    clients = list(DEFAULT_CLIENTS)
    if pool == embedding_pool(spec, region):
        clients.append(kube.peer(NS_GATEWAY, AiGateway.APP))
    return clients
