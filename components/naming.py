"""Names, labels and tags shared by every component."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tokenplane.spec import PlatformSpec

LABEL_POOL = "tokenplane.io/pool"
LABEL_TIER = "tokenplane.io/tier"
LABEL_REGION = "tokenplane.io/region"
GPU_TAINT_KEY = "nvidia.com/gpu"

# Namespaces per concern, so that network policy and quotas can be set per concern.
NS_SERVING = "llm-serving"
NS_GATEWAY = "llm-gateway"
NS_DATA = "llm-data"
NS_BATCH = "llm-batch"
NS_MONITORING = "monitoring"
NS_KEDA = "keda"
APP_NAMESPACES = (NS_SERVING, NS_GATEWAY, NS_DATA, NS_BATCH, NS_MONITORING)


def app_labels(app: str, component: str, **extra: str) -> dict[str, str]:
    """Kubernetes' recommended labels, plus tokenplane's own."""
    return {
        "app.kubernetes.io/name": app,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": "tokenplane",
        "app.kubernetes.io/managed-by": "pulumi",
        **extra,
    }


def selector(app: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": app}


def tags(spec: PlatformSpec, **extra: str) -> dict[str, str]:
    """AWS tags on every taggable resource: cost allocation by platform and environment."""
    return {
        "tokenplane:platform": spec.platform.name,
        "tokenplane:environment": spec.platform.environment.value,
        "managed-by": "pulumi",
        **extra,
    }


def checksum(value: Any) -> str:
    """A stable sha256 of JSON-able data, for roll-on-change pod annotations."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def cluster_name(platform: str, region: str) -> str:
    """The EKS cluster of a spec region; subnets are tagged with it so that load balancers find them."""
    return f"{platform}-{region}"
