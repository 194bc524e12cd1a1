"""AiGateway: the public OpenAI-compatible endpoint, the only LoadBalancer in the region."""

from __future__ import annotations

from typing import Any

import pulumi

from tokenplane.components.gateway import METRICS_PORT, GatewayArgs, GatewayWorkload
from tokenplane.components.gateway_config import GatewayConfig
from tokenplane.components.tls import TLS_POLICY
from tokenplane.runtime_env import Var, env_list

__all__ = ["AiGateway", "GatewayArgs"]


class AiGateway(GatewayWorkload):
    """Auth, tenant context, limits, quotas, caches, routing and admission (``serving.gateway``)."""

    MODULE = "ai_gateway"
    APP = "ai-gateway"
    SERVING_MODULE = "tokenplane.serving.gateway"
    PUBLIC = True
    METRICS_PORT = METRICS_PORT  # its series are labelled by tenant: the load balancer's port must not show them

    def ingress_sources(self) -> list[dict[str, Any]]:
        return []  # reached through the NLB from anywhere; auth is the gateway's first stage

    def secret_refs(self, config: GatewayConfig) -> list[str]:
        # Tenants' API keys: without them auth has no keys and /readyz answers 503 (serving/gateway/runtime.py).
        return [t.api_key_secret for t in config.tenants]

    def files_env(self, args: GatewayArgs) -> list[dict[str, Any]]:
        if args.files_bucket is None:
            # No batch workers in this region, so no bucket and no one to run a job: the Files and Batch
            # routes answer a 404 that says so, rather than a 500 from the read-only root filesystem.
            return env_list({Var.BATCH_API: "off"})
        return super().files_env(args)

    def replica_env(self, min_replicas: int) -> list[dict[str, Any]]:
        # Each replica sizes two things by this count: its share of every tenant's RPM and TPM while Redis is
        # unreachable (limit / N, ratelimit.py) and its admission permits per pool (slots / N, app.py). It has
        # to be one number in the pod template (a changing one would roll the pods at every scale), so: the
        # HPA's floor or its ceiling. The floor, because it never under-serves: at the floor the replicas
        # together admit exactly each limit, and scaled up to k x the floor an outage lets a tenant through
        # at up to k x its limit, bounded by max/min replicas (3x, replica_bounds) and only while Redis is
        # down. The ceiling would hold every limit, but at the floor, where the gateway runs most of the
        # time, it would cut every tenant to a third of its limit in an outage, and admission to a third of
        # each pool's slots with Redis healthy. Unset, the count is 1: every replica admits a full limit.
        return env_list({Var.GATEWAY_REPLICAS: str(min_replicas)})

    def service_annotations(self, args: GatewayArgs) -> dict[str, pulumi.Input[str]]:
        # An NLB in IP mode keeps client connections on long streams. TLS terminates at the listener (port 443,
        # the region's ACM certificate); the NLB forwards plain HTTP to the pods. Its target health check asks
        # /readyz over HTTP: the annotation's default, TCP, would ignore the path and send traffic to a pod
        # whose /readyz says 503.
        # Without a certificate (a spec with no domain: dev, staging) the listener is plain HTTP on port 80.
        tls: dict[str, pulumi.Input[str]] = (
            {
                "service.beta.kubernetes.io/aws-load-balancer-ssl-cert": args.certificate_arn,
                "service.beta.kubernetes.io/aws-load-balancer-ssl-ports": "443",
                "service.beta.kubernetes.io/aws-load-balancer-ssl-negotiation-policy": TLS_POLICY,
            }
            if args.certificate_arn is not None
            else {}
        )
        return {
            "service.beta.kubernetes.io/aws-load-balancer-type": "external",
            "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
            "service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing",
            **tls,
            "service.beta.kubernetes.io/aws-load-balancer-healthcheck-protocol": "HTTP",
            "service.beta.kubernetes.io/aws-load-balancer-healthcheck-port": "traffic-port",
            "service.beta.kubernetes.io/aws-load-balancer-healthcheck-path": "/readyz",
            "service.beta.kubernetes.io/aws-load-balancer-cross-zone-load-balancing-enabled": "true",
        }
