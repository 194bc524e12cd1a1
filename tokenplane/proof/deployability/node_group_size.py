"""A managed node group the Cluster Autoscaler scales leaves its desired size to the autoscaler.

The Cluster Autoscaler scales a managed node group by setting its Auto Scaling group's desired capacity, anywhere
between the group's min and max (https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/cloudprovider/aws/README.md).
``scalingConfig.desiredSize`` in the program is then only the size at creation: an update that sends the scaling
config again (any change to it, such as a new max, or ``pulumi up --refresh`` finding the size the autoscaler set)
puts the program's number back, EKS removes the nodes the autoscaler added and evicts their pods, and the two fight
on every deploy. Pulumi's own answer is ``ignoreChanges`` on ``scalingConfig.desiredSize``
(https://www.pulumi.com/registry/packages/aws/api-docs/eks/nodegroup/, "Ignoring Changes to Desired Size";
https://www.pulumi.com/docs/iac/concepts/options/ignorechanges/; pulumi/pulumi-eks#321, n8n-io/terraform-aws-n8n#50,
terraform-aws-modules/terraform-aws-eks#681).

A group is judged when it can scale (min < max) and the program installs the Cluster Autoscaler (its Helm chart) in
the group's region. The render records each resource's ``ignore_changes`` as the engine receives it.
It cannot see: an autoscaler installed outside the program, and a desired size set back by hand.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup

RULE = "node-group-size-owned"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
AUTOSCALER_CHART = "cluster-autoscaler"
DESIRED = "scalingConfig.desiredSize"


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        if not graph.releases(region, AUTOSCALER_CHART):
            continue
        for group in graph.of_type(NODE_GROUP, region):
            low, high = lookup(group.inputs, "scalingConfig.minSize"), lookup(group.inputs, "scalingConfig.maxSize")
            if not isinstance(low, int | float) or not isinstance(high, int | float) or low >= high:
                continue  # a fixed size: nothing else sets it
            if any(_covers(path) for path in group.ignore_changes):
                continue
            yield Finding(
                RULE,
                group.urn,
                f"node group {group.name} scales between {low:g} and {high:g} nodes and the Cluster Autoscaler sets its "
                f"size, but Pulumi owns {DESIRED} (no ignoreChanges): every update that sends the scaling config "
                "(a new maxSize, or `pulumi up --refresh`) puts the program's desired size back, and EKS removes the "
                "nodes the autoscaler added and evicts their pods",
                f'add ResourceOptions(ignore_changes=["{DESIRED}"]) to {group.name}',
            )


def _covers(path: str) -> bool:
    """Whether an ignoreChanges path leaves the desired size alone (itself, its parent, in either case style)."""
    norm = path.replace("_", "").lower()
    return norm in ("scalingconfig", "scalingconfig.desiredsize", "scalingconfig.*", "*")
