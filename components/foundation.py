"""Foundation: what every region's workloads stand on, built in one call.

A program composed by hand repeats the same opening before its first workload: a VPC, an EKS cluster in it, a
Kubernetes provider for that cluster, the add-ons (KEDA, the load balancer controller, the device plugin, the
autoscaler), the namespaces the workloads go into, and the options under which a workload is ready to deploy
(after the system nodes and KEDA). ``Foundation`` builds those and exposes each part, so the workloads that follow
take ``foundation.cluster``, ``foundation.serving`` and ``foundation.ready``. A program that wants to build the
parts one by one still composes ``Network``, ``Cluster`` and ``ClusterAddons`` itself; the spec-driven ``Region``
does, and keeps its URNs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from tokenplane.components.base import Component
from tokenplane.components.cluster import Cluster, ClusterArgs
from tokenplane.components.cluster_addons import ClusterAddons, ClusterAddonsArgs
from tokenplane.components.gateway_config import GatewayConfig
from tokenplane.components.gpu_node_group import GpuNodeGroup, GpuNodeGroupArgs
from tokenplane.components.kube import READINESS_GATE_INJECT, Namespace
from tokenplane.components.naming import NS_DATA, NS_GATEWAY, NS_MONITORING, NS_SERVING, cluster_name
from tokenplane.components.network import Network, NetworkArgs
from tokenplane.components.weights_publish import publish_jobs
from tokenplane.spec import DEFAULT_KUBERNETES_VERSION, Environment, Placement, Pool, RegistryModel

# The namespaces a region's serving workloads go into, by the short name of their logical resource.
NAMESPACES = {"serving": NS_SERVING, "gateway": NS_GATEWAY, "data": NS_DATA, "monitoring": NS_MONITORING}


@dataclass(frozen=True, kw_only=True)
class FoundationArgs:
    """The network, cluster and add-ons of one region.

    Args:
        provider: the region's explicit AWS provider. Everything here is created with it, and ``ready``
            carries it, so nothing lands in whatever region the CLI defaults to.
        cloud_region: the AWS region ``provider`` is for (the cluster's kubeconfig and the add-ons' IAM).
        azs: the availability zones of the VPC's subnets.
        cluster_name: the EKS cluster's name; the subnets are tagged with it so that load balancers find them.
        tags: AWS tags on every resource that takes them (IAM and cost allocation read them).
        kubernetes_version: the EKS minor version (``tokenplane/proof/deployability/support.json`` says
            which are in support).
        system_cpu: vCPUs the system node group must hold with every CPU workload at its autoscaling maximum.
        system_nodes: system nodes at the floor: one per AZ in prod, so that an AZ outage leaves capacity.
        admin_role_arns: IAM roles given cluster-admin access.
        vpc_cidr: the VPC's address range.
    """

    provider: aws.Provider
    cloud_region: str
    azs: list[str]
    cluster_name: str
    tags: dict[str, str] = field(default_factory=dict)
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION
    system_cpu: float = 0.0
    system_nodes: int = 2
    admin_role_arns: list[str] = field(default_factory=list)
    vpc_cidr: str = "10.0.0.0/16"

    @classmethod
    def from_config(
        cls,
        config: GatewayConfig,
        *,
        provider: aws.Provider,
        tags: dict[str, str],
        kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
        system_cpu: float = 0.0,
        admin_role_arns: list[str] | None = None,
    ) -> FoundationArgs:
        """The foundation of ``config``'s region: its cloud region, AZs and cluster name (``<platform>-<region>``,
        as the spec-driven stacks name theirs), with three system nodes in prod and two elsewhere."""
        region = config.region
        return cls(
            provider=provider,
            cloud_region=region.cloud_region,
            azs=list(region.azs),
            cluster_name=cluster_name(config.name, region.name),
            tags=tags,
            kubernetes_version=kubernetes_version,
            system_cpu=system_cpu,
            system_nodes=3 if config.environment is Environment.PROD else 2,
            admin_role_arns=list(admin_role_arns or ()),
        )


class Foundation(Component):
    """A VPC, EKS with its add-ons and Kubernetes provider, and the serving namespaces of one region.

    Its children are named from its own name (``eu`` gives ``eu-network``, ``eu-cluster``, ``eu-k8s``,
    ``eu-addons``, ``eu-ns-serving``...), so two foundations in one program never collide.
    """

    MODULE = "foundation"

    network: Network
    cluster: Cluster
    kube: k8s.Provider
    addons: ClusterAddons
    namespaces: dict[str, Namespace]  # by short name: serving, gateway, data, monitoring
    serving: Namespace
    gateway: Namespace
    data: Namespace
    monitoring: Namespace
    ready: pulumi.ResourceOptions  # for a workload: both providers, after the system nodes and KEDA

    def __init__(self, name: str, args: FoundationArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        self._args = args
        tags, on_aws = args.tags, self.opts(providers=[args.provider])
        network_args = NetworkArgs(azs=args.azs, cluster_name=args.cluster_name, tags=tags, vpc_cidr=args.vpc_cidr)
        self.network = Network(self.child("network"), network_args, on_aws)
        self.cluster = Cluster(
            self.child("cluster"),
            ClusterArgs(
                network=self.network,
                kubernetes_version=args.kubernetes_version,
                cloud_region=args.cloud_region,
                tags=tags,
                system_nodes=args.system_nodes,
                system_cpu=args.system_cpu,
                admin_role_arns=args.admin_role_arns,
            ),
            on_aws,
        )
        self.kube = k8s.Provider(
            self.child("k8s"), kubeconfig=self.cluster.kubeconfig, enable_server_side_apply=True, opts=self.opts()
        )
        both = [args.provider, self.kube]
        addons_args = ClusterAddonsArgs(
            cluster=self.cluster, vpc_id=self.network.vpc_id, cloud_region=args.cloud_region, tags=tags
        )
        self.addons = ClusterAddons(self.child("addons"), addons_args, self.opts(providers=both))
        # Nothing deploys into a namespace no one creates; a namespace waits for nodes to schedule on.
        on_cluster = self.opts(providers=[self.kube], depends_on=[self.cluster.system_nodes])
        # The AI gateway's NLB registers its pods as ip targets. The controller's pod webhook gives every pod in the
        # gateway namespace a readiness gate (READINESS_GATE_INJECT), so a new pod is Ready only once its target is
        # healthy and a rollout never removes the last healthy target. The namespace does not wait for the
        # controller: the webhook admits pods, which a Deployment's ReplicaSet creates and retries until it
        # answers, and programs that add workloads here wait for the namespace alone.
        self.namespaces = {
            short: Namespace.create(
                ns,
                logical=self.child("ns", short),
                opts=on_cluster,
                labels={READINESS_GATE_INJECT: "enabled"} if short == "gateway" else None,
            )
            for short, ns in NAMESPACES.items()
        }
        self.serving, self.gateway = self.namespaces["serving"], self.namespaces["gateway"]
        self.data, self.monitoring = self.namespaces["data"], self.namespaces["monitoring"]
        # Not parented here: a workload is the program's own, and names its children from its own name.
        self.ready = pulumi.ResourceOptions(providers=both, depends_on=[self.cluster.system_nodes, self.addons.keda])
        self.register_outputs({"cluster": self.cluster.name, "vpc_id": self.network.vpc_id})

    def gpu_nodes(self, name: str, pool: Pool, placement: Placement) -> GpuNodeGroup:
        """A ``GpuNodeGroup`` for ``pool`` in this cluster's private subnets, with the foundation's provider and
        tags. It is the program's own (not parented here), named ``name``."""
        args = GpuNodeGroupArgs(
            pool=pool, placement=placement, cluster=self.cluster, subnets=self.network.private, tags=self._args.tags
        )
        return GpuNodeGroup(name, args, pulumi.ResourceOptions(provider=self._args.provider))

    def publish_jobs(
        self, name: str, *, models: list[RegistryModel], bucket: aws.s3.Bucket | pulumi.Input[str]
    ) -> dict[str, k8s.batch.v1.Job]:
        """``publish_jobs`` into the serving namespace, whose Jobs start when a workload may (``ready``): the Jobs
        that put ``models``' weights in ``bucket``, by ``model.ref``. A ``VllmPool`` waits for its models'."""
        return publish_jobs(
            name,
            namespace=self.serving,
            models=models,
            bucket=bucket,
            cluster=self.cluster,
            tags=self._args.tags,
            opts=pulumi.ResourceOptions(provider=self._args.provider),
            k8s_opts=self.ready,
        )

    def ready_after(self, *resources: pulumi.Resource) -> pulumi.ResourceOptions:
        """``ready``, and after ``resources`` too (a LoadBalancer Service after the controller that gives it an
        address)."""
        return pulumi.ResourceOptions.merge(self.ready, pulumi.ResourceOptions(depends_on=list(resources)))
