"""The rules set 9's misses led to (written after its blind run, so not held out), each planted in a shipped render
beside its correct twin: Kubernetes objects on Pulumi's default provider (cluster-provider), an EBS class's IOPS
and throughput for the claim's size (storage-class-exists), and annotations on an object their controller never
reads them from (annotation-placed)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.proof.deployability.conftest import dev_with, rendered, spec
from tests.proof.deployability.test_flows import edit
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import annotation_placement, kube_providers, storage_classes
from tokenplane.proof.deployability.assumptions import Assumptions
from tokenplane.proof.render import RenderedResource, RenderResult, kubernetes_manifest


def messages(result: RenderResult, rule: str, assume: Assumptions | None = None) -> list[str]:
    return [f.message for f in deploy.run(spec("dev"), result, assume) if f.rule == rule]


@pytest.mark.parametrize("stack", ["dev", "minimal", "byteion"])
def test_the_shipped_stacks_break_none_of_these_rules(stack: str) -> None:
    graph = deploy.Graph(spec(stack), rendered(stack))
    rules = (kube_providers.check, annotation_placement.check, storage_classes.check)
    assert [f.message for check in rules for f in check(graph)] == []


def _provider(provider: str | None) -> Any:
    def apply(r: RenderedResource) -> RenderedResource:
        if r.is_kubernetes_object and kubernetes_manifest(r)["metadata"]["name"] == "model-gateway":
            return dataclasses.replace(r, provider=provider)
        return r

    return apply


@pytest.mark.parametrize(
    ("provider", "found"),
    [
        (None, True),  # the mocks record no provider for a resource on the default one
        ("urn:pulumi:dev::tokenplane::pulumi:providers:kubernetes::default_4_23_0", True),
        ("urn:pulumi:dev::tokenplane::pulumi:providers:kubernetes::dev-local-k8s", False),
    ],
)
def test_an_object_on_the_default_kubernetes_provider_is_found(provider: str | None, found: bool) -> None:
    result = dev_with(_provider(provider))
    said = messages(result, kube_providers.RULE)
    assert bool(said) == found and all("model-gateway" in m and "kubeconfig" in m for m in said), said
    if found:  # deploying onto an existing cluster, the default provider may be meant
        assert messages(result, kube_providers.RULE, Assumptions(cluster=True)) == []


def test_a_program_that_creates_no_cluster_may_use_the_default_provider() -> None:
    result = dev_with(_provider(None), lambda r: None if r.type == kube_providers.EKS_CLUSTER else r)
    assert list(kube_providers.check(deploy.Graph(spec("dev"), result))) == []


def _class(**parameters: str) -> Any:
    return edit("StorageClass", "gp3-encrypted", lambda inputs: inputs["parameters"].update(parameters))


def _claim_size(size: str) -> Any:
    def apply(inputs: dict[str, Any]) -> None:
        inputs["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] = size

    return edit("StatefulSet", "qdrant", apply)


@pytest.mark.parametrize(
    ("parameters", "size", "said"),
    [
        ({"iops": "16000"}, "20Gi", "at most 500 per GiB (10,000 for 20 GiB)"),
        ({"iops": "6000"}, "20Gi", None),
        ({"iops": "2000"}, "20Gi", "3,000-80,000 IOPS"),
        ({"iops": "3000"}, "1Gi", None),  # the baseline is provisioned at any size
        ({"iops": "3000", "throughput": "1000"}, "100Gi", "at most 0.25 MiB/s per IOPS (750)"),
        ({"iops": "4000", "throughput": "1000"}, "100Gi", None),
        ({"throughput": "125"}, "1Gi", None),
        ({"type": "io1", "iops": "1000"}, "10Gi", "at most 50 per GiB"),
        ({"type": "io1", "iops": "500"}, "10Gi", None),
    ],
)
def test_an_ebs_class_asking_more_iops_or_throughput_than_the_claims_size_allows_is_found(
    parameters: dict[str, str], size: str, said: str | None
) -> None:
    found = messages(dev_with(_class(**parameters), _claim_size(size)), storage_classes.RULE)
    if said is None:
        assert found == []
    else:
        # qdrant's claim, and any other claim on the class that is as small (clickhouse's)
        assert any("qdrant" in m for m in found) and all(said in m for m in found), found


def _annotate(where: str, annotations: dict[str, str]) -> Any:
    def apply(inputs: dict[str, Any]) -> None:
        metadata = inputs["metadata"] if where == "object" else inputs["spec"]["template"]["metadata"]
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}

    return edit("Deployment", "model-gateway", apply)


SCRAPE = {"prometheus.io/path": "/stats", "prometheus.io/scheme": "https"}  # none on the shipped pod template


def test_scrape_annotations_on_the_deployment_not_its_pods_are_found() -> None:
    found = messages(dev_with(_annotate("object", SCRAPE)), annotation_placement.RULE)
    assert len(found) == 2 and all("model-gateway" in m and "metadata.annotations" in m for m in found), found
    # On the pod template too, where the pod scrape job reads them: the Deployment's copy is only redundant.
    both = dev_with(_annotate("object", SCRAPE), _annotate("template", SCRAPE))
    assert messages(both, annotation_placement.RULE) == []


def test_an_irsa_role_annotation_on_the_pods_not_their_service_account_is_found() -> None:
    role = {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/model-gateway"}
    [found] = messages(dev_with(_annotate("template", role)), annotation_placement.RULE)
    assert "ServiceAccount" in found and "model-gateway" in found
