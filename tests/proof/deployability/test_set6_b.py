"""Issue 27, sixth held-out set (written with the set in view): two invariants its misses showed, planted into
minimal's rendered graph.

- flow-allowed: a NetworkPolicy's ports are the pod's ports, matched after a Service has translated its ``port``
  to the ``targetPort``; a rule written for the Service's port admits nothing;
- metrics-exported: a ServiceMonitor discovers Services only in its ``namespaceSelector``'s namespaces (its own
  without one), so one whose Service lies elsewhere, or that matches no Service, gives Prometheus no target.

None of the planted defects is a set-6 program; each has a correct twin that differs only in the fix.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.proof.deployability.test_set3_invariants import deployment, plus, rule
from tokenplane.proof.render import RenderedResource

FLOW = "flow-allowed"
METRICS = "metrics-exported"


# flow-allowed: NetworkPolicy ports are pod ports ----------------------------------------------------------------


def _policy_port(name: str, port: int | str) -> Any:
    """Rewrite the one port of minimal's NetworkPolicy ``name``."""

    def change(r: RenderedResource) -> RenderedResource:
        if r.inputs.get("kind") == "NetworkPolicy" and r.inputs["metadata"]["name"] == name:
            inputs = copy.deepcopy(r.inputs)
            inputs["spec"]["ingress"][0]["ports"] = [{"protocol": "TCP", "port": port}]
            return RenderedResource(**{**r.__dict__, "inputs": inputs})
        return r

    return change


def _docs(policy_port: int | str, *, peer: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """A docs site in llm-data listening on 3000 ("web") behind a Service on 443, and the policy meant for it."""
    labels = {"app.kubernetes.io/name": "docs"}
    container = {
        "name": "docs",
        "image": "nginx:1.27",
        "ports": [{"name": "web", "containerPort": 3000, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "64Mi"}},
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "docs", "namespace": "llm-data", "labels": labels},
        "spec": {"selector": labels, "ports": [{"name": "https", "port": 443, "targetPort": "web"}]},
    }
    source = peer or {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "llm-batch"}}}
    policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "docs-ingress", "namespace": "llm-data"},
        "spec": {
            "podSelector": {"matchLabels": labels},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [source], "ports": [{"protocol": "TCP", "port": policy_port}]}],
        },
    }
    return [deployment("docs", {"containers": [container]}, replicas=1), service, policy]


def _port_findings(result: Any) -> list[Any]:
    return [f for f in rule(result, FLOW) if "a policy's ports are the pod's ports" in f.message]


def test_minimal_declares_no_policy_on_a_service_port() -> None:
    assert _port_findings(plus()) == []


def test_the_ai_gateways_policy_on_its_services_port_80_admits_nothing() -> None:
    # The AI gateway's Service listens on 80 and sends to the pod's "http" (8080): a rule for 80 is never matched.
    found = _port_findings(plus(change=_policy_port("ai-gateway-ingress", 80)))
    assert len(found) == 1, found
    message = found[0].message
    assert "NetworkPolicy llm-gateway/ai-gateway-ingress admits anyone on TCP 80" in message
    assert "Service llm-gateway/ai-gateway" in message and "ai-gateway (llm-gateway):8080" in message
    assert "admit port 8080 (or the named port 'http')" in found[0].fix


def test_a_policy_on_a_services_port_in_front_of_a_named_target_port_blocks_its_peers() -> None:
    found = _port_findings(plus(*_docs(443)))
    assert len(found) == 1, found
    assert "NetworkPolicy llm-data/docs-ingress admits namespaces [kubernetes.io/metadata.name=llm-batch]" in (
        found[0].message
    )
    assert "docs.llm-data.svc:443 -> docs (llm-data):3000 is blocked" in found[0].message


def test_a_pod_peer_behind_a_service_port_is_blocked_too() -> None:
    # The model gateway's pods as the peer: a real source the graph has, not a stand-in.
    peer = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "llm-gateway"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "model-gateway"}},
    }
    found = _port_findings(plus(*_docs(443, peer=peer)))
    assert len(found) == 1 and "model-gateway (llm-gateway) -> docs.llm-data.svc:443" in found[0].message, found


@pytest.mark.parametrize("port", [3000, "web"], ids=["container-port", "named-port"])
def test_a_policy_on_the_pods_port_is_clean(port: int | str) -> None:
    assert _port_findings(plus(*_docs(port))) == []


def test_a_pod_that_also_listens_on_the_services_port_is_not_flagged() -> None:
    objects = _docs(443)
    container = objects[0]["spec"]["template"]["spec"]["containers"][0]
    container["ports"].append({"name": "tls", "containerPort": 443, "protocol": "TCP"})
    assert _port_findings(plus(*objects)) == []


# metrics-exported: a ServiceMonitor reads only its namespaceSelector's namespaces --------------------------------


def _monitor(namespace: str, selector: dict[str, str], port: str = "http", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "model-gateway", "namespace": namespace},
        "spec": {"selector": {"matchLabels": selector}, "endpoints": [{"port": port}], **spec},
    }


MODEL_GATEWAY = {"app.kubernetes.io/name": "model-gateway"}  # the labels of minimal's model-gateway Service


def _idle(result: Any) -> list[Any]:
    return [f for f in rule(result, METRICS) if "gives Prometheus no target" in f.message]


def test_minimal_has_no_idle_monitor() -> None:
    assert _idle(plus()) == []


def test_a_service_monitor_in_monitoring_without_namespace_selector_misses_the_gateways_service() -> None:
    found = _idle(plus(_monitor("monitoring", MODEL_GATEWAY)))
    assert len(found) == 1, found
    assert "matches Service llm-gateway/model-gateway" in found[0].message
    assert "no namespaceSelector, so it discovers targets only in its own namespace monitoring" in found[0].message
    assert "matchNames: [monitoring, llm-gateway]" in found[0].fix


def test_a_namespace_selector_that_leaves_out_the_services_namespace_is_caught() -> None:
    found = _idle(plus(_monitor("monitoring", MODEL_GATEWAY, namespaceSelector={"matchNames": ["llm-serving"]})))
    assert len(found) == 1 and "its namespaceSelector reads only llm-serving" in found[0].message, found


def test_a_service_monitor_whose_selector_matches_no_service_is_caught() -> None:
    found = _idle(plus(_monitor("llm-gateway", {"app.kubernetes.io/name": "model-gatewey"})))
    assert len(found) == 1 and "matches no Service in llm-gateway" in found[0].message, found


def test_a_service_monitor_on_a_port_name_its_service_lacks_is_caught_without_a_query() -> None:
    found = _idle(plus(_monitor("llm-gateway", MODEL_GATEWAY, port="metrics")))
    assert len(found) == 1 and "which has no port of that name" in found[0].message, found


@pytest.mark.parametrize(
    "monitor",
    [
        _monitor("monitoring", MODEL_GATEWAY, namespaceSelector={"matchNames": ["llm-gateway"]}),
        _monitor("monitoring", MODEL_GATEWAY, namespaceSelector={"any": True}),
        _monitor("llm-gateway", MODEL_GATEWAY),
    ],
    ids=["match-names", "any", "own-namespace"],
)
def test_a_service_monitor_that_reads_the_services_namespace_is_clean(monitor: dict[str, Any]) -> None:
    assert _idle(plus(monitor)) == []


def test_a_selector_only_a_chart_could_match_is_not_flagged() -> None:
    # monitoring holds kube-prometheus-stack: its Services are not in the graph, so "matches nothing" is unknown.
    assert _idle(plus(_monitor("monitoring", {"app.kubernetes.io/name": "grafana"}))) == []
