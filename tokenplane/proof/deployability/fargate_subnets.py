"""Every EKS Fargate profile is placed in private subnets: EKS refuses a subnet routed to an internet gateway.

Fargate pods get no public address, and EKS accepts only private subnets for a Fargate profile: "Only private
subnets (with no direct route to an Internet Gateway) are accepted for this parameter"
(https://docs.aws.amazon.com/eks/latest/userguide/fargate-profile.html, "Subnets";
https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateFargateProfile.html). CreateFargateProfile fails with
``InvalidParameterException: Subnet subnet-... provided in Fargate Profile is not a private subnet``, the
``aws.eks.FargateProfile`` fails to create, and the pods its selectors match are scheduled by no one (or stay on the
nodes).

A subnet is public here when the most specific route its route table (explicitly associated, else the VPC's main
table) has for AWS's public addresses leads to an internet gateway (``vpc_routes``): a route of 0.0.0.0/0 to an
``aws.ec2.InternetGateway``. A subnet whose routing is not known (not the program's, a transit gateway, a table the
program adopts) is not judged.

It cannot see: an internet gateway route of a narrower destination than the one covering AWS's public ranges (EKS
calls such a subnet public too), and subnets of a VPC the program does not create.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability import vpc_routes
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

RULE = "fargate-private-subnets"
PROFILE = "aws:eks/fargateProfile:FargateProfile"
SUBNET = "aws:ec2/subnet:Subnet"


def check(graph: Graph) -> Iterator[Finding]:
    for profile in graph.of_type(PROFILE):
        subnets = [s for s in graph.referenced(profile, "subnetIds") if s.type == SUBNET]
        public = [s for s in subnets if vpc_routes.public(graph, s) is True]
        if not public:
            continue
        gateways = {e.target.name for s in public if (e := vpc_routes.egress(graph, s)).target is not None}
        yield Finding(
            RULE,
            profile.urn,
            f"Fargate profile {profile.name} is placed in {', '.join(s.name for s in public)}, routed to internet "
            f"gateway {', '.join(sorted(gateways))}: EKS accepts only private subnets for Fargate and "
            "CreateFargateProfile fails (InvalidParameterException: Subnet ... provided in Fargate Profile is not a "
            "private subnet)",
            "give the profile the VPC's private subnets (routed to the internet through a NAT gateway, or through VPC "
            "endpoints only)",
        )
