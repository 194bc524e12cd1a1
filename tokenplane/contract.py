"""Annotation names the components write and the deployability checks read: one definition for both sides;
and the weights' hash that a spec states and a pool's fetch checks."""

from __future__ import annotations

# On a workload: Secrets/ConfigMaps its pods read that the stack must not create ("secret/NAME,configmap/NAME").
PREREQUISITES_ANNOTATION = "tokenplane.io/prerequisites"
# On a weights publish Job: the s3:// prefix it fills, which pools' init containers then verify.
PUBLISHES_ANNOTATION = "tokenplane.io/publishes"
# The pool a vLLM Deployment serves, so its start-up time can be derived from the spec.
POOL_LABEL = "tokenplane.io/pool"
# On a vLLM pod template: the release its image holds. The pools run a regional mirror by digest, whose
# reference no longer names the version, and the argv check needs it to pick the option schema.
VLLM_VERSION_ANNOTATION = "tokenplane.io/vllm-version"
# On a pool's Deployment: tokenplane.model.startup's estimate of its first replica's time to Ready, in seconds. The
# await-timeout check reads it where there is no spec to estimate from (a program of one's own).
TIME_TO_READY_ANNOTATION = "tokenplane.io/time-to-ready-seconds"

# Set while `tokenplane check --program` / `plan` render a program under mocks: a program may then use stand-ins
# for values only a real `pulumi up` needs (stacks/__main__.py's env:// secrets), as it would under preview.
OFFLINE_RENDER_ENV = "TOKENPLANE_OFFLINE_RENDER"
# The secret reference schemes the serving processes resolve (tokenplane.serving.secrets): the spec accepts these
# and no other, so a reference that loads is one the gateways can read.
SECRET_SCHEMES = ("env", "k8s", "aws-sm")
# Where a serving pod finds a k8s://<namespace>/<name>/<key> reference: the Secret <name> mounted as files, one per
# key, under <SECRETS_DIR>/<namespace>/<name>/ (the components mount it; tokenplane.serving.secrets reads it).
SECRETS_DIR = "/var/run/secrets/tokenplane"


def k8s_secret_parts(ref: str) -> tuple[str, str, str] | None:
    """(namespace, name, key) of a ``k8s://namespace/name/key`` reference; None for another scheme or shape."""
    if not ref.startswith("k8s://"):
        return None
    parts = ref.removeprefix("k8s://").split("/")
    if len(parts) != 3 or not all(parts) or any(p in (".", "..") for p in parts):
        return None
    return parts[0], parts[1], parts[2]


# The queries a serving process sends to Prometheus itself (at TOKENPLANE_PROMETHEUS_URL), by its `python -m` module:
# the metrics-exported check holds them, like the render's own queries, to what the region's Prometheus stores.
# The metering consumer bills each pool's replicas from kube-state-metrics (serving/finops/capacity.py); vllm-<pool>
# is components/vllm_pool.py's Deployment name.
POOL_DEPLOYMENT_PREFIX = "vllm-"
REPLICAS_QUERY = f'sum by (deployment) (kube_deployment_status_replicas{{deployment=~"{POOL_DEPLOYMENT_PREFIX}.+"}})'
CODE_QUERIES = {"tokenplane.serving.finops": (REPLICAS_QUERY,)}
