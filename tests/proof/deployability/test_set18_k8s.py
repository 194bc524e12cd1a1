"""The Kubernetes rules set 18's misses led to (written after its blind run, so not held out), each planted in
minimal's render beside its correct twin: a replica count both an autoscaler and the program write (replicas-owned),
a Local internal traffic policy with callers on nodes without a backend (internal-traffic-local), and a pod off the
cluster DNS that names a Service (pod-dns-policy)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from tests.proof.deployability.conftest import rendered
from tests.proof.deployability.test_set3_invariants import STACK, _resource, deployment, plus, rule, system_pod
from tokenplane.proof.render import RenderedResource

EMBEDDER = "embedder"


def _hpa(kind: str, target_kind: str | None) -> dict[str, Any]:
    ref = {"apiVersion": "apps/v1", "name": EMBEDDER, **({"kind": target_kind} if target_kind else {})}
    metadata = {"name": EMBEDDER, "namespace": "llm-data"}
    if kind == "ScaledObject":
        spec = {"scaleTargetRef": ref, "minReplicaCount": 2, "maxReplicaCount": 4, "triggers": []}
        return {"apiVersion": "keda.sh/v1alpha1", "kind": kind, "metadata": metadata, "spec": spec}
    spec = {"scaleTargetRef": ref, "minReplicas": 2, "maxReplicas": 4}
    return {"apiVersion": "autoscaling/v2", "kind": kind, "metadata": metadata, "spec": spec}


def _job(name: str, namespace: str, script: str, **pod: Any) -> dict[str, Any]:
    container = {"name": name, "image": "curlimages/curl:8.11.1", "command": ["/bin/sh", "-c"], "args": [script]}
    labels = {"app.kubernetes.io/name": name}
    spec = {
        **system_pod(**pod),
        "containers": [{**system_pod()["containers"][0], **container}],
        "restartPolicy": "Never",
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"template": {"metadata": {"labels": labels}, "spec": spec}},
    }


def _service(policy: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"app.kubernetes.io/name": EMBEDDER},
        "ports": [{"name": "http", "port": 80, "targetPort": 8080}],
    }
    if policy:
        spec["internalTrafficPolicy"] = policy
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": EMBEDDER, "namespace": "llm-data"},
        "spec": spec,
    }


# replicas-owned ------------------------------------------------------------------------------------------------------


def test_the_render_records_each_resources_ignore_changes() -> None:
    ignoring = {r.name for r in rendered(STACK).resources if "spec.replicas" in r.ignore_changes}
    assert any(name.endswith("ai-gateway-deployment") for name in ignoring), ignoring


@pytest.mark.parametrize(
    ("replicas", "ignore", "scaler", "target_kind", "flagged"),
    [
        (True, [], "HorizontalPodAutoscaler", "Deployment", True),
        (True, [], "ScaledObject", None, True),  # KEDA's scaleTargetRef kind defaults to Deployment
        (False, [], "HorizontalPodAutoscaler", "Deployment", False),  # the HPA owns the count
        (True, ["spec.replicas"], "HorizontalPodAutoscaler", "Deployment", False),
        (True, ["spec.replicas"], "ScaledObject", None, False),
        (True, [], "HorizontalPodAutoscaler", "StatefulSet", False),  # scales another workload
    ],
)
def test_a_replica_count_an_autoscaler_owns_is_not_written_by_the_program(
    replicas: bool, ignore: list[str], scaler: str, target_kind: str | None, flagged: bool
) -> None:
    workload = deployment(EMBEDDER, system_pod(), replicas=2)
    if not replicas:
        del workload["spec"]["replicas"]

    def ignoring(r: RenderedResource) -> RenderedResource:
        return dataclasses.replace(r, ignore_changes=ignore) if r.name == f"planted-{EMBEDDER}" else r

    result = plus(workload, _hpa(scaler, target_kind))
    result = dataclasses.replace(result, resources=[ignoring(r) for r in result.resources])
    said = [f for f in rule(result, "replicas-owned") if EMBEDDER in f.message]
    assert bool(said) == flagged, said
    for finding in said:
        assert "Deployment llm-data/embedder sets spec.replicas: 2" in finding.message, finding.message
        assert scaler in finding.message and "ignore_changes=['spec.replicas']" in finding.fix, finding


# internal-traffic-local ----------------------------------------------------------------------------------------------


def _daemonset(pod: dict[str, Any]) -> dict[str, Any]:
    manifest = deployment(EMBEDDER, pod)
    del manifest["spec"]["replicas"]
    return manifest | {"kind": "DaemonSet"}


CALLER = "curl -sf -m 60 -X POST http://embedder.llm-data.svc/embed"


@pytest.mark.parametrize(
    ("policy", "backend", "script", "flagged"),
    [
        ("Local", "Deployment", CALLER, True),
        ("Cluster", "Deployment", CALLER, False),
        (None, "Deployment", CALLER, False),
        ("Local", "DaemonSet", CALLER, False),  # a backend on every node the caller may run on
        ("Local", "DaemonSet on gpu nodes", CALLER, True),  # not on the system nodes the caller runs on
        ("Local", "Deployment", "curl -sf http://qdrant.llm-data.svc:6333/readyz", False),  # no caller of it
    ],
)
def test_a_local_traffic_policy_has_a_backend_on_every_callers_node(
    policy: str | None, backend: str, script: str, flagged: bool
) -> None:
    if backend == "Deployment":
        workload = deployment(EMBEDDER, system_pod(), replicas=2)
    elif backend == "DaemonSet":
        workload = _daemonset(system_pod())
    else:
        workload = _daemonset(system_pod(nodeSelector={"tokenplane.io/node-role": "gpu"}))
    result = plus(workload, _service(policy), _job("corpus-indexer", "llm-gateway", script))
    said = [f for f in rule(result, "internal-traffic-local") if "llm-data/embedder" in f.message]
    assert bool(said) == flagged, said
    for finding in said:
        assert "internalTrafficPolicy: Local" in finding.message and "Job llm-gateway/corpus-indexer" in finding.message
        assert "drop internalTrafficPolicy" in finding.fix, finding


# pod-dns-policy ------------------------------------------------------------------------------------------------------

SNAPSHOT = "curl -sf -m 300 -X POST http://qdrant.llm-data.svc:6333/snapshots"


@pytest.mark.parametrize(
    ("pod", "script", "namespace", "flagged"),
    [
        ({"dnsPolicy": "Default"}, SNAPSHOT, "llm-gateway", "dnsPolicy: Default"),
        ({}, SNAPSHOT, "llm-gateway", None),  # ClusterFirst, the default
        ({"dnsPolicy": "ClusterFirst"}, SNAPSHOT, "llm-gateway", None),
        ({"dnsPolicy": "Default"}, "curl -sf https://example.com/health", "llm-gateway", None),  # no cluster name
        ({"dnsPolicy": "Default"}, "curl -sf http://qdrant:6333/readyz", "llm-data", "dnsPolicy: Default"),  # short
        ({"dnsPolicy": "None", "dnsConfig": {"nameservers": ["8.8.8.8"]}}, SNAPSHOT, "llm-gateway", "dnsPolicy: None"),
        ({"dnsPolicy": "None", "dnsConfig": {"nameservers": ["172.20.0.10"]}}, SNAPSHOT, "llm-gateway", None),
        ({"hostNetwork": True}, SNAPSHOT, "llm-gateway", "falls back to Default"),
        ({"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet"}, SNAPSHOT, "llm-gateway", None),
    ],
)
def test_a_pod_that_names_a_service_resolves_through_the_cluster_dns(
    pod: dict[str, Any], script: str, namespace: str, flagged: str | None
) -> None:
    result = plus(_job("qdrant-snapshot", namespace, script, **copy.deepcopy(pod)))
    said = [f for f in rule(result, "pod-dns-policy") if "qdrant-snapshot" in f.message]
    assert bool(said) == bool(flagged), said
    for finding in said:
        assert flagged and flagged in finding.message, finding.message
        assert "Service llm-data/qdrant" in finding.message and "dnsPolicy" in finding.fix, finding


def test_planted_objects_are_the_programs_own() -> None:
    assert _resource(_service(None)).custom
