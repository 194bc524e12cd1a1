"""The rendered graph as the deployability checks read it: per region, per kind, with loud lookups."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from tokenplane.deploy.findings import GraphDataMissing
from tokenplane.render import RenderedResource, RenderResult, kubernetes_manifest
from tokenplane.spec import PlatformSpec

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job")
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


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
    def name(self) -> str:
        return str(self.manifest.get("metadata", {}).get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self.manifest.get("metadata", {}).get("namespace", "default"))

    def pod_spec(self) -> dict[str, Any]:
        """The pod template's spec; raises if a workload has none (the render lost it)."""
        template = self.manifest.get("spec", {}).get("template", {})
        spec = template.get("spec")
        if not isinstance(spec, dict):
            raise GraphDataMissing(self.urn, "spec.template.spec", f"a {self.kind} without a pod template")
        return spec


@dataclass(frozen=True)
class Graph:
    """Read-only views of one rendered stack, for the checks."""

    spec: PlatformSpec
    result: RenderResult

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

    def releases(self, region: str | None, chart: str) -> list[RenderedResource]:
        return [r for r in self.of_type(HELM_RELEASE, region) if r.inputs.get("chart") == chart]

    def regions(self) -> Iterator[str]:
        """Spec region names that have a cluster in the graph."""
        seen = {r.region for r in self.of_type("aws:eks/cluster:Cluster")}
        for region in self.spec.regions:
            if region.name in seen:
                yield region.name

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
