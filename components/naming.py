"""Names, labels and tags shared by every component."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tokenplane.contract import POOL_LABEL
from tokenplane.spec import PlatformSpec

LABEL_POOL = POOL_LABEL
LABEL_TIER = "tokenplane.io/tier"
LABEL_REGION = "tokenplane.io/region"
GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"  # what the NVIDIA device plugin chart's default affinity selects

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


# AWS name limits the components fit names to (tokenplane/proof/deployability/names.py has every rule with its source).
ROLE_NAME_MAX = 64
REPLICATION_GROUP_ID_MAX = 40
AUTONAME_SUFFIX = 8  # Pulumi's autoname: the logical name, "-" and 7 random hex characters


def fitted_name(logical: str, limit: int) -> str | None:
    """None (keep Pulumi's autoname) when ``logical`` plus the suffix fits ``limit``; else a fitting name.

    A long platform, region or pool name would otherwise give an autoname AWS rejects at create time.
    The fitted name keeps the start of the logical name and ends in a hash of the whole of it, so two
    long names that share a prefix still differ.
    """
    if len(logical) + AUTONAME_SUFFIX <= limit:
        return None
    digest = hashlib.sha256(logical.encode()).hexdigest()[:8]
    return f"{logical[: limit - len(digest) - 1].rstrip('-')}-{digest}"


def checksum(value: Any) -> str:
    """A stable sha256 of JSON-able data, for roll-on-change pod annotations."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def cluster_name(platform: str, region: str) -> str:
    """The EKS cluster of a spec region; subnets are tagged with it so that load balancers find them."""
    return f"{platform}-{region}"
