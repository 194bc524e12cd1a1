"""Every StorageClass a claim uses has a provisioner something in the program serves.

``provisioner-served``: a claim on a class is bound by the class's provisioner, an external CSI controller watching
for claims that name it. Where none runs, the claim stays Pending ("waiting for a volume to be created, either by
external provisioner \\"efs.csi.aws.com\\" or manually created"), every pod that mounts it stays Pending ("pod has
unbound immediate PersistentVolumeClaims") and Pulumi's await on the workload times out
(https://kubernetes.io/docs/concepts/storage/storage-classes/#provisioner; the symptom in
kubernetes-sigs/aws-efs-csi-driver#123). EKS runs none of AWS's CSI drivers by itself: each is an add-on, a Helm
chart or the driver's manifests the program installs (https://docs.aws.amazon.com/eks/latest/userguide/efs-csi.html,
ebs-csi.html, s3-csi.html, fsx-csi.html). The in-tree ``kubernetes.io/aws-ebs`` is no exception: since Kubernetes
1.23 EKS migrates it to the EBS CSI driver (CSIMigrationAWS), so its claims, EKS's own ``gp2`` class's included, bind
only with that driver installed (https://docs.aws.amazon.com/eks/latest/userguide/ebs-csi-migration-faq.html).

A provisioner is served by its EKS add-on (``aws:eks/addon:Addon`` with its ``addonName``), a Helm release of its
chart, or a Deployment, DaemonSet or StatefulSet running its driver image. The claims read: PersistentVolumeClaims,
StatefulSets' ``volumeClaimTemplates`` and ``storageClassName`` in a Helm release's values. Only the AWS provisioners
named in ``DRIVERS`` are judged (another one's controller cannot be recognised); ``ebs.csi.aws.com`` on a class the
program creates is ``csi-iam``'s (it reports a missing add-on there). Regions where the program creates no EKS
cluster, and programs deploying into an existing cluster (``--assume cluster``), whose drivers may already run, are
not judged.

The EFS driver provisions (``provisioningMode: efs-ap``) by creating an access point per claim, which its controller
does with its own AWS credentials: the add-on's ``serviceAccountRoleArn`` (IRSA) or a Pod Identity association for
``kube-system/efs-csi-controller-sa``, with the managed policy AmazonEFSCSIDriverPolicy
(``elasticfilesystem:CreateAccessPoint``, https://docs.aws.amazon.com/eks/latest/userguide/efs-csi.html, "Step 1:
Create an IAM role"). An EFS add-on with neither, where no role of the program holds that policy or
``elasticfilesystem:CreateAccessPoint`` (a node role it could fall back to), leaves such claims Pending too
("failed to provision volume ... AccessDeniedException ... elasticfilesystem:CreateAccessPoint").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import CLUSTER, HELM_RELEASE, Graph, lookup
from tokenplane.proof.deployability.iam_policy import POD_IDENTITY
from tokenplane.proof.deployability.known_images import image_name
from tokenplane.proof.deployability.storage import ADDON, EBS_PROVISIONER
from tokenplane.proof.deployability.storage_classes import classes_in_values

RULE = "provisioner-served"
EKS_SHIPPED = {"gp2": "kubernetes.io/aws-ebs"}  # https://docs.aws.amazon.com/eks/latest/userguide/storage-classes.html
CONTROLLER_KINDS = ("Deployment", "DaemonSet", "StatefulSet")
EFS_PROVISIONER = "efs.csi.aws.com"
EFS_ACCOUNT = ("kube-system", "efs-csi-controller-sa")
EFS_GRANTS = ("AmazonEFSCSIDriverPolicy", "elasticfilesystem:CreateAccessPoint", "elasticfilesystem:*")
IAM_TYPES = (
    "aws:iam/role:Role",
    "aws:iam/rolePolicy:RolePolicy",
    "aws:iam/policy:Policy",
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
)


@dataclass(frozen=True)
class Driver:
    """What serves one provisioner: its EKS add-on, the Helm chart and the image its controller runs."""

    addon: str
    chart: str
    image: str


EBS = Driver("aws-ebs-csi-driver", "aws-ebs-csi-driver", "aws-ebs-csi-driver")
DRIVERS = {
    EBS_PROVISIONER: EBS,
    "kubernetes.io/aws-ebs": EBS,  # migrated to the EBS CSI driver since Kubernetes 1.23
    "efs.csi.aws.com": Driver("aws-efs-csi-driver", "aws-efs-csi-driver", "aws-efs-csi-driver"),
    "s3.csi.aws.com": Driver("aws-mountpoint-s3-csi-driver", "aws-mountpoint-s3-csi-driver", "aws-s3-csi-driver"),
    "fsx.csi.aws.com": Driver("aws-fsx-csi-driver", "aws-fsx-csi-driver", "aws-fsx-csi-driver"),
}


def _served(graph: Graph, region: str, driver: Driver) -> bool:
    if any(a.inputs.get("addonName") == driver.addon for a in graph.of_type(ADDON, region)):
        return True
    if any(str(r.inputs.get("chart") or "").endswith(driver.chart) for r in graph.of_type(HELM_RELEASE, region)):
        return True
    for workload in graph.kube(region, *CONTROLLER_KINDS):
        containers = (workload.pod_template().get("spec") or {}).get("containers") or []
        if any(image_name(str(c.get("image") or "")) == driver.image for c in containers if isinstance(c, dict)):
            return True
    return False


def check(graph: Graph) -> Iterator[Finding]:
    if graph.assumed.cluster:
        return
    for region in graph.regions():
        if not graph.of_type(CLUSTER, region):
            continue
        classes = {c.name: c for c in graph.kube(region, "StorageClass")}
        provisioners = {**EKS_SHIPPED, **{n: str(c.manifest.get("provisioner") or "") for n, c in classes.items()}}
        claims: list[tuple[str, str, str]] = []  # (urn, who, class)
        for pvc in graph.kube(region, "PersistentVolumeClaim"):
            claims.append(
                (pvc.urn, f"PersistentVolumeClaim {pvc.namespace}/{pvc.name}", _class(pvc.manifest.get("spec")))
            )
        for sts in graph.kube(region, "StatefulSet"):
            for template in lookup(sts.manifest, "spec.volumeClaimTemplates") or []:
                who = f"StatefulSet {sts.namespace}/{sts.name} volumeClaimTemplate {lookup(template, 'metadata.name')}"
                claims.append((sts.urn, who, _class(template.get("spec"))))
        for release in graph.of_type(HELM_RELEASE, region):
            for path, name in classes_in_values(release.inputs.get("values")):
                claims.append((release.urn, f"Helm release {release.name} ({path})", name))
        for urn, who, name in claims:
            provisioner = provisioners.get(name, "")
            driver = DRIVERS.get(provisioner)
            if driver is None or (provisioner == EBS_PROVISIONER and name in classes):
                continue  # not one of AWS's, or csi-iam's to report
            if _served(graph, region, driver):
                if provisioner == EFS_PROVISIONER and _access_points(classes[name].manifest if name in classes else {}):
                    yield from _efs_identity(graph, region, urn, who, name)
                continue
            yield Finding(
                RULE,
                urn,
                f"{who} uses StorageClass {name!r}, whose provisioner {provisioner} nothing in the program serves "
                f"(no {driver.addon} EKS add-on, Helm release of its chart or workload running its image in {region}): "
                f'the claim stays Pending ("waiting for a volume to be created, either by external provisioner '
                f'\\"{provisioner}\\""), and so does every pod that mounts it',
                f"install the {driver.addon} EKS add-on (aws.eks.Addon addon_name={driver.addon!r}, with an IAM role "
                f"for its controller) and make the claim's workload wait for it",
            )


def _class(spec: object) -> str:
    return str(spec.get("storageClassName") or "") if isinstance(spec, dict) else ""


def _access_points(storage_class: dict[str, object]) -> bool:
    parameters = storage_class.get("parameters")
    return isinstance(parameters, dict) and parameters.get("provisioningMode") == "efs-ap"


def _efs_identity(graph: Graph, region: str, urn: str, who: str, name: str) -> Iterator[Finding]:
    """The EFS add-on's controller has no AWS identity that may create access points."""
    addons = [a for a in graph.of_type(ADDON, region) if a.inputs.get("addonName") == DRIVERS[EFS_PROVISIONER].addon]
    if not addons:
        return  # a chart or manifests: their service account's role is service-account-trust's to judge
    for addon in addons:
        inline = [a for a in addon.inputs.get("podIdentityAssociations") or [] if isinstance(a, dict)]
        if addon.inputs.get("serviceAccountRoleArn") or any(a.get("serviceAccount") == EFS_ACCOUNT[1] for a in inline):
            return
    if any(
        (str(a.inputs.get("namespace")), str(a.inputs.get("serviceAccount"))) == EFS_ACCOUNT
        for a in graph.of_type(POD_IDENTITY, region)
    ):
        return
    written = json.dumps([r.inputs for t in IAM_TYPES for r in graph.of_type(t)], default=str)
    if any(grant in written for grant in EFS_GRANTS):
        return  # some role of the program may create access points (the node role, say)
    yield Finding(
        RULE,
        urn,
        f"{who} uses StorageClass {name!r} (efs.csi.aws.com, provisioningMode efs-ap), and the aws-efs-csi-driver "
        f"add-on has no IAM role (no serviceAccountRoleArn, no Pod Identity association for {'/'.join(EFS_ACCOUNT)}) "
        "and no role of the program may call elasticfilesystem:CreateAccessPoint: the controller cannot create the "
        "claim's access point and the claim stays Pending",
        "give the add-on service_account_role_arn: an IRSA role for kube-system/efs-csi-controller-sa with "
        "arn:aws:iam::aws:policy/service-role/AmazonEFSCSIDriverPolicy",
    )
