"""Required topology rules can place every replica: zones and nodes against replicas at their maximum.

A required pod anti-affinity against the workload's own pods puts at most one pod in each topology domain: on
``topology.kubernetes.io/zone`` the domains are the zones of the subnets the node groups it may land on use, on
``kubernetes.io/hostname`` the nodes those groups may grow to (their maxSize). A ``topologySpreadConstraint`` with
``whenUnsatisfiable: DoNotSchedule`` whose ``minDomains`` exceeds the zones there are holds at most ``maxSkew`` pods
per zone (the global minimum counts as 0 while fewer domains than minDomains exist). Replicas beyond that stay
Pending forever ("didn't match pod anti-affinity rules" / "didn't match pod topology spread constraints"), no
scale-up helps, and the Deployment's await times out.
https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#inter-pod-affinity-and-anti-affinity ,
https://kubernetes.io/docs/concepts/scheduling-eviction/topology-spread-constraints/

Replicas are the most the workload may run: its HPA's maxReplicas or ScaledObject's maxReplicaCount, else
spec.replicas. Node groups outside the graph (``--assume cluster``) leave the domains unknown: not judged.

A topology key no node carries places no pod at all. The spread filter refuses every node without the constraint's
topologyKey (kubernetes pkg/scheduler/framework/plugins/podtopologyspread/filtering.go, Filter:
UnschedulableAndUnresolvable "node(s) didn't match pod topology spread constraints (missing required label)"), and a
required pod affinity term does the same (interpodaffinity/filtering.go, satisfyPodAffinity: "All topology labels
must exist on the node"). A required *anti*-affinity on a missing key is not reported: satisfyPodAntiAffinity only
counts nodes that have the key, so such pods schedule (unspread). The labels an EKS node carries: those kubelet and
the AWS cloud provider set (``WELL_KNOWN``), EKS managed node groups' five ``eks.amazonaws.com/*`` labels (any
key under that prefix where the cluster runs Auto Mode), and the node group's
own ``labels``. Keys under prefixes AWS components may add (``AWS_PREFIXES``: the EBS CSI driver's topology key,
the cloud controller's zone-id) are not judged, nor groups whose launch template's user data may set kubelet
``--node-labels``, nor regions where Karpenter or Fargate make nodes the program's groups do not describe. E.g. GKE's
``topology.gke.io/zone`` on EKS: every pod of the workload stays Pending.
https://kubernetes.io/docs/reference/labels-annotations-taints/
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability import label_selectors
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph, KubeObject, lookup
from tokenplane.proof.deployability.node_capacity import maxima
from tokenplane.proof.deployability.scheduling import AWS_PREFIXES, HOSTNAME, WELL_KNOWN, ZONE, NodeGroup, lands_on

RULE = "topology-placeable"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
# Node makers beyond managed node groups: their nodes' labels are not the groups'.
OTHER_NODES = ("aws:eks/fargateProfile:FargateProfile",)
OTHER_NODE_KINDS = ("NodePool", "Provisioner", "EC2NodeClass")
CLUSTER = "aws:eks/cluster:Cluster"
EKS_PREFIX = "eks.amazonaws.com/"
# The eks.amazonaws.com/ labels a managed node group's nodes carry (the EKS managed node groups page: the node
# group's name, its AMI, its capacity type, and the launch template it was made from).
MANAGED_NODE_GROUP_LABELS = frozenset(
    {
        "eks.amazonaws.com/nodegroup",
        "eks.amazonaws.com/nodegroup-image",
        "eks.amazonaws.com/capacityType",
        "eks.amazonaws.com/sourceLaunchTemplateId",
        "eks.amazonaws.com/sourceLaunchTemplateVersion",
    }
)


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """True if a LabelSelector matches ``labels`` (matchLabels and matchExpressions, as the API server reads them)."""
    return label_selectors.matches(selector, labels, empty=False)  # an empty pod affinity selector selects no pod


def domains(graph: Graph, groups: list[NodeGroup]) -> tuple[set[str], int]:
    """(zones, most nodes) of the node groups: zones from their subnets' availabilityZone."""
    zones: set[str] = set()
    nodes = 0
    for group in groups:
        for subnet in graph.referenced(group.resource, "subnetIds"):
            if isinstance(az := subnet.inputs.get("availabilityZone"), str):
                zones.add(az)
        nodes += int(float(lookup(group.resource.inputs, "scalingConfig.maxSize") or 0))
    return zones, nodes


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        groups = [NodeGroup.of(r, graph) for r in graph.of_type(NODE_GROUP, region)]
        most = maxima(graph, region)
        for workload in graph.kube(region, "Deployment", "StatefulSet"):
            pod = workload.pod_spec()
            mine = [g for g in groups if lands_on(pod, g)]
            if not mine:
                continue  # node-capacity reports a pod that lands nowhere
            replicas = most.get(
                (workload.namespace, workload.name), int(lookup(workload.manifest, "spec.replicas") or 1)
            )
            zones, nodes = domains(graph, mine)
            yield from _placeable(workload, pod, replicas, zones, nodes, ", ".join(g.resource.name for g in mine))
        if not groups or any(graph.of_type(t, region) for t in OTHER_NODES) or graph.kube(region, *OTHER_NODE_KINDS):
            continue
        for bearer in graph.pod_bearers(region):
            yield from _missing_keys(graph, bearer, groups)


def _labels_open(graph: Graph, group: NodeGroup) -> bool:
    """True if the group's launch template's user data may add node labels (kubelet --node-labels) we cannot read."""
    for template in graph.referenced(group.resource, "launchTemplate"):
        data = template.inputs.get("userData") if template.type == LAUNCH_TEMPLATE else None
        if not data:
            continue
        try:
            text = base64.b64decode(str(data), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return True
        if "label" in text.lower():
            return True
    return False


def _carries(key: str, group: NodeGroup, auto_mode: bool) -> bool:
    if key.startswith(EKS_PREFIX) and not auto_mode:
        return key in MANAGED_NODE_GROUP_LABELS  # EKS's own prefix: exactly what a managed node group sets
    return key in WELL_KNOWN or key.startswith(AWS_PREFIXES) or key in group.labels


def _auto_mode(graph: Graph, region: str | None) -> bool:
    """Whether a cluster of the region runs EKS Auto Mode, whose nodes carry more eks.amazonaws.com/ labels."""
    return any(lookup(c.inputs, "computeConfig.enabled") is True for c in graph.of_type(CLUSTER, region))


def _missing_keys(graph: Graph, bearer: KubeObject, groups: list[NodeGroup]) -> Iterator[Finding]:
    pod = bearer.pod_spec()
    mine = [g for g in groups if lands_on(pod, g)]
    if not mine or any(_labels_open(graph, g) for g in mine):
        return  # node-capacity reports a pod that lands nowhere
    keys = [
        ("topologySpreadConstraint", s.get("topologyKey"))
        for s in pod.get("topologySpreadConstraints") or []
        if s.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
    ]
    affinity = lookup(pod, "affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution") or []
    keys += [("required pod affinity", t.get("topologyKey")) for t in affinity]
    names = ", ".join(g.resource.name for g in mine)
    auto = _auto_mode(graph, bearer.resource.region)
    for what, key in keys:
        if not isinstance(key, str) or any(_carries(key, g, auto) for g in mine):
            continue
        yield Finding(
            RULE,
            bearer.urn,
            f"{bearer.kind} {bearer.namespace}/{bearer.name} has a {what} on topologyKey {key!r}, a label no node "
            f"of the node groups it may land on ({names}) carries: the scheduler refuses every node without the key "
            "(missing required label) and every pod stays Pending",
            f"use a label EKS nodes carry ({ZONE} for zones, {HOSTNAME} for nodes), or add {key!r} to the node "
            "groups' labels",
        )


def _placeable(
    workload: KubeObject, pod: Mapping[str, Any], replicas: int, zones: set[str], nodes: int, names: str
) -> Iterator[Finding]:
    labels = lookup(workload.manifest, "spec.template.metadata.labels") or {}
    where = f"{workload.kind} {workload.namespace}/{workload.name}"
    terms = lookup(pod, "affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution") or []
    for term in terms:
        key = term.get("topologyKey")
        own = not term.get("namespaces") or workload.namespace in term.get("namespaces")
        if not own or not selects(term.get("labelSelector"), labels):
            continue
        if key == ZONE and zones and replicas > len(zones):
            yield Finding(
                RULE,
                workload.urn,
                f"{where} may run {replicas} replicas but its required pod anti-affinity on {ZONE} allows one per "
                f"zone, and its node groups ({names}) span {len(zones)} ({', '.join(sorted(zones))}): "
                f"{replicas - len(zones)} replica(s) stay Pending forever and no scale-up can place them",
                f"make the anti-affinity preferred, or spread with topologySpreadConstraints (maxSkew 1, {ZONE}), "
                f"or run at most {len(zones)} replicas",
            )
        elif key == HOSTNAME and nodes and replicas > nodes:
            yield Finding(
                RULE,
                workload.urn,
                f"{where} may run {replicas} replicas but its required pod anti-affinity on {HOSTNAME} allows one "
                f"per node, and its node groups ({names}) grow to {nodes} nodes at maxSize: "
                f"{replicas - nodes} replica(s) stay Pending forever",
                f"raise the node groups' maxSize to at least {replicas}, or make the anti-affinity preferred",
            )
    for spread in pod.get("topologySpreadConstraints") or []:
        if spread.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule" or spread.get("topologyKey") != ZONE:
            continue
        wanted = int(spread.get("minDomains") or 1)
        skew = int(spread.get("maxSkew") or 1)
        if zones and wanted > len(zones) and replicas > skew * len(zones):
            yield Finding(
                RULE,
                workload.urn,
                f"{where} may run {replicas} replicas but its topologySpreadConstraint on {ZONE} wants "
                f"minDomains {wanted} with maxSkew {skew} and DoNotSchedule, and its node groups ({names}) span "
                f"{len(zones)} zone(s): with fewer zones than minDomains at most {skew * len(zones)} pods place",
                f"set minDomains to at most {len(zones)}, or whenUnsatisfiable: ScheduleAnyway",
            )
