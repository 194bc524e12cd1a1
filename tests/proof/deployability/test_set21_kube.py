"""The rules set 21's Kubernetes misses led to (written after its blind run, so not held out), each planted in
minimal's render beside its correct twin: a nodePort outside the service-node-port-range (api-validation), a model
server's liveness probe that kills it before its model has loaded (probe-patience), a store's data on an emptyDir
(store-data-durable), and a GPU Deployment whose rollout surge needs a GPU its node groups never have
(rollout-room)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from tests.proof.deployability.conftest import rendered
from tests.proof.deployability.test_set3_invariants import deployment, plus, rule
from tokenplane.proof.deployability.graph import NODE_GROUP

TEI = "ghcr.io/huggingface/text-embeddings-inference:cpu-1.6"


# api-validation: a nodePort in the service-node-port-range --------------------------------------------------------


def _service(node_port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "status-page", "namespace": "llm-data"},
        "spec": {
            "type": "NodePort",
            "selector": {"app": "status-page"},
            "ports": [{"name": "http", "port": 80, "targetPort": 8080, "nodePort": node_port}],
        },
    }


@pytest.mark.parametrize(("node_port", "refused"), [(8443, True), (30443, False), (32767, False), (32768, True)])
def test_a_node_port_lies_in_the_service_node_port_range(node_port: int, refused: bool) -> None:
    said = [f for f in rule(plus(_service(node_port)), "api-validation") if "status-page" in f.message]
    assert bool(said) == refused, said
    if refused:
        assert f"spec.ports[0].nodePort {node_port}" in said[0].message and "30000-32767" in said[0].message
        assert "pick a nodePort in 30000-32767" in said[0].fix


# probe-patience: a model server's liveness probe before its model has loaded -------------------------------------


def _embedder(**probes: Any) -> dict[str, Any]:
    container = {
        "name": "embedder",
        "image": TEI,
        "args": ["--model-id", "BAAI/bge-m3", "--port", "8080"],
        "livenessProbe": {"httpGet": {"path": "/health", "port": 8080}, "periodSeconds": 5},
        "resources": {"requests": {"cpu": "2", "memory": "8Gi"}},
        **probes,
    }
    return deployment("embedder", {"containers": [container]})


@pytest.mark.parametrize(
    ("probes", "killed"),
    [
        ({}, True),
        (
            {
                "startupProbe": {
                    "httpGet": {"path": "/health", "port": 8080},
                    "periodSeconds": 10,
                    "failureThreshold": 60,
                }
            },
            False,
        ),
        ({"startupProbe": {"httpGet": {"path": "/health", "port": 8080}, "periodSeconds": 5}}, True),
        ({"livenessProbe": {"httpGet": {"path": "/health", "port": 8080}, "initialDelaySeconds": 120}}, False),
        ({"args": ["--model-id", "/data/bge-m3", "--port", "8080"]}, False),  # already on a volume: not judged
    ],
)
def test_a_hub_model_server_gets_a_probe_window_covering_its_model_load(probes: dict[str, Any], killed: bool) -> None:
    said = [f for f in rule(plus(_embedder(**probes)), "probe-patience") if "embedder" in f.message]
    assert bool(said) == killed, said
    if killed:
        assert "Deployment llm-data/embedder" in said[0].message and "Text Embeddings Inference" in said[0].message
        assert "BAAI/bge-m3" in said[0].message and "startupProbe" in said[0].fix


def test_a_model_id_from_the_environment_is_read_too() -> None:
    pod = _embedder(args=["--port", "8080"], env=[{"name": "MODEL_ID", "value": "BAAI/bge-m3"}])
    assert [f for f in rule(plus(pod), "probe-patience") if "embedder" in f.message]


# store-data-durable: a store's data directory on a volume that outlives the pod -----------------------------------


def _redis(args: list[str], volume: dict[str, Any], *, mount: str = "/data") -> dict[str, Any]:
    container = {"name": "session-store", "image": "redis:7.4.2-alpine", "args": args}
    container["volumeMounts"] = [{"name": "data", "mountPath": mount}]
    return deployment("session-store", {"containers": [container], "volumes": [{"name": "data", **volume}]})


def _statefulset(args: list[str]) -> dict[str, Any]:
    manifest = _redis(args, {"emptyDir": {}})
    manifest["kind"] = "StatefulSet"
    pod = manifest["spec"]["template"]["spec"]
    pod["volumes"] = []
    manifest["spec"]["serviceName"] = "session-store"
    manifest["spec"]["volumeClaimTemplates"] = [
        {
            "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}}},
        }
    ]
    return manifest


AOF = ["redis-server", "--appendonly", "yes", "--dir", "/data"]
EMPTY = {"emptyDir": {"sizeLimit": "20Gi"}}
CLAIM = {"persistentVolumeClaim": {"claimName": "session-store"}}


@pytest.mark.parametrize(
    ("manifest", "lost"),
    [
        (_redis(AOF, EMPTY), True),
        (_redis(["redis-server", "--save", "60", "1000"], EMPTY), True),
        (_redis(["redis-server", "--appendonly", "yes", "--dir", "/var/lib/redis"], EMPTY, mount="/var/lib"), True),
        (_redis(AOF, CLAIM), False),
        (_statefulset(AOF), False),
        (_redis(["redis-server", "--save", '""', "--appendonly", "no"], EMPTY), False),  # a cache
        (_redis(["redis-server"], EMPTY), False),  # no persistence asked for
    ],
)
def test_a_store_that_persists_keeps_its_data_off_an_empty_dir(manifest: dict[str, Any], lost: bool) -> None:
    said = rule(plus(manifest), "store-data-durable")
    assert bool(said) == lost, said
    if lost:
        assert "session-store" in said[0].message and "emptyDir volume data" in said[0].message
        assert "PersistentVolumeClaim" in said[0].fix


def test_a_databases_pgdata_on_an_empty_dir_is_lost_with_the_pod() -> None:
    container = {
        "name": "db",
        "image": "postgres:16",
        "env": [{"name": "PGDATA", "value": "/var/lib/postgresql/data/pgdata"}],
        "volumeMounts": [{"name": "pg", "mountPath": "/var/lib/postgresql/data"}],
    }
    manifest = deployment("db", {"containers": [container], "volumes": [{"name": "pg", "emptyDir": {}}]})
    said = rule(plus(manifest), "store-data-durable")
    assert said and "PostgreSQL" in said[0].message and "/var/lib/postgresql/data/pgdata" in said[0].message


# rollout-room: a GPU Deployment's surge needs a GPU its node groups never have ------------------------------------


def _gpu_group(most: int) -> Any:
    shipped = next(r for r in rendered("minimal").resources if r.type == NODE_GROUP and "gpu" in r.name)
    inputs = copy.deepcopy(shipped.inputs)
    inputs.update(
        instanceTypes=["g6.xlarge"], scalingConfig={"minSize": 2.0, "desiredSize": 2.0, "maxSize": float(most)}
    )
    inputs["labels"] = {**inputs["labels"], "tokenplane.io/pool": "rerank"}
    return lambda r: r if r.name != shipped.name else dataclasses.replace(r, inputs=inputs)


def _reranker(strategy: dict[str, Any] | None) -> dict[str, Any]:
    gpu = {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}
    pod = {
        "nodeSelector": {"tokenplane.io/pool": "rerank"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [{"name": "reranker", "image": TEI, "resources": {"requests": gpu, "limits": gpu}}],
    }
    manifest = deployment("reranker", pod, replicas=2, namespace="llm-serving")
    if strategy is not None:
        manifest["spec"]["strategy"] = strategy
    return manifest


@pytest.mark.parametrize(
    ("strategy", "most", "stuck"),
    [
        (None, 2, True),  # 25%/25% of 2: surge 1, unavailable 0
        ({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}, 2, True),
        ({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}, 2, False),
        (None, 3, False),  # a third node to surge into
        ({"type": "Recreate"}, 2, False),
    ],
)
def test_a_gpu_deployment_rolls_only_with_room_to_surge_or_leave(
    strategy: dict[str, Any] | None, most: int, stuck: bool
) -> None:
    said = [
        f
        for f in rule(plus(_reranker(strategy), change=_gpu_group(most)), "rollout-room")
        if "llm-serving/reranker" in f.message
    ]
    assert bool(said) == stuck, said
    if stuck:
        assert "can never roll at 2 replicas" in said[0].message and "maxUnavailable 1" in said[0].fix
