"""A replica count an autoscaler owns is not also written by the program.

An autoscaling HorizontalPodAutoscaler, or a KEDA ScaledObject (which makes one; its ``scaleTargetRef.kind``
defaults to Deployment), writes its target's ``spec.replicas``. A Deployment or StatefulSet that the program also
writes with ``spec.replicas``, and whose resource does not ``ignore_changes`` that field, gets the program's count
back on every later ``pulumi up`` that changes it (an image or argument bump): under load the autoscaler's count
drops to the program's until it reacts again, or, with server-side apply, the update is refused as a field conflict
with the HPA controller that now manages ``spec.replicas``. The first ``pulumi up`` succeeds; the trouble is every
one after it. Kubernetes' guidance: "remove spec.replicas from the manifest" once an HPA scales the workload
(https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/#migrating-deployments-and-statefulsets-to-horizontal-autoscaling;
conflicts: https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts; the Pulumi provider's refusal,
"conflict with kube-controller-manager with subresource scale: .spec.replicas", in pulumi/pulumi-kubernetes#2491 and #2569;
https://keda.sh/docs/latest/reference/scaledobject-spec/#scaletargetref for the default kind).

It cannot see: workloads a Helm chart renders, and ignore_changes set by a transform the render does not run.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup

RULE = "replicas-owned"
SCALED_KINDS = ("Deployment", "StatefulSet")
# ignore_changes paths that cover spec.replicas: the field, or the whole spec.
COVERING = {"spec", "spec.replicas", 'spec["replicas"]', "spec['replicas']"}


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        workloads = {(w.namespace, w.kind, w.name): w for w in graph.kube(region, *SCALED_KINDS)}
        for scaler in graph.kube(region, "HorizontalPodAutoscaler", "ScaledObject"):
            ref = lookup(scaler.manifest, "spec.scaleTargetRef") or {}
            kind = str(ref.get("kind") or "Deployment")
            workload = workloads.get((scaler.namespace, kind, str(ref.get("name") or "")))
            if workload is None:
                continue
            replicas = lookup(workload.manifest, "spec.replicas")
            if replicas is None or COVERING & set(workload.resource.ignore_changes):
                continue
            yield Finding(
                RULE,
                workload.urn,
                f"{kind} {workload.namespace}/{workload.name} sets spec.replicas: {replicas} while {scaler.kind} "
                f"{scaler.name} scales it, and its resource does not ignore changes to spec.replicas: every later "
                f"pulumi up that changes the {kind} sets the count back to {replicas} (dropping the replicas the "
                "autoscaler added) or is refused as a server-side apply conflict with the HPA controller",
                f"drop spec.replicas from the {kind} (the {scaler.kind} owns the count), or give its resource "
                "ignore_changes=['spec.replicas']",
            )
