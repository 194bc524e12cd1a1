"""The rules set 12's misses led to (written after its blind run, so not held out), each planted in a shipped render
beside its correct twin: an ALB Ingress with instance targets on a Service a chart makes as ClusterIP
(target-exists, reading the chart's values for the Service's type), and a lifecycle rule on the model registry that
deletes or archives the weights the pools fetch (weights-kept), and an EKS add-on pinned to a version EKS does not
list for the cluster (version-supported)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec, with_inputs
from tests.proof.deployability.test_aws_join import _aws
from tests.proof.deployability.test_set3_invariants import plus, rule
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import versions, weights_kept
from tokenplane.proof.deployability.weights import fetched
from tokenplane.proof.render import RenderedResource, physical_id

GRAFANA = "kube-prometheus-stack-grafana"


def _ingress(service: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "planted-grafana", "namespace": "monitoring", "annotations": annotations},
        "spec": {"ingressClassName": "alb", "defaultBackend": {"service": {"name": service, "port": {"number": 80}}}},
    }


def _grafana_service(kind: str) -> Any:
    def change(r: RenderedResource) -> RenderedResource:
        if r.inputs.get("chart") != "kube-prometheus-stack":
            return r
        return with_inputs(
            r, lambda i: i.setdefault("values", {}).setdefault("grafana", {}).update(service={"type": kind})
        )

    return change


@pytest.mark.parametrize(
    ("annotations", "service_type", "refused"),
    [
        ({}, None, True),  # the chart's default: ClusterIP, and the controller's default: instance targets
        ({"alb.ingress.kubernetes.io/target-type": "instance"}, None, True),
        ({"alb.ingress.kubernetes.io/target-type": "ip"}, None, False),
        ({}, "NodePort", False),  # the values make the chart's Service a NodePort
    ],
)
def test_alb_instance_targets_on_a_charts_cluster_ip_service_are_refused(
    annotations: dict[str, str], service_type: str | None, refused: bool
) -> None:
    change = _grafana_service(service_type) if service_type else None
    said = [f.message for f in rule(plus(_ingress(GRAFANA, annotations), change=change), "target-exists")]
    assert bool(said) == refused and all(GRAFANA in m and "ClusterIP" in m for m in said), said


def test_a_backend_no_chart_makes_is_left_to_the_charts() -> None:
    """An unknown name in a namespace with charts: a chart there may make it (its Services are not all modelled)."""
    assert rule(plus(_ingress("made-by-some-chart", {})), "target-exists") == []


# weights-kept: a lifecycle rule on the registry that deletes or archives the weights the pools fetch ------------------

LIFECYCLE = "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"


def _registry() -> tuple[str, str]:
    """dev's registry bucket and the key prefix of one model's weights, as the pools' init containers fetch them."""
    _urn, _region, _ref, url = next(fetched(deploy.Graph(spec("dev"), rendered("dev"))))
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    return bucket, prefix


def _kept(rule: dict[str, Any]) -> list[str]:
    bucket, _ = _registry()
    lifecycle = _aws(LIFECYCLE, "planted-lifecycle", {"bucket": bucket, "rules": [{"id": "planted", **rule}]})
    result = mutated(rendered("dev"), lambda r: r, extra=[lifecycle])
    return [f.message for f in weights_kept.check(deploy.Graph(spec("dev"), result))]


EXPIRE = {"status": "Enabled", "expiration": {"days": 90.0}}
ARCHIVE = {"status": "Enabled", "transitions": [{"days": 30.0, "storageClass": "GLACIER"}]}


@pytest.mark.parametrize(
    ("rule", "harmed"),
    [
        ({**EXPIRE, "filter": {}}, "expires"),  # the whole bucket
        ({**EXPIRE, "filter": {"prefix": "models/"}}, "expires"),
        ({**EXPIRE, "filter": {"and": {"prefix": "models/", "objectSizeGreaterThan": 0.0}}}, None),  # not judged
        ({**EXPIRE, "filter": {"prefix": "logs/"}}, None),
        ({**EXPIRE, "filter": {"tag": {"key": "tier", "value": "scratch"}}}, None),  # the weights carry no tags
        ({**EXPIRE, "status": "Disabled", "filter": {}}, None),
        ({"status": "Enabled", "filter": {}, "noncurrentVersionExpiration": {"noncurrentDays": 30.0}}, None),
        ({"status": "Enabled", "filter": {}, "expiration": {"expiredObjectDeleteMarker": True}}, None),
        ({**ARCHIVE, "filter": {}}, "GLACIER"),
        ({**ARCHIVE, "transitions": [{"days": 30.0, "storageClass": "DEEP_ARCHIVE"}], "filter": {}}, "DEEP_ARCHIVE"),
        ({**ARCHIVE, "transitions": [{"days": 30.0, "storageClass": "GLACIER_IR"}], "filter": {}}, None),
        ({**ARCHIVE, "transitions": [{"days": 30.0, "storageClass": "STANDARD_IA"}], "filter": {}}, None),
    ],
)
def test_a_lifecycle_rule_that_deletes_or_archives_the_weights_is_found(
    rule: dict[str, Any], harmed: str | None
) -> None:
    said = _kept(rule)
    assert bool(said) == bool(harmed) and all(harmed and harmed in m and "planted" in m for m in said), said


def test_a_buckets_inline_lifecycle_rules_are_read_too() -> None:
    bucket, _ = _registry()

    def inline(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:s3/bucket:Bucket" or physical_id(r.type, r.name) != bucket:
            return r
        return with_inputs(r, lambda i: i.update(lifecycleRules=[{"enabled": True, "expiration": {"days": 30.0}}]))

    found = list(weights_kept.check(deploy.Graph(spec("dev"), mutated(rendered("dev"), inline))))
    assert [f.rule for f in found] == ["weights-kept"] and "after 30 days" in found[0].message


def test_the_shipped_stacks_keep_their_weights() -> None:
    for name in ("dev", "minimal", "byteion"):
        assert list(weights_kept.check(deploy.Graph(spec(name), rendered(name)))) == [], name


# version-supported: an EKS add-on pinned to a version EKS does not list for the cluster ------------------------------


def _addon_pinned(addon: str, version: str, kubernetes: str = "1.34") -> list[str]:
    def pin(r: RenderedResource) -> RenderedResource:
        if r.type == "aws:eks/cluster:Cluster":
            return with_inputs(r, lambda i: i.update(version=kubernetes))
        if r.type == "aws:eks/addon:Addon" and r.inputs.get("addonName") == addon:
            return with_inputs(r, lambda i: i.update(addonVersion=version))
        return r

    graph = deploy.Graph(spec("dev"), mutated(rendered("dev"), pin))
    return [f.message for f in versions.check(graph) if f"add-on {version}" in f.message or repr(version) in f.message]


@pytest.mark.parametrize(
    ("addon", "version", "refused"),
    [
        ("kube-proxy", "v1.33.5-eksbuild.2", "built for Kubernetes 1.33"),  # a minor behind the cluster's 1.34
        ("kube-proxy", "v1.35.0-eksbuild.1", "built for Kubernetes 1.35"),  # ahead of it
        ("kube-proxy", "v1.34.1-minimal-eksbuild.2", "self-managed"),  # the image's tag, not an add-on version
        ("coredns", "1.11.4-eksbuild.2", "not an add-on version"),  # no leading v
        ("vpc-cni", "v1.19.2", "not an add-on version"),  # no eksbuild
        ("kube-proxy", "v1.34.1-eksbuild.2", None),
        ("coredns", "v1.11.4-eksbuild.2", None),  # coredns' own release line: not tied to the minor
        ("metrics-server", "v0.7.2-eksbuild.1", None),
    ],
)
def test_an_eks_add_on_pinned_to_a_version_eks_does_not_list_is_refused(
    addon: str, version: str, refused: str | None
) -> None:
    said = _addon_pinned(addon, version)
    assert bool(said) == bool(refused) and all(refused and refused in m for m in said), said


def test_a_kube_proxy_behind_the_cluster_is_told_the_newest_of_its_minor() -> None:
    found = [f for f in versions.check(deploy.Graph(spec("dev"), mutated(rendered("dev"), _pin_kube_proxy))) if f.urn]
    assert any("v1.34.1-eksbuild.2" in f.fix for f in found), found


def _pin_kube_proxy(r: RenderedResource) -> RenderedResource:
    if r.type == "aws:eks/cluster:Cluster":
        return with_inputs(r, lambda i: i.update(version="1.34"))
    if r.inputs.get("addonName") == "kube-proxy":
        return with_inputs(r, lambda i: i.update(addonVersion="v1.31.13-eksbuild.2"))
    return r
