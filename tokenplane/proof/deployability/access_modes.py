"""Every volume claim asks for access modes its StorageClass's provisioner can provide.

An EBS volume attaches to one node: the EBS CSI driver (``ebs.csi.aws.com``, and the in-tree ``kubernetes.io/aws-ebs``
that EKS's ``gp2`` class names, migrated to it) supports ReadWriteOnce and ReadWriteOncePod for filesystem volumes;
multi-attach (ReadWriteMany) only for ``volumeMode: Block`` on io1/io2
(https://github.com/kubernetes-sigs/aws-ebs-csi-driver/blob/master/docs/multi-attach.md). A ReadWriteMany or
ReadOnlyMany filesystem claim on an EBS class stays Pending ("volume capabilities not supported") and so does every
pod that mounts it. EFS (``efs.csi.aws.com``) provides every mode. The claims read: PVCs and StatefulSets'
``volumeClaimTemplates``; a claim without a class, a class the program does not make (other than EKS's gp2), a
provisioner not listed here, or a claim that names its volume (``volumeName``: never provisioned) is not judged.

The same rule holds a ReadWriteOnce EBS claim to the pods that mount it: the volume attaches to one node at a time
and lives in one AZ (https://kubernetes.io/docs/concepts/storage/persistent-volumes/#access-modes: "mounted as
read-write by a single node"). A second pod on another node waits in ContainerCreating ("Multi-Attach error ...
Volume is already used by pod(s)", kubernetes pkg/controller/volume/attachdetach/reconciler, reportMultiAttachError),
or Pending where its spread or anti-affinity sends it to another zone ("volume node affinity conflict"); with
ReadWriteOncePod the scheduler refuses a second pod even on the same node (VolumeRestrictions). What is sound to say:

- the claim's pods may number more than one (Deployments', StatefulSets' and ReplicaSets' replicas at their
  autoscaler's maximum, summed over every workload that mounts the claim, or a DaemonSet's one per node) and the node
  groups they may land on grow to more than one node: the scheduler is free to put them on different nodes, its
  default spreading (podtopologyspread systemDefaultConstraints, kubernetes.io/hostname ScheduleAnyway) prefers to,
  and a required spread or anti-affinity forces it;
- a single-replica Deployment under RollingUpdate with a surge (the default 25% rounds up to one pod): each later
  rollout starts the new pod while the old one still holds the volume, the new pod never becomes Ready off the old
  pod's node, and the rollout never completes. ``strategy: Recreate`` (or maxSurge 0) stops the old pod first.

Pods pinned to one node (a ``kubernetes.io/hostname`` nodeSelector or required pod affinity on it), claims not on
EBS, and clusters whose nodes the program does not create are not judged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph, KubeObject, lookup
from tokenplane.proof.deployability.node_capacity import maxima
from tokenplane.proof.deployability.scheduling import NodeGroup, lands_on

RULE = "access-mode-supported"
EBS = frozenset({"ebs.csi.aws.com", "kubernetes.io/aws-ebs"})
EBS_MODES = frozenset({"ReadWriteOnce", "ReadWriteOncePod"})
EKS_SHIPPED = {"gp2": "kubernetes.io/aws-ebs"}  # https://docs.aws.amazon.com/eks/latest/userguide/storage-classes.html
MOUNTERS = ("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet")
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def _unsupported(spec: Mapping[str, Any], provisioner: str) -> list[str]:
    if provisioner not in EBS or spec.get("volumeMode") == "Block":
        return []
    return [str(m) for m in spec.get("accessModes") or [] if m not in EBS_MODES]


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        provisioners = dict(EKS_SHIPPED)
        provisioners.update({c.name: str(c.manifest.get("provisioner")) for c in graph.kube(region, "StorageClass")})
        claims: list[tuple[str, str, Mapping[str, Any]]] = []  # (urn, who, claim spec)
        for pvc in graph.kube(region, "PersistentVolumeClaim"):
            claims.append(
                (pvc.urn, f"PersistentVolumeClaim {pvc.namespace}/{pvc.name}", pvc.manifest.get("spec") or {})
            )
        for sts in graph.kube(region, "StatefulSet"):
            for template in lookup(sts.manifest, "spec.volumeClaimTemplates") or []:
                who = f"StatefulSet {sts.namespace}/{sts.name} volumeClaimTemplate {lookup(template, 'metadata.name')}"
                claims.append((sts.urn, who, template.get("spec") or {}))
        yield from _shared(graph, region, provisioners)
        for urn, who, spec in claims:
            if spec.get("volumeName"):
                continue  # a claim that names its volume binds to it or waits (claim-binds): nothing is provisioned
            name = spec.get("storageClassName")
            provisioner = provisioners.get(str(name)) if name else None
            if provisioner is None or not (modes := _unsupported(spec, provisioner)):
                continue
            yield Finding(
                RULE,
                urn,
                f"{who} asks for {', '.join(modes)} on StorageClass {name!r}, whose provisioner {provisioner} makes "
                "EBS volumes, which attach to one node (ReadWriteOnce, ReadWriteOncePod): the claim stays Pending "
                "(volume capabilities not supported), and so does every pod that mounts it",
                "use ReadWriteOnce (one claim per replica: a StatefulSet's volumeClaimTemplates), or a StorageClass "
                "of the EFS CSI driver (efs.csi.aws.com) for storage shared across nodes",
            )


def _claim_names(pod: Mapping[str, Any]) -> set[str]:
    return {
        str(v["persistentVolumeClaim"].get("claimName"))
        for v in pod.get("volumes") or []
        if isinstance(v.get("persistentVolumeClaim"), dict)
    }


def _pinned(pod: Mapping[str, Any]) -> bool:
    """True if every pod of the template lands on one node: a hostname nodeSelector or required affinity on it."""
    if HOSTNAME in (pod.get("nodeSelector") or {}):
        return True
    terms = lookup(pod, "affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution") or []
    return any(t.get("topologyKey") == HOSTNAME for t in terms)


def _forced_apart(pod: Mapping[str, Any], pods: int) -> bool:
    """True if a required spread (maxSkew below the pod count) or anti-affinity keeps the pods on different nodes."""
    spreads = [
        s
        for s in pod.get("topologySpreadConstraints") or []
        if s.get("whenUnsatisfiable") != "ScheduleAnyway" and int(s.get("maxSkew") or 1) < pods
    ]
    anti = lookup(pod, "affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution") or []
    return any(t.get("topologyKey") in (HOSTNAME, ZONE) for t in [*spreads, *anti])


def _surges(deployment: KubeObject) -> bool:
    """True if a rollout of this one-replica Deployment runs a new pod beside the old one."""
    strategy = lookup(deployment.manifest, "spec.strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return False
    surge = (strategy.get("rollingUpdate") or {}).get("maxSurge", "25%")
    text = str(surge).removesuffix("%")
    return not text.isdigit() or int(text) > 0  # a percent of one replica rounds up: any above 0 is one pod


def _shared(graph: Graph, region: str, provisioners: Mapping[str, str]) -> Iterator[Finding]:
    groups = [NodeGroup.of(r, graph) for r in graph.of_type(NODE_GROUP, region)]
    if not groups:
        return  # the nodes are made outside the program: how many there are is unknown
    most = maxima(graph, region)
    for pvc in graph.kube(region, "PersistentVolumeClaim"):
        spec = pvc.manifest.get("spec") or {}
        modes = set(spec.get("accessModes") or [])
        if provisioners.get(str(spec.get("storageClassName"))) not in EBS or not modes or not modes <= EBS_MODES:
            continue
        mounters = [
            w
            for w in graph.kube(region, *MOUNTERS)
            if w.namespace == pvc.namespace and pvc.name in _claim_names(w.pod_spec())
        ]
        if not mounters or any(_pinned(w.pod_spec()) for w in mounters):
            continue
        mine = [g for g in groups if any(lands_on(w.pod_spec(), g) for w in mounters)]
        nodes = sum(int(float(lookup(g.resource.inputs, "scalingConfig.maxSize") or 0)) for g in mine)
        pods = sum(
            nodes
            if w.kind == "DaemonSet"
            else most.get((w.namespace, w.name), int(lookup(w.manifest, "spec.replicas") or 1))
            for w in mounters
        )
        once_pod = "ReadWriteOncePod" in modes
        if nodes <= 1 and not once_pod:
            continue
        who = ", ".join(f"{w.kind} {w.name}" for w in mounters)
        where = f"PersistentVolumeClaim {pvc.namespace}/{pvc.name} ({', '.join(sorted(modes))}, an EBS volume)"
        fix = (
            "give each replica its own volume (a StatefulSet's volumeClaimTemplates), share data on EFS "
            "(efs.csi.aws.com, ReadWriteMany), or run one replica with strategy Recreate"
        )
        if pods > 1:
            apart = any(_forced_apart(w.pod_spec(), pods) for w in mounters)
            how = (
                "its required spread or anti-affinity puts them on different nodes (or zones)"
                if apart
                else f"the scheduler may place them on different nodes of {nodes} and by default spreads them"
            )
            yield Finding(
                RULE,
                pvc.urn,
                f"{where} is mounted by up to {pods} pods ({who}) and {how}: the volume attaches to one node, so "
                "a pod elsewhere waits in ContainerCreating (Multi-Attach error) or Pending in another zone "
                "(volume node affinity conflict), and the workload never becomes fully available"
                + ("; ReadWriteOncePod refuses a second pod on any node" if once_pod else ""),
                fix,
            )
        elif mounters[0].kind == "Deployment" and _surges(mounters[0]):
            yield Finding(
                RULE,
                pvc.urn,
                f"{where} is mounted by one-replica Deployment {mounters[0].name}, whose RollingUpdate surges: each "
                "later rollout starts the new pod while the old one holds the volume, and on another node the new "
                "pod waits in ContainerCreating (Multi-Attach error), never becomes Ready, and the rollout never "
                "completes",
                'set spec.strategy to {"type": "Recreate"} (or rollingUpdate maxSurge 0, maxUnavailable 1)',
            )
