"""Args read from the components that provide their parts, so that none is passed twice or mixed up.

Apart from the components it reads, so that importing them stays free of cycles (``Cluster`` sizes its
system nodes from the workloads' modules, which import the gateways').
"""

from __future__ import annotations

import pulumi

from tokenplane.components.cluster import Cluster
from tokenplane.components.gateway import ServingDeps
from tokenplane.components.gateway_config import GatewayConfig
from tokenplane.components.kafka import Kafka
from tokenplane.components.redis import Redis
from tokenplane.components.vector_db import VectorDb


def serving_deps(
    *,
    config: GatewayConfig,
    image: pulumi.Input[str],
    account_id: pulumi.Input[str],
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
        image: the serving image (``Images.ref``).
        account_id: the AWS account (``Images.account_id``), for the IAM policies' ARNs.
        cluster: its OIDC provider gives the pods their IAM roles.
        redis: rate limits, quotas and the exact cache.
        kafka: usage, audit and batch-job events.
        vector_db: the semantic cache.
        tags: AWS tags on the IAM roles.
        otel_endpoint: the OTLP collector (``Observability.otlp_endpoint``); empty for none.
    """
    return ServingDeps(
        config=config,
        image=image,
        redis_url=redis.url,
        kafka_bootstrap=kafka.bootstrap_brokers,
        kafka_cluster_arn=kafka.cluster_arn,
        qdrant_url=vector_db.url,
        oidc_provider_arn=cluster.oidc_provider_arn,
        oidc_issuer=cluster.oidc_issuer,
        account_id=account_id,
        tags=tags or {},
        otel_endpoint=otel_endpoint,
    )
