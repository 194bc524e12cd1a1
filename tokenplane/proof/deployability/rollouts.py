"""Every rollout has room and time: a pool's Deployment can replace its pods within the update timeout.

For each pool Deployment, at its most replicas (the ScaledObject's ``maxReplicaCount``, else ``spec.replicas``):

- room: a surge pod needs a free GPU slot. The slots are the matching node groups' maximum nodes times the
  replicas one node holds; beyond the replicas, the spare ones are all a surge can use. A wave that can
  neither surge nor take a replica down (``maxUnavailable: 0``) never finishes;
- time: the rollout takes ``ceil(replicas / per-wave)`` waves, each a whole time to Ready (the pool's start-up
  model), and ``pulumi up`` fails once its update timeout runs out;

Room is judged the same way for any Deployment that requests GPUs (a reranker, an embedder on its own group):
its RollingUpdate surge pod needs one more GPU than its replicas hold, and a group pinned at min=desired=max whose
GPUs its replicas fill has none, so the new pod stays Pending, the Deployment exceeds its progress deadline and
``pulumi up`` fails (https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#max-surge: "the total
number of Pods running at any time during the update is at most 125% of desired Pods"; defaults 25%/25%, surge
rounded up, unavailable down: 1 and 0 for two replicas). The time to Ready is modelled only for pools.

Room is also judged for any Deployment whose required pod anti-affinity selects its own pods: one pod per node on
``kubernetes.io/hostname``, one per zone on ``topology.kubernetes.io/zone``. Its slots are the nodes the node groups
it may land on grow to (their maxSize, summed) or the zones of their subnets; with its replicas filling them, a
surge pod "didn't match pod anti-affinity rules" on every node and stays Pending, and with ``maxUnavailable: 0`` no
old pod goes first, so every later rollout stalls (kubernetes/kubernetes#116891, #56539;
https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#inter-pod-affinity-and-anti-affinity).
Replicas beyond the domains are ``topology-placeable``'s, not reported here.

Budgets that block node drains are ``drains`` (every workload, not only pools).

It cannot see: capacity other workloads take on the same nodes, and nodes made outside the program (room is
then unknown, and only the time is checked).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tokenplane.catalog import instance_type
from tokenplane.contract import POOL_LABEL
from tokenplane.errors import CatalogError
from tokenplane.model.rollout import waves_at, worst_waves
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph, KubeObject, lookup
from tokenplane.proof.deployability.scheduling import HOSTNAME, ZONE, NodeGroup, lands_on, requested
from tokenplane.proof.deployability.timeouts import await_seconds, expected_ready
from tokenplane.proof.deployability.topology import OTHER_NODE_KINDS, OTHER_NODES, domains, selects

RULE = "rollout-room"
DEFAULT_SURGE = DEFAULT_UNAVAILABLE = "25%"  # Kubernetes' RollingUpdate defaults


@dataclass(frozen=True)
class Bounds:
    """A Deployment's replica bounds: what its autoscaler may set, or its fixed count."""

    least: int
    most: int


def check(graph: Graph) -> Iterator[Finding]:
    for deployment in graph.kube(None, "Deployment"):
        pool = (lookup(deployment.manifest, "metadata.labels") or {}).get(POOL_LABEL)
        if pool is None and requested(deployment.pod_spec(), "nvidia.com/gpu") <= 0 and not _one_per_domain(deployment):
            continue
        bounds = _bounds(graph, deployment)
        yield from _rollout(graph, deployment, None if pool is None else str(pool), bounds)


def _bounds(graph: Graph, deployment: KubeObject) -> Bounds:
    fixed = int(lookup(deployment.manifest, "spec.replicas") or 1)
    for scaled in graph.kube(deployment.resource.region, "ScaledObject"):
        target = lookup(scaled.manifest, "spec.scaleTargetRef.name")
        if target == deployment.name and scaled.namespace == deployment.namespace:
            least = int(lookup(scaled.manifest, "spec.minReplicaCount") or 0)
            return Bounds(least, int(lookup(scaled.manifest, "spec.maxReplicaCount") or 100))  # KEDA's default
    for hpa in graph.kube(deployment.resource.region, "HorizontalPodAutoscaler"):
        target = lookup(hpa.manifest, "spec.scaleTargetRef")
        if isinstance(target, dict) and target.get("name") == deployment.name and hpa.namespace == deployment.namespace:
            most = lookup(hpa.manifest, "spec.maxReplicas")
            if isinstance(most, int):
                return Bounds(int(lookup(hpa.manifest, "spec.minReplicas") or 1), most)
    return Bounds(fixed, fixed)


def _slots(graph: Graph, deployment: KubeObject) -> int | None:
    """Replica slots on the node groups the pods may land on, at their maximum; None when none is in the graph."""
    pod = deployment.pod_spec()
    gpus = requested(pod, "nvidia.com/gpu")
    groups = [g for g in map(NodeGroup.of, graph.of_type(NODE_GROUP, deployment.resource.region)) if lands_on(pod, g)]
    if not groups or gpus <= 0:
        return None
    slots = 0
    for group in groups:
        types = group.resource.inputs.get("instanceTypes") or []
        most = lookup(group.resource.inputs, "scalingConfig.maxSize") or 0
        try:
            per_node = instance_type(str(types[0])).gpus // int(gpus) if types else 0
        except CatalogError:
            return None  # a type the catalog does not know: its room is unknown, not zero
        slots += int(float(most)) * per_node
    return slots


def _one_per_domain(deployment: KubeObject) -> list[str]:
    """The topology keys of the Deployment's required anti-affinity terms against its own pods (one pod a domain)."""
    labels = lookup(deployment.manifest, "spec.template.metadata.labels") or {}
    terms = lookup(deployment.pod_spec(), "affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution")
    keys = []
    for term in terms or []:
        own = not term.get("namespaces") or deployment.namespace in term.get("namespaces")
        if own and not term.get("namespaceSelector") and selects(term.get("labelSelector"), labels):
            keys.append(str(term.get("topologyKey")))
    return [k for k in keys if k in (HOSTNAME, ZONE)]


def _domain_slots(graph: Graph, deployment: KubeObject) -> tuple[int, str] | None:
    """Pods the Deployment's own required anti-affinity lets its node groups hold, and the key that bounds them;
    None where it has none, or its nodes are not all the graph's node groups."""
    keys = _one_per_domain(deployment)
    region = deployment.resource.region
    if not keys or any(graph.of_type(t, region) for t in OTHER_NODES) or graph.kube(region, *OTHER_NODE_KINDS):
        return None
    pod = deployment.pod_spec()
    groups = [g for g in (NodeGroup.of(r, graph) for r in graph.of_type(NODE_GROUP, region)) if lands_on(pod, g)]
    if not groups:
        return None
    zones, nodes = domains(graph, groups)
    bounds = [(nodes, HOSTNAME)] if HOSTNAME in keys and nodes else []
    bounds += [(len(zones), ZONE)] if ZONE in keys and zones else []
    return min(bounds) if bounds else None


def _rollout(graph: Graph, deployment: KubeObject, pool: str | None, bounds: Bounds) -> Iterator[Finding]:
    strategy = lookup(deployment.manifest, "spec.strategy") or {}
    if strategy.get("type") == "Recreate":
        return  # every pod down, then up: one wave, and the create timeout's arithmetic
    rolling = strategy.get("rollingUpdate") or {}
    surge = rolling.get("maxSurge", DEFAULT_SURGE)
    down = rolling.get("maxUnavailable", DEFAULT_UNAVAILABLE)
    slots = _slots(graph, deployment)
    domain = _domain_slots(graph, deployment)
    where = f"Deployment {deployment.namespace}/{deployment.name}"
    if domain is not None and (slots is None or domain[0] < slots):
        most = min(bounds.most, domain[0])  # replicas beyond one a domain are topology-placeable's
        stuck = [r for r in range(1, most + 1) if waves_at(r, surge, down, domain[0]) == 0]
        if stuck:
            per = "node" if domain[1] == HOSTNAME else "zone"
            yield Finding(
                RULE,
                deployment.urn,
                f"{where} can never roll at {stuck[-1]} replicas: its required pod anti-affinity on {domain[1]} "
                f"allows one of its pods per {per}, its node groups hold {domain[0]} {per}s at most, so the "
                f"maxSurge {surge} pod matches no {per} (didn't match pod anti-affinity rules), and maxUnavailable "
                f"{down} takes no old pod down first: the surge pod stays Pending and every rollout after the first "
                "exceeds its progress deadline, so pulumi up of the update fails",
                "set spec.strategy.rollingUpdate maxSurge 0 and maxUnavailable 1 (or type Recreate), raise the node "
                f"groups' maxSize above {stuck[-1]} {per}s, or make the anti-affinity preferred",
            )
            return
    stuck = [r for r in range(1, bounds.most + 1) if waves_at(r, surge, down, slots) == 0]
    if stuck:
        yield Finding(
            RULE,
            deployment.urn,
            f"{where} can never roll at {stuck[-1]} replicas: maxSurge {surge} needs free GPU slots, its node "
            f"groups hold {slots} replicas at most, and maxUnavailable {down} takes none down: the surge pod stays "
            "Pending, the rollout exceeds its progress deadline and pulumi up fails",
            "let each wave take replicas down (spec.strategy.rollingUpdate maxSurge 0, maxUnavailable 1; "
            "tokenplane.model.rollout.plan_rollout) or raise the node group's maxSize above what the replicas fill "
            "to surge into",
        )
        return
    if pool is None:
        return  # the time to Ready is modelled for pools only
    expected = expected_ready(graph, deployment, pool)
    if isinstance(expected, Finding):
        return  # await-timeout reports the missing estimate
    seconds, _ = expected
    waves = worst_waves(bounds.most, surge, down, slots)
    waits = await_seconds(deployment, "update")
    if waits is not None and waits < waves * seconds:
        yield Finding(
            RULE,
            deployment.urn,
            f"{where} rolls in up to {waves} waves (maxSurge {surge}, maxUnavailable {down}, up to {bounds.most} "
            f"replicas) of {seconds / 60:.0f} min to Ready each: {waves * seconds / 60:.0f} min, but pulumi up "
            f"waits {waits / 60:.0f} min for the update",
            "roll a share of the pool per wave (tokenplane.model.rollout.plan_rollout) and set customTimeouts update to "
            f"at least {waves * seconds / 60:.0f}m",
        )
