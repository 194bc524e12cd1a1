"""Every static PersistentVolume over one of the program's EBS volumes keeps its pods in the volume's zone.

An EBS volume lives in one Availability Zone and attaches only to instances there (AttachVolume answers
InvalidVolume.ZoneMismatch; the CSI driver's attach fails and the pod stays ContainerCreating). A volume the EBS CSI
driver provisions carries the zone in its PersistentVolume's ``nodeAffinity``; a *static* PersistentVolume, one the
program writes over a pre-created volume (``csi.driver: ebs.csi.aws.com``, ``csi.volumeHandle`` the volume's ID),
carries only what the program writes. The scheduler keeps a pod to the nodes a PV's ``spec.nodeAffinity`` allows
(VolumeBinding) and to the zone its ``topology.kubernetes.io/zone`` label names (VolumeZone)
(https://kubernetes.io/docs/concepts/storage/persistent-volumes/#node-affinity,
https://kubernetes.io/docs/reference/scheduling/config/#scheduling-plugins). Without either it places the pod in any
zone its node groups span, and the EBS CSI driver's own static-provisioning example pins the zone for that reason
(https://github.com/kubernetes-sigs/aws-ebs-csi-driver/tree/master/examples/kubernetes/static-provisioning, a
``nodeAffinity`` on ``topology.kubernetes.io/zone``; the driver's nodes also carry ``topology.ebs.csi.aws.com/zone``).
A pod that lands elsewhere never starts; one that lands right moves out of the zone on the next drain or node
replacement. An affinity naming another zone than the volume's keeps every pod away from it.

Judged: PersistentVolumes of the EBS CSI drivers (``ebs.csi.aws.com``, EKS Auto Mode's ``ebs.csi.eks.amazonaws.com``)
whose ``volumeHandle`` is an ``aws.ebs.Volume`` of the program with a literal ``availabilityZone``, mounted (through a
claim bound by ``volumeName`` or the PV's ``claimRef``) by pods that may land in a zone other than the volume's: the
zones of the node groups they fit (``zonal_binding``'s reading), narrowed to the zones the PV allows. A PV that allows
only zones other than the volume's is judged whenever a pod mounts it.

It cannot see: volumes not made by the program (an ID from config), nodes outside the program's node groups
(Karpenter, Fargate), the in-tree ``awsElasticBlockStore`` source.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph, KubeObject, lookup
from tokenplane.proof.deployability.scheduling import ZONE, NodeGroup
from tokenplane.proof.deployability.zonal_binding import ZONE_KEYS, pod_zones

RULE = "static-volume-zone"
DRIVERS = frozenset({"ebs.csi.aws.com", "ebs.csi.eks.amazonaws.com"})
VOLUME = "aws:ebs/volume:Volume"
# The PV labels VolumeZone reads a zone from (several zones joined by "__").
ZONE_LABELS = (ZONE, "failure-domain.beta.kubernetes.io/zone")


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        groups = [NodeGroup.of(r, graph) for r in graph.of_type(NODE_GROUP, region)]
        claims = graph.kube(region, "PersistentVolumeClaim")
        bearers = graph.pod_bearers(region)
        for pv in graph.kube(region, "PersistentVolume"):
            zone = _volume_zone(graph, pv)
            if zone is None:
                continue
            claim = _bound_claim(pv, claims)
            if claim is None:
                continue
            allowed = _allowed(pv)
            for bearer in bearers:
                if bearer.namespace != claim.namespace or not _mounts(bearer, claim.name):
                    continue
                if allowed is not None and zone not in allowed:
                    yield _elsewhere(bearer, pv, claim, zone, allowed)
                    continue
                if not groups:
                    continue
                zones = pod_zones(bearer.pod_spec(), groups)
                if allowed is not None:
                    zones &= allowed
                if zones - {zone}:
                    yield _unpinned(bearer, pv, claim, zone, zones, allowed)


def _volume_zone(graph: Graph, pv: KubeObject) -> str | None:
    """The AZ of the program's EBS volume a CSI PersistentVolume names, or None."""
    csi = lookup(pv.manifest, "spec.csi") or {}
    if csi.get("driver") not in DRIVERS:
        return None
    volumes = [r for r in graph.by_physical_ids(csi.get("volumeHandle")) if r.type == VOLUME]
    zone = volumes[0].inputs.get("availabilityZone") if len(volumes) == 1 else None
    return zone if isinstance(zone, str) and zone else None


def _bound_claim(pv: KubeObject, claims: list[KubeObject]) -> KubeObject | None:
    ref = lookup(pv.manifest, "spec.claimRef") or {}
    for claim in claims:
        named = (claim.manifest.get("spec") or {}).get("volumeName") == pv.name
        if named or (ref.get("name") == claim.name and ref.get("namespace", claim.namespace) == claim.namespace):
            return claim
    return None


def _mounts(bearer: KubeObject, claim: str) -> bool:
    volumes = bearer.pod_spec().get("volumes") or []
    return any((v.get("persistentVolumeClaim") or {}).get("claimName") == claim for v in volumes)


def _allowed(pv: KubeObject) -> set[str] | None:
    """The zones the PV keeps its pods to: its label's, narrowed by its required node affinity's; None for any."""
    allowed: set[str] | None = None
    labels = lookup(pv.manifest, "metadata.labels") or {}
    for key in ZONE_LABELS:
        if isinstance(labels.get(key), str) and labels[key]:
            allowed = set(labels[key].split("__"))
    terms = lookup(pv.manifest, "spec.nodeAffinity.required.nodeSelectorTerms") or []
    if terms:
        by_terms = set[str]()
        for term in terms:
            zones = _term_zones(term)
            if zones is None:
                return allowed  # a term that allows every zone: the affinity narrows nothing
            by_terms |= zones
        allowed = by_terms if allowed is None else allowed & by_terms
    return allowed


def _term_zones(term: dict[str, Any]) -> set[str] | None:
    zones: set[str] | None = None
    for expression in term.get("matchExpressions") or []:
        if expression.get("key") in ZONE_KEYS and expression.get("operator") == "In":
            values = {str(v) for v in expression.get("values") or []}
            zones = values if zones is None else zones & values
    return zones


def _elsewhere(bearer: KubeObject, pv: KubeObject, claim: KubeObject, zone: str, allowed: set[str]) -> Finding:
    return Finding(
        RULE,
        bearer.urn,
        f"{bearer.kind} {bearer.namespace}/{bearer.name} mounts PersistentVolumeClaim {claim.namespace}/{claim.name}, "
        f"bound to static PersistentVolume {pv.name} over an EBS volume in {zone}, but the PV keeps its pods to "
        f"{', '.join(sorted(allowed))}: the volume attaches only in {zone}, so every pod either stays Pending or "
        "never starts (the attach fails, InvalidVolume.ZoneMismatch)",
        f"set PersistentVolume {pv.name}'s spec.nodeAffinity.required.nodeSelectorTerms to [{{matchExpressions: "
        f"[{{key: topology.kubernetes.io/zone, operator: In, values: [{zone}]}}]}}] (the volume's availabilityZone; "
        "nodeAffinity is immutable: replace the PV)",
    )


def _unpinned(
    bearer: KubeObject, pv: KubeObject, claim: KubeObject, zone: str, zones: set[str], allowed: set[str] | None
) -> Finding:
    said = "no zone" if allowed is None else f"zones {', '.join(sorted(allowed))}"
    return Finding(
        RULE,
        bearer.urn,
        f"{bearer.kind} {bearer.namespace}/{bearer.name} mounts PersistentVolumeClaim {claim.namespace}/{claim.name}, "
        f"bound to static PersistentVolume {pv.name} over an EBS volume in {zone}, and the PV names {said}, so its "
        f"pods may land in {', '.join(sorted(zones - {zone}))} too: an EBS volume attaches only in its own zone, so "
        "a pod placed there stays ContainerCreating (InvalidVolume.ZoneMismatch) and the rollout never completes, "
        "and one placed right leaves the zone on the next drain or node replacement",
        f"add spec.nodeAffinity.required.nodeSelectorTerms [{{matchExpressions: [{{key: topology.kubernetes.io/zone, "
        f"operator: In, values: [{zone}]}}]}}] to PersistentVolume {pv.name} (from the volume's availabilityZone; "
        "nodeAffinity is immutable: replace the PV)",
    )
