"""A log group an AWS service creates for itself is created by the program first, or not at all.

Some services create a CloudWatch log group of a fixed name once a resource of theirs exists: EKS, with control
plane logging on (``enabledClusterLogTypes``), sends the cluster's logs to ``/aws/eks/<cluster-name>/cluster`` and
creates that group itself as it starts logging
(https://docs.aws.amazon.com/eks/latest/userguide/control-plane-logs.html). A program's ``aws.cloudwatch.LogGroup``
of that name (to set its retention or key) must therefore exist before the cluster: created after it (it waits for
the cluster's name) or beside it (no order between them), CreateLogGroup finds the group EKS made and fails with
ResourceAlreadyExistsException "The specified log group already exists" (terraform-aws-modules/terraform-aws-eks#411
and #2277, cloudposse/terraform-aws-eks-cluster#67). The fix those projects ship: create the group first and make
the cluster depend on it.

It cannot see: Lambda's ``/aws/lambda/<function>`` (created only when the function first runs, which the render
cannot time), groups other services create, and clusters or groups whose names are known only at apply time.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

RULE = "service-log-group-first"
CLUSTER = "aws:eks/cluster:Cluster"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"


def check(graph: Graph) -> Iterator[Finding]:
    groups = {str(g.inputs["name"]): g for g in graph.of_type(LOG_GROUP) if isinstance(g.inputs.get("name"), str)}
    for cluster in graph.of_type(CLUSTER):
        name, types = cluster.inputs.get("name"), cluster.inputs.get("enabledClusterLogTypes")
        if not isinstance(name, str) or not types:
            continue  # no control plane logging: EKS creates no group
        group = groups.get(f"/aws/eks/{name}/cluster")
        if group is None or group.urn in graph.waits_for(cluster.urn):
            continue
        after = cluster.urn in graph.waits_for(group.urn)
        yield Finding(
            RULE,
            group.urn,
            f"log group {group.name} (name {group.inputs['name']}) is the group EKS creates itself for cluster "
            f"{cluster.name}'s control plane logs (enabledClusterLogTypes {', '.join(map(str, types))}), and it is "
            f"created {'after the cluster (it waits for it)' if after else 'beside the cluster (no order between them)'}"
            ": once EKS has made the group, CreateLogGroup fails with ResourceAlreadyExistsException on the first run",
            f"create {group.name} before the cluster: give it the name from the cluster's input, not its output, and "
            f"make {cluster.name} depend on it (ResourceOptions(depends_on=[...]))",
        )
