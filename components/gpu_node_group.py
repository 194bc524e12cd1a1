"""GpuNodeGroup: the GPU nodes of one pool in one region, spread over every AZ."""

from __future__ import annotations

import base64
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.base import Component
from components.naming import GPU_PRESENT_LABEL, GPU_TAINT_KEY, LABEL_POOL, LABEL_TIER
from tokenplane.pool_model import node_for, nodes_for
from tokenplane.spec import Placement, Pool

ROOT_VOLUME_GIB = 200  # the vLLM image is ~10 GB; weights live on instance-store NVMe, not here
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
    pool: Pool
    placement: Placement
    cluster_name: pulumi.Input[str]
    node_role_arn: pulumi.Input[str]
    subnet_ids: list[pulumi.Output[str]]
    tags: dict[str, str]


class GpuNodeGroup(Component):
    """An EKS managed node group on the NVIDIA AMI, tainted so that only GPU pods land there."""

    MODULE = "gpu_node_group"

    def __init__(self, name: str, args: GpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        pool = args.pool
        node = node_for(pool)
        counts = NodeCounts.for_pool(pool, args.placement)
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
            cluster_name=args.cluster_name,
            node_role_arn=args.node_role_arn,
            subnet_ids=args.subnet_ids,  # every AZ of the region: an AZ outage takes only its share
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
                LABEL_POOL: pool.name,
                LABEL_TIER: pool.tier.value,
                "tokenplane.io/gpu": pool.gpu,
                # The NVIDIA device plugin chart (0.15+) runs only on nodes labelled so (or by NFD); without
                # it no node advertises nvidia.com/gpu and every vLLM pod stays Pending.
                GPU_PRESENT_LABEL: "true",
            },
            taints=[aws.eks.NodeGroupTaintArgs(key=GPU_TAINT_KEY, value="true", effect="NO_SCHEDULE")],
            tags={
                **args.tags,
                # EKS does not copy a node group's tags to its ASG. Discovery works anyway: EKS tags every managed
                # group's ASG k8s.io/cluster-autoscaler/enabled and .../<cluster>=owned itself. Scaling from zero
                # does not rest on these node-template tags either: Cluster Autoscaler (1.24+) reads a managed
                # group's labels and taints through eks:DescribeNodegroup, which its role allows.
                "k8s.io/cluster-autoscaler/enabled": "true",
                f"k8s.io/cluster-autoscaler/node-template/label/{LABEL_POOL}": pool.name,
                f"k8s.io/cluster-autoscaler/node-template/taint/{GPU_TAINT_KEY}": "true:NoSchedule",
            },
            opts=self.opts(),
        )
        self.node_group_name = group.node_group_name
        self.counts = counts
        self.register_outputs(
            {"node_group_name": group.node_group_name, "min_nodes": counts.min, "max_nodes": counts.max}
        )
