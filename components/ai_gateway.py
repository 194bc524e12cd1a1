"""AiGateway: the public OpenAI-compatible endpoint, the only LoadBalancer in the region."""

from __future__ import annotations

from typing import Any

from components.gateway import GatewayArgs, GatewayWorkload

__all__ = ["AiGateway", "GatewayArgs"]


class AiGateway(GatewayWorkload):
    """Auth, tenant context, limits, quotas, caches, routing and admission (``serving.gateway``)."""

    MODULE = "ai_gateway"
    APP = "ai-gateway"
    SERVING_MODULE = "serving.gateway"
    PUBLIC = True

    def ingress_sources(self) -> list[dict[str, Any]]:
        return []  # reached through the NLB from anywhere; auth is the gateway's first stage

    def service_annotations(self) -> dict[str, str]:
        # An NLB in IP mode keeps client connections on long streams; TLS terminates at the listener.
        return {
            "service.beta.kubernetes.io/aws-load-balancer-type": "external",
            "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
            "service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing",
            "service.beta.kubernetes.io/aws-load-balancer-healthcheck-path": "/readyz",
            "service.beta.kubernetes.io/aws-load-balancer-cross-zone-load-balancing-enabled": "true",
        }
