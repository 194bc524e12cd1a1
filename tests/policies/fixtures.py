"""Builders for policy tests: validation args, resource graphs, and the example stacks' rendered graphs.

Resource policies get hand-built ``ResourceValidationArgs``; stack policies get
either a small hand-built graph (``node`` and ``provider`` link parents,
providers and property dependencies as the engine does) or a rendered example
stack with one change made to a copy of it (``dropping``, ``editing``).
Renders take seconds, so each example stack is rendered once per session; the
cached ``RenderResult`` is shared and must never be mutated.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyProviderResource,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from tests.paths import REPO_ROOT
from tokenplane.load import load_spec
from tokenplane.proof.check import policy_resources
from tokenplane.proof.render import RenderedResource, RenderResult, render
from tokenplane.spec import PlatformSpec

ROOT = REPO_ROOT
STACKS = ROOT / "stacks"
OPTS = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])
KUBERNETES_TYPES = {
    "Deployment": "kubernetes:apps/v1:Deployment",
    "StatefulSet": "kubernetes:apps/v1:StatefulSet",
    "DaemonSet": "kubernetes:apps/v1:DaemonSet",
    "Job": "kubernetes:batch/v1:Job",
    "CronJob": "kubernetes:batch/v1:CronJob",
    "Pod": "kubernetes:core/v1:Pod",
    "ReplicaSet": "kubernetes:apps/v1:ReplicaSet",
    "ConfigMap": "kubernetes:core/v1:ConfigMap",
    "Service": "kubernetes:core/v1:Service",
    "Namespace": "kubernetes:core/v1:Namespace",
    "NetworkPolicy": "kubernetes:networking.k8s.io/v1:NetworkPolicy",
    "PodDisruptionBudget": "kubernetes:policy/v1:PodDisruptionBudget",
    "HorizontalPodAutoscaler": "kubernetes:autoscaling/v2:HorizontalPodAutoscaler",
    "ScaledObject": "kubernetes:keda.sh/v1alpha1:ScaledObject",
}


class Reported(NamedTuple):
    """One violation as a policy reported it."""

    message: str
    urn: str | None


def urn_of(resource_type: str, name: str, stack: str = "test") -> str:
    return f"urn:pulumi:{stack}::tokenplane::{resource_type}::{name}"


# --- resource policies ------------------------------------------------------------------------


def resource_args(
    resource_type: str,
    props: Mapping[str, Any],
    name: str = "x",
    config: Mapping[str, Any] | None = None,
    provider: PolicyProviderResource | None = None,
) -> ResourceValidationArgs:
    """What CrossGuard hands a resource policy for one resource."""
    return ResourceValidationArgs(resource_type, props, urn_of(resource_type, name), name, OPTS, provider, config)


def collect(policy: ResourceValidationPolicy | StackValidationPolicy, args: Any) -> list[str]:
    """Run one policy's validate and return the messages it reported, in order."""
    return [r.message for r in reports(policy, args)]


def reports(policy: ResourceValidationPolicy | StackValidationPolicy, args: Any) -> list[Reported]:
    found: list[Reported] = []

    def report(message: str, urn: str | None = None) -> None:
        found.append(Reported(message, urn))

    pending = policy.validate(args, report)
    if pending is not None:  # every policy in the pack is synchronous; an awaitable here would be a change
        raise TypeError(f"{policy.name}.validate returned {pending!r}; the tests expect synchronous policies")
    return found


def k8s(
    kind: str, name: str, namespace: str | None = None, *, labels: Mapping[str, str] | None = None, **body: Any
) -> dict[str, Any]:
    """A Kubernetes object's props: metadata plus whatever top-level fields (spec, data) are given."""
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = dict(labels)
    return {"kind": kind, "metadata": metadata, **body}


def container(
    name: str,
    image: str,
    *,
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    gpus: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A container with equal requests and limits; pass cpu=None or memory=None to leave one out."""
    resources: dict[str, str] = {}
    if cpu is not None:
        resources["cpu"] = cpu
    if memory is not None:
        resources["memory"] = memory
    if gpus is not None:
        resources["nvidia.com/gpu"] = gpus
    return {
        "name": name,
        "image": image,
        "resources": {"requests": dict(resources), "limits": dict(resources)},
        **extra,
    }


def workload(
    kind: str,
    name: str,
    namespace: str,
    containers: Sequence[Mapping[str, Any]],
    *,
    init_containers: Sequence[Mapping[str, Any]] = (),
    labels: Mapping[str, str] | None = None,
    pod: Mapping[str, Any] | None = None,
    replicas: int | None = None,
) -> dict[str, Any]:
    """A Deployment/StatefulSet/DaemonSet/Job's props, with its pod template."""
    pod_labels = {"app.kubernetes.io/name": name, **(labels or {})}
    pod_spec: dict[str, Any] = {"containers": list(containers), **(pod or {})}
    if init_containers:
        pod_spec["initContainers"] = list(init_containers)
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
        "template": {"metadata": {"labels": pod_labels}, "spec": pod_spec},
    }
    if replicas is not None:
        spec["replicas"] = float(replicas)  # the engine delivers numbers as floats
    return k8s(kind, name, namespace, labels=pod_labels, spec=spec)


def k8s_args(props: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> ResourceValidationArgs:
    """Validation args for a Kubernetes object built with ``k8s`` or ``workload``."""
    kind = str(props["kind"])
    return resource_args(KUBERNETES_TYPES[kind], props, name=str(props["metadata"]["name"]), config=config)


# --- stack policies: hand-built graphs --------------------------------------------------------


def provider(
    resource_type: str = "pulumi:providers:kubernetes", name: str = "k8s", **props: Any
) -> PolicyProviderResource:
    """A provider; resources applied through one Kubernetes provider share a cluster."""
    return PolicyProviderResource(resource_type, props, urn_of(resource_type, name), name)


def node(
    resource_type: str,
    props: Mapping[str, Any],
    name: str,
    *,
    parent: PolicyResource | None = None,
    via: PolicyProviderResource | None = None,
    inputs_from: Mapping[str, Sequence[PolicyResource]] | None = None,
) -> PolicyResource:
    """A resource in a stack graph: ``via`` is its provider, ``inputs_from`` its property dependencies."""
    deps = {key: list(values) for key, values in (inputs_from or {}).items()}
    flat = [d for values in deps.values() for d in values]
    return PolicyResource(resource_type, props, urn_of(resource_type, name), name, OPTS, via, parent, flat, deps)


def k8s_node(
    props: Mapping[str, Any], name: str | None = None, *, via: PolicyProviderResource | None = None
) -> PolicyResource:
    """A Kubernetes object built with ``k8s`` or ``workload`` as a graph node."""
    kind = str(props["kind"])
    return node(KUBERNETES_TYPES[kind], props, name or f"{kind.lower()}-{props['metadata']['name']}", via=via)


def stack_reports(
    policy: StackValidationPolicy,
    graph: RenderResult | Sequence[PolicyResource],
    config: Mapping[str, Any] | None = None,
) -> list[Reported]:
    """Run a stack policy over a rendered graph (or a hand-built resource list)."""
    resources = policy_resources(graph) if isinstance(graph, RenderResult) else list(graph)
    return reports(policy, StackValidationArgs(resources, config))


# --- stack policies: the example stacks' rendered graphs --------------------------------------


@functools.cache
def spec(name: str) -> PlatformSpec:
    return load_spec(STACKS / f"{name}.yaml")


@functools.cache
def rendered(name: str) -> RenderResult:
    """An example stack's graph, rendered once per session. Never mutate it: copy with ``dropping``/``editing``."""
    return render(spec(name))


def dropping(graph: RenderResult, predicate: Callable[[RenderedResource], bool]) -> RenderResult:
    """The graph without the resources ``predicate`` selects."""
    return dataclasses.replace(graph, resources=[r for r in graph.resources if not predicate(r)])


def editing(
    graph: RenderResult,
    predicate: Callable[[RenderedResource], bool],
    change: Callable[[dict[str, Any]], None],
    *,
    expect: int | None = None,
) -> RenderResult:
    """The graph with ``change`` applied to a deep copy of the inputs of every resource ``predicate`` selects.

    ``expect`` guards the test itself: the number of resources that must match, so that
    a renamed resource cannot turn a failing fixture into a silently passing one.
    """
    resources = []
    matched = 0
    for r in graph.resources:
        if predicate(r):
            matched += 1
            inputs = copy.deepcopy(r.inputs)
            change(inputs)
            r = dataclasses.replace(r, inputs=inputs)  # noqa: PLW2901 - the edited copy replaces it
        resources.append(r)
    if expect is not None and matched != expect:
        raise AssertionError(f"expected {expect} resource(s) to edit, matched {matched}")
    return dataclasses.replace(graph, resources=resources)


def kind_of(resource: RenderedResource) -> str:
    """``Deployment`` for a Kubernetes object, ``""`` otherwise."""
    return resource.type.rsplit(":", 1)[-1] if resource.type.startswith("kubernetes:") else ""


def k8s_name(resource: RenderedResource) -> str:
    return str((resource.inputs.get("metadata") or {}).get("name", ""))


def k8s_namespace(resource: RenderedResource) -> str:
    return str((resource.inputs.get("metadata") or {}).get("namespace", ""))
