"""GpuNodeGroup: the GPU nodes of one pool in one region, spread over every AZ."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from tokenplane.components.base import Component
from tokenplane.components.cluster import Cluster, ExistingCluster
from tokenplane.components.naming import GPU_PRESENT_LABEL, GPU_TAINT_KEY, LABEL_POOL, LABEL_TIER
from tokenplane.components.network import PrivateSubnets
from tokenplane.pool_model import node_for, nodes_for
from tokenplane.spec import Placement, Pool

ROOT_VOLUME_GIB = 200  # the vLLM image is ~13 GB pulled, ~29 GB unpacked; weights live on instance-store NVMe
# nodeadm (AL2023) assembles the instance-store NVMe drives into one RAID0 at /mnt/k8s-disks/0,
# where the pools cache weights so that a restarted replica skips the S3 download.
NODEADM_USER_DATA = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="TOKENPLANE"

--TOKENPLANE
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  instance:
    localStorage:
      strategy: RAID0
--TOKENPLANE--
"""


# Kubernetes' spelling of a taint effect -> EKS's, for the managed node group's taints.
_EKS_EFFECT = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}


# The node label Cluster Autoscaler's AWS cloud provider reads to tell GPU nodes (its GPULabel).
ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"


def accelerator_value(gpu: str) -> str:
    """The label's value: the GPU model, as a label value may spell it (``nvidia-l40s``)."""
    return "nvidia-" + "".join(c if c.isalnum() else "-" for c in gpu.lower())


@dataclass(frozen=True, kw_only=True)
class NodeSelection:
    """How a pod lands on a GPU node group: the labels it requires and the taints it tolerates.

    ``GpuNodeGroup.selection`` is the one its nodes carry, so a ``VllmPool`` given the group is scheduled
    onto it by construction. Build one by hand for nodes this program does not create.

    Args:
        labels: node labels a replica requires (``nodeAffinity``), e.g. ``{"tokenplane.io/pool": "chat"}``.
        taints: ``(key, effect)`` of the nodes' taints a replica tolerates, effect as Kubernetes spells it.
        instance_type: the nodes' EC2 type, where known; a pool whose replica needs another type is refused.
    """

    labels: dict[str, str]
    taints: list[tuple[str, str]] = field(default_factory=lambda: [(GPU_TAINT_KEY, "NoSchedule")])
    instance_type: str | None = None

    @classmethod
    def for_pool(cls, pool: Pool) -> NodeSelection:
        """The selection a pool's own node group (``GpuNodeGroup``) labels and taints its nodes with."""
        return cls(labels={LABEL_POOL: pool.name}, instance_type=node_for(pool).name)

    def affinity(self) -> dict[str, Any]:
        """A required node affinity on every label: the pod waits for such a node rather than land elsewhere."""
        expressions = [{"key": k, "operator": "In", "values": [v]} for k, v in sorted(self.labels.items())]
        return {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": expressions}]
                }
            }
        }

    def tolerations(self) -> list[dict[str, str]]:
        return [{"key": key, "operator": "Exists", "effect": effect} for key, effect in self.taints]


@dataclass(frozen=True)
class NodeCounts:
    """Node group bounds derived from the pool's replica bounds: replicas x GPUs / GPUs per node."""

    min: int
    max: int

    @classmethod
    def for_pool(cls, pool: Pool, placement: Placement) -> NodeCounts:
        warm = pool.autoscaling.warm_pool  # booted nodes with weights on NVMe, ahead of demand
        low = nodes_for(pool, placement.min_replicas) + warm
        high = nodes_for(pool, placement.max_replicas) + warm
        return cls(low, max(high, low, 1))


@dataclass(frozen=True, kw_only=True)
class GpuNodeGroupArgs:
    """One pool's GPU nodes.

    Args:
        pool: the pool: its GPU and TP x PP choose the instance type.
        placement: its replica bounds, which bound the node count.
        cluster: the ``Cluster`` the nodes join (its name and node role), or an ``ExistingCluster`` that
            names its ``node_role_arn``.
        subnets: the private subnets of every AZ (``Network.private``): an AZ outage takes only its share.
        tags: AWS tags on the nodes and their launch template.
    """

    pool: Pool
    placement: Placement
    cluster: Cluster | ExistingCluster
    subnets: PrivateSubnets

    def node_role_arn(self) -> pulumi.Input[str]:
        """The role the nodes run as: the cluster's."""
        role = self.cluster.node_role_arn
        if role is None:
            raise ValueError(
                f"GpuNodeGroupArgs for pool {self.pool.name!r}: cluster is an ExistingCluster without node_role_arn; "
                "pass ExistingCluster(..., node_role_arn=<the IAM role its nodes run as>)"
            )
        return role

    tags: dict[str, str]


class GpuNodeGroup(Component):
    """An EKS managed node group on the NVIDIA AMI, tainted so that only GPU pods land there."""

    MODULE = "gpu_node_group"

    def __init__(self, name: str, args: GpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        pool = args.pool
        node = node_for(pool)
        counts = NodeCounts.for_pool(pool, args.placement)
        selection = NodeSelection.for_pool(pool)
        template = aws.ec2.LaunchTemplate(
            self.child("lt"),
            user_data=base64.b64encode(NODEADM_USER_DATA.encode()).decode(),
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name="/dev/xvda",
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_size=ROOT_VOLUME_GIB, volume_type="gp3", encrypted="true", delete_on_termination="true"
                    ),
                )
            ],
            # IMDSv2 with one hop: pods use their own IAM roles and cannot reach the node's.
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_tokens="required", http_put_response_hop_limit=1, http_endpoint="enabled"
            ),
            tag_specifications=[aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type="instance", tags=args.tags)],
            tags=args.tags,
            opts=self.opts(),
        )
        group = aws.eks.NodeGroup(
            self.child("ng"),
            cluster_name=args.cluster.name,
            node_role_arn=args.node_role_arn(),
            subnet_ids=args.subnets.subnet_ids,  # every AZ of the region: an AZ outage takes only its share
            instance_types=[node.name],
            ami_type="AL2023_x86_64_NVIDIA",
            capacity_type="ON_DEMAND",
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=template.id, version=template.latest_version.apply(str)
            ),
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=counts.min, desired_size=counts.min, max_size=counts.max
            ),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
            labels={
                **selection.labels,
                LABEL_TIER: pool.tier.value,
                "tokenplane.io/gpu": pool.gpu,
                # The NVIDIA device plugin chart (0.15+) runs only on nodes labelled so (or by NFD); without
                # it no node advertises nvidia.com/gpu and every vLLM pod stays Pending.
                GPU_PRESENT_LABEL: "true",
                # Cluster Autoscaler's AWS provider knows a node as a GPU node by this label: without it, it
                # counts a new node's GPUs as missing until the device plugin runs, and scales up again meanwhile
                # (and never scales a GPU group down correctly).
                ACCELERATOR_LABEL: accelerator_value(pool.gpu),
            },
            taints=[
                aws.eks.NodeGroupTaintArgs(key=key, value="true", effect=_EKS_EFFECT[effect])
                for key, effect in selection.taints
            ],
            tags={
                **args.tags,
                # EKS does not copy a node group's tags to its ASG. Discovery works anyway: EKS tags every managed
                # group's ASG k8s.io/cluster-autoscaler/enabled and .../<cluster>=owned itself. Scaling from zero
                # does not rest on these node-template tags either: Cluster Autoscaler (1.24+) reads a managed
                # group's labels and taints through eks:DescribeNodegroup, which its role allows.
                "k8s.io/cluster-autoscaler/enabled": "true",
                f"k8s.io/cluster-autoscaler/node-template/label/{LABEL_POOL}": pool.name,
                f"k8s.io/cluster-autoscaler/node-template/taint/{GPU_TAINT_KEY}": "true:NoSchedule",
                f"k8s.io/cluster-autoscaler/node-template/label/{ACCELERATOR_LABEL}": accelerator_value(pool.gpu),
            },
            # The Cluster Autoscaler owns the size once the group exists: an update must not send desired_size back.
            opts=self.opts(ignore_changes=["scalingConfig.desiredSize"]),
        )
        self.node_group_name = group.node_group_name
        self.counts = counts
        self.pool = pool
        self.placement = args.placement
        self.selection = selection
        self.cluster = args.cluster  # what a pool on these nodes runs in: VllmPoolArgs.from_config's default
        self.register_outputs(
            {"node_group_name": group.node_group_name, "min_nodes": counts.min, "max_nodes": counts.max}
        )
