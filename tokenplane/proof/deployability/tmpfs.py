"""A memory-backed emptyDir fits in the memory limits of the pod that writes it.

Files written to an ``emptyDir`` with ``medium: Memory`` are tmpfs pages charged to the writing container's memory
cgroup: "any files you write count against your container's memory limit"
(https://kubernetes.io/docs/concepts/storage/volumes/#emptydir). A ``sizeLimit`` above the memory limits of the
pod's containers together can never be used: filling the volume past the limit OOM-kills the writer (or, where
the tmpfs is sized to the pod's memory, the write fails with no space left) long before the kubelet's sizeLimit
eviction, so a model cache or scratch area sized to the volume crash-loops the pod on its first fill.

Judged only where the volume has a sizeLimit and every container of the pod has a memory limit (what the pod
writes there is not known otherwise); the limit is the pod's ``spec.resources.limits.memory`` where set.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.k8s_syntax import quantity

RULE = "tmpfs-within-memory"


def memory_limit(pod: dict[str, Any]) -> float | None:
    """The pod's memory ceiling: its own limit, else its containers' limits summed; None if one has none."""
    own = ((pod.get("resources") or {}).get("limits") or {}).get("memory")
    if own is not None:
        return quantity(own)
    limits = [((c.get("resources") or {}).get("limits") or {}).get("memory") for c in pod.get("containers") or []]
    if not limits or any(limit is None for limit in limits):
        return None
    return sum(quantity(limit) for limit in limits)


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        pod = workload.pod_spec()
        ceiling = memory_limit(pod)
        if not ceiling:
            continue
        for volume in pod.get("volumes") or []:
            empty_dir = volume.get("emptyDir")
            if not isinstance(empty_dir, dict) or empty_dir.get("medium") != "Memory":
                continue
            size = empty_dir.get("sizeLimit")
            if size is None or quantity(size) <= ceiling:
                continue
            writers = [
                str(c.get("name"))
                for c in pod.get("containers") or []
                if any(m.get("name") == volume.get("name") for m in c.get("volumeMounts") or [])
            ]
            mounted = f", mounted by {', '.join(writers)}," if writers else ""
            yield Finding(
                RULE,
                workload.urn,
                f"{workload.kind} {workload.namespace}/{workload.name}'s emptyDir {volume.get('name')}{mounted} is "
                f"tmpfs (medium: Memory) with sizeLimit {size}, above the pod's memory limit of "
                f"{ceiling / 2**30:.3g}Gi: its files count against the container's memory limit, so filling it "
                "OOM-kills the container (CrashLoopBackOff) before the volume is full",
                f"raise the containers' resources.limits.memory above {size} plus what the process itself uses, or "
                "drop medium: Memory (a disk-backed emptyDir) or lower sizeLimit to what fits beside the process",
            )
