"""Network: a VPC with a public and a private subnet in every AZ, and one NAT per AZ."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from tokenplane.components.base import Component
from tokenplane.spec import PlatformSpec, Region

VPC_SUPERNET = ipaddress.IPv4Network("10.0.0.0/8")  # one /16 of it per region
# /20 private subnets hold 4,091 pod IPs each: the VPC CNI gives every pod a VPC address.
PRIVATE_PREFIX = 20
PUBLIC_PREFIX = 24


@dataclass(frozen=True, kw_only=True)
class NetworkArgs:
    """One region's VPC.

    Args:
        azs: the availability zones to span, e.g. ``["eu-west-1a", "eu-west-1b", "eu-west-1c"]``.
        cluster_name: the EKS cluster the subnets are tagged for, so that its load balancers find them.
        tags: AWS tags on every resource.
        vpc_cidr: the VPC's range; ``vpc_cidr(spec, region)`` on the spec-driven path, one per region.
    """

    azs: list[str]
    cluster_name: str
    tags: dict[str, str] = field(default_factory=dict)
    vpc_cidr: str = "10.0.0.0/16"


@dataclass(frozen=True, kw_only=True)
class PrivateSubnets:
    """Where a data store lives: a private subnet in each of the region's AZs, reachable from the VPC only."""

    azs: list[str]
    vpc_id: pulumi.Input[str]
    vpc_cidr: str
    subnet_ids: list[pulumi.Output[str]]


def vpc_cidr(spec: PlatformSpec, region: Region) -> str:
    """10.<n>.0.0/16 for the spec's n-th region: distinct per region, so that peering or a transit gateway
    between them stays possible. Append new regions at the end of the spec: the order fixes each VPC's range."""
    index = [r.name for r in spec.regions].index(region.name)
    return str(list(VPC_SUPERNET.subnets(new_prefix=16))[index])


class Network(Component):
    """VPC, subnets per AZ, an internet gateway, and a NAT gateway per AZ."""

    MODULE = "network"

    vpc_id: pulumi.Output[str]
    cluster_name: str  # the EKS cluster its subnets are tagged for; ``Cluster`` takes this name
    private: PrivateSubnets
    private_subnet_ids: list[pulumi.Output[str]]
    public_subnet_ids: list[pulumi.Output[str]]

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        tags = args.tags
        cidr = args.vpc_cidr
        self.cluster_name = args.cluster_name
        vpc = aws.ec2.Vpc(
            self.child("vpc"),
            cidr_block=cidr,
            enable_dns_hostnames=True,  # EKS nodes and private endpoints need DNS hostnames
            enable_dns_support=True,
            tags={**tags, "Name": self.child("vpc")},
            opts=self.opts(),
        )
        # Adopt the VPC's default security group and leave it without rules: nothing here uses it (every interface
        # gets its own group), and an interface someone attaches to it by mistake then reaches nothing.
        aws.ec2.DefaultSecurityGroup(
            self.child("default-sg"), vpc_id=vpc.id, tags={**tags, "Name": self.child("default-sg")}, opts=self.opts()
        )
        igw = aws.ec2.InternetGateway(self.child("igw"), vpc_id=vpc.id, tags=tags, opts=self.opts())
        public_rt = aws.ec2.RouteTable(
            self.child("public-rt"),
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
            tags=tags,
            opts=self.opts(),
        )
        network = ipaddress.IPv4Network(cidr)
        private_blocks = list(network.subnets(new_prefix=PRIVATE_PREFIX))
        # Public subnets are /24s carved from the last /20, which no private subnet uses (at most 15 AZs).
        public_blocks = list(private_blocks[-1].subnets(new_prefix=PUBLIC_PREFIX))
        cluster_tag = f"kubernetes.io/cluster/{args.cluster_name}"
        self.private_subnet_ids, self.public_subnet_ids = [], []
        for i, az in enumerate(args.azs):
            suffix = az[-1]
            public = aws.ec2.Subnet(
                self.child("public", suffix),
                vpc_id=vpc.id,
                cidr_block=str(public_blocks[i]),
                availability_zone=az,
                map_public_ip_on_launch=False,  # only load balancers and NATs live here
                tags={
                    **tags,
                    "Name": self.child("public", suffix),
                    "kubernetes.io/role/elb": "1",
                    cluster_tag: "shared",
                },
                opts=self.opts(),
            )
            aws.ec2.RouteTableAssociation(
                self.child("public", suffix, "rta"), subnet_id=public.id, route_table_id=public_rt.id, opts=self.opts()
            )
            # One NAT per AZ, so that an AZ outage does not cut egress (image and weight pulls) for the others.
            eip = aws.ec2.Eip(self.child("nat", suffix, "eip"), domain="vpc", tags=tags, opts=self.opts())
            nat = aws.ec2.NatGateway(
                self.child("nat", suffix),
                allocation_id=eip.id,
                subnet_id=public.id,
                tags={**tags, "Name": self.child("nat", suffix)},
                opts=self.opts(depends_on=[igw]),
            )
            private = aws.ec2.Subnet(
                self.child("private", suffix),
                vpc_id=vpc.id,
                cidr_block=str(private_blocks[i]),
                availability_zone=az,
                tags={
                    **tags,
                    "Name": self.child("private", suffix),
                    "kubernetes.io/role/internal-elb": "1",
                    cluster_tag: "shared",
                },
                opts=self.opts(),
            )
            private_rt = aws.ec2.RouteTable(
                self.child("private", suffix, "rt"),
                vpc_id=vpc.id,
                routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)],
                tags=tags,
                opts=self.opts(),
            )
            aws.ec2.RouteTableAssociation(
                self.child("private", suffix, "rta"),
                subnet_id=private.id,
                route_table_id=private_rt.id,
                opts=self.opts(),
            )
            self.public_subnet_ids.append(public.id)
            self.private_subnet_ids.append(private.id)
        self.vpc_id = vpc.id
        self.vpc_cidr = cidr
        self.private = PrivateSubnets(azs=args.azs, vpc_id=vpc.id, vpc_cidr=cidr, subnet_ids=self.private_subnet_ids)
        self.register_outputs(
            {
                "vpc_id": vpc.id,
                "private_subnet_ids": self.private_subnet_ids,
                "public_subnet_ids": self.public_subnet_ids,
            }
        )


def vpc_only_firewall(
    logical: str,
    *,
    subnets: PrivateSubnets,
    port: int,
    description: str,
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> aws.ec2.SecurityGroup:
    """A security group that admits one TCP port from inside the VPC and nothing else."""
    return aws.ec2.SecurityGroup(
        logical,
        vpc_id=subnets.vpc_id,
        description=description,
        ingress=[
            aws.ec2.SecurityGroupIngressArgs(
                protocol="tcp", from_port=port, to_port=port, cidr_blocks=[subnets.vpc_cidr], description=description
            )
        ],
        tags=tags,
        opts=opts,
    )
