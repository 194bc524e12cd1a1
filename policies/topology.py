"""Stack policies over the VPC's shape: node groups across distinct AZs, data stores in private subnets.

A node group or a subnet group lists subnet IDs; whether two of them share an
AZ, or route to an internet gateway, is on the subnets and route tables. The
engine records which resources an input came from (property dependencies), so
these policies follow those links instead of trusting a count of IDs.
"""

from __future__ import annotations

from collections.abc import Iterable

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

from tokenplane.policies import exceptions
from tokenplane.policies.common import get

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
SUBNET = "aws:ec2/subnet:Subnet"
INTERNET_GATEWAY = "aws:ec2/internetGateway:InternetGateway"
ANYWHERE = ("0.0.0.0/0", "::/0")
# Data stores and the input that names their subnets.
DATA_STORE_SUBNETS = {
    "aws:rds/subnetGroup:SubnetGroup": "subnetIds",
    "aws:elasticache/subnetGroup:SubnetGroup": "subnetIds",
    "aws:redshift/subnetGroup:SubnetGroup": "subnetIds",
    "aws:docdb/subnetGroup:SubnetGroup": "subnetIds",
    "aws:msk/cluster:Cluster": "brokerNodeGroupInfo",
    "aws:opensearch/domain:Domain": "vpcOptions",
}


def _subnets(resource: PolicyResource, key: str) -> list[PolicyResource]:
    return [d for d in resource.property_dependencies.get(key, []) if d.resource_type == SUBNET]


def availability_zones(node_group: PolicyResource) -> tuple[set[str], int]:
    """The distinct AZs of a node group's subnets, and how many of its subnets the stack does not define."""
    subnets = _subnets(node_group, "subnetIds")
    zones = {
        str(get(s.props, "availabilityZone", default=get(s.props, "availabilityZoneId", default=""))) for s in subnets
    }
    zones.discard("")
    listed = len(get(node_group.props, "subnetIds", default=[]))
    return zones, max(0, listed - len(subnets))


def _az_report(args: StackValidationArgs, report: ReportViolation, minimum: int, prod_only: bool) -> None:
    for group in (r for r in args.resources if r.resource_type == NODE_GROUP):
        if prod_only and get(group.props, "tags", "tokenplane:environment", default="") != "prod":
            continue
        zones, outside = availability_zones(group)
        # A subnet from outside the stack may be in any AZ: count it as possibly distinct, and say so.
        if len(zones) + outside >= minimum:
            continue
        found = f"{len(zones)} distinct AZ(s) ({', '.join(sorted(zones)) or 'none known'})"
        subnets = len(get(group.props, "subnetIds", default=[]))
        prefix = "prod " if prod_only else ""
        report(
            f"{prefix}node group {group.name} has {subnets} subnet(s) in {found}; an AZ outage would take "
            f"{'it whole' if len(zones) <= 1 else f'1/{len(zones)} of it'}. Give it subnets in at least {minimum} AZs",
            group.urn,
        )


def _multi_az(args: StackValidationArgs, report: ReportViolation) -> None:
    _az_report(args, report, int(args.get_config().get("minAzs", 2)), prod_only=False)


node_groups_multi_az = StackValidationPolicy(
    name="node-groups-multi-az",
    description="Node groups span at least two distinct availability zones (AZs, not subnets, are counted).",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={"minAzs": {"type": "integer", "minimum": 1, "default": 2}}),
    validate=_multi_az,
)


def _prod_three_azs(args: StackValidationArgs, report: ReportViolation) -> None:
    _az_report(args, report, int(args.get_config().get("minAzs", 3)), prod_only=True)


prod_node_groups_three_azs = StackValidationPolicy(
    name="prod-node-groups-three-azs",
    description="In prod, node groups span at least three distinct AZs (advisory: some regions offer only two for "
    "a GPU type).",
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=PolicyConfigSchema(properties={"minAzs": {"type": "integer", "minimum": 1, "default": 3}}),
    validate=_prod_three_azs,
)


def public_subnets(resources: Iterable[PolicyResource]) -> dict[str, str]:
    """URN -> why, for every subnet that gives its hosts a path from the internet."""
    resources = list(resources)
    public: dict[str, str] = {}
    for subnet in (r for r in resources if r.resource_type == SUBNET):
        if get(subnet.props, "mapPublicIpOnLaunch") in (True, "true"):
            public[subnet.urn] = "mapPublicIpOnLaunch is true"
    # Route tables with a default route to an internet gateway, inline or as separate Route resources.
    igw_tables: set[str] = set()
    for r in resources:
        if r.resource_type == "aws:ec2/routeTable:RouteTable":
            gateways = {d.urn for d in r.property_dependencies.get("routes", []) if d.resource_type == INTERNET_GATEWAY}
            for route in get(r.props, "routes", default=[]):
                target = str(get(route, "gatewayId", default=""))
                to_igw = target.startswith("igw-") or (
                    bool(gateways) and bool(target) and not target.startswith("vgw-")
                )
                if get(route, "cidrBlock", default=get(route, "ipv6CidrBlock")) in ANYWHERE and to_igw:
                    igw_tables.add(r.urn)
        elif r.resource_type == "aws:ec2/route:Route":
            via_igw = any(d.resource_type == INTERNET_GATEWAY for d in r.property_dependencies.get("gatewayId", []))
            via_igw = via_igw or str(get(r.props, "gatewayId", default="")).startswith("igw-")
            anywhere = get(r.props, "destinationCidrBlock", default=get(r.props, "destinationIpv6CidrBlock"))
            if via_igw and anywhere in ANYWHERE:
                igw_tables.update(d.urn for d in r.property_dependencies.get("routeTableId", []))
    for assoc in (r for r in resources if r.resource_type == "aws:ec2/routeTableAssociation:RouteTableAssociation"):
        tables = {d.urn for d in assoc.property_dependencies.get("routeTableId", [])}
        if tables & igw_tables:
            for subnet in _subnets(assoc, "subnetId"):
                public.setdefault(subnet.urn, "its route table sends 0.0.0.0/0 to an internet gateway")
    return public


data_stores_policy = "data-stores-in-private-subnets"


def _data_stores(args: StackValidationArgs, report: ReportViolation) -> None:
    public = public_subnets(args.resources)
    flag = exceptions.stack_flagger(args.get_config(), report, data_stores_policy)
    for store in (r for r in args.resources if r.resource_type in DATA_STORE_SUBNETS):
        for subnet in _subnets(store, DATA_STORE_SUBNETS[store.resource_type]):
            if subnet.urn in public:
                flag(
                    store,
                    f"subnet {subnet.name}",
                    f"{store.resource_type.rsplit(':', 1)[-1]} {store.name} places its nodes in subnet {subnet.name}, "
                    f"which is public ({public[subnet.urn]}); use the private subnets",
                )


data_stores_in_private_subnets = StackValidationPolicy(
    name=data_stores_policy,
    description="Databases, caches and brokers (RDS, ElastiCache, MSK, ...) sit only in private subnets.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={"exceptions": exceptions.setting(data_stores_policy)}),
    validate=_data_stores,
)

POLICIES = [node_groups_multi_az, prod_node_groups_three_azs, data_stores_in_private_subnets]
