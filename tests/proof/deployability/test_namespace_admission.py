"""namespace-admits: a namespace's LimitRange and ResourceQuota, planted beside the shipped workloads, against the
pods they would refuse: a defaulted limit under a request, a minimum and a maximum per container, a resource the
quota tracks and a container leaves unset, and totals past the quota at the autoscaler's maximum. Each beside the
twin admission accepts."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import namespace_admission
from tokenplane.proof.deployability.k8s_syntax import parse_quantity
from tokenplane.proof.render import RenderedResource, kubernetes_manifest

NAMESPACE = "llm-gateway"


def _object(kind: str, name: str, spec_: dict[str, Any]) -> RenderedResource:
    like = next(r for r in rendered("dev").resources if r.type == "kubernetes:core/v1:ConfigMap")
    manifest = {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec_}
    return dataclasses.replace(
        like,
        urn=like.urn.rsplit("::", 1)[0].replace("ConfigMap", kind) + f"::planted-{name}",
        type=f"kubernetes:core/v1:{kind}",
        name=f"planted-{name}",
        inputs=manifest,
    )


def found(*planted: RenderedResource) -> list[str]:
    result = mutated(rendered("dev"), lambda r: r, extra=list(planted))
    return [f.message for f in namespace_admission.check(deploy.Graph(spec("dev"), result))]


def _gateway_pods() -> list[dict[str, Any]]:
    out = []
    for r in rendered("dev").resources:
        if r.is_kubernetes_object:
            manifest = kubernetes_manifest(r)
            if manifest["kind"] == "Deployment" and manifest["metadata"]["namespace"] == NAMESPACE:
                out.append(manifest["spec"]["template"]["spec"])
    return out


def test_the_shipped_stacks_have_no_quota_or_limit_range_to_break() -> None:
    assert found() == []
    assert _gateway_pods(), "the dev stack has Deployments in llm-gateway to plant beside"


def _limit_range(**limits: dict[str, str]) -> RenderedResource:
    return _object("LimitRange", "defaults", {"limits": [{"type": "Container", **limits}]})


def _most_cpu() -> float:
    return max(
        float(parse_quantity(c["resources"]["requests"]["cpu"]) or 0)
        for pod in _gateway_pods()
        for c in pod["containers"]
    )


@pytest.mark.parametrize(
    ("limits", "said"),
    [
        ({"max": {"cpu": "100m"}}, "allows at most 0.1 cpu per container"),
        ({"min": {"memory": "64Gi"}}, "under the namespace's LimitRange minimum of 64Gi"),
        ({"max": {"cpu": "512"}}, None),
        ({"min": {"memory": "1Mi"}}, None),
    ],
)
def test_a_limit_range_refuses_containers_outside_its_bounds(
    limits: dict[str, dict[str, str]], said: str | None
) -> None:
    messages = found(_limit_range(**limits))
    assert (said is None and messages == []) or (messages and all(said in m for m in messages)), messages


def test_a_quota_tracking_a_resource_some_container_leaves_unset_refuses_its_pods() -> None:
    # The shipped gateways set cpu limits; stripped of them, a quota on limits.cpu refuses their pods.
    stripped = mutated(rendered("dev"), _without_cpu_limits)
    quota = _object("ResourceQuota", "compute", {"hard": {"limits.cpu": "1000"}})
    graph = deploy.Graph(spec("dev"), mutated(stripped, lambda r: r, extra=[quota]))
    messages = [f.message for f in namespace_admission.check(graph)]
    assert messages and all("must specify limits.cpu" in m for m in messages), messages
    defaults = _limit_range(default={"cpu": "1"}, defaultRequest={"cpu": "100m"})
    graph = deploy.Graph(spec("dev"), mutated(stripped, lambda r: r, extra=[quota, defaults]))
    assert [f.message for f in namespace_admission.check(graph) if "must specify" in f.message] == []


def test_a_quota_on_a_resource_other_than_cpu_and_memory_only_counts_it() -> None:
    # pods.go's validationSet: nothing sets ephemeral-storage limits, and the API server admits the pods all the same.
    assert found(_object("ResourceQuota", "compute", {"hard": {"limits.ephemeral-storage": "100Gi"}})) == []


def test_a_quota_under_the_workloads_at_their_maxima_is_exceeded() -> None:
    tight = _object("ResourceQuota", "compute", {"hard": {"requests.cpu": f"{_most_cpu():g}", "pods": "1"}})
    messages = found(tight)
    assert len(messages) == 2 and all("exceeded quota" in m for m in messages), messages
    assert found(_object("ResourceQuota", "compute", {"hard": {"requests.cpu": "1000", "pods": "1000"}})) == []


def test_a_scoped_quota_is_not_judged() -> None:
    scoped = _object("ResourceQuota", "compute", {"hard": {"pods": "1"}, "scopes": ["BestEffort"]})
    assert found(scoped) == []


def test_a_default_limit_under_a_containers_own_request_makes_an_invalid_pod() -> None:
    stripped = mutated(rendered("dev"), _without_cpu_limits)
    planted = _limit_range(default={"cpu": "10m"})
    messages = [
        f.message
        for f in namespace_admission.check(deploy.Graph(spec("dev"), mutated(stripped, lambda r: r, extra=[planted])))
    ]
    assert messages and all("must be less than or equal to cpu limit" in m for m in messages), messages


def _without_cpu_limits(r: RenderedResource) -> RenderedResource:
    if not r.is_kubernetes_object:
        return r
    manifest = kubernetes_manifest(r)
    if manifest["kind"] != "Deployment" or manifest["metadata"]["namespace"] != NAMESPACE:
        return r
    inputs = dict(r.inputs)
    template = dict(inputs["spec"]["template"])
    pod = dict(template["spec"])
    pod["containers"] = [
        {
            **c,
            "resources": {
                **c["resources"],
                "limits": {k: v for k, v in c["resources"].get("limits", {}).items() if k != "cpu"},
            },
        }
        for c in pod["containers"]
    ]
    inputs["spec"] = {**inputs["spec"], "template": {**template, "spec": pod}}
    return dataclasses.replace(r, inputs=inputs)
