"""The rules set 19's Kubernetes misses led to (written after its blind run, so not held out), each planted in a
shipped render beside its correct twin: a NetworkPolicy peer naming another namespace's pods without a
namespaceSelector (selector-selects), a memory-backed emptyDir larger than the pod's memory limit
(tmpfs-within-memory), a preStop sleep that outlasts the grace period (prestop-within-grace) and an HPA whose
scale-up is Disabled (scale-up-enabled)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.test_set3_invariants import deployment, plus, rule, system_pod

CALLER = {"app.kubernetes.io/name": "planted-caller"}


def _policy(peer: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "planted-embedder-ingress", "namespace": "llm-data"},
        "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "planted-embedder"}},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [peer], "ports": [{"port": 8080, "protocol": "TCP"}]}],
        },
    }


# selector-selects: a bare podSelector peer names pods of another namespace -------------------------------------------


@pytest.mark.parametrize(
    ("peer", "flagged"),
    [
        ({"podSelector": {"matchLabels": CALLER}}, True),
        (
            {
                "podSelector": {"matchLabels": CALLER},
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "llm-gateway"}},
            },
            False,
        ),
    ],
)
def test_a_bare_pod_selector_peer_naming_another_namespaces_pods_is_flagged(
    peer: dict[str, Any], flagged: bool
) -> None:
    caller = deployment("planted-caller", system_pod(), namespace="llm-gateway")
    embedder = deployment("planted-embedder", system_pod())
    said = [
        f.message for f in rule(plus(caller, embedder, _policy(peer)), "selector-selects") if "planted" in f.message
    ]
    assert bool(said) == flagged, said
    assert all("without namespaceSelector" in m and "llm-gateway" in m for m in said), said


def test_a_bare_pod_selector_peer_that_also_matches_its_own_namespace_is_not_flagged() -> None:
    here = deployment("planted-caller", system_pod(), namespace="llm-data")
    there = deployment("planted-caller", system_pod(), namespace="llm-gateway")
    planted = plus(here, there, _policy({"podSelector": {"matchLabels": CALLER}}))
    assert not [f for f in rule(planted, "selector-selects") if "planted" in f.message]


# tmpfs-within-memory: a memory emptyDir above the pod's memory limit -------------------------------------------------


@pytest.mark.parametrize(("size", "flagged"), [("4Gi", True), ("1Gi", False), (None, False)])
def test_a_memory_emptydir_above_the_memory_limit_is_flagged(size: str | None, flagged: bool) -> None:
    empty_dir: dict[str, Any] = {"medium": "Memory", **({"sizeLimit": size} if size else {})}
    pod = system_pod(memory="2Gi", volumes=[{"name": "cache", "emptyDir": empty_dir}])
    pod["containers"][0]["volumeMounts"] = [{"name": "cache", "mountPath": "/data"}]
    said = [f for f in rule(plus(deployment("planted-cache", pod)), "tmpfs-within-memory")]
    assert bool(said) == flagged, said
    assert all("planted-cache" in f.message and "emptyDir cache" in f.message for f in said), said
    assert all("limits.memory" in f.fix and "medium: Memory" in f.fix for f in said), said


def test_a_disk_emptydir_above_the_memory_limit_is_not_flagged() -> None:
    pod = system_pod(memory="2Gi", volumes=[{"name": "cache", "emptyDir": {"sizeLimit": "8Gi"}}])
    assert not rule(plus(deployment("planted-cache", pod)), "tmpfs-within-memory")


# prestop-within-grace: a preStop sleep as long as the grace period ---------------------------------------------------


@pytest.mark.parametrize(
    ("hook", "grace", "flagged"),
    [
        ({"exec": {"command": ["sleep", "60"]}}, 30, True),
        ({"exec": {"command": ["sleep", "60"]}}, 90, False),
        ({"exec": {"command": ["/bin/sh", "-c", "sleep 30 && kill -TERM 1"]}}, None, True),
        ({"exec": {"command": ["/bin/sh", "-c", "sleep 15"]}}, None, False),
        ({"sleep": {"seconds": 45}}, 40, True),
        ({"sleep": {"seconds": 20}}, 40, False),
    ],
)
def test_a_prestop_sleep_at_least_the_grace_period_is_flagged(
    hook: dict[str, Any], grace: int | None, flagged: bool
) -> None:
    pod = system_pod(**({"terminationGracePeriodSeconds": grace} if grace is not None else {}))
    pod["containers"][0]["lifecycle"] = {"preStop": hook}
    said = rule(plus(deployment("planted-drain", pod)), "prestop-within-grace")
    assert bool(said) == flagged, said
    assert all("planted-drain" in f.message and "terminationGracePeriodSeconds" in f.fix for f in said), said


# scale-up-enabled: an HPA whose scale-up is Disabled -----------------------------------------------------------------


def _hpa(behavior: dict[str, Any], low: int, high: int) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "planted-scaled", "namespace": "llm-data"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "planted-scaled"},
            "minReplicas": low,
            "maxReplicas": high,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
                }
            ],
            "behavior": behavior,
        },
    }


@pytest.mark.parametrize(
    ("behavior", "low", "high", "flagged"),
    [
        ({"scaleUp": {"selectPolicy": "Disabled"}}, 2, 4, True),
        ({"scaleUp": {"selectPolicy": "Max"}}, 2, 4, False),
        ({"scaleDown": {"selectPolicy": "Disabled"}}, 2, 4, False),
        ({"scaleUp": {"selectPolicy": "Disabled"}}, 2, 2, False),
    ],
)
def test_an_hpa_whose_scale_up_is_disabled_is_flagged(
    behavior: dict[str, Any], low: int, high: int, flagged: bool
) -> None:
    planted = plus(deployment("planted-scaled", system_pod(), replicas=low), _hpa(behavior, low, high))
    said = rule(planted, "scale-up-enabled")
    assert bool(said) == flagged, said
    assert all("planted-scaled" in f.message and "selectPolicy" in f.fix for f in said), said
