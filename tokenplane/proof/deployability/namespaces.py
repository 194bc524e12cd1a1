"""Every namespaced object goes into a namespace that exists, and is applied after it.

The API server rejects an object whose namespace does not exist ("namespaces
... not found"); the mocks accept it. A namespace the stack creates must also
come first: Pulumi applies in dependency order only, so an object that does
not wait for its namespace fails on a fresh cluster and succeeds on a rerun.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph

RULE = "namespace-exists"
# Namespaces every cluster starts with.
BUILT_IN = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
# Kinds that live outside any namespace (the ones a stack may declare).
CLUSTER_SCOPED = frozenset(
    {
        "Namespace",
        "Node",
        "PersistentVolume",
        "StorageClass",
        "CSIDriver",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "PriorityClass",
        "IngressClass",
        "RuntimeClass",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "APIService",
    }
)


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        created = {o.name: o.urn for o in graph.kube(region, "Namespace")}
        placed = [
            (o.urn, f"{o.kind} {o.namespace}/{o.name}", o.namespace)
            for o in graph.kube_objects
            if o.resource.region == region and o.kind not in CLUSTER_SCOPED
        ]
        placed += [
            (r.urn, f"Helm release {r.inputs.get('name')}", str(r.inputs.get("namespace") or "default"))
            for r in graph.of_type(HELM_RELEASE, region)
            if not r.inputs.get("createNamespace")
        ]
        for urn, what, namespace in placed:
            if namespace in BUILT_IN or namespace in graph.assumed.namespaces:
                continue
            if namespace not in created:
                yield Finding(
                    RULE,
                    urn,
                    f"{what} goes into namespace {namespace}, which the stack does not create: the API server "
                    "rejects it (namespaces not found)",
                    f"create it (components.Namespace.create({namespace!r}, ...)) and pass that to the component",
                )
            elif created[namespace] not in graph.waits_for(urn):
                yield Finding(
                    RULE,
                    urn,
                    f"{what} does not wait for namespace {namespace}: on a fresh cluster it may be applied first "
                    "and be rejected",
                    "pass the Namespace to the component (it then waits for it), or add depends_on on it",
                )
