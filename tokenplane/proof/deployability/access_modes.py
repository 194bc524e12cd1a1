"""Every volume claim asks for access modes its StorageClass's provisioner can provide.

An EBS volume attaches to one node: the EBS CSI driver (``ebs.csi.aws.com``, and the in-tree ``kubernetes.io/aws-ebs``
that EKS's ``gp2`` class names, migrated to it) supports ReadWriteOnce and ReadWriteOncePod for filesystem volumes;
multi-attach (ReadWriteMany) only for ``volumeMode: Block`` on io1/io2
(https://github.com/kubernetes-sigs/aws-ebs-csi-driver/blob/master/docs/multi-attach.md). A ReadWriteMany or
ReadOnlyMany filesystem claim on an EBS class stays Pending ("volume capabilities not supported") and so does every
pod that mounts it. EFS (``efs.csi.aws.com``) provides every mode. The claims read: PVCs and StatefulSets'
``volumeClaimTemplates``; a claim without a class, a class the program does not make (other than EKS's gp2), or a
provisioner not listed here is not judged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup

RULE = "access-mode-supported"
EBS = frozenset({"ebs.csi.aws.com", "kubernetes.io/aws-ebs"})
EBS_MODES = frozenset({"ReadWriteOnce", "ReadWriteOncePod"})
EKS_SHIPPED = {"gp2": "kubernetes.io/aws-ebs"}  # https://docs.aws.amazon.com/eks/latest/userguide/storage-classes.html


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
        for urn, who, spec in claims:
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
