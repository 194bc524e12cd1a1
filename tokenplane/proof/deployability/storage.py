"""A StorageClass binds volumes only when its CSI driver runs with the IAM it needs.

The EBS CSI controller calls ec2:CreateVolume/AttachVolume. As an EKS add-on it
takes its credentials from ``serviceAccountRoleArn`` (IRSA) or a Pod Identity
association for ``kube-system/ebs-csi-controller-sa``; the node role fallback
is off where IMDS allows one hop only, as on tokenplane's GPU nodes.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

RULE = "csi-iam"
EBS_PROVISIONER = "ebs.csi.aws.com"
EBS_ADDON = "aws-ebs-csi-driver"
EBS_SERVICE_ACCOUNT = ("kube-system", "ebs-csi-controller-sa")
ADDON = "aws:eks/addon:Addon"
POD_IDENTITY = "aws:eks/podIdentityAssociation:PodIdentityAssociation"


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        classes = [c for c in graph.kube(region, "StorageClass") if c.manifest.get("provisioner") == EBS_PROVISIONER]
        if not classes:
            continue
        addons = [a for a in graph.of_type(ADDON, region) if a.inputs.get("addonName") == EBS_ADDON]
        if not addons:
            for sc in classes:
                yield Finding(
                    RULE,
                    sc.urn,
                    f"StorageClass {sc.name} uses {EBS_PROVISIONER}, but the {EBS_ADDON} add-on is not installed "
                    f"in {region}: its PVCs stay Pending",
                    f"add the {EBS_ADDON} EKS add-on with an IRSA role",
                )
            continue
        associations = {
            (str(a.inputs.get("namespace")), str(a.inputs.get("serviceAccount")))
            for a in graph.of_type(POD_IDENTITY, region)
        }
        for addon in addons:
            if addon.inputs.get("serviceAccountRoleArn") or EBS_SERVICE_ACCOUNT in associations:
                continue
            yield Finding(
                RULE,
                addon.urn,
                f"the {EBS_ADDON} add-on has no IAM role (no serviceAccountRoleArn, no Pod Identity association "
                f"for {'/'.join(EBS_SERVICE_ACCOUNT)}): it cannot create volumes, so PVCs of "
                f"{', '.join(sc.name for sc in classes)} never bind",
                "give the add-on service_account_role_arn: an IRSA role with AmazonEBSCSIDriverPolicy",
            )
