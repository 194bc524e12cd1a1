"""Every zonal StorageClass whose pods may land in several zones binds WaitForFirstConsumer.

An EBS volume lives in one Availability Zone and attaches only to instances there. A StorageClass's
``volumeBindingMode`` says when its volume is made: ``Immediate`` (the default where the field is unset) provisions
and binds as soon as the claim exists, "without knowledge of Pod scheduling requirements", so "this may result in
unschedulable Pods"; ``WaitForFirstConsumer`` waits for the scheduler to pick a node and makes the volume in its zone
(https://kubernetes.io/docs/concepts/storage/storage-classes/#volume-binding-mode). With Immediate the EBS CSI driver
picks each claim's zone on its own, regardless of the pod's zone spread, affinity and which zones have room; a pod
whose volume landed in a zone none of the nodes that fit it are in stays Pending ("node(s) had volume node affinity
conflict", kubernetes/kubernetes#91299), and a StatefulSet spread over zones never becomes ready. The EBS CSI
driver's own examples all use WaitForFirstConsumer (https://github.com/kubernetes-sigs/aws-ebs-csi-driver,
examples/kubernetes/dynamic-provisioning), and so does the ``gp2`` class EKS ships (``kubectl get storageclass``
on a new cluster: ``gp2 kubernetes.io/aws-ebs Delete WaitForFirstConsumer``), which is therefore not judged.

Judged: StorageClasses the program creates on a zonal provisioner (``ZONAL``: EBS, in-tree and CSI, and EKS Auto
Mode's), with ``volumeBindingMode`` other than WaitForFirstConsumer, used by a pod that may land in more than one zone:
the zones of the subnets of the node groups it may land on (its node selector and required node affinity, zone
terms included, and its tolerations), narrowed to the zones the class's ``allowedTopologies`` allows. A class pinned
to one zone, or pods whose node groups span one zone, are fine. The pods read: each workload's volumes on a
PersistentVolumeClaim of the program (a claim without a class takes the program's default class), its ephemeral
volumeClaimTemplates, and a StatefulSet's volumeClaimTemplates.

It cannot see: nodes made outside the program's node groups (Karpenter, Fargate, an existing cluster's).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph, KubeObject, lookup
from tokenplane.proof.deployability.scheduling import ZONE, NodeGroup, lands_on

RULE = "zonal-binding"
ZONAL = frozenset({"ebs.csi.aws.com", "kubernetes.io/aws-ebs", "ebs.csi.eks.amazonaws.com"})
WAIT = "WaitForFirstConsumer"
DEFAULT_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
# Node labels a class's allowedTopologies may name a zone by (the EBS CSI driver's own key among them).
ZONE_KEYS = frozenset({ZONE, "failure-domain.beta.kubernetes.io/zone", "topology.ebs.csi.aws.com/zone"})


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        groups = [NodeGroup.of(r, graph) for r in graph.of_type(NODE_GROUP, region)]
        classes = {c.name: c for c in graph.kube(region, "StorageClass")}
        immediate = {
            name: c
            for name, c in classes.items()
            if str(c.manifest.get("provisioner")) in ZONAL and c.manifest.get("volumeBindingMode", "Immediate") != WAIT
        }
        if not immediate or not groups:
            continue
        default = next((n for n, c in classes.items() if _is_default(c)), None)
        claims = {(o.namespace, o.name): o for o in graph.kube(region, "PersistentVolumeClaim")}
        for bearer in graph.pod_bearers(region):
            for volume, class_name in _claims(bearer, claims, default):
                storage_class = immediate.get(class_name)
                if storage_class is None:
                    continue
                zones = pod_zones(bearer.pod_spec(), groups)
                if (allowed := _allowed(storage_class)) is not None:
                    zones &= allowed
                if len(zones) > 1:
                    yield _finding(bearer, volume, storage_class, zones)


def _claims(
    bearer: KubeObject, claims: dict[tuple[str, str], KubeObject], default: str | None
) -> Iterator[tuple[str, str]]:
    """(where the pod's claim is declared, its class name) for every claim the pod mounts whose class is known."""
    for volume in bearer.pod_spec().get("volumes") or []:
        name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        ephemeral = lookup(volume, "ephemeral.volumeClaimTemplate.spec")
        if isinstance(name, str) and (bearer.namespace, name) in claims:
            spec = claims[(bearer.namespace, name)].manifest.get("spec") or {}
            where = f"PersistentVolumeClaim {bearer.namespace}/{name}"
        elif isinstance(ephemeral, dict):
            spec, where = ephemeral, f"volume {volume.get('name')}'s ephemeral volumeClaimTemplate"
        else:
            continue
        if (chosen := _class(spec, default)) is not None:
            yield where, chosen
    if bearer.kind == "StatefulSet":
        for template in lookup(bearer.manifest, "spec.volumeClaimTemplates") or []:
            if (chosen := _class(template.get("spec") or {}, default)) is not None:
                yield f"volumeClaimTemplates {lookup(template, 'metadata.name')}", chosen


def _class(spec: dict[str, Any], default: str | None) -> str | None:
    name = spec.get("storageClassName")
    return name if isinstance(name, str) else default


def pod_zones(pod: dict[str, Any], groups: list[NodeGroup]) -> set[str]:
    """The zones a node the pod fits may be in: its node groups' subnets' zones, narrowed by its zone terms."""
    zones: set[str] = set()
    for group in groups:
        if not lands_on(pod, group):
            continue
        for zone in group.possible.get(ZONE, frozenset()):
            pinned = {**group.possible, ZONE: frozenset({zone})}
            if lands_on(pod, NodeGroup(group.resource, group.labels, group.taints, pinned)):
                zones.add(zone)
    return zones


def _allowed(storage_class: KubeObject) -> set[str] | None:
    """The zones the class's allowedTopologies allows; None (every zone) where it does not restrict zones."""
    terms = storage_class.manifest.get("allowedTopologies") or []
    allowed: set[str] = set()
    for term in terms:
        values = [
            str(v)
            for e in term.get("matchLabelExpressions") or []
            if e.get("key") in ZONE_KEYS
            for v in e.get("values") or []
        ]
        if not values:
            return None  # a term without a zone allows every zone
        allowed |= set(values)
    return allowed if terms else None


def _is_default(storage_class: KubeObject) -> bool:
    annotations = lookup(storage_class.manifest, "metadata.annotations") or {}
    return str(annotations.get(DEFAULT_ANNOTATION, "")).lower() == "true"


def _finding(bearer: KubeObject, where: str, storage_class: KubeObject, zones: set[str]) -> Finding:
    mode = storage_class.manifest.get("volumeBindingMode")
    said = f"volumeBindingMode {mode}" if mode else "no volumeBindingMode (so Immediate)"
    return Finding(
        RULE,
        bearer.urn,
        f"{bearer.kind} {bearer.namespace}/{bearer.name}'s {where} uses StorageClass {storage_class.name} "
        f"({storage_class.manifest.get('provisioner')}, {said}), and its pods may land in {len(zones)} zones "
        f"({', '.join(sorted(zones))}): each volume is made in some zone before its pod is scheduled, an EBS volume "
        "attaches only in its own zone, and a pod whose volume is elsewhere than the nodes that fit it stays Pending "
        "(volume node affinity conflict)",
        f"set volumeBindingMode: {WAIT} on StorageClass {storage_class.name} (a new class: the field is immutable), "
        "or pin its allowedTopologies to one zone the pods can land in",
    )
