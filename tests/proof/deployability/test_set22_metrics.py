"""The rules set 22's metrics and flow misses led to (written after its blind run, so not held out), each planted in
a shipped render beside its correct twin: a Service URL in a container's command is a flow (flow-allowed), a query's
label value no scraped TEI series carries (metrics-exported, now that TEI's families are known), and a scrape
annotation naming a port the pod does not declare (scrape-port)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.test_set3_invariants import deployment, plus, rule
from tokenplane.proof.deployability import scrape_ports

QDRANT = "http://qdrant.llm-data.svc.cluster.local:6333"
TEI = "ghcr.io/huggingface/text-embeddings-inference:cpu-1.5"
RESOURCES = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}}


def _curl(namespace: str, shell: bool) -> dict[str, Any]:
    url = f"{QDRANT}/collections/documents/snapshots?wait=true"
    command = ["sh", "-c", f"curl -fsS -X POST {url} && echo done"] if shell else ["curl", "-fsS", "-X", "POST", url]
    pod = {
        "containers": [{"name": "snap", "image": "curlimages/curl:8.11.1", "command": command, "resources": RESOURCES}]
    }
    return deployment("planted-snap", pod, namespace=namespace)


@pytest.mark.parametrize("shell", [False, True])
@pytest.mark.parametrize(("namespace", "refused"), [("llm-serving", True), ("llm-gateway", False)])
def test_a_service_url_in_a_command_is_a_flow_the_policies_must_allow(
    namespace: str, refused: bool, shell: bool
) -> None:
    said = [f for f in rule(plus(_curl(namespace, shell)), "flow-allowed") if "planted-snap" in f.message]
    assert bool(said) == refused, said
    assert all("qdrant" in f.message and "container snap's command" in f.message and "6333" in f.fix for f in said)


def _embedder(port: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    container = {
        "name": "embed",
        "image": TEI,
        "args": ["--model-id", "BAAI/bge-small-en-v1.5", "--port", "8080", "--prometheus-port", "9000"],
        "ports": [{"name": "http", "containerPort": 8080}, {"name": "metrics", "containerPort": 9000}],
        "resources": RESOURCES,
    }
    manifest = deployment("text-embedder", {"containers": [container]}, namespace="llm-serving")
    manifest["spec"]["template"]["metadata"]["annotations"] = {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": port,
    }
    return manifest


def _scaler(query: str) -> dict[str, Any]:
    trigger = {
        "type": "prometheus",
        "name": "embed-rps",
        "metadata": {
            "serverAddress": "http://kube-prometheus-stack-prometheus.monitoring.svc:9090",
            "query": query,
            "threshold": "20",
        },
    }
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "text-embedder", "namespace": "llm-serving"},
        "spec": {"scaleTargetRef": {"name": "text-embedder"}, "minReplicaCount": 2, "triggers": [trigger]},
    }


@pytest.mark.parametrize(
    ("query", "refused"),
    [
        ('sum(rate(te_request_count{namespace="serving", pod=~"text-embedder-.*"}[2m]))', 'namespace="serving"'),
        ('sum(rate(te_request_count{namespace="llm-serving", pod=~"text-embedder-.*"}[2m]))', None),
        ("histogram_quantile(0.9, sum by (le) (rate(te_request_duration_bucket[5m])))", None),
        ("sum(rate(te_request_count_total[2m]))", "no exporter"),
    ],
)
def test_a_tei_query_must_match_a_series_the_scrape_stores(query: str, refused: str | None) -> None:
    said = [
        f.message
        for f in rule(plus(_embedder("9000"), _scaler(query)), "metrics-exported")
        if "te_request" in f.message
    ]
    assert bool(said) == bool(refused) and all(refused and refused in m for m in said), said
    assert not any("no exporter" in m for m in said if refused != "no exporter"), said


@pytest.mark.parametrize(("port", "refused"), [("80", True), ("9000", False), ("8080", False)])
def test_a_scrape_annotation_names_a_declared_container_port(port: str, refused: bool) -> None:
    said = [f for f in rule(plus(_embedder(port)), scrape_ports.RULE) if "text-embedder" in f.message]
    assert bool(said) == refused, said
    for finding in said:
        assert "prometheus.io/port '80'" in finding.message and "8080, 9000" in finding.message
        assert "prometheus.io/port" in finding.fix and "8080, 9000" in finding.fix


def test_a_pod_that_declares_no_ports_is_not_judged() -> None:
    manifest = _embedder("80")
    del manifest["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert not [f for f in rule(plus(manifest), scrape_ports.RULE) if "text-embedder" in f.message]
