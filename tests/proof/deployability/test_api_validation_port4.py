"""The fourth port of Kubernetes create-time validation into api-validation: matchLabelKeys and mismatchLabelKeys
(held-out set 39's prompt_server_spread_match_label_keys_in_selector and its siblings), resource names with a
domain, an image with surrounding whitespace, ephemeralContainers on create. Each refused object is found with the
API server's own text, its correct twin is clean, and a field the render leaves out is never judged."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import api_validation
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
NAME = "planted-port4"
TYPES = {
    "Deployment": "kubernetes:apps/v1:Deployment",
    "StatefulSet": "kubernetes:apps/v1:StatefulSet",
    "Job": "kubernetes:batch/v1:Job",
    "Pod": "kubernetes:core/v1:Pod",
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
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_a_value_unknown_or_absent_is_not_judged(about: str, resource: RenderedResource) -> None:
    assert _messages(resource) == []
