"""The rendered graph as the deployability checks read it: per region, per kind, with loud lookups."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from tokenplane.proof.deployability.assumptions import Assumptions
from tokenplane.proof.deployability.findings import GraphDataMissing
from tokenplane.proof.render import (
    AUTONAMED,
    RenderedResource,
    RenderResult,
    cluster_security_group_id,
    is_patch_type,
    kubernetes_manifest,
    mock_outputs,
    physical_id,
)
from tokenplane.spec import PlatformSpec

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job")
# Every kind whose object makes pods, and a bare Pod: what the scheduler places, whichever controller asked.
POD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod")
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
CLUSTER = "aws:eks/cluster:Cluster"
# The outputs by which AWS and other resources name a resource, as the mock emits them (``render.mock_outputs``): an
# RDS instance is named by its ``identifier`` (metrics, endpoint) and its ``resourceId`` (IAM database auth, its
# ``id``), a cluster by ``clusterIdentifier`` and ``clusterResourceId``, most resources by ``arn`` or ``name``.
IDENTIFYING_OUTPUTS = (
    "identifier",
    "resourceId",
    "clusterIdentifier",
    "clusterResourceId",
    "arn",
    "name",
    "bucket",
    "keyId",
    "functionName",
    "nodeGroupName",
    "zoneId",
    "url",
)


@dataclass(frozen=True)
class KubeObject:
    """A Kubernetes object as it would be applied, with the resource that declares it."""

    resource: RenderedResource
    manifest: dict[str, Any]

    @property
    def urn(self) -> str:
        return self.resource.urn

    @property
    def kind(self) -> str:
        return str(self.manifest.get("kind", ""))

    @property
    def is_patch(self) -> bool:
        """A ``*Patch`` resource (pulumi-kubernetes' Server-Side Apply patch, e.g. ``NamespacePatch``): it sets the
        fields it names on an object that exists (created by the program or the cluster), and creates nothing."""
        return is_patch_type(self.resource.type)

    @property
    def name(self) -> str:
        return str(self.manifest.get("metadata", {}).get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self.manifest.get("metadata", {}).get("namespace", "default"))

    @property
    def autonamed(self) -> bool:
        """Whether Pulumi named it (no name written in the program): a replacement then takes a new name."""
        annotations = self.manifest.get("metadata", {}).get("annotations") or {}
        return isinstance(annotations, dict) and str(annotations.get(AUTONAMED)) == "true"

    def pod_template(self) -> dict[str, Any]:
        """The pod template (``metadata`` and ``spec``) of any of ``POD_KINDS``: a CronJob's through its
        jobTemplate, a bare Pod as itself; {} where there is none. The one place that knows where each kind keeps
        its pods, so that every rule reads every kind the scheduler places."""
        if self.kind == "Pod":
            return {"metadata": self.manifest.get("metadata") or {}, "spec": self.manifest.get("spec")}
        spec: Any = self.manifest.get("spec") or {}
        if self.kind == "CronJob":
            spec = lookup(spec, "jobTemplate.spec") or {}
        template = spec.get("template") if isinstance(spec, dict) else None
        return template if isinstance(template, dict) else {}

    def pod_spec(self) -> dict[str, Any]:
        """The pod template's spec (``pod_template``'s); raises if a workload has none (the render lost it)."""
        spec = self.pod_template().get("spec")
        if not isinstance(spec, dict):
            raise GraphDataMissing(self.urn, "spec.template.spec", f"a {self.kind} without a pod template")
        return spec


@dataclass(frozen=True)
class Graph:
    """Read-only views of one rendered stack, for the checks.

    ``spec`` is None for a program of one's own (components composed by hand): the checks then read what
    they need from the graph alone, and those that only a spec can inform (its tenants' secrets) skip.
    """

    spec: PlatformSpec | None
    result: RenderResult
    assumed: Assumptions = field(default_factory=Assumptions)  # what exists outside the program

    @property
    def resources(self) -> list[RenderedResource]:
        return self.result.resources

    def of_type(self, type_token: str, region: str | None = None) -> list[RenderedResource]:
        return [r for r in self.resources if r.type == type_token and (region is None or r.region == region)]

    @cached_property
    def by_urn(self) -> dict[str, RenderedResource]:
        return {r.urn: r for r in self.resources}

    @cached_property
    def kube_objects(self) -> list[KubeObject]:
        return [KubeObject(r, kubernetes_manifest(r)) for r in self.resources if r.is_kubernetes_object]

    def kube(self, region: str | None, *kinds: str) -> list[KubeObject]:
        return [o for o in self.kube_objects if o.kind in kinds and (region is None or o.resource.region == region)]

    def workloads(self, region: str | None = None) -> list[KubeObject]:
        return self.kube(region, *WORKLOAD_KINDS)

    def pod_bearers(self, region: str | None = None) -> list[KubeObject]:
        """Every object the scheduler will place pods for (``POD_KINDS``), not only the long-running ones."""
        return self.kube(region, *POD_KINDS)

    def releases(self, region: str | None, chart: str) -> list[RenderedResource]:
        return [r for r in self.of_type(HELM_RELEASE, region) if r.inputs.get("chart") == chart]

    def regions(self) -> Iterator[str]:
        """Region names that have a cluster in the graph: the spec's, or, without one, every region a cluster
        or a Kubernetes object is in (a program may deploy onto a cluster it does not create)."""
        seen = {r.region for r in self.of_type("aws:eks/cluster:Cluster")}
        if self.spec is None:
            seen |= {o.resource.region for o in self.kube_objects}
            yield from sorted(r for r in seen if r is not None)
            return
        for region in self.spec.regions:
            if region.name in seen:
                yield region.name

    def cloud_region(self, region: str | None) -> str | None:
        """The AWS region of a region name: the spec's, else the render's own mapping."""
        if self.spec is not None:
            return next((r.cloud_region for r in self.spec.regions if r.name == region), None)
        return next((cloud for cloud, name in self.result.regions.items() if name == region), None)

    def secret_refs(self) -> list[str]:
        """The spec's tenant and provider key references; none without a spec."""
        if self.spec is None:
            return []
        return [t.api_key_secret for t in self.spec.tenants] + [p.api_key_secret for p in self.spec.providers]

    def waits_for(self, urn: str) -> set[str]:
        """Every URN ``urn`` waits for, directly or through what it waits for."""
        seen: set[str] = set()
        stack = [urn]
        while stack:
            resource = self.by_urn.get(stack.pop())
            for dep in resource.dependencies if resource is not None else []:
                if dep not in seen:
                    seen.add(dep)
                    stack.append(dep)
        return seen

    @cached_property
    def by_physical_id(self) -> dict[str, RenderedResource]:
        """Resources by the IDs other resources' inputs carry: the cloud ID, and a ``name`` input (subnet
        groups and the like are referenced by name)."""
        out: dict[str, RenderedResource] = {}
        for r in self.resources:
            if r.custom and r.type.startswith("aws:"):
                if isinstance(r.inputs.get("name"), str):
                    out.setdefault(r.inputs["name"], r)
                out[physical_id(r.type, r.name)] = r
                out.setdefault(physical_id(r.type, r.name).removesuffix("-id"), r)  # a generated name
                if r.type == CLUSTER:  # its security group stands for the cluster's nodes
                    out[cluster_security_group_id(r.name)] = r
        return out

    @cached_property
    def by_identifying_output(self) -> dict[str, RenderedResource]:
        """Resources by every output that names them (``IDENTIFYING_OUTPUTS``), as the mock emits them: a value
        taken from any of them is this stack's resource, whichever of its names it is. Kept apart from
        ``by_physical_id``, whose callers tell an ``id`` from the other names (an RDS instance's ``id`` is its
        resource id, which its metrics do not carry)."""
        out: dict[str, RenderedResource] = {}
        for r in self.resources:
            if r.custom and r.type.startswith("aws:"):
                _, outputs = mock_outputs(r.type, r.name, r.inputs, self.cloud_region(r.region) or "")
                for key in IDENTIFYING_OUTPUTS:
                    if isinstance(outputs.get(key), str) and outputs[key]:
                        out.setdefault(outputs[key], r)
        return out

    def by_physical_ids(self, ids: Any) -> list[RenderedResource]:
        """The resources an input value names by ID (a string, or strings nested in lists and dicts)."""
        found: list[RenderedResource] = []
        stack = [ids]
        while stack:
            value = stack.pop()
            if isinstance(value, str) and value in self.by_physical_id:
                found.append(self.by_physical_id[value])
            elif isinstance(value, dict):
                stack.extend(value.values())
            elif isinstance(value, list):
                stack.extend(value)
        return list({r.urn: r for r in found}.values())  # in order, once each

    def referenced(self, resource: RenderedResource, key: str) -> list[RenderedResource]:
        """The resources input ``key`` of ``resource`` names by ID: read from the value, so that an edited
        reference is followed where it now points."""
        return self.by_physical_ids(resource.inputs.get(key))

    def depends_on(self, resource: RenderedResource) -> list[RenderedResource]:
        return [self.by_urn[u] for u in resource.dependencies if u in self.by_urn]


def need(resource: RenderedResource, value: Any, path: str, why: str) -> Any:
    """``value``, or a loud GraphDataMissing naming the resource and field when it is None."""
    if value is None:
        raise GraphDataMissing(resource.urn, path, why)
    return value


def lookup(data: Any, path: str) -> Any:
    """``a.b.c`` in nested dicts, None where any step is absent."""
    for part in path.split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def number(value: Any) -> float | None:
    """A numeric input as the mocks carry it (an int, or the float a program's int becomes); None for anything else,
    a bool included (True is an int in Python, never a number in an API's input)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
