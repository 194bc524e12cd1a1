"""An EKS add-on that calls AWS works only with an IAM role, given by one of three routes.

The add-ons below run a controller or agent that calls AWS APIs. EKS's add-on page lists each one's "Required IAM
permissions" (https://docs.aws.amazon.com/eks/latest/userguide/workloads-add-ons-available-eks.html): the add-on's
service account gets them from ``serviceAccountRoleArn`` (IRSA), from a Pod Identity association for that account
(the add-on's own ``podIdentityAssociations`` or a separate ``aws.eks.PodIdentityAssociation``), or, for pods that
reach the instance metadata service, from the node's role (the AWS SDKs' last credential source). With none of them
the add-on installs and reports ACTIVE, and every call it makes is refused: the CloudWatch agent's PutMetricData and
Fluent Bit's PutLogEvents (Container Insights stays empty), the VPC CNI's AssignPrivateIpAddresses (pods stay
ContainerCreating), a CSI driver's CreateVolume or CreateAccessPoint (PVCs stay Pending).

The node route is judged on the program's node groups' roles in the add-on's region, with their AWS managed policies
read from IAM's published documents: the add-on counts as served when one of them allows the add-on's key action, or
when any of them holds a policy not known at render time.

``csi-iam`` (``storage``) reports the EBS CSI driver where an EBS StorageClass needs it; this rule reports it only
elsewhere, so one missing role is one finding.

The FSx for Lustre CSI driver calls AWS only to provision: its controller's CreateVolume, DeleteVolume and
ControllerExpandVolume call CreateFileSystem, DeleteFileSystem and UpdateFileSystem, while its node plugin mounts a
volume with the Lustre client and reads only the instance metadata service (kubernetes-sigs/aws-fsx-csi-driver,
``pkg/driver/controller.go`` and ``pkg/driver/node.go``). A static PersistentVolume over a file system the program
makes is mounted without any AWS call, so the FSx add-on is judged only where a StorageClass of the region
provisions through it (``fsx.csi.aws.com``). The EBS driver attaches even static volumes through EC2 and is judged
always.

It cannot see: roles or associations made outside the program, node roles of self-managed or Karpenter nodes, ADOT's
collectors (IAM only for the optional AWS exporters its configuration turns on), and a role's permissions boundary.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph
from tokenplane.proof.deployability.iam_policy import POD_IDENTITY, ROLE, allows, role_grants, role_named
from tokenplane.proof.render import RenderedResource

RULE = "addon-iam"
ADDON = "aws:eks/addon:Addon"
EBS_ADDON, EBS_PROVISIONER = "aws-ebs-csi-driver", "ebs.csi.aws.com"
# Add-ons that call AWS only to provision volumes dynamically: judged only beside a StorageClass of their provisioner.
PROVISIONING_ONLY = {"aws-fsx-csi-driver": "fsx.csi.aws.com"}


class Needs(NamedTuple):
    """An add-on's service account, an action it must be allowed (its first call), and the policy AWS documents."""

    namespace: str
    account: str
    action: str
    policy: str


# From the add-on page's "Required IAM permissions" and the service account in its eksctl command.
ADDON_NEEDS = {
    "vpc-cni": Needs("kube-system", "aws-node", "ec2:AssignPrivateIpAddresses", "AmazonEKS_CNI_Policy"),
    EBS_ADDON: Needs("kube-system", "ebs-csi-controller-sa", "ec2:CreateVolume", "AmazonEBSCSIDriverPolicy"),
    "aws-efs-csi-driver": Needs(
        "kube-system", "efs-csi-controller-sa", "elasticfilesystem:CreateAccessPoint", "AmazonEFSCSIDriverPolicy"
    ),
    "aws-fsx-csi-driver": Needs("kube-system", "fsx-csi-controller-sa", "fsx:CreateFileSystem", "AmazonFSxFullAccess"),
    "aws-mountpoint-s3-csi-driver": Needs(
        "kube-system", "s3-csi-driver-sa", "s3:ListBucket", "a policy with Mountpoint's S3 permissions"
    ),
    "amazon-cloudwatch-observability": Needs(
        "amazon-cloudwatch",
        "cloudwatch-agent",
        "cloudwatch:PutMetricData",
        "CloudWatchAgentServerPolicy and AWSXrayWriteOnlyAccess",
    ),
    "aws-network-flow-monitoring-agent": Needs(
        "amazon-network-flow-monitor",
        "aws-network-flow-monitor-agent-service-account",
        "networkflowmonitor:Publish",
        "CloudWatchNetworkFlowMonitorAgentPublishPolicy",
    ),
    "aws-privateca-connector-for-kubernetes": Needs(
        "aws-privateca-issuer",
        "aws-privateca-issuer",
        "acm-pca:IssueCertificate",
        "AWSPrivateCAConnectorForKubernetesPolicy",
    ),
}


def check(graph: Graph) -> Iterator[Finding]:
    for addon in graph.of_type(ADDON):
        name = str(addon.inputs.get("addonName"))
        needs = ADDON_NEEDS.get(name)
        if (
            needs is None
            or addon.inputs.get("serviceAccountRoleArn")
            or pod_identity_roles(graph, addon, needs.account)
        ):
            continue
        if name == EBS_ADDON and any(
            c.manifest.get("provisioner") == EBS_PROVISIONER for c in graph.kube(addon.region, "StorageClass")
        ):
            continue  # csi-iam's to report, with the classes whose PVCs stay Pending
        provisioner = PROVISIONING_ONLY.get(name)
        if provisioner is not None and not any(
            c.manifest.get("provisioner") == provisioner for c in graph.kube(addon.region, "StorageClass")
        ):
            continue  # static volumes only: the node plugin mounts them with no AWS call
        if node_route(graph, addon.region, needs.action) is not False:
            continue
        yield Finding(
            RULE,
            addon.urn,
            f"EKS add-on {name} runs as {needs.namespace}/{needs.account} and calls AWS ({needs.action} first), but it "
            "has no IAM role: no serviceAccountRoleArn, no Pod Identity association for that account, and no node "
            "role in its region allows the call. The add-on reports ACTIVE and every AWS call it makes is refused "
            "(no credentials, or AccessDenied as the node role)",
            f"give the add-on service_account_role_arn: an IRSA role trusted by "
            f"system:serviceaccount:{needs.namespace}:{needs.account} with {needs.policy} (or a Pod Identity "
            "association for that account)",
        )


def pod_identity_roles(graph: Graph, addon: RenderedResource, account: str) -> list[Any]:
    """The role ARNs Pod Identity gives ``account`` of an add-on: the add-on's own associations for that account and
    separate association resources for it in the add-on's region."""
    namespace = next((n.namespace for n in ADDON_NEEDS.values() if n.account == account), None)
    inline = [
        a.get("roleArn")
        for a in addon.inputs.get("podIdentityAssociations") or []
        if isinstance(a, dict) and a.get("serviceAccount") == account
    ]
    separate = [
        a.inputs.get("roleArn")
        for a in graph.of_type(POD_IDENTITY, addon.region)
        if str(a.inputs.get("serviceAccount")) == account
        and (namespace is None or str(a.inputs.get("namespace")) == namespace)
    ]
    return [arn for arn in [*inline, *separate] if arn]


def node_route(graph: Graph, region: str | None, action: str) -> bool | None:
    """Whether a node role of the program's node groups in ``region`` allows ``action``: None when there is no node
    group to read or a node role holds a policy not known at render time (nothing is judged)."""
    roles: dict[str, RenderedResource] = {}
    for group in graph.of_type(NODE_GROUP, region):
        deps = [graph.by_urn[u] for u in group.property_dependencies.get("nodeRoleArn", []) if u in graph.by_urn]
        named = role_named(graph, group.inputs.get("nodeRoleArn"))
        found = [r for r in deps if r.type == ROLE] or ([named] if named is not None else [])
        roles |= {r.urn: r for r in found}
    if not roles:
        return None
    verdicts = [allows([d for _, d in role_grants(graph, r, aws_managed=True)], action) for r in roles.values()]
    if True in verdicts:
        return True
    return None if None in verdicts else False
