"""ModelGateway: providers, retries, failover and metering; the only client of the vLLM pools."""

from __future__ import annotations

from typing import Any

from components import kube
from components.gateway import GatewayArgs, GatewayWorkload
from components.naming import NS_BATCH, NS_GATEWAY, NS_MONITORING

__all__ = ["GatewayArgs", "ModelGateway"]


class ModelGateway(GatewayWorkload):
    """Speaks OpenAI HTTP to the pools and to external providers (``serving.modelgw``)."""

    MODULE = "model_gateway"
    APP = "model-gateway"
    SERVING_MODULE = "serving.modelgw"

    def ingress_sources(self) -> list[dict[str, Any]]:
        # Only the AI gateway and the batch workers call it; Prometheus scrapes it.
        return [kube.peer(NS_GATEWAY, "ai-gateway"), kube.peer(NS_BATCH, "batch-workers"), kube.peer(NS_MONITORING)]
