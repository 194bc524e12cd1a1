"""The Kubernetes rules set 16's misses led to (written after its blind run, so not held out), each planted in the
shipped minimal render beside its correct twin: an HPA behavior the API server refuses (api-validation), a required
pod affinity no pod of the namespaces it names satisfies (affinity-satisfiable), a Service of another namespace
named by its short name (service-short-name); and the set's false positive, kube-state-metrics' families
(metrics-exported)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.proof.deployability.conftest import findings, mutated, rendered, spec
from tests.proof.deployability.test_metrics_exported import _custom
from tests.proof.deployability.test_set3_invariants import STACK, deployment, plus, system_pod
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import pod_affinity, short_names, workload_validation
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.scrape import samples
from tokenplane.proof.render import RenderResult

STORE = "planted-store"  # a workload of llm-data and its Service
CLIENT = "planted-client"  # a workload that places itself beside it, or calls it


def _run(check: Any, result: RenderResult) -> list[Finding]:
    return list(check(deploy.Graph(spec(STACK), result)))


# api-validation: an HPA's scaling behavior -----------------------------------------------------------------------------


def _hpa(rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "planted-hpa", "namespace": "llm-data"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": STORE},
            "minReplicas": 1,
            "maxReplicas": 3,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
                }
            ],
            "behavior": {"scaleDown": rules},
        },
    }


ONE_POD = {"type": "Pods", "value": 1}


@pytest.mark.parametrize(
    ("rules", "refused"),
    [
        ({"policies": [{**ONE_POD, "periodSeconds": 3600}]}, "policies[0].periodSeconds 3600"),
        ({"policies": [{**ONE_POD, "periodSeconds": 1800}]}, None),
        ({"policies": [{**ONE_POD, "periodSeconds": 0}]}, "policies[0].periodSeconds 0"),
        ({"policies": [{"type": "Pods", "value": 0, "periodSeconds": 60}]}, "policies[0].value 0"),
        ({"policies": [{"type": "Replicas", "value": 1, "periodSeconds": 60}]}, "policies[0].type 'Replicas'"),
        ({"stabilizationWindowSeconds": 7200, "policies": [{**ONE_POD, "periodSeconds": 60}]}, "Window"),
        ({"stabilizationWindowSeconds": 3600, "policies": [{**ONE_POD, "periodSeconds": 60}]}, None),
        ({"selectPolicy": "max", "policies": [{**ONE_POD, "periodSeconds": 60}]}, "selectPolicy 'max'"),
        ({"selectPolicy": "Disabled"}, None),
    ],
)
def test_an_hpa_scaling_rule_outside_the_api_servers_bounds_is_refused(
    rules: dict[str, Any], refused: str | None
) -> None:
    said = [f.message for f in _run(workload_validation.check, plus(_hpa(rules))) if "planted-hpa" in f.message]
    assert bool(said) == bool(refused), said
    assert all(refused and refused in m and "spec.behavior.scaleDown" in m for m in said), said


# affinity-satisfiable: a required pod affinity term some pod of its namespaces satisfies -------------------------------


def _store() -> dict[str, Any]:
    return deployment(STORE, system_pod())


def _client(term: dict[str, Any], namespace: str = "llm-gateway") -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app.kubernetes.io/name": STORE}}, **term}
    term.setdefault("topologyKey", "kubernetes.io/hostname")
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return deployment(CLIENT, system_pod(affinity=affinity), namespace=namespace)


BY_NAME = "kubernetes.io/metadata.name"


@pytest.mark.parametrize(
    ("term", "namespace", "pending"),
    [
        ({}, "llm-gateway", True),  # no namespaces: llm-gateway only, and the store runs in llm-data
        ({"namespaces": ["llm-data"]}, "llm-gateway", False),
        ({"namespaceSelector": {"matchLabels": {BY_NAME: "llm-data"}}}, "llm-gateway", False),
        ({}, "llm-data", False),  # the store's own namespace
        ({"labelSelector": {"matchLabels": {"app.kubernetes.io/name": "no-such-app"}}}, "llm-data", True),
        ({"labelSelector": {"matchLabels": {"app.kubernetes.io/name": CLIENT}}}, "llm-gateway", False),  # itself
        ({"namespaceSelector": {}}, "llm-gateway", False),  # every namespace: the cluster's own are unknown
        ({"namespaceSelector": {"matchLabels": {BY_NAME: "llm-gateway"}}}, "llm-data", True),
        # it may select kube-system, whose pods the graph does not know
        (
            {"namespaceSelector": {"matchExpressions": [{"key": BY_NAME, "operator": "NotIn", "values": ["x"]}]}},
            "llm-gateway",
            False,
        ),
    ],
)
def test_a_required_pod_affinity_nothing_in_its_namespaces_satisfies_leaves_the_pod_pending(
    term: dict[str, Any], namespace: str, pending: bool
) -> None:
    said = [f.message for f in _run(pod_affinity.check, plus(_store(), _client(term, namespace)))]
    assert bool(said) == pending, said
    for m in said:
        assert f"Deployment {namespace}/{CLIENT}" in m and "Pending" in m, m
        assert "podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]" in m, m


def test_the_pending_affinity_names_the_namespace_its_pods_run_in() -> None:
    (found,) = _run(pod_affinity.check, plus(_store(), _client({})))
    assert f"Deployment llm-gateway/{CLIENT}" in found.message and "looks in llm-gateway only" in found.message
    assert "list llm-data" in found.fix and "namespaces" in found.fix


# service-short-name: a Service of another namespace named by its short name --------------------------------------------


def _service(name: str = STORE, namespace: str = "llm-data") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"app.kubernetes.io/name": STORE}, "ports": [{"port": 6333}]},
    }


def _caller(namespace: str = "llm-gateway", command: list[str] | None = None, env: dict[str, str] | None = None) -> Any:
    wait = {
        "name": "wait",
        "image": "busybox:1.37.0",
        "command": command or ["sh", "-c", "true"],
        "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
    }
    return deployment(CLIENT, system_pod(initContainers=[wait]), namespace=namespace)


def _script(text: str) -> list[str]:
    return ["sh", "-c", text]


@pytest.mark.parametrize(
    ("caller", "extra", "unresolved"),
    [
        (_caller(command=_script(f"until wget -q -O- http://{STORE}:6333/readyz; do sleep 5; done")), [], True),
        (_caller(command=_script(f"until nc -z -w 2 {STORE} 6333; do sleep 5; done")), [], True),
        (_caller(command=_script(f"until nslookup {STORE}; do sleep 2; done")), [], True),
        (_caller(env={"STORE_URL": f"{STORE}:6333"}), [], True),
        (_caller(env={"STORE_HOST": STORE}), [], True),
        # the twins: named in full, called from its own namespace, a same-named Service beside the caller
        (
            _caller(command=_script(f"until wget -q -O- http://{STORE}.llm-data.svc:6333/readyz; do sleep 5; done")),
            [],
            False,
        ),
        (_caller("llm-data", command=_script(f"until nc -z {STORE} 6333; do sleep 5; done")), [], False),
        (
            _caller(command=_script(f"until nc -z {STORE} 6333; do sleep 5; done")),
            [_service(namespace="llm-gateway")],
            False,
        ),
        # not host positions: a path, a word in a message, an env value that is no address
        (_caller(command=_script(f"ls /data/{STORE}:1 && echo waiting for {STORE}")), [], False),
        (_caller(env={"STORE_DIR": f"/var/lib/{STORE}", "APP": STORE}), [], False),
    ],
)
def test_a_short_service_name_of_another_namespace_does_not_resolve(
    caller: dict[str, Any], extra: list[dict[str, Any]], unresolved: bool
) -> None:
    said = [f for f in _run(short_names.check, plus(_service(), caller, *extra)) if CLIENT in f.message]
    assert bool(said) == unresolved, [f.message for f in said]
    for found in said:
        assert f"host '{STORE}'" in found.message and "init container wait" in found.message, found.message
        assert f"{STORE}.llm-data.svc" in found.fix, found.fix


# metrics-exported: kube-state-metrics' families -----------------------------------------------------------------------

DOCUMENTED = Path(__file__).with_name("kube_state_metrics_v2.14.0.txt")


def test_every_family_kube_state_metrics_documents_is_known() -> None:
    documented = {line for line in DOCUMENTED.read_text().split() if line.startswith("kube_")}
    known = set(samples("kube-state-metrics"))
    assert len(documented) > 300 and not documented - known, sorted(documented - known)


@pytest.mark.parametrize(
    ("name", "flagged"),
    [("kube_deployment_status_replicas_available", False), ("kube_deployment_status_replicas_availabel", True)],
)
def test_an_alert_on_a_kube_state_metrics_family_is_judged_by_the_documented_names(name: str, flagged: bool) -> None:
    rule = _custom(
        "embedder-availability",
        "PrometheusRule",
        {
            "groups": [
                {"name": "e", "rules": [{"alert": "EmbedderDown", "expr": f'{name}{{namespace="llm-gateway"}} < 1'}]}
            ]
        },
    )
    said = [f.message for f in findings("dev", mutated(rendered("dev"), lambda r: r, extra=[rule]), "metrics-exported")]
    assert bool([m for m in said if name in m]) == flagged, said
