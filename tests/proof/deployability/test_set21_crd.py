"""The rules set 21's misses led to (written after its blind run, so not held out), each planted in minimal's render
beside its correct twin: cert-manager's custom resources validated against the CRDs its pinned chart installs and
held to waiting for that release (crd-order), and a ResourceQuota on an extended resource that only counts it
(namespace-admits: "must specify" is for cpu and memory alone)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered
from tests.proof.deployability.test_set3_invariants import _resource, deployment, plus, rule, system_pod
from tokenplane.proof.deployability.graph import HELM_RELEASE
from tokenplane.proof.render import CHART_CRD_GROUPS, CRD_CHARTS, RenderedResource, validate_manifest

KUBERNETES = "1.31"

# crd-order with cert-manager's groups ----------------------------------------------------------------------------------


def test_every_group_a_chart_installs_maps_back_to_that_chart() -> None:
    assert CRD_CHARTS["cert-manager.io"] == "cert-manager" and CRD_CHARTS["keda.sh"] == "keda"
    assert {chart for chart, groups in CHART_CRD_GROUPS.items() for g in groups if CRD_CHARTS[g] != chart} == set()


@pytest.mark.parametrize(
    ("manifest", "refused"),
    [
        ({"kind": "ClusterIssuer", "metadata": {"name": "internal"}, "spec": {"selfSigned": {}}}, None),
        ({"kind": "ClusterIssuer", "metadata": {"name": "internal"}, "spec": {"selfSigend": {}}}, "selfSigend"),
        ({"kind": "Issuer", "metadata": {"name": "ca", "namespace": "llm-data"}, "spec": {"ca": {}}}, "secretName"),
        (
            {
                "kind": "Certificate",
                "metadata": {"name": "qdrant", "namespace": "llm-data"},
                "spec": {"secretName": "qdrant-tls", "dnsNames": ["qdrant"], "issuerRef": {"name": "internal"}},
            },
            None,
        ),
        (
            {
                "kind": "Certificate",
                "metadata": {"name": "qdrant", "namespace": "llm-data"},
                "spec": {"dnsNames": ["qdrant"], "issuerRef": {"name": "internal"}},
            },
            "secretName",
        ),
    ],
)
def test_cert_manager_resources_are_validated_against_the_pinned_charts_crds(
    manifest: dict[str, Any], refused: str | None
) -> None:
    said = validate_manifest({"apiVersion": "cert-manager.io/v1", **manifest}, KUBERNETES)
    assert (said is None) if refused is None else (said is not None and refused in said), said


def _cert_manager(*, after: bool) -> list[RenderedResource]:
    release = _resource({"apiVersion": "v1", "kind": "Release", "metadata": {"name": "cert-manager"}})
    release = dataclasses.replace(
        release,
        type=HELM_RELEASE,
        urn=release.urn.replace("kubernetes:v1:Release", HELM_RELEASE),
        inputs={"chart": "cert-manager", "version": "v1.16.2", "namespace": "cert-manager", "name": "cert-manager"},
        custom=True,
    )
    issuer = _resource(
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "ClusterIssuer",
            "metadata": {"name": "internal-selfsigned"},
            "spec": {"selfSigned": {}},
        }
    )
    return [release, dataclasses.replace(issuer, dependencies=[release.urn] if after else [])]


@pytest.mark.parametrize("after", [False, True], ids=["before-release", "after-release"])
def test_a_cluster_issuer_waits_for_the_cert_manager_release_that_installs_its_crd(after: bool) -> None:
    result = mutated(rendered("minimal"), lambda r: r, extra=_cert_manager(after=after))
    said = [f.message for f in rule(result, "crd-order") if "internal-selfsigned" in f.message]
    if after:
        assert said == []
    else:
        [message] = said
        assert "ClusterIssuer internal-selfsigned (cert-manager.io)" in message and "cert-manager release" in message


# namespace-admits: a quota on an extended resource only counts it -------------------------------------------------------


def _gpu_pod() -> dict[str, Any]:
    pod = system_pod(cpu="2", memory="8Gi")
    pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1"
    return pod


def _cpu_job() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "publish", "namespace": "planted"},
        "spec": {"template": {"spec": {**system_pod(), "restartPolicy": "Never"}}},
    }


def _gpu_quota(gpus: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpu-budget", "namespace": "planted"},
        "spec": {"hard": {"requests.nvidia.com/gpu": gpus}},
    }


# Two replicas of one GPU roll with a surge pod (maxSurge 25% rounds up to 1): a quota of 3 leaves it room.
@pytest.mark.parametrize(("gpus", "exceeded"), [("3", False), ("1", True)])
def test_a_gpu_quota_counts_gpus_and_never_asks_a_cpu_only_pod_to_specify_them(gpus: str, exceeded: bool) -> None:
    pool = deployment("vllm-chat", _gpu_pod(), replicas=2, namespace="planted")
    said = [f.message for f in rule(plus(pool, _cpu_job(), _gpu_quota(gpus)), "namespace-admits")]
    assert not any("must specify" in m for m in said), said
    if exceeded:
        [message] = said
        assert "ResourceQuota planted/gpu-budget allows 1 requests.nvidia.com/gpu" in message and "need 2" in message
    else:
        assert said == []


def test_a_quota_on_cpu_still_makes_every_container_specify_it() -> None:
    pool = deployment("vllm-chat", _gpu_pod(), replicas=1, namespace="planted")
    job = _cpu_job()
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"memory": "64Mi"}}
    quota = _gpu_quota("8")
    quota["spec"]["hard"]["requests.cpu"] = "100"
    [message] = rule(plus(pool, job, quota), "namespace-admits")
    assert "Job planted/publish" in message.message and "must specify requests.cpu" in message.message
