"""What must exist before an object is applied: the CRD of a custom resource, and a node for any pod.

Pulumi applies in dependency order and nothing else. A custom resource sent
before its CRD's Helm release fails ("no matches for kind"; render.CHART_CRD_GROUPS says which chart installs
which groups, e.g. cert-manager's cert-manager.io with ``crds.enabled``: https://cert-manager.io/docs/installation/helm/,
cert-manager/cert-manager#4583); a release or
workload applied before any node group is active waits for pods that cannot
be scheduled until its await times out.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, NODE_GROUP, Graph, KubeObject, lookup
from tokenplane.proof.render import CRD_CHARTS

CRD_ORDER = "crd-order"
CLUSTER_READY = "cluster-ready"


def _after(graph: Graph, urn: str) -> set[str]:
    return graph.waits_for(urn)


def check_crd_order(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        releases = graph.of_type(HELM_RELEASE, region)
        for obj in _custom_resources(graph, region):
            group = str(obj.manifest.get("apiVersion", "")).split("/", 1)[0]
            chart = CRD_CHARTS[group]
            providers = {r.urn for r in releases if _chart_name(r.inputs.get("chart")) == chart}
            if not providers & _after(graph, obj.urn):
                yield Finding(
                    CRD_ORDER,
                    obj.urn,
                    f"{obj.kind} {_named(obj)} ({group}) does not wait for the {chart} release that "
                    "installs its CRD: applied first, it fails with 'no matches for kind'",
                    f"add depends_on=[the {chart} release] (directly or through its component)",
                )


def check_cluster_ready(graph: Graph) -> Iterator[Finding]:
    if graph.assumed.cluster:
        return  # an existing cluster with nodes (--assume cluster): nothing here has to wait for one
    for region in graph.regions():
        nodes = {r.urn for r in graph.of_type(NODE_GROUP, region)}
        waiting = [(w.urn, f"{w.kind} {w.namespace}/{w.name}") for w in graph.workloads(region)]
        waiting += [(r.urn, f"Helm release {r.inputs.get('name')}") for r in graph.of_type(HELM_RELEASE, region)]
        for urn, what in waiting:
            if not nodes & _after(graph, urn):
                yield Finding(
                    CLUSTER_READY,
                    urn,
                    f"{what} does not wait for any node group: its pods cannot run before a node joins, "
                    "and Pulumi's await runs out",
                    "make it depend on the cluster's system node group",
                )


def _chart_name(chart: object) -> str | None:
    """A release's chart by name: an OCI reference (``oci://public.ecr.aws/karpenter/karpenter``) names its chart
    by its last path segment (https://helm.sh/docs/topics/registries/)."""
    if not isinstance(chart, str):
        return None
    return chart.rsplit("/", 1)[-1] if chart.startswith("oci://") else chart


def _named(obj: KubeObject) -> str:
    """namespace/name, or the bare name of a cluster-scoped object (a ClusterIssuer has no namespace)."""
    return f"{obj.namespace}/{obj.name}" if lookup(obj.manifest, "metadata.namespace") else obj.name


def _custom_resources(graph: Graph, region: str) -> list[KubeObject]:
    return [
        o
        for o in graph.kube_objects
        if o.resource.region == region and str(o.manifest.get("apiVersion", "")).split("/", 1)[0] in CRD_CHARTS
    ]
