"""Cluster: EKS with IAM, OIDC for pod roles, managed add-ons and a system node group."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from tokenplane.components.base import Component
from tokenplane.components.iam import irsa_role
from tokenplane.components.naming import ROLE_NAME_MAX, fitted_name
from tokenplane.components.network import Network
from tokenplane.components.system_capacity import system_max_nodes

SYSTEM_INSTANCE_TYPE = "m6i.xlarge"  # gateways, Qdrant, Prometheus: CPU work next to the GPU pools
# Managed add-ons, left at EKS's default version for the cluster's Kubernetes version.
# metrics-server (an EKS community add-on): the gateways' CPU HPAs read pod CPU from the metrics API it serves;
# without it they never act.
ADDONS = ("vpc-cni", "coredns", "kube-proxy", "aws-ebs-csi-driver", "eks-pod-identity-agent", "metrics-server")
EBS_CSI_SERVICE_ACCOUNT = "ebs-csi-controller-sa"  # the add-on's controller service account in kube-system
EBS_CSI_POLICY = "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"
CLUSTER_ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
NODE_POLICIES = (
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
    "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
)


def assume_role_policy(service: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}],
        }
    )


@dataclass(frozen=True, kw_only=True)
class ClusterArgs:
    """One EKS cluster.

    Args:
        network: the ``Network`` it lives in: the nodes in its private subnets, internet-facing load balancers
            in its public ones. The cluster takes the network's ``cluster_name``, the name its subnets are
            tagged for: under any other name its load balancers would find no subnets.
        kubernetes_version: e.g. ``"1.31"``.
        cloud_region: the AWS region, for the kubeconfig's ``aws eks get-token``.
        tags: AWS tags on every resource.
        system_nodes: the system node group's floor (gateways, Qdrant, Prometheus); 3 spans three AZs.
        system_cpu: vCPUs the system nodes must hold at every CPU workload's autoscaling maximum.
        admin_role_arns: IAM roles given cluster-admin through EKS access entries; the first one is the role
            ``admin_kubeconfig`` assumes. The role that runs ``pulumi up`` may be among them: the cluster then
            leaves the creator's entry to the program instead of EKS's bootstrap.
    """

    network: Network
    kubernetes_version: str
    cloud_region: str
    tags: dict[str, str] = field(default_factory=dict)
    system_nodes: int = 2
    system_cpu: float = 0.0
    admin_role_arns: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class ExistingCluster:
    """An EKS cluster this program does not create: what the components that join it need to know of it.

    Args:
        name: the EKS cluster's name.
        oidc_provider_arn: its IAM OIDC provider, which the pods' roles trust.
        oidc_issuer: its OIDC issuer URL.
        nodes: what the add-ons' pods wait for (a node group the program creates), if any.
        node_role_arn: the IAM role its nodes run as; a ``GpuNodeGroup`` that joins it needs it.
    """

    name: pulumi.Input[str]
    oidc_provider_arn: pulumi.Input[str]
    oidc_issuer: pulumi.Input[str]
    nodes: pulumi.Resource | None = None
    node_role_arn: pulumi.Input[str] | None = None


def deploying_principal(component: Component) -> str | None:
    """The IAM principal running this ``pulumi up``, as an access entry names it: the caller's ARN, and for an
    assumed-role session (``arn:aws:sts::ACCOUNT:assumed-role/NAME/SESSION``, which access entries do not take) the
    role's ARN, path included (``aws.iam.get_session_context``'s ``issuer_arn``). None where it cannot be told."""
    opts = pulumi.InvokeOptions(parent=component)
    arn = aws.get_caller_identity(opts=opts).arn
    if isinstance(arn, str) and ":assumed-role/" in arn:
        arn = aws.iam.get_session_context(arn=arn, opts=opts).issuer_arn
    return arn if isinstance(arn, str) and arn.startswith("arn:") else None


def ebs_csi_role(
    component: Component,
    *,
    oidc_provider_arn: pulumi.Input[str],
    oidc_issuer: pulumi.Input[str],
    tags: dict[str, str],
) -> aws.iam.Role:
    """The EBS CSI controller's IRSA role (``<component>-ebs-csi-role``), for the add-on on any cluster."""
    return irsa_role(
        component.child("ebs-csi-role"),
        namespace="kube-system",
        service_account=EBS_CSI_SERVICE_ACCOUNT,
        oidc_provider_arn=oidc_provider_arn,
        oidc_issuer=oidc_issuer,
        policy=None,
        managed_policies=(EBS_CSI_POLICY,),
        tags=tags,
        opts=component.opts(),
    )


class Cluster(Component):
    """An EKS cluster whose nodes live in the private subnets of every AZ."""

    MODULE = "cluster"

    name: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]  # Pulumi's own: the deploying identity (the cluster's creator, admin by EKS)
    admin_kubeconfig: pulumi.Output[str]  # for people: assumes the spec's first admin role where there is one
    node_role_arn: pulumi.Output[str]
    oidc_provider_arn: pulumi.Output[str]
    oidc_issuer: pulumi.Output[str]

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        tags = args.tags
        cluster_role = aws.iam.Role(
            self.child("cluster-role"),
            name=fitted_name(self.child("cluster-role"), ROLE_NAME_MAX),
            assume_role_policy=assume_role_policy("eks.amazonaws.com"),
            tags=tags,
            opts=self.opts(),
        )
        aws.iam.RolePolicyAttachment(
            self.child("cluster-policy"),
            role=cluster_role.name,
            policy_arn="arn:aws:iam::aws:policy/AmazonEKSClusterPolicy",
            opts=self.opts(),
        )
        # Kubernetes Secrets (the gateway's Redis token among them) are envelope-encrypted with a CMK.
        secrets_key = aws.kms.Key(
            self.child("secrets-key"),
            description=f"EKS secrets for {name}",
            enable_key_rotation=True,
            tags=tags,
            opts=self.opts(),
        )
        # API mode admits only identities with an access entry. EKS makes one (with AmazonEKSClusterAdminPolicy) for
        # the identity that creates the cluster while bootstrap_cluster_creator_admin_permissions is true, its
        # default, and that entry is EKS's, not the program's: an aws.eks.AccessEntry for the same principal is then
        # refused (CreateAccessEntry: 409 ResourceInUseException, "The specified access entry resource is already in
        # use on this cluster"; https://docs.aws.amazon.com/eks/latest/userguide/creating-access-entries.html,
        # https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAccessConfigRequest.html). So the creator's
        # entry is EKS's only when the spec does not list the creator: listing the deploying role (a natural thing to
        # do) turns the bootstrap off, and the spec's entry, visible in the state, gives it cluster-admin instead.
        # The setting counts only at creation (the provider replaces a cluster whose value changes), so it is
        # decided on the first `pulumi up` and then left alone (ignore_changes): a later up by another identity (CI
        # after a laptop) sees another caller and must neither replace the cluster nor add, for a creator it lists,
        # an entry EKS already holds; every listed role's entry is the program's, so none is ever deleted. Skipping
        # the listed creator's entry instead would converge only until someone else runs `pulumi up`, which then
        # creates it and meets the 409. What stays: listing the creator only after the cluster exists still meets
        # EKS's entry; remove it with `aws eks delete-access-entry` first.
        deployer = deploying_principal(self)
        creator_listed = deployer is not None and deployer.lower() in {a.lower() for a in args.admin_role_arns}
        cluster = aws.eks.Cluster(
            self.child("eks"),
            name=args.network.cluster_name,
            version=args.kubernetes_version,
            role_arn=cluster_role.arn,
            vpc_config=aws.eks.ClusterVpcConfigArgs(
                subnet_ids=[*args.network.private_subnet_ids, *args.network.public_subnet_ids],
                endpoint_private_access=True,
                endpoint_public_access=True,
            ),
            access_config=aws.eks.ClusterAccessConfigArgs(
                authentication_mode="API", bootstrap_cluster_creator_admin_permissions=not creator_listed
            ),
            encryption_config=aws.eks.ClusterEncryptionConfigArgs(
                resources=["secrets"], provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=secrets_key.arn)
            ),
            enabled_cluster_log_types=["api", "audit", "authenticator"],
            tags=tags,
            opts=self.opts(ignore_changes=["accessConfig.bootstrapClusterCreatorAdminPermissions"]),
        )
        # The spec's admin roles get their entries here, so that people keep access to the cluster when the
        # creating identity changes or goes away (and the creator keeps it through its own, when listed).
        admitted: list[pulumi.Output[str]] = []
        for arn in dict.fromkeys(args.admin_role_arns):  # one entry a principal: a second is refused (409)
            account, role = arn.split(":")[4], arn.rsplit("/", 1)[-1].lower()
            entry = aws.eks.AccessEntry(
                self.child("admin", account, role),
                cluster_name=cluster.name,
                principal_arn=arn,
                type="STANDARD",
                tags=tags,
                opts=self.opts(),
            )
            association = aws.eks.AccessPolicyAssociation(
                self.child("admin", account, role, "policy"),
                cluster_name=cluster.name,
                principal_arn=arn,
                policy_arn=CLUSTER_ADMIN_POLICY,
                access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                opts=self.opts(depends_on=[entry]),  # a policy attaches to an existing entry only
            )
            admitted.append(association.id)
        oidc = aws.iam.OpenIdConnectProvider(
            self.child("oidc"),
            url=cluster.identities.apply(lambda ids: ids[0].oidcs[0].issuer),
            client_id_lists=["sts.amazonaws.com"],
            tags=tags,
            opts=self.opts(),
        )
        node_role = aws.iam.Role(
            self.child("node-role"),
            name=fitted_name(self.child("node-role"), ROLE_NAME_MAX),
            assume_role_policy=assume_role_policy("ec2.amazonaws.com"),
            tags=tags,
            opts=self.opts(),
        )
        attachments = [
            aws.iam.RolePolicyAttachment(
                self.child("node-policy", arn.rsplit("/", 1)[-1].lower()),
                role=node_role.name,
                policy_arn=arn,
                opts=self.opts(),
            )
            for arn in NODE_POLICIES
        ]
        system_size = args.system_nodes
        # What cluster-wide add-ons and workloads wait for: before it is active, no pod can run anywhere.
        self.system_nodes = aws.eks.NodeGroup(
            self.child("system"),
            cluster_name=cluster.name,
            node_role_arn=node_role.arn,
            subnet_ids=args.network.private_subnet_ids,  # spans every AZ of the region
            instance_types=[SYSTEM_INSTANCE_TYPE],
            ami_type="AL2023_x86_64_STANDARD",
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=system_size,
                desired_size=system_size,
                max_size=system_max_nodes(args.system_cpu, SYSTEM_INSTANCE_TYPE, floor=system_size * 4),
            ),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
            labels={"tokenplane.io/node-role": "system"},
            tags=tags,
            # The Cluster Autoscaler owns the size once the group exists: an update must not send desired_size back.
            opts=self.opts(depends_on=attachments, ignore_changes=["scalingConfig.desiredSize"]),
        )
        # The EBS CSI controller creates and attaches gp3 volumes (Qdrant's PVCs) with its own IRSA role:
        # the GPU nodes allow one IMDS hop, so the node-role fallback is off, and no pod should hold it anyway.
        ebs_role = ebs_csi_role(self, oidc_provider_arn=oidc.arn, oidc_issuer=oidc.url, tags=tags)
        addon_roles = {"aws-ebs-csi-driver": ebs_role.arn}
        # The VPC CNI enforces NetworkPolicies only with its network policy agent switched on; without it
        # every default-deny and allow-list in the stack is accepted by the API server and does nothing.
        addon_config = {"vpc-cni": json.dumps({"enableNetworkPolicy": "true"})}
        for addon in ADDONS:
            aws.eks.Addon(
                self.child("addon", addon),
                cluster_name=cluster.name,
                addon_name=addon,
                service_account_role_arn=addon_roles.get(addon),
                configuration_values=addon_config.get(addon),
                resolve_conflicts_on_update="OVERWRITE",
                tags=tags,
                opts=self.opts(),
            )
        self.name = cluster.name
        # Ready once its EKS node policies are attached: CreateNodegroup refuses a role without them, and a node
        # group (a GpuNodeGroup, a program's own) that takes this ARN then waits for the attachments too.
        self.node_role_arn = pulumi.Output.all(node_role.arn, *(a.id for a in attachments)).apply(lambda a: str(a[0]))
        self.oidc_provider_arn = oidc.arn
        self.oidc_issuer = oidc.url
        # Pulumi's own kubeconfig waits for the admin entries too: a listed creator is admitted only through its own.
        self.kubeconfig = pulumi.Output.all(
            cluster.name, cluster.endpoint, cluster.certificate_authority, *admitted
        ).apply(lambda a: _kubeconfig(str(a[0]), str(a[1]), a[2], args.cloud_region))
        admin_role = args.admin_role_arns[0] if args.admin_role_arns else None
        self.admin_kubeconfig = pulumi.Output.all(cluster.name, cluster.endpoint, cluster.certificate_authority).apply(
            lambda a: _kubeconfig(str(a[0]), str(a[1]), a[2], args.cloud_region, role_arn=admin_role)
        )
        self.register_outputs(
            {
                "name": cluster.name,
                "endpoint": cluster.endpoint,
                "oidc_provider_arn": oidc.arn,
                "node_role_arn": node_role.arn,
            }
        )


def _kubeconfig(name: str, endpoint: str, authority: object, cloud_region: str, *, role_arn: str | None = None) -> str:
    """A kubeconfig that authenticates with ``aws eks get-token``: no long-lived credentials.

    With ``role_arn`` the token is for that role (``--role-arn``): any credentials allowed to assume it work,
    not only those of whoever created the cluster. Pick a profile with ``aws``'s usual environment.
    """
    data = authority.get("data") if isinstance(authority, dict) else getattr(authority, "data", "")
    args = ["eks", "get-token", "--cluster-name", name, "--region", cloud_region]
    if role_arn is not None:
        args += ["--role-arn", role_arn]
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": endpoint, "certificate-authority-data": data}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": name,
            "users": [
                {
                    "name": name,
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1beta1",
                            "command": "aws",
                            "args": args,
                        }
                    },
                }
            ],
        }
    )
