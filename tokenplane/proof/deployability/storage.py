"""A StorageClass binds volumes only when its CSI driver runs with the IAM it needs.

The EBS CSI controller calls ec2:CreateVolume/AttachVolume. As an EKS add-on it
takes its credentials from ``serviceAccountRoleArn`` (IRSA) or a Pod Identity
association for ``kube-system/ebs-csi-controller-sa``, made by the add-on's own
``podIdentityAssociations`` or by a separate association resource; the node role
fallback is off where IMDS allows one hop only, as on tokenplane's GPU nodes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.addon_iam import pod_identity_roles
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import ROLE, role_named
from tokenplane.proof.render import RenderedResource

RULE = "csi-iam"
EBS_PROVISIONER = "ebs.csi.aws.com"
EBS_ADDON = "aws-ebs-csi-driver"
EBS_SERVICE_ACCOUNT = ("kube-system", "ebs-csi-controller-sa")
ADDON = "aws:eks/addon:Addon"


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
        for addon in addons:
            if addon.inputs.get("serviceAccountRoleArn") or _role_arns(graph, addon):
                continue
            yield Finding(
                RULE,
                addon.urn,
                f"the {EBS_ADDON} add-on has no IAM role (no serviceAccountRoleArn, no Pod Identity association "
                f"for {'/'.join(EBS_SERVICE_ACCOUNT)}): it cannot create volumes, so PVCs of "
                f"{', '.join(sc.name for sc in classes)} never bind",
                "give the add-on service_account_role_arn: an IRSA role with AmazonEBSCSIDriverPolicy",
            )


def _role_arns(graph: Graph, addon: RenderedResource) -> list[Any]:
    """The role ARNs Pod Identity gives the EBS controller's service account (``addon_iam``'s reading, shared)."""
    return pod_identity_roles(graph, addon, EBS_SERVICE_ACCOUNT[1])


def ebs_csi_roles(graph: Graph, region: str | None) -> list[RenderedResource]:
    """The program's roles the EBS CSI add-on's controller runs as in ``region``: its ``serviceAccountRoleArn``
    (followed through the input's dependencies, else by the ARN's name) and its Pod Identity associations'."""
    out: list[RenderedResource] = []
    for addon in graph.of_type(ADDON, region):
        if addon.inputs.get("addonName") != EBS_ADDON:
            continue
        deps = [
            graph.by_urn[u] for u in addon.property_dependencies.get("serviceAccountRoleArn", []) if u in graph.by_urn
        ]
        irsa: list[RenderedResource | None] = [r for r in deps if r.type == ROLE]
        named = [addon.inputs.get("serviceAccountRoleArn")] if not irsa else []
        roles = irsa + [role_named(graph, arn) for arn in [*named, *_role_arns(graph, addon)]]
        out += [r for r in roles if r is not None and r.urn not in {o.urn for o in out}]
    return out
