"""A cluster's own controllers are told which cluster, region and VPC they run in, and told the truth.

The controllers that act on AWS for a cluster find their work by its name and region, and install without
complaint when either is wrong; they then never act:

- **Cluster Autoscaler** (chart ``cluster-autoscaler``) finds node groups by the Auto Scaling group tags EKS puts
  on a managed node group's group, ``k8s.io/cluster-autoscaler/<cluster name>``, in ``awsRegion`` (the chart's
  default is ``us-east-1``). Another name or region: it discovers no group, logs that it has no node groups, and
  pending pods never get a node
  (https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/cloudprovider/aws/README.md).
- **AWS Load Balancer Controller** (chart ``aws-load-balancer-controller``) tags and finds its load balancers,
  target groups and security groups by ``clusterName``, and works in ``region``/``vpcId`` when given (it reads
  them from the instance metadata otherwise, which IMDSv2's hop limit often denies). Another cluster's name or
  VPC: it reconciles nothing of this cluster's, or fails to start on a VPC it cannot describe
  (https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/deploy/configurations/).

A value unknown at render time, or a region with other than one EKS cluster, is not judged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.render import LB_CONTROLLER_CHART, RenderedResource

RULE = "controller-config"
CLUSTER = "aws:eks/cluster:Cluster"
AUTOSCALER_CHART = "cluster-autoscaler"
AUTOSCALER_DEFAULT_REGION = "us-east-1"  # the chart's values.yaml default for awsRegion


def _vpc_ids(graph: Graph, cluster: RenderedResource) -> set[str]:
    """The ids of the VPCs the cluster's subnets lie in, as the render resolves them."""
    subnets = graph.referenced(cluster, "vpcConfig")
    return {str(s.inputs["vpcId"]) for s in subnets if isinstance(s.inputs.get("vpcId"), str)}


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        clusters = graph.of_type(CLUSTER, region)
        if len(clusters) != 1 or not isinstance(clusters[0].inputs.get("name"), str):
            continue
        cluster = clusters[0]
        name, cloud = str(cluster.inputs["name"]), graph.cloud_region(region)
        for release in graph.releases(region, AUTOSCALER_CHART):
            yield from _autoscaler(release, name, cloud)
        for release in graph.releases(region, LB_CONTROLLER_CHART):
            yield from _load_balancer_controller(release, name, cloud, _vpc_ids(graph, cluster))


def _autoscaler(release: RenderedResource, cluster: str, cloud: str | None) -> Iterator[Finding]:
    values: dict[str, Any] = release.inputs.get("values") or {}
    if values.get("autoscalingGroups"):
        return  # groups named one by one: nothing is discovered by the cluster's name
    discovered = lookup(values, "autoDiscovery.clusterName")
    if isinstance(discovered, str) and discovered != cluster:
        yield Finding(
            RULE,
            release.urn,
            f"Cluster Autoscaler discovers node groups tagged k8s.io/cluster-autoscaler/{discovered}, but the "
            f"cluster is {cluster}: it finds no node group and pending pods never get a node",
            f"set autoDiscovery.clusterName to {cluster} (the EKS cluster's name)",
        )
    elif discovered is None:
        yield Finding(
            RULE,
            release.urn,
            "Cluster Autoscaler has neither autoDiscovery.clusterName nor autoscalingGroups: it manages no node group",
            f"set autoDiscovery.clusterName to {cluster}",
        )
    region = values.get("awsRegion", AUTOSCALER_DEFAULT_REGION)
    if cloud is not None and isinstance(region, str) and region != cloud:
        told = "" if "awsRegion" in values else " (the chart's default)"
        yield Finding(
            RULE,
            release.urn,
            f"Cluster Autoscaler looks for the node groups in {region}{told}, but the cluster runs in {cloud}: "
            "it finds none and never scales",
            f"set awsRegion to {cloud}",
        )


def _load_balancer_controller(
    release: RenderedResource, cluster: str, cloud: str | None, vpcs: set[str]
) -> Iterator[Finding]:
    values: dict[str, Any] = release.inputs.get("values") or {}
    told = values.get("clusterName")
    if isinstance(told, str) and told != cluster:
        yield Finding(
            RULE,
            release.urn,
            f"the {LB_CONTROLLER_CHART} is told it runs in cluster {told!r}, but it runs in {cluster}: it tags and "
            "looks for its load balancers, target groups and subnets under the other name",
            f"set clusterName to {cluster}",
        )
    region = values.get("region")
    if cloud is not None and isinstance(region, str) and region != cloud:
        yield Finding(
            RULE,
            release.urn,
            f"the {LB_CONTROLLER_CHART} is told region {region}, but the cluster runs in {cloud}: it cannot find "
            "the cluster's VPC there and fails to start",
            f"set region to {cloud}",
        )
    vpc = values.get("vpcId")
    if vpcs and isinstance(vpc, str) and vpc not in vpcs:
        yield Finding(
            RULE,
            release.urn,
            f"the {LB_CONTROLLER_CHART} is told VPC {vpc}, not the cluster's: it places load balancers and "
            "target groups in a VPC whose pods it cannot reach",
            "set vpcId to the cluster's VPC id",
        )
