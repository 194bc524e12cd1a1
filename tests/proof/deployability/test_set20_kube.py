"""The rules set 20's Kubernetes misses led to (written after its blind run, so not held out), each planted in a
shipped render beside its correct twin: a pod selected by two PodDisruptionBudgets (one-disruption-budget), a bare
long-running Pod (pod-owned), a Service's own cluster IP outside the service CIDR (cluster-ip-in-range), and an IRSA
pod whose egress reaches only the VPC, which has no STS endpoint (egress-allowed)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated
from tests.proof.deployability.test_set3_invariants import (
    DNS_RULE,
    _aws,
    _egress_policy,
    _https_to,
    _subnet,
    plus,
    rule,
    system_pod,
)
from tokenplane.proof.render import RenderedResource

CLUSTER = "aws:eks/cluster:Cluster"

# one-disruption-budget: a pod under two budgets cannot be evicted ---------------------------------------------------


def _budget(selector: dict[str, Any], namespace: str = "llm-gateway") -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "gateway-namespace", "namespace": namespace},
        "spec": {"maxUnavailable": 1, "selector": selector},
    }


@pytest.mark.parametrize(
    ("budget", "flagged"),
    [
        (_budget({"matchLabels": {"app.kubernetes.io/part-of": "tokenplane"}}), {"ai-gateway", "model-gateway"}),
        (_budget({}), {"ai-gateway", "model-gateway"}),  # policy/v1: an empty selector selects every pod there
        (_budget({"matchLabels": {"app.kubernetes.io/name": "ai-gateway"}}), {"ai-gateway"}),
        (_budget({"matchLabels": {"app.kubernetes.io/name": "status-page"}}), set()),
        (_budget({"matchLabels": {"app.kubernetes.io/part-of": "tokenplane"}}, namespace="llm-serving"), {"vllm-chat"}),
        (_budget({"matchLabels": {"app.kubernetes.io/part-of": "tokenplane"}}, namespace="default"), set()),
    ],
)
def test_a_pod_selected_by_two_disruption_budgets_cannot_be_evicted(budget: dict[str, Any], flagged: set[str]) -> None:
    found = rule(plus(budget), "one-disruption-budget")
    named = {f.message.split("/", 1)[1].split("'s pods", 1)[0] for f in found}
    assert named == flagged, found
    for f in found:
        assert "gateway-namespace" in f.message and "more than one PodDisruptionBudget" in f.message, f
        assert "spec.selector" in f.fix, f


def test_the_shipped_budgets_each_cover_their_own_pods() -> None:
    assert not rule(plus(), "one-disruption-budget")


# pod-owned: a long-running Pod no controller recreates --------------------------------------------------------------


def _bare_pod(**extra: Any) -> dict[str, Any]:
    meta = {"name": "status-page", "namespace": "llm-gateway", "labels": {"app.kubernetes.io/name": "status-page"}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": system_pod(**extra)}


@pytest.mark.parametrize(
    ("extra", "flagged"),
    [
        ({}, True),
        ({"restartPolicy": "Always"}, True),
        ({"restartPolicy": "Never"}, False),
        ({"restartPolicy": "OnFailure"}, False),
    ],
)
def test_a_long_running_bare_pod_is_lost_at_the_first_drain(extra: dict[str, Any], flagged: bool) -> None:
    found = rule(plus(_bare_pod(**extra)), "pod-owned")
    assert bool(found) == flagged, found
    for f in found:
        assert "Pod llm-gateway/status-page has restartPolicy Always" in f.message, f
        assert "Deployment" in f.fix, f


# cluster-ip-in-range: a Service's own cluster IP lies in the service CIDR -------------------------------------------


def _service(**spec: Any) -> dict[str, Any]:
    ports = [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "embedder", "namespace": "llm-serving"},
        "spec": {"selector": {"app.kubernetes.io/name": "embedder"}, "ports": ports, **spec},
    }


def _service_cidr(cidr: str) -> Any:
    def change(r: RenderedResource) -> RenderedResource:
        if r.type != CLUSTER:
            return r
        return dataclasses.replace(r, inputs={**r.inputs, "kubernetesNetworkConfig": {"serviceIpv4Cidr": cidr}})

    return change


@pytest.mark.parametrize(
    ("spec", "cidr", "outside"),
    [
        # minimal's VPC is 10.0.0.0/16, so with no serviceIpv4Cidr EKS takes 172.20.0.0/16
        ({"clusterIP": "10.100.0.50"}, None, "172.20.0.0/16"),
        ({"clusterIP": "172.20.200.50"}, None, None),
        ({"clusterIP": "None"}, None, None),
        ({"clusterIP": ""}, None, None),
        ({"clusterIP": "10.100.0.50", "clusterIPs": ["10.100.0.50"]}, None, "172.20.0.0/16"),
        ({"clusterIP": "10.100.0.50"}, "10.100.0.0/16", None),
        ({"clusterIP": "172.20.200.50"}, "10.100.0.0/16", "10.100.0.0/16"),
    ],
)
def test_a_services_own_cluster_ip_lies_in_the_service_cidr(
    spec: dict[str, Any], cidr: str | None, outside: str | None
) -> None:
    found = rule(plus(_service(**spec), change=_service_cidr(cidr) if cidr else None), "cluster-ip-in-range")
    assert len(found) == (1 if outside else 0), found
    for f in found:
        assert "Service llm-serving/embedder sets spec.clusterIP" in f.message and outside in f.fix, f


# egress-allowed: egress only to the VPC reaches AWS only through interface endpoints ---------------------------------


def _endpoint(service: str, kind: str = "Interface") -> RenderedResource:
    inputs = {
        "vpcId": _subnet("x", "10.0.0.0/24").inputs["vpcId"],
        "serviceName": f"com.amazonaws.us-east-1.{service}",
        "vpcEndpointType": kind,
        **({"privateDnsEnabled": True} if kind == "Interface" else {}),
    }
    return _aws("aws:ec2/vpcEndpoint:VpcEndpoint", f"planted-{service}-{kind.lower()}", inputs)


@pytest.mark.parametrize(
    ("endpoints", "lacking"),
    [
        ([], "sts"),
        ([_endpoint("s3", "Gateway")], "sts"),  # a gateway endpoint's traffic still goes to public S3 addresses
        ([_endpoint("sts")], None),
    ],
)
def test_an_irsa_pod_whose_egress_reaches_only_the_vpc_needs_an_sts_endpoint(
    endpoints: list[RenderedResource], lacking: str | None
) -> None:
    policy = _egress_policy("llm-data", DNS_RULE, _https_to("10.0.0.0/16"))
    found = rule(mutated(plus(policy), lambda r: r, extra=endpoints), "egress-allowed")
    clickhouse = [f for f in found if "clickhouse (llm-data)" in f.message]
    assert bool(clickhouse) == bool(lacking), found
    for f in clickhouse:
        assert f"no interface endpoint for {lacking}" in f.message and "privateDnsEnabled" in f.fix, f
