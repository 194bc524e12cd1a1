"""ModelGateway: providers, retries, failover and metering; the only client of the vLLM pools."""

from __future__ import annotations

from typing import Any

from tokenplane.components import kube
from tokenplane.components.gateway import GatewayArgs, GatewayWorkload, env_secret_entries
from tokenplane.components.gateway_config import GatewayConfig
from tokenplane.components.naming import NS_BATCH, NS_GATEWAY, NS_MONITORING

__all__ = ["GatewayArgs", "ModelGateway"]


class ModelGateway(GatewayWorkload):
    """Speaks OpenAI HTTP to the pools and to external providers (``serving.modelgw``)."""

    MODULE = "model_gateway"
    APP = "model-gateway"
    SERVING_MODULE = "tokenplane.serving.modelgw"

    def ingress_sources(self) -> list[dict[str, Any]]:
        # Only the AI gateway and the batch workers call it; Prometheus scrapes it.
        return [kube.peer(NS_GATEWAY, "ai-gateway"), kube.peer(NS_BATCH, "batch-workers"), kube.peer(NS_MONITORING)]

    def secret_env(self, app: str, config: GatewayConfig) -> list[dict[str, Any]]:
        # The providers' env:// keys (the fallback's OpenAI key): optional, as serving.modelgw treats them: a
        # provider without its key is marked unavailable, and the pod still starts.
        return env_secret_entries(app, [p.api_key_secret for p in config.providers], optional=True)
