"""Every interface VPC endpoint with private DNS admits the nodes on HTTPS.

Private DNS makes the endpoint answer for the service's public name (``api.ecr.REGION.amazonaws.com``,
``sts.REGION.amazonaws.com`` ...) everywhere in its VPC: from then on every SDK call and image pull from a node or a
pod goes to the endpoint's network interfaces, whether or not the subnet also has a NAT gateway. Those interfaces
carry the endpoint's security groups, or, when it names none, the VPC's default security group, whose only ingress
rule admits its own members (https://docs.aws.amazon.com/vpc/latest/privatelink/create-interface-endpoint.html,
"If you do not specify a security group, we associate the default security group for the VPC";
https://docs.aws.amazon.com/vpc/latest/userguide/default-security-group.html). A group that does not admit TCP 443
from the nodes' groups or addresses drops the SYN: ``kubelet`` cannot pull from ECR (``i/o timeout`` in the image
pull, pods stuck in ``ErrImagePull``), new nodes never join, IRSA pods get no credentials from STS.

The peers are the node groups in the endpoint's VPC: their subnets' ranges (nodes and, with the VPC CNI, pods take
their addresses there) or their security groups (a launch template's, else the cluster security group). It cannot
see: security groups the program does not create (passed), a default security group the program manages through
``aws.ec2.DefaultSecurityGroup`` is read with the rules it declares, and prefix lists.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability import nodes_join, vpc_routes
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import CLUSTER, NODE_GROUP, Graph
from tokenplane.proof.deployability.reachability import Region
from tokenplane.proof.deployability.security_groups import Network, network
from tokenplane.proof.render import RenderedResource

RULE = "endpoint-admits"
HTTPS = 443
DEFAULT_SG = "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup"


def _nodes_in(graph: Graph, vpc: RenderedResource) -> tuple[set[str], list[Network]]:
    """The security groups (URNs) and subnet ranges of the node groups whose subnets lie in ``vpc``."""
    groups: set[str] = set()
    ranges: list[Network] = []
    for group in graph.of_type(NODE_GROUP, vpc.region):
        subnets = [s for s in graph.referenced(group, "subnetIds") if s.type == nodes_join.SUBNET]
        if not any((v := vpc_routes.vpc_of(graph, s)) is not None and v.urn == vpc.urn for s in subnets):
            continue
        ranges += [n for s in subnets if (n := network(s.inputs.get("cidrBlock"))) is not None and n not in ranges]
        template = nodes_join.launch_template_groups(graph, group)
        if template is not None:
            groups |= {g.urn for g in template}
        else:
            groups |= {c.urn for c in graph.referenced(group, "clusterName") if c.type == CLUSTER}
    return groups, ranges


def _endpoint_groups(graph: Graph, endpoint: RenderedResource, vpc: RenderedResource) -> list[RenderedResource] | None:
    """The groups on the endpoint's interfaces; None when any is not the program's (not judged). With none named,
    the VPC's default group: the program's ``DefaultSecurityGroup`` for the VPC, else AWS's (an empty list)."""
    ids = list(endpoint.inputs.get("securityGroupIds") or [])
    if ids:
        found = graph.by_physical_ids(ids)
        return found if len(found) == len(set(map(str, ids))) else None
    managed = [
        g for g in graph.of_type(DEFAULT_SG, vpc.region) if (v := vpc_routes.vpc_of(graph, g)) and v.urn == vpc.urn
    ]
    return managed


def check(graph: Graph) -> Iterator[Finding]:
    for endpoint in graph.of_type(vpc_routes.VPC_ENDPOINT):
        if (
            endpoint.inputs.get("vpcEndpointType") != "Interface"
            or endpoint.inputs.get("privateDnsEnabled") is not True
        ):
            continue
        vpc = vpc_routes.vpc_of(graph, endpoint)
        if vpc is None or endpoint.region is None:
            continue
        node_groups, node_ranges = _nodes_in(graph, vpc)
        if not node_groups and not node_ranges:
            continue
        groups = _endpoint_groups(graph, endpoint, vpc)
        if groups is None:
            continue
        service = str(endpoint.inputs.get("serviceName") or "").split(".", 3)[-1] or "the service"
        if groups:
            verdict = Region(graph, endpoint.region).sg_verdict(
                groups, HTTPS, node_groups, node_ranges, peers="the nodes' subnets"
            )
            if verdict.allowed:
                continue
            why = "; ".join(verdict.blockers)
        else:
            why = (
                f"it names no security group, so it carries {vpc.name}'s default security group, whose only ingress "
                "rule admits the group's own members, and no node is one"
            )
        yield Finding(
            RULE,
            endpoint.urn,
            f"interface endpoint {endpoint.name} answers for {service}'s public name across {vpc.name} (private "
            f"DNS) but does not admit the nodes on TCP {HTTPS}: {why}. Every call from a node or pod to {service} "
            "times out (image pulls from ECR fail with i/o timeout, new nodes never join, IRSA gets no credentials)",
            f"give {endpoint.name} security_group_ids with a group admitting TCP {HTTPS} from the VPC's CIDR (or the "
            "nodes' security groups)",
        )
