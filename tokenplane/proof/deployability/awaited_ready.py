"""Every object ``pulumi up`` awaits is one that can become ready without a later hand.

pulumi-kubernetes awaits a Job until it succeeds ("Waiting for Job ... to succeed", provider/pkg/await: the Job
awaiter, https://github.com/pulumi/pulumi-kubernetes/pull/633) and a Deployment until its rollout completes (the
``Progressing`` condition with reason ``NewReplicaSetAvailable``), unless the object carries
``pulumi.com/skipAwait: "true"``; it fails the update when the await timeout (ten minutes, or
``pulumi.com/timeoutSeconds``/``customTimeouts``) runs out. Objects that are created so as to do nothing until someone
changes them never get there:

- a Job with ``spec.suspend: true``: "the Job controller will not create Pods until the Job is resumed"
  (https://kubernetes.io/docs/concepts/workloads/controllers/job/#suspending-a-job), so it never succeeds;
- a Job with ``spec.parallelism: 0``: no pod runs at a time ("Setting to 0 ... the job is effectively paused",
  batch/v1 JobSpec.parallelism);
- a Deployment with ``spec.paused: true``: the controller creates no ReplicaSet for a paused Deployment and reports
  ``Progressing`` as ``DeploymentPaused`` (https://kubernetes.io/docs/concepts/workloads/controllers/deployment/
  #pausing-and-resuming-a-deployment), so its rollout never completes.

The first ``pulumi up`` then waits out the timeout and fails (and marks the object failed in the state). A
Deployment scaled to ``replicas: 0`` is not judged: its rollout completes with no pods. Cannot see: chart-rendered
objects (Helm does its own waiting) and an object another program or person resumes within the timeout.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup

RULE = "awaited-can-be-ready"
SKIP_AWAIT = "pulumi.com/skipAwait"


def _never_ready(obj: KubeObject) -> str | None:
    """Why the await on ``obj`` can never end, or None."""
    spec = obj.manifest.get("spec") or {}
    if obj.kind == "Job" and spec.get("suspend") is True:
        return "spec.suspend: true, so the Job controller creates no pod until someone resumes it"
    if obj.kind == "Job" and spec.get("parallelism") == 0:
        return "spec.parallelism: 0, so the Job controller runs no pod at a time"
    if obj.kind == "Deployment" and spec.get("paused") is True:
        return "spec.paused: true, so the controller creates no ReplicaSet and reports Progressing=DeploymentPaused"
    return None


def check(graph: Graph) -> Iterator[Finding]:
    for obj in graph.kube(None, "Job", "Deployment"):
        annotations = lookup(obj.manifest, "metadata.annotations") or {}
        if str(annotations.get(SKIP_AWAIT, "")).lower() == "true":
            continue
        why = _never_ready(obj)
        if why is None:
            continue
        goal = "succeed" if obj.kind == "Job" else "complete its rollout"
        yield Finding(
            RULE,
            obj.urn,
            f"{obj.kind} {obj.namespace}/{obj.name} is created with {why}; pulumi-kubernetes awaits the {obj.kind} "
            f"until it {'succeeds' if obj.kind == 'Job' else 'completes its rollout'}, which it never does on its "
            f"own, so pulumi up waits out the await timeout and fails the update",
            f'annotate it pulumi.com/skipAwait: "true" (Pulumi then does not wait for it to {goal}), or create it '
            "active and let it run",
        )
