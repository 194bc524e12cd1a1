"""One subnet per Availability Zone where the API places one network interface per zone.

Several AWS APIs put one endpoint (one network interface) in each Availability Zone and take the zone from the
subnets they are given, so two subnets of one zone are refused and ``pulumi up`` stops at that resource (and at
whatever waits for it):

- **Transit gateway VPC attachment** (``aws.ec2transitgateway.VpcAttachment``, CreateTransitGatewayVpcAttachment):
  ``SubnetIds``: "You can specify only one subnet per Availability Zone"; EC2 answers
  ``DuplicateSubnetsInSameZone``
  (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateTransitGatewayVpcAttachment.html,
  https://docs.aws.amazon.com/vpc/latest/tgw/tgw-vpc-attachments.html: "you must select one subnet for each
  Availability Zone ... You can select only one subnet per Availability Zone").
- **Application, Network and Gateway Load Balancers** (``aws.lb.LoadBalancer``/``aws.alb.LoadBalancer``,
  CreateLoadBalancer): ``Subnets`` and ``SubnetMappings``: "You can specify only one subnet per Availability Zone"
  (https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateLoadBalancer.html); ELB answers
  ``InvalidConfigurationRequest`` (a load balancer cannot be attached to multiple subnets in the same zone).
- **Network Firewall** (``aws.networkfirewall.Firewall``, CreateFirewall): ``SubnetMappings``: "Each subnet must
  belong to a different Availability Zone in the VPC"
  (https://docs.aws.amazon.com/network-firewall/latest/APIReference/API_CreateFirewall.html).

Interface VPC endpoints have the same rule, judged with their other values by ``vpc-endpoint-values``.

Judged where every subnet named is one the program creates with a literal ``availabilityZone``. Cannot see:
subnets of other stacks or given by ID, zones given as ``availabilityZoneId`` or computed at apply time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "one-subnet-per-zone"
SUBNET = "aws:ec2/subnet:Subnet"
TGW_ATTACHMENT = "aws:ec2transitgateway/vpcAttachment:VpcAttachment"
LOAD_BALANCERS = ("aws:lb/loadBalancer:LoadBalancer", "aws:alb/loadBalancer:LoadBalancer")
FIREWALL = "aws:networkfirewall/firewall:Firewall"
# type -> (what it is, the API call, what the API answers)
APIS = {
    TGW_ATTACHMENT: (
        "transit gateway VPC attachment",
        "CreateTransitGatewayVpcAttachment",
        "DuplicateSubnetsInSameZone (SubnetIds: 'You can specify only one subnet per Availability Zone')",
    ),
    **{
        t: (
            "load balancer",
            "CreateLoadBalancer",
            "InvalidConfigurationRequest (Subnets: 'You can specify only one subnet per Availability Zone')",
        )
        for t in LOAD_BALANCERS
    },
    FIREWALL: (
        "Network Firewall firewall",
        "CreateFirewall",
        "InvalidRequestException (SubnetMappings: 'Each subnet must belong to a different Availability Zone')",
    ),
}


def subnet_ids(resource: RenderedResource) -> list[Any]:
    """The subnets ``resource`` places itself in: ``subnetIds``, ``subnets``, else ``subnetMappings[].subnetId``."""
    for key in ("subnetIds", "subnets"):
        named = resource.inputs.get(key)
        if isinstance(named, list) and named:
            return named
    mappings = resource.inputs.get("subnetMappings")
    if isinstance(mappings, list):
        return [m.get("subnetId") if isinstance(m, dict) else None for m in mappings]
    return []


def shared_zones(graph: Graph, ids: list[Any]) -> tuple[list[str], list[tuple[RenderedResource, str]]] | None:
    """The zones that two or more of ``ids`` share, and each subnet with its zone; None when a subnet or its zone is
    not the program's literal value."""
    if len(ids) < 2 or not all(isinstance(i, str) for i in ids):
        return None
    subnets: list[tuple[RenderedResource, str]] = []
    for subnet_id in dict.fromkeys(ids):
        found = [s for s in graph.by_physical_ids(subnet_id) if s.type == SUBNET]
        zone = found[0].inputs.get("availabilityZone") if len(found) == 1 else None
        if not isinstance(zone, str) or not zone:
            return None
        subnets.append((found[0], zone))
    zones = [z for _, z in subnets]
    return sorted({z for z in zones if zones.count(z) > 1}), subnets


def check(graph: Graph) -> Iterator[Finding]:
    for resource in graph.resources:
        if resource.type not in APIS:
            continue
        judged = shared_zones(graph, subnet_ids(resource))
        if judged is None or not judged[0]:
            continue
        shared, subnets = judged
        what, call, answer = APIS[resource.type]
        yield Finding(
            RULE,
            resource.urn,
            f"{what} {resource.name} names several subnets in {', '.join(shared)} "
            f"({', '.join(f'{s.name}: {z}' for s, z in subnets)}): it takes one subnet per Availability Zone, and "
            f"{call} answers {answer}, so it is never created",
            f"give {resource.name} one subnet in each Availability Zone (e.g. only the private subnets)",
        )
