"""ClusterAddons: what a cluster needs before GPU pools and gateways can run on it.

KEDA (the pools' ScaledObjects), the NVIDIA device plugin (without it no node
advertises ``nvidia.com/gpu``), the DCGM exporter (GPU metrics), the Cluster
Autoscaler with its IAM role, the AWS Load Balancer Controller with its IAM role
(the AI gateway's NLB), and an encrypted gp3 StorageClass on the EBS CSI driver
(which ``Cluster`` installs with its IAM role; on a cluster made elsewhere, these add-ons do).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from tokenplane.components import kube
from tokenplane.components.base import Component

# ExistingCluster is defined with Cluster and is imported from here too, where it first lived.
from tokenplane.components.cluster import Cluster, ExistingCluster, ebs_csi_role
from tokenplane.components.iam import irsa_role, policy_document
from tokenplane.components.lb_controller import lb_controller
from tokenplane.components.naming import GPU_PRESENT_LABEL, GPU_TAINT_KEY, NS_KEDA
from tokenplane.components.pins import (
    CLUSTER_AUTOSCALER_CHART,
    DCGM_EXPORTER_CHART,
    KEDA_CHART,
    NVIDIA_DEVICE_PLUGIN_CHART,
)
from tokenplane.components.vector_db import STORAGE_CLASS

KEDA_PORTS = (6443, 9443)  # metrics API and admission webhook, called by the Kubernetes API server
GPU_TOLERATION = {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}


@dataclass(frozen=True, kw_only=True)
class ClusterAddonsArgs:
    """What the add-ons need from the cluster they go on.

    Args:
        cluster: the ``Cluster`` (its name, its OIDC provider for the add-ons' IAM roles, and its system nodes,
            which every add-on's pods wait for), or an ``ExistingCluster`` made elsewhere.
        vpc_id: the cluster's VPC (``Network.vpc_id``): the load-balancer controller is told it, since its
            pods cannot reach the instance metadata to discover it.
        cloud_region: the AWS region, for the autoscaler and the load-balancer controller.
        tags: AWS tags on the add-ons' IAM roles.
        ebs_csi: install the EBS CSI driver (an EKS add-on) with its IAM role, which the gp3 class needs. By
            default only on an ``ExistingCluster``: ``Cluster`` installs it itself.
        moved_from: the component that created these resources before they were a ``ClusterAddons`` (a
            ``Region``): aliases keep their URNs, so that a stack deployed before does not replace them.
    """

    cluster: Cluster | ExistingCluster
    vpc_id: pulumi.Input[str]
    cloud_region: str
    tags: dict[str, str] = field(default_factory=dict)
    ebs_csi: bool | None = None
    moved_from: pulumi.Resource | None = None


class ClusterAddons(Component):
    """KEDA, the NVIDIA device plugin, DCGM exporter, Cluster Autoscaler, the AWS Load Balancer Controller and gp3.

    Pass the Kubernetes provider of the cluster in ``opts`` (``providers=[k8s_provider]``). Workloads with
    ScaledObjects wait for ``keda``; LoadBalancer Services wait for ``lb_controller``.
    """

    MODULE = "cluster_addons"

    keda: k8s.helm.v3.Release
    lb_controller: k8s.helm.v3.Release
    device_plugin: k8s.helm.v3.Release

    def __init__(self, name: str, args: ClusterAddonsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        self._moved_from = args.moved_from
        cluster = args.cluster
        nodes = cluster.system_nodes if isinstance(cluster, Cluster) else cluster.nodes
        after_nodes = [nodes] if nodes is not None else []
        # Each release waits for the system nodes: Pulumi awaits a release's pods, which cannot run before there
        # is a node.
        on_nodes = self.opts(depends_on=after_nodes)
        keda_ns = k8s.core.v1.Namespace(
            self.child("ns", NS_KEDA),
            metadata={
                "name": NS_KEDA,
                "labels": {"kubernetes.io/metadata.name": NS_KEDA, "app.kubernetes.io/part-of": "tokenplane"},
            },
            opts=on_nodes,
        )
        # The API server reaches KEDA's metrics API and webhook from outside the pod network.
        k8s.networking.v1.NetworkPolicy(
            self.child("keda-netpol"),
            metadata={"name": "allow-apiserver", "namespace": NS_KEDA},
            spec={
                "podSelector": {},
                "policyTypes": ["Ingress"],
                "ingress": [{"ports": [{"port": p, "protocol": "TCP"} for p in KEDA_PORTS]}],
            },
            opts=self.opts(depends_on=[keda_ns]),
        )
        k8s.storage.v1.StorageClass(
            self.child("gp3"),
            metadata={"name": STORAGE_CLASS},
            provisioner="ebs.csi.aws.com",
            parameters={"type": "gp3", "encrypted": "true"},
            volume_binding_mode="WaitForFirstConsumer",  # bind in the AZ the pod lands in
            allow_volume_expansion=True,
            reclaim_policy="Retain",
            opts=on_nodes,
        )
        releases: dict[str, k8s.helm.v3.Release] = {}
        for pin, namespace, values in (
            (KEDA_CHART, NS_KEDA, {"prometheus": {"operator": {"enabled": True}}}),
            # The chart's own affinity selects nodes labelled nvidia.com/gpu.present=true, which GpuNodeGroup sets;
            # the toleration lets it onto their taint.
            (NVIDIA_DEVICE_PLUGIN_CHART, "kube-system", {"tolerations": [GPU_TOLERATION]}),
            # GPU metrics (DCGM_FI_DEV_*) for the dashboards and any gpu_utilization trigger. Scraped through the
            # pod annotations Prometheus already follows: a ServiceMonitor would need its CRD installed first.
            (
                DCGM_EXPORTER_CHART,
                "kube-system",
                {
                    "tolerations": [GPU_TOLERATION],
                    "nodeSelector": {GPU_PRESENT_LABEL: "true"},
                    "serviceMonitor": {"enabled": False},
                    "podAnnotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9400"},
                },
            ),
        ):
            releases[pin[0]] = kube.helm_release(
                self.child(pin[0]),
                pin,
                namespace=namespace,
                values=values,
                opts=self.opts(depends_on=[keda_ns, *after_nodes]),
            )
        self._autoscaler(args, on_nodes)
        if args.ebs_csi if args.ebs_csi is not None else not isinstance(cluster, Cluster):
            self._ebs_csi(args)
        self.lb_controller = lb_controller(
            self.child("aws-lb-controller"),
            cluster_name=cluster.name,
            cloud_region=args.cloud_region,
            vpc_id=args.vpc_id,
            oidc_provider_arn=cluster.oidc_provider_arn,
            oidc_issuer=cluster.oidc_issuer,
            tags=args.tags,
            opts=on_nodes,
        )
        self.keda = releases[KEDA_CHART[0]]
        self.device_plugin = releases[NVIDIA_DEVICE_PLUGIN_CHART[0]]
        self.storage_class = STORAGE_CLASS
        self.register_outputs(
            {"keda": self.keda.name, "lb_controller": self.lb_controller.name, "storage_class": STORAGE_CLASS}
        )

    def opts(self, **kwargs: Any) -> pulumi.ResourceOptions:
        # These resources were once the Region's own children: an alias to that parent keeps each URN, and
        # Pulumi derives the aliases of their own children from it.
        if self._moved_from is not None:
            kwargs.setdefault("aliases", [pulumi.Alias(parent=self._moved_from)])
        return super().opts(**kwargs)

    def _ebs_csi(self, args: ClusterAddonsArgs) -> None:
        """The EBS CSI driver as an EKS add-on, with its own IRSA role (no pod should hold the node role)."""
        cluster = args.cluster
        role = ebs_csi_role(
            self, oidc_provider_arn=cluster.oidc_provider_arn, oidc_issuer=cluster.oidc_issuer, tags=args.tags
        )
        aws.eks.Addon(
            self.child("ebs-csi"),
            cluster_name=cluster.name,
            addon_name="aws-ebs-csi-driver",
            service_account_role_arn=role.arn,
            resolve_conflicts_on_update="OVERWRITE",
            tags=args.tags,
            opts=self.opts(),
        )

    def _autoscaler(self, args: ClusterAddonsArgs, on_nodes: pulumi.ResourceOptions) -> None:
        """Cluster Autoscaler: it grows and shrinks every node group tagged for it, GPU groups included."""
        cluster = args.cluster
        role = irsa_role(
            self.child("cluster-autoscaler-role"),
            namespace="kube-system",
            service_account="cluster-autoscaler",
            oidc_provider_arn=cluster.oidc_provider_arn,
            oidc_issuer=cluster.oidc_issuer,
            policy=policy_document(
                [
                    {
                        "Effect": "Allow",
                        "Action": [
                            "autoscaling:DescribeAutoScalingGroups",
                            "autoscaling:DescribeAutoScalingInstances",
                            "autoscaling:DescribeLaunchConfigurations",
                            "autoscaling:DescribeTags",
                            "ec2:DescribeInstanceTypes",
                            "ec2:DescribeLaunchTemplateVersions",
                            "eks:DescribeNodegroup",
                        ],
                        "Resource": ["*"],
                    },
                    {
                        "Effect": "Allow",
                        "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
                        "Resource": ["*"],
                        "Condition": {"StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/enabled": "true"}},
                    },
                ]
            ),
            tags=args.tags,
            opts=self.opts(),
        )
        kube.helm_release(
            self.child(CLUSTER_AUTOSCALER_CHART[0]),
            CLUSTER_AUTOSCALER_CHART,
            namespace="kube-system",
            values={
                "autoDiscovery": {"clusterName": cluster.name},
                "awsRegion": args.cloud_region,
                "rbac": {
                    "serviceAccount": {
                        "name": "cluster-autoscaler",
                        "annotations": {"eks.amazonaws.com/role-arn": role.arn},
                    }
                },
                # GPU nodes keep weights on local NVMe: that must not pin them forever.
                "extraArgs": {
                    "balance-similar-node-groups": True,
                    "skip-nodes-with-local-storage": False,
                    "expander": "least-waste",
                },
            },
            opts=on_nodes,
        )
