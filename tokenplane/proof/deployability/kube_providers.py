"""Every Kubernetes resource of a program that creates its cluster goes to that cluster, through a provider.

A Kubernetes resource that names no provider (none of its own, none from a parent component's ``providers``) is
sent to Pulumi's default Kubernetes provider, which reads the ambient kubeconfig: ``KUBECONFIG`` or
``~/.kube/config`` and its current context (https://www.pulumi.com/registry/packages/kubernetes/installation-configuration/,
https://www.pulumi.com/docs/iac/concepts/resources/providers/#default-provider). When the program creates the EKS
cluster itself, that kubeconfig cannot name it: the cluster's endpoint and certificate exist only once
``pulumi up`` has made it. So the resource goes elsewhere: in CI there is no kubeconfig and ``pulumi up`` fails at
it; on an engineer's machine it is created in whatever cluster the current context names (where its namespace
and everything it needs are missing), and never in this one. Programs that deploy onto an existing cluster
(``--assume cluster``) may mean the default provider, so they are not judged; nor is a program that creates no
EKS cluster.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "cluster-provider"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
DEFAULT_PROVIDER = "default"  # Pulumi names the default provider of a package default_<version>


def check(graph: Graph) -> Iterator[Finding]:
    clusters = graph.of_type(EKS_CLUSTER)
    if graph.assumed.cluster or not clusters:
        return
    names = ", ".join(sorted(str(c.inputs.get("name") or c.name) for c in clusters))
    for resource in graph.resources:
        if resource.custom and resource.type.startswith("kubernetes:") and _on_default_provider(resource):
            yield Finding(
                RULE,
                resource.urn,
                f"{_what(resource)} names no Kubernetes provider, so Pulumi sends it to its default provider, which "
                f"reads the ambient kubeconfig (KUBECONFIG or ~/.kube/config), not the cluster this program creates "
                f"({names}): its endpoint exists only after pulumi up makes it. In CI there is no kubeconfig and "
                "pulumi up fails here; elsewhere the resource lands in whatever cluster the current context names, "
                "and never in this one",
                "pass the cluster's provider (pulumi.ResourceOptions(provider=...), or a parent component created "
                "with providers=...); set pulumi:disable-default-providers: [kubernetes] in Pulumi.yaml so that "
                "preview refuses the next one",
            )


def _on_default_provider(resource: RenderedResource) -> bool:
    if not resource.provider:
        return True
    parts = resource.provider.split("::")  # urn:pulumi:STACK, PROJECT, TYPE, NAME[, ID]
    return len(parts) > 3 and parts[3].startswith(DEFAULT_PROVIDER)


def _what(resource: RenderedResource) -> str:
    kind = resource.type.rsplit(":", 1)[-1]
    metadata = resource.inputs.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    namespace, name = metadata.get("namespace"), metadata.get("name")
    return f"{kind} {namespace + '/' if namespace else ''}{name or resource.name}"
