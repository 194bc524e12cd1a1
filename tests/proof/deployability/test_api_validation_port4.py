"""The fourth port of Kubernetes create-time validation into api-validation: matchLabelKeys and mismatchLabelKeys
(held-out set 39's prompt_server_spread_match_label_keys_in_selector and its siblings), resource names with a
domain, an image with surrounding whitespace, ephemeralContainers on create. Each refused object is found with the
API server's own text, its correct twin is clean, and a field the render leaves out is never judged."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, planted, planted_findings, rendered, spec
from tokenplane.proof.deployability import api_validation
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
NAME = "planted-port4"
TYPES = {
    "Deployment": "kubernetes:apps/v1:Deployment",
    "StatefulSet": "kubernetes:apps/v1:StatefulSet",
    "Job": "kubernetes:batch/v1:Job",
    "Pod": "kubernetes:core/v1:Pod",
    "ResourceQuota": "kubernetes:core/v1:ResourceQuota",
    "LimitRange": "kubernetes:core/v1:LimitRange",
    "ConfigMap": "kubernetes:core/v1:ConfigMap",
}
LABELS = {"app.kubernetes.io/name": NAME, "tier": "serving"}


def _pod(
    kind: str,
    pod: dict[str, Any],
    container: dict[str, Any] | None = None,
    labels: dict[str, str] | None = LABELS,
) -> RenderedResource:
    spec = {"containers": [{"name": "app", "image": "busybox:1.36", **(container or {})}], **pod}
    metadata: dict[str, Any] = {"name": NAME, "namespace": "llm-batch"}
    template: dict[str, Any] = {"metadata": {"labels": labels} if labels is not None else {}, "spec": spec}
    manifest: dict[str, Any]
    if kind == "Pod":
        manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {**metadata, **template["metadata"]}, "spec": spec}
    elif kind == "Job":
        spec["restartPolicy"] = "Never"
        manifest = {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": {"template": template}}
    else:
        body: dict[str, Any] = {"template": template, "selector": {"matchLabels": {"tier": "serving"}}}
        if kind == "StatefulSet":
            body["serviceName"] = NAME
        manifest = {"apiVersion": "apps/v1", "kind": kind, "metadata": metadata, "spec": body}
    return planted(STACK, TYPES[kind], NAME, manifest, region=REGION)


def _object(kind: str, body: dict[str, Any], **metadata: Any) -> RenderedResource:
    manifest = {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": NAME, "namespace": "llm-batch", **metadata},
        **body,
    }
    return planted(STACK, TYPES[kind], NAME, manifest, region=REGION)


def _env_resource(resource: str, divisor: Any = None) -> dict[str, Any]:
    ref: dict[str, Any] = {"resource": resource}
    if divisor is not None:
        ref["divisor"] = divisor
    return {"env": [{"name": "LIMIT", "valueFrom": {"resourceFieldRef": ref}}]}


def _downward_volume(ref: dict[str, Any]) -> dict[str, Any]:
    item = {"path": "cpu_limit", "resourceFieldRef": {"containerName": "app", **ref}}
    return {"volumes": [{"name": "podinfo", "downwardAPI": {"items": [item]}}]}


def _limits(item: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"limits": [item]}}


def _messages(resource: RenderedResource) -> list[str]:
    return [f.message for f in planted_findings(api_validation.check, resource)]


def _spread(selector: dict[str, Any] | None, keys: list[str]) -> dict[str, Any]:
    constraint: dict[str, Any] = {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "matchLabelKeys": keys,
    }
    if selector is not None:
        constraint["labelSelector"] = selector
    return {"topologySpreadConstraints": [constraint]}


def _affinity(term: dict[str, Any], *, preferred: bool = False, anti: bool = True) -> dict[str, Any]:
    term = {"topologyKey": "kubernetes.io/hostname", **term}
    terms: dict[str, Any] = (
        {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "podAffinityTerm": term}]}
        if preferred
        else {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    )
    return {"affinity": {"podAntiAffinity" if anti else "podAffinity": terms}}


def _resources(kind: str, name: str) -> dict[str, Any]:
    return {"resources": {kind: {name: "1"}, **({"limits": {name: "1"}} if kind == "requests" else {})}}


SPREAD = "spec.template.spec.topologySpreadConstraints[0]"
ANTI = "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
BOTH_SELECTOR = "exists in both matchLabelKeys and labelSelector"

# (refused resource, the server's text its finding carries, the correct twin)
CASES: list[tuple[str, RenderedResource, str, RenderedResource]] = [
    (
        "spread key in matchLabels (StatefulSet)",
        _pod("StatefulSet", _spread({"matchLabels": {"tier": "serving"}}, ["tier"])),
        f'{SPREAD}.matchLabelKeys[0]: Invalid value: "tier": {BOTH_SELECTOR}',
        _pod("StatefulSet", _spread({"matchLabels": {"tier": "serving"}}, ["pod-template-hash"])),
    ),
    (
        "spread key in matchExpressions (Deployment)",
        _pod(
            "Deployment",
            _spread(
                {"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In", "values": [NAME]}]},
                ["pod-template-hash", "app.kubernetes.io/name"],
            ),
        ),
        f'{SPREAD}.matchLabelKeys[1]: Invalid value: "app.kubernetes.io/name": {BOTH_SELECTOR}',
        _pod(
            "Deployment",
            _spread(
                {"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In", "values": [NAME]}]},
                ["pod-template-hash"],
            ),
        ),
    ),
    (
        "spread key in the selector (Pod)",
        _pod("Pod", _spread({"matchLabels": LABELS}, ["app.kubernetes.io/name"])),
        f'spec.topologySpreadConstraints[0].matchLabelKeys[0]: Invalid value: "app.kubernetes.io/name": '
        f"{BOTH_SELECTOR}",
        _pod("Pod", _spread({"matchLabels": {"tier": "serving"}}, ["app.kubernetes.io/name"])),
    ),
    (
        "spread key not a label name",
        _pod("Deployment", _spread({"matchLabels": {"tier": "serving"}}, ["pod template hash"])),
        "matchLabelKeys[0] 'pod template hash', which name part must consist of alphanumeric characters",
        _pod("Deployment", _spread({"matchLabels": {"tier": "serving"}}, ["pod-template-hash"])),
    ),
    (
        "affinity key in both matchLabelKeys and mismatchLabelKeys",
        _pod(
            "Deployment",
            _affinity(
                {"labelSelector": {"matchLabels": {"tier": "serving"}}, "matchLabelKeys": ["pod-template-hash"]}
                | {"mismatchLabelKeys": ["pod-template-hash"]}
            ),
        ),
        f'{ANTI}.matchLabelKeys[0]: Invalid value: "pod-template-hash": exists in both matchLabelKeys and '
        "mismatchLabelKeys",
        _pod(
            "Deployment",
            _affinity(
                {"labelSelector": {"matchLabels": {"tier": "serving"}}, "matchLabelKeys": ["pod-template-hash"]}
                | {"mismatchLabelKeys": ["app.kubernetes.io/name"]}
            ),
        ),
    ),
    (
        "preferred affinity key in the selector (Job)",
        _pod(
            "Job",
            _affinity(
                {"labelSelector": {"matchLabels": {"tier": "serving"}}, "matchLabelKeys": ["tier"]},
                preferred=True,
                anti=False,
            ),
        ),
        "spec.template.spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
        f'.podAffinityTerm[0]: Invalid value: "tier": {BOTH_SELECTOR}',
        _pod(
            "Job",
            _affinity(
                {"labelSelector": {"matchLabels": {"tier": "serving"}}, "mismatchLabelKeys": ["tier"]},
                preferred=True,
                anti=False,
            ),
        ),
    ),
    (
        "affinity mismatchLabelKeys not a label name",
        _pod("Pod", _affinity({"labelSelector": {"matchLabels": LABELS}, "mismatchLabelKeys": ["-tenant"]})),
        "mismatchLabelKeys[0] '-tenant', which name part must consist of alphanumeric characters",
        _pod("Pod", _affinity({"labelSelector": {"matchLabels": LABELS}, "mismatchLabelKeys": ["tenant"]})),
    ),
    (
        "a quota's requests. key as a container resource",
        _pod("Deployment", {}, _resources("limits", "requests.nvidia.com/gpu")),
        'resources.limits[requests.nvidia.com/gpu]: Invalid value: "requests.nvidia.com/gpu": doesn\'t follow '
        "extended resource name standard",
        _pod("Deployment", {}, _resources("limits", "nvidia.com/gpu")),
    ),
    (
        "a requests. key under requests (Job)",
        _pod("Job", {}, _resources("requests", "requests.vpc.amazonaws.com/efa")),
        "doesn't follow extended resource name standard",
        _pod("Job", {}, _resources("requests", "vpc.amazonaws.com/efa")),
    ),
    (
        "a resource name with a domain that is not a qualified name",
        _pod("Pod", {}, _resources("limits", "nvidia.com/gpu/mig")),
        "validateResourceName",
        _pod("Pod", {}, _resources("limits", "nvidia.com/mig-1g.10gb")),
    ),
    (
        "a Pod image with a trailing newline",
        _pod("Pod", {}, {"image": "busybox:1.36\n"}),
        'image: Invalid value: "busybox:1.36\n": must not have leading or trailing whitespace',
        _pod("Pod", {}, {"image": "busybox:1.36"}),
    ),
    (
        "a template image with a leading space",
        _pod("Deployment", {}, {"image": " public.ecr.aws/docker/library/python:3.12-slim"}),
        "must not have leading or trailing whitespace",
        _pod("Deployment", {}, {"image": "public.ecr.aws/docker/library/python:3.12-slim"}),
    ),
    (
        "ephemeralContainers on a Pod",
        _pod("Pod", {"ephemeralContainers": [{"name": "debug", "image": "busybox:1.36"}]}),
        "spec.ephemeralContainers: Forbidden: cannot be set on create",
        _pod("Pod", {"initContainers": [{"name": "debug", "image": "busybox:1.36"}]}),
    ),
    (
        "ephemeralContainers in a template",
        _pod("StatefulSet", {"ephemeralContainers": [{"name": "debug", "image": "busybox:1.36"}]}),
        "spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template",
        _pod("StatefulSet", {"ephemeralContainers": []}),
    ),
    (
        "resizePolicy RestartContainer in a Job",
        _pod("Job", {}, {"resizePolicy": [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]}),
        "resizePolicy: Invalid value: \"RestartContainer\": must be 'NotRequired' when `restartPolicy` is 'Never'",
        _pod("Job", {}, {"resizePolicy": [{"resourceName": "memory", "restartPolicy": "NotRequired"}]}),
    ),
    (
        "resizePolicy RestartContainer in a Never Pod",
        _pod(
            "Pod",
            {"restartPolicy": "Never"},
            {"resizePolicy": [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]},
        ),
        "must be 'NotRequired' when `restartPolicy` is 'Never'",
        _pod(
            "Pod",
            {"restartPolicy": "OnFailure"},
            {"resizePolicy": [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]},
        ),
    ),
    (
        "hostUsers false with hostNetwork",
        _pod("Deployment", {"hostNetwork": True, "securityContext": {"hostUsers": False}}),
        "spec.template.spec.hostNetwork: Forbidden: when `pod.Spec.HostUsers` is false",
        _pod("Deployment", {"hostNetwork": True, "securityContext": {"hostUsers": True}}),
    ),
    (
        "hostUsers false with hostPID",
        _pod("Pod", {"hostPID": True, "securityContext": {"hostUsers": False}}),
        "spec.HostPID: Forbidden: when `pod.Spec.HostUsers` is false",
        _pod("Pod", {"hostPID": False, "securityContext": {"hostUsers": False}}),
    ),
    (
        "resourceFieldRef resource without limits./requests.",
        _pod("Deployment", {}, _env_resource("cpu")),
        'valueFrom.resourceFieldRef.resource: Unsupported value: "cpu": supported values: "limits.cpu", '
        '"limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"',
        _pod("Deployment", {}, _env_resource("limits.cpu")),
    ),
    (
        "resourceFieldRef on an extended resource",
        _pod("Job", {}, _env_resource("limits.nvidia.com/gpu")),
        'Unsupported value: "limits.nvidia.com/gpu"',
        _pod("Job", {}, _env_resource("limits.hugepages-2Mi")),
    ),
    (
        "resourceFieldRef memory divisor",
        _pod("Pod", {}, _env_resource("requests.memory", "1m")),
        'valueFrom.resourceFieldRef.divisor: Invalid value: "requests.memory": only divisor\'s values 1, 1k, 1M, 1G, '
        "1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource",
        _pod("Pod", {}, _env_resource("requests.memory", "1Mi")),
    ),
    (
        "downwardAPI volume cpu divisor",
        _pod("StatefulSet", _downward_volume({"resource": "limits.cpu", "divisor": "100m"})),
        "only divisor's values 1m and 1 are supported with the cpu resource",
        _pod("StatefulSet", _downward_volume({"resource": "limits.cpu", "divisor": "1m"})),
    ),
    (
        "finalizer not a qualified name",
        _object("ConfigMap", {"data": {"a": "b"}}, finalizers=["tokenplane.io/keep until drained"]),
        "metadata.finalizers 'tokenplane.io/keep until drained'",
        _object("ConfigMap", {"data": {"a": "b"}}, finalizers=["tokenplane.io/keep-until-drained"]),
    ),
    (
        "orphan and foregroundDeletion",
        _object("ConfigMap", {"data": {"a": "b"}}, finalizers=["orphan", "foregroundDeletion"]),
        "finalizer orphan and foregroundDeletion cannot be both set",
        _object("ConfigMap", {"data": {"a": "b"}}, finalizers=["foregroundDeletion"]),
    ),
    (
        "quota key without a domain",
        _object("ResourceQuota", {"spec": {"hard": {"gpu": "8", "requests.cpu": "64"}}}),
        'spec.hard[gpu]: Invalid value: "gpu": must be a standard resource for quota',
        _object("ResourceQuota", {"spec": {"hard": {"requests.nvidia.com/gpu": "8", "requests.cpu": "64"}}}),
    ),
    (
        "quota key misspelt",
        _object("ResourceQuota", {"spec": {"hard": {"limits.memmory": "256Gi", "count/jobs.batch": "20"}}}),
        'spec.hard[limits.memmory]: Invalid value: "limits.memmory": must be a standard resource for quota',
        _object("ResourceQuota", {"spec": {"hard": {"limits.memory": "256Gi", "count/jobs.batch": "20"}}}),
    ),
    (
        "LimitRange type in lowercase",
        _object("LimitRange", _limits({"type": "container", "default": {"cpu": "1"}})),
        'spec.limits[0].type: Invalid value: "container": must be a standard limit type or fully qualified',
        _object("LimitRange", _limits({"type": "Container", "default": {"cpu": "1"}})),
    ),
    (
        "LimitRange resource not standard",
        _object("LimitRange", _limits({"type": "Container", "max": {"gpu": "1", "memory": "8Gi"}})),
        'spec.limits[0].max[gpu]: Invalid value: "gpu": must be a standard resource type or fully qualified',
        _object("LimitRange", _limits({"type": "Container", "max": {"nvidia.com/gpu": "1", "memory": "8Gi"}})),
    ),
]


@pytest.mark.parametrize(("about", "refused", "text"), [c[:3] for c in CASES], ids=[c[0] for c in CASES])
def test_an_object_the_api_server_refuses_is_found_with_its_text(
    about: str, refused: RenderedResource, text: str
) -> None:
    messages = _messages(refused)
    hits = [m for m in messages if text in m]
    assert hits, messages
    assert "the API server rejects it" in hits[0]


@pytest.mark.parametrize(("about", "twin"), [(c[0], c[3]) for c in CASES], ids=[c[0] for c in CASES])
def test_the_correct_twin_is_clean(about: str, twin: RenderedResource) -> None:
    assert _messages(twin) == []


@pytest.mark.parametrize(
    ("about", "resource"),
    [
        # The template's labels unknown until apply: the merge adds only the keys a pod carries.
        (
            "spread, the pod's labels unknown",
            _pod("Pod", _spread({"matchLabels": LABELS}, ["tier"]), labels=None),
        ),
        # No labelSelector: it may be one the render leaves out (Forbidden only where it is really absent).
        ("spread without a labelSelector", _pod("Deployment", _spread(None, ["pod-template-hash"]))),
        ("affinity without a labelSelector", _pod("Pod", _affinity({"matchLabelKeys": ["pod-template-hash"]}))),
        # A key the selector pins that the pod does not carry: the merge adds nothing.
        ("spread key the pod lacks", _pod("Deployment", _spread({"matchLabels": {"zone-group": "a"}}, ["zone-group"]))),
        # limits.<domain>/<name> passes the name check (IsExtendedResourceName): not this rule's to judge.
        ("limits. prefix", _pod("Deployment", {}, _resources("limits", "limits.nvidia.com/gpu"))),
        ("image unknown", _pod("Deployment", {}, {"image": None})),
        ("resourceFieldRef resource unknown", _pod("Deployment", {}, _env_resource(None))),  # type: ignore[arg-type]
        ("memory divisor 1Ki", _pod("Pod", {}, _env_resource("limits.memory", "1Ki"))),
        ("finalizers unknown", _object("ConfigMap", {"data": {"a": "b"}}, finalizers=None)),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_a_value_unknown_or_absent_is_not_judged(about: str, resource: RenderedResource) -> None:
    assert _messages(resource) == []


def _on_version(version: str, *extra: RenderedResource) -> list[str]:
    """api-validation's findings on the planted objects, the stack's EKS cluster set to ``version``."""

    def pin(resource: RenderedResource) -> RenderedResource:
        if resource.type == "aws:eks/cluster:Cluster":
            return dataclasses.replace(resource, inputs={**resource.inputs, "version": version})
        return resource

    graph = Graph(spec(STACK), mutated(rendered(STACK), pin, extra=list(extra)))
    return [f.message for f in api_validation.check(graph) if "planted" in f.urn]


def test_resize_and_host_users_are_judged_from_1_33_only() -> None:
    """On 1.32 InPlacePodVerticalScaling is alpha and UserNamespacesSupport off: the API server drops both fields."""
    job = _pod("Job", {}, {"resizePolicy": [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]})
    pod = _pod("Pod", {"hostIPC": True, "securityContext": {"hostUsers": False}})
    assert _on_version("1.32", job, pod) == []
    found = _on_version("1.33", job, pod)
    assert any("HostIPC: Forbidden" in m for m in found), found
    assert any("must be 'NotRequired'" in m for m in found), found
