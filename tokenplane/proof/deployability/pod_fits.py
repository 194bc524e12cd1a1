"""One pod fits one node: a pod whose requests exceed every node it may land on is Pending forever.

The group-capacity check (``node-capacity``) sums requests over a node group at its maxima; that sum cannot see a
single pod larger than any one node, whose fix is not "raise maxSize". The scheduler places a pod on one node:
if no node group the pod may land on (nodeSelector, required node affinity, tolerations) has an instance type whose
allocatable holds the pod's requests, it reports "0/N nodes are available: Insufficient cpu" and the Cluster
Autoscaler skips every group ("pod didn't trigger scale-up": its node template does not fit the pod either).

A pod's request is what the scheduler counts (kubernetes pkg/api/v1/resource, PodRequests): per resource, the sum
of its containers' requests or the largest init container's, whichever is more; a limit without a request stands
for the request. The node's side: CPU is allocatable after the EKS AMI's kube-reserved (``tokenplane.allocatable``),
GPUs the instance type's count, memory an upper bound on allocatable (``allocatable_memory``: the instance type's total
less what no node can give a pod), so a finding on memory is certain. Instance types the catalogs do not know are not judged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.allocatable import allocatable_cpu, cpu_instance
from tokenplane.catalog import instance_type
from tokenplane.errors import CatalogError
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph, KubeObject
from tokenplane.proof.deployability.k8s_syntax import quantity
from tokenplane.proof.deployability.scheduling import NodeGroup, lands_on

RULE = "pod-fits-node"
GPU = "nvidia.com/gpu"


def _container_request(container: Mapping[str, Any], name: str) -> float:
    resources = container.get("resources") or {}
    value = (resources.get("requests") or {}).get(name)
    if value is None:
        value = (resources.get("limits") or {}).get(name)
    return quantity(value) if value is not None else 0.0


def pod_request(pod: Mapping[str, Any], name: str) -> float:
    """What the scheduler counts of resource ``name`` for one pod: containers' sum, or the largest init container."""
    containers = sum(_container_request(c, name) for c in pod.get("containers") or [])
    inits = [_container_request(c, name) for c in pod.get("initContainers") or []]
    return max(containers, *inits, 0.0)


# Memory a node can never give a pod, whatever its configuration: the kernel's page descriptors (a 64-byte struct
# page per 4 KiB page, 1/64 of RAM, outside MemTotal and so outside the node's capacity), and the EKS AMIs' smallest
# kube-reserved memory (255 MiB plus 11 MiB a pod; the per-pod part is left out, as max-pods is configurable) with
# the kubelet's hard eviction threshold (memory.available < 100Mi), both taken from allocatable.
# https://docs.kernel.org/mm/memory-model.html, https://github.com/awslabs/amazon-eks-ami (kube-reserved),
# https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/#hard-eviction-thresholds
PAGE_DESCRIPTORS = 64 / 4096
RESERVED_MEMORY = (255 + 100) * 2.0**20


def allocatable_memory(total_gib: float) -> float:
    """An upper bound on a node's allocatable memory (bytes) for an instance type of ``total_gib``: a pod asking
    more never fits, a pod asking less may still not (per-pod reservations, DaemonSets)."""
    return total_gib * 2.0**30 * (1 - PAGE_DESCRIPTORS) - RESERVED_MEMORY


def node_offers(instance: str) -> dict[str, float] | None:
    """What one node of ``instance`` offers a pod (cpu cores, memory bytes, GPUs); None for a type no catalog knows."""
    try:
        cpu = allocatable_cpu(instance)
    except KeyError:
        return None
    if (shape := cpu_instance(instance)) is not None:
        return {"cpu": cpu, "memory": allocatable_memory(shape[1]), GPU: 0.0}
    try:
        known = instance_type(instance)
    except CatalogError:
        return None
    return {"cpu": cpu, "memory": allocatable_memory(known.memory_gib), GPU: float(known.gpus)}


def _shown(name: str, amount: float) -> str:
    return f"{amount / 2**30:.1f} GiB memory" if name == "memory" else f"{amount:g} {name}"


def fits_nowhere(graph: Graph, workload: KubeObject) -> Finding | None:
    """The finding for a workload whose one pod no node it may land on can hold; None if one can, or if the
    pod lands on no node group (``node-capacity`` says so) or on an instance type no catalog knows."""
    pod = workload.pod_spec()
    groups = [g for g in map(NodeGroup.of, graph.of_type(NODE_GROUP, workload.resource.region)) if lands_on(pod, g)]
    if not groups:
        return None
    wants = {name: pod_request(pod, name) for name in ("cpu", "memory", GPU)}
    offers: list[tuple[str, str, dict[str, float]]] = []  # (group, instance type, what one node offers)
    for group in groups:
        for instance in group.resource.inputs.get("instanceTypes") or []:
            offered = node_offers(str(instance))
            if offered is None:
                return None  # an unknown type might hold it: not judged
            offers.append((group.resource.name, str(instance), offered))
    if not offers or any(all(wants[n] <= o[n] for n in wants) for _, _, o in offers):
        return None
    group_name, instance, largest = max(offers, key=lambda o: (o[2][GPU], o[2]["cpu"], o[2]["memory"]))
    short = [n for n in wants if wants[n] > largest[n]]
    asks = ", ".join(_shown(n, wants[n]) for n in short)
    has = ", ".join(_shown(n, largest[n]) for n in short)
    return Finding(
        RULE,
        workload.urn,
        f"no node can ever hold this pod: one pod of {workload.kind} {workload.namespace}/{workload.name} requests "
        f"{asks}, but the largest instance type it may land on ({instance}, node group {group_name}) offers {has} "
        "allocatable; the scheduler reports Insufficient resources and the Cluster Autoscaler finds no group whose "
        "node fits, so its pods stay Pending whatever maxSize is",
        f"lower the pod's requests to fit a {instance} node, or let it land on a node group of a larger instance type",
    )


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        for workload in graph.pod_bearers(region):
            if (finding := fits_nowhere(graph, workload)) is not None:
                yield finding
