"""A long-running pod has a controller: the program renders no bare Pod that is meant to keep running.

A Pod object with restartPolicy Always (the default) is a service, yet no controller owns it: nothing recreates it.
The first drain evicts it for good (``kubectl drain`` refuses it without ``--force``, a managed node group update
deletes it), a node failure or replacement loses it, and the Cluster Autoscaler will not remove its node at all
("Pods that are not backed by a controller object" block scale-down). A Deployment (or a StatefulSet or DaemonSet)
with the same pod template keeps it running. One-shot pods (restartPolicy Never or OnFailure) are left alone: they
are meant to end.
https://kubernetes.io/docs/concepts/workloads/pods/#working-with-pods ,
https://kubernetes.io/docs/tasks/administer-cluster/safely-drain-node/ ,
https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/FAQ.md#what-types-of-pods-can-prevent-ca-from-removing-a-node
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

RULE = "pod-owned"


def check(graph: Graph) -> Iterator[Finding]:
    for pod in graph.kube(None, "Pod"):
        policy = (pod.manifest.get("spec") or {}).get("restartPolicy") or "Always"
        if policy != "Always":
            continue
        yield Finding(
            RULE,
            pod.urn,
            f"Pod {pod.namespace}/{pod.name} has restartPolicy {policy} but no controller owns it: it is never "
            "recreated, so the first node drain (managed node group update, kubectl drain --force) or node loss "
            "removes it for good, and the Cluster Autoscaler will not scale its node in",
            "run it as a Deployment (replicas, selector and this pod spec as its template), or set "
            "spec.restartPolicy: Never or OnFailure if it is meant to end",
        )
