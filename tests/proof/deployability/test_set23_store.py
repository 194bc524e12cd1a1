"""The rules set 23's store misses led to (written after its blind run, so not held out), each planted in a shipped
render beside its correct twin: a model server downloading a Hub model larger than the emptyDir (or ephemeral
storage) its cache is on (model-cache-fits), and a multi-member etcd bootstrapped by an OrderedReady StatefulSet
whose readiness needs quorum (quorum-startable)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.test_set3_invariants import deployment, plus, rule

TEI = "ghcr.io/huggingface/text-embeddings-inference:cpu-1.6"


# model-cache-fits: the Hub download fits the volume it lands on -----------------------------------------------------


def _embedder(
    model: str,
    volume: dict[str, Any] | None,
    *,
    env: list[dict[str, Any]] | None = None,
    mount: str = "/data",
    cache: str | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "tei",
        "image": TEI,
        "args": ["--model-id", model, "--port", "8080", *(["--huggingface-hub-cache", cache] if cache else [])],
        "env": env or [{"name": "HF_HOME", "value": "/data"}],
        "resources": {"limits": {"ephemeral-storage": "1Gi"}},
    }
    pod: dict[str, Any] = {"containers": [container]}
    if volume is not None:
        container["volumeMounts"] = [{"name": "data", "mountPath": mount}]
        pod["volumes"] = [{"name": "data", **volume}]
    return deployment("planted-embedder", pod, replicas=2)


@pytest.mark.parametrize(
    ("pod", "found"),
    [
        # The set's defect: bge-large-en-v1.5's 1.34 GB of weights into a 1Gi emptyDir.
        (_embedder("BAAI/bge-large-en-v1.5", {"emptyDir": {"sizeLimit": "1Gi"}}), "emptyDir data"),
        (_embedder("BAAI/bge-large-en-v1.5", {"emptyDir": {"sizeLimit": "1Gi", "medium": "Memory"}}), "Memory"),
        # Its twin: the sizeLimit above the model.
        (_embedder("BAAI/bge-large-en-v1.5", {"emptyDir": {"sizeLimit": "4Gi"}}), None),
        # A model that fits the same volume.
        (_embedder("BAAI/bge-base-en-v1.5", {"emptyDir": {"sizeLimit": "1Gi"}}), None),
        # A model whose size is not known: never guessed.
        (_embedder("BAAI/bge-small-en-v1.5", {"emptyDir": {"sizeLimit": "64Mi"}}), None),
        # The cache on no volume: the container's ephemeral-storage limit of 1Gi bounds it.
        (_embedder("BAAI/bge-reranker-large", None), "ephemeral-storage"),
        # The cache moved (HUGGINGFACE_HUB_CACHE) off the small volume, onto the writable layer: still bounded.
        (
            _embedder(
                "BAAI/bge-large-en-v1.5",
                {"emptyDir": {"sizeLimit": "1Gi"}},
                env=[{"name": "HUGGINGFACE_HUB_CACHE", "value": "/cache"}],
            ),
            "ephemeral-storage",
        ),
        # The cache named on the command line (--huggingface-hub-cache), on the small volume or off it.
        (_embedder("BAAI/bge-large-en-v1.5", {"emptyDir": {"sizeLimit": "1Gi"}}, mount="/m", cache="/m"), "/m"),
        (_embedder("BAAI/bge-large-en-v1.5", {"emptyDir": {"sizeLimit": "1Gi"}}, cache="/c/x"), "ephemeral"),
        # A PersistentVolumeClaim: no bound the rule reads.
        (_embedder("BAAI/bge-large-en-v1.5", {"persistentVolumeClaim": {"claimName": "cache"}}), None),
    ],
)
def test_a_hub_download_fits_the_cache_it_lands_on(pod: dict[str, Any], found: str | None) -> None:
    said = [f.message for f in rule(plus(pod), "model-cache-fits") if "planted-embedder" in f.message]
    assert bool(said) == bool(found), said
    assert all(found and found in m and "container tei" in m for m in said), said


# quorum-startable: a quorum store's members start before any is Ready ----------------------------------------------

_CLUSTER = ",".join(f"lease-{i}=http://lease-{i}.lease-headless.llm-data.svc:2380" for i in range(3))


def _etcd(
    *,
    policy: str | None = "OrderedReady",
    replicas: int = 3,
    readiness: dict[str, Any] | None = None,
    state: str = "new",
    cluster: str = _CLUSTER,
) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "etcd",
        "image": "quay.io/coreos/etcd:v3.5.17",
        "command": ["/usr/local/bin/etcd"],
        "args": ["--name=$(POD_NAME)", f"--initial-cluster={cluster}", f"--initial-cluster-state={state}"],
    }
    if readiness is not None:
        container["readinessProbe"] = readiness
    manifest = deployment("lease", {"containers": [container]}, replicas=replicas)
    manifest["kind"] = "StatefulSet"
    manifest["spec"]["serviceName"] = "lease-headless"
    if policy is not None:
        manifest["spec"]["podManagementPolicy"] = policy
    return manifest


HEALTH = {"httpGet": {"path": "/health", "port": 2379}}


@pytest.mark.parametrize(
    ("statefulset", "found"),
    [
        # The set's defect, and with the policy left to its default.
        (_etcd(readiness=HEALTH), "GET /health"),
        (_etcd(policy=None, readiness=HEALTH), "OrderedReady"),
        (_etcd(readiness={"exec": {"command": ["etcdctl", "endpoint", "health"]}}), "etcdctl"),
        # Its twin: Parallel.
        (_etcd(policy="Parallel", readiness=HEALTH), None),
        # Readiness that needs no quorum, or none: the members start one by one and form the cluster.
        (_etcd(readiness={"tcpSocket": {"port": 2379}}), None),
        (_etcd(readiness=None), None),
        (_etcd(readiness={"httpGet": {"path": "/health?serializable=true", "port": 2379}}), None),
        # One member, or joining an existing cluster: no quorum to wait for at bootstrap.
        (_etcd(replicas=1, readiness=HEALTH, cluster="lease-0=http://lease-0.lease-headless:2380"), None),
        (_etcd(readiness=HEALTH, state="existing"), None),
    ],
)
def test_a_quorum_store_starts_its_members_together(statefulset: dict[str, Any], found: str | None) -> None:
    said = [f.message for f in rule(plus(statefulset), "quorum-startable") if "lease" in f.message]
    assert bool(said) == bool(found), said
    assert all(found and found in m and "podManagementPolicy" in m for m in said), said
