"""ModelGateway: providers, retries, failover and metering; the only client of the vLLM pools."""

from __future__ import annotations

from typing import Any

import pulumi_kubernetes as k8s

from tokenplane.components import kube
from tokenplane.components.gateway import GATEWAY_PORT, GatewayArgs, GatewayWorkload
from tokenplane.components.gateway_config import GatewayConfig
from tokenplane.components.naming import NS_BATCH, NS_GATEWAY, NS_MONITORING
from tokenplane.runtime_env import Var

__all__ = ["GatewayArgs", "ModelGateway", "peers_service_name"]


def peers_service_name(app: str) -> str:
    """The model gateway's headless Service: every ready process's address, for the processes themselves."""
    return f"{app}-peers"


class ModelGateway(GatewayWorkload):
    """Speaks OpenAI HTTP to the pools and to external providers (``serving.modelgw``)."""

    MODULE = "model_gateway"
    APP = "model-gateway"
    SERVING_MODULE = "tokenplane.serving.modelgw"

    def ingress_sources(self) -> list[dict[str, Any]]:
        # Only the AI gateway and the batch workers call it; Prometheus scrapes it.
        return [kube.peer(NS_GATEWAY, "ai-gateway"), kube.peer(NS_BATCH, "batch-workers"), kube.peer(NS_MONITORING)]

    def peer_env(self, app: str, namespace: str) -> list[dict[str, Any]]:
        # Each process prefers the vLLM replicas it owns among its peers (serving/modelgw/discovery.py): it
        # finds them in the headless Service's DNS answer, and itself by its pod's IP (the downward API).
        return [
            {"name": Var.MODEL_GATEWAY_PEERS.value, "value": f"{peers_service_name(app)}.{namespace}.svc"},
            {"name": Var.POD_IP.value, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ]

    def peer_service(self, app: str, namespace: str, labels: dict[str, str]) -> str:
        # Headless: its DNS name answers with every ready process's address, not one virtual IP. Only ready
        # ones: a process not yet ready gets no requests, and owns every replica until it sees itself listed.
        # The AI gateway and the batch workers deal their requests over the same addresses.
        k8s.core.v1.Service(
            self.child("peers"),
            metadata={"name": peers_service_name(app), "namespace": namespace, "labels": labels},
            spec={
                "clusterIP": "None",
                "selector": {"app.kubernetes.io/name": app},
                "ports": [{"name": "http", "port": GATEWAY_PORT, "targetPort": "http"}],
            },
            opts=self.opts(),
        )
        return peers_service_name(app)

    # The providers' keys (the fallback's OpenAI key) are optional, as serving.modelgw treats them: a provider
    # without its key is marked unavailable, and the pod still starts.
    SECRETS_OPTIONAL = True

    def secret_refs(self, config: GatewayConfig) -> list[str]:
        return [p.api_key_secret for p in config.providers]
