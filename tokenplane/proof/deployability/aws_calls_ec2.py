"""EC2 networking as the provider creates it: VPCs, subnets, gateways, routes, security groups, ACLs, endpoints,
launch templates (see ``aws_calls`` for how a builder is read)."""

from __future__ import annotations

import json
from typing import Any

from tokenplane.proof.deployability.aws_calls import (
    Api,
    Made,
    Skip,
    builds,
    drop_none,
    need,
    physical_name,
    whole,
)

# --- EC2 networking ---------------------------------------------------------------------------------------------


@builds("aws:ec2/vpc:Vpc")
def vpc(api: Api) -> Made:
    params = drop_none(
        CidrBlock=api.inputs.get("cidrBlock"),
        InstanceTenancy=api.inputs.get("instanceTenancy"),
        AmazonProvidedIpv6CidrBlock=api.inputs.get("assignGeneratedIpv6CidrBlock"),
        Ipv4IpamPoolId=api.inputs.get("ipv4IpamPoolId"),
    )
    if "CidrBlock" not in params and "Ipv4IpamPoolId" not in params:
        raise Skip("no cidrBlock known at render time")
    vpc_id = api.call("ec2", "create_vpc", **params)["Vpc"]["VpcId"]
    for attribute in ("enableDnsSupport", "enableDnsHostnames"):
        if (value := api.inputs.get(attribute)) is not None:
            pascal = attribute[0].upper() + attribute[1:]
            api.call("ec2", "modify_vpc_attribute", VpcId=vpc_id, **{pascal: {"Value": bool(value)}})
    return Made(vpc_id)


@builds("aws:ec2/subnet:Subnet")
def subnet(api: Api) -> Made:
    params = drop_none(
        VpcId=need(api, "vpcId"),
        CidrBlock=api.inputs.get("cidrBlock"),
        Ipv6CidrBlock=api.inputs.get("ipv6CidrBlock"),
        AvailabilityZone=api.inputs.get("availabilityZone"),
        AvailabilityZoneId=api.inputs.get("availabilityZoneId"),
    )
    subnet_id = api.call("ec2", "create_subnet", **params)["Subnet"]["SubnetId"]
    if api.inputs.get("mapPublicIpOnLaunch"):
        api.call("ec2", "modify_subnet_attribute", SubnetId=subnet_id, MapPublicIpOnLaunch={"Value": True})
    return Made(subnet_id)


@builds("aws:ec2/internetGateway:InternetGateway")
def internet_gateway(api: Api) -> Made:
    igw = api.call("ec2", "create_internet_gateway")["InternetGateway"]["InternetGatewayId"]
    if (vpc_id := api.inputs.get("vpcId")) is not None:
        api.call("ec2", "attach_internet_gateway", InternetGatewayId=igw, VpcId=vpc_id)
    return Made(igw)


@builds("aws:ec2/internetGatewayAttachment:InternetGatewayAttachment")
def internet_gateway_attachment(api: Api) -> Made:
    api.call(
        "ec2", "attach_internet_gateway", InternetGatewayId=need(api, "internetGatewayId"), VpcId=need(api, "vpcId")
    )
    return Made(f"{api.inputs['internetGatewayId']}:{api.inputs['vpcId']}")


@builds("aws:ec2/eip:Eip")
def eip(api: Api) -> Made:
    answer = api.call("ec2", "allocate_address", Domain="vpc")
    return Made(answer["AllocationId"], aliases={str(api.render_outputs.get("publicIp", "")): answer["PublicIp"]})


@builds("aws:ec2/natGateway:NatGateway")
def nat_gateway(api: Api) -> Made:
    params = drop_none(
        SubnetId=need(api, "subnetId"),
        AllocationId=api.inputs.get("allocationId"),
        ConnectivityType=api.inputs.get("connectivityType"),
        PrivateIpAddress=api.inputs.get("privateIp"),
    )
    return Made(api.call("ec2", "create_nat_gateway", **params)["NatGateway"]["NatGatewayId"])


# Route targets: the provider's input -> CreateRoute's parameter. "local" is the VPC's own route, never created.
_ROUTE_TARGETS = {
    "gatewayId": "GatewayId",
    "natGatewayId": "NatGatewayId",
    "transitGatewayId": "TransitGatewayId",
    "vpcPeeringConnectionId": "VpcPeeringConnectionId",
    "vpcEndpointId": "VpcEndpointId",
    "networkInterfaceId": "NetworkInterfaceId",
    "egressOnlyGatewayId": "EgressOnlyInternetGatewayId",
    "carrierGatewayId": "CarrierGatewayId",
    "localGatewayId": "LocalGatewayId",
    "coreNetworkArn": "CoreNetworkArn",
}
_ROUTE_DESTINATIONS = {
    "cidrBlock": "DestinationCidrBlock",
    "destinationCidrBlock": "DestinationCidrBlock",
    "ipv6CidrBlock": "DestinationIpv6CidrBlock",
    "destinationIpv6CidrBlock": "DestinationIpv6CidrBlock",
    "destinationPrefixListId": "DestinationPrefixListId",
}


def _create_route(api: Api, route_table_id: str, route: dict[str, Any]) -> None:
    if route.get("gatewayId") == "local":
        return
    params = {param: route[key] for key, param in {**_ROUTE_DESTINATIONS, **_ROUTE_TARGETS}.items() if route.get(key)}
    api.call("ec2", "create_route", RouteTableId=route_table_id, **params)


@builds("aws:ec2/routeTable:RouteTable")
def route_table(api: Api) -> Made:
    table = api.call("ec2", "create_route_table", VpcId=need(api, "vpcId"))["RouteTable"]["RouteTableId"]
    for route in api.inputs.get("routes") or []:
        _create_route(api, table, route)
    return Made(table)


@builds("aws:ec2/route:Route")
def route(api: Api) -> Made:
    table = need(api, "routeTableId")
    _create_route(api, table, api.inputs)
    return Made(f"r-{table}")


@builds("aws:ec2/routeTableAssociation:RouteTableAssociation")
def route_table_association(api: Api) -> Made:
    # moto is looser than AWS here: it lets a subnet be associated with a second route table, which AWS refuses
    # (Resource.AlreadyAssociated); such a defect is not seen through moto.
    params = drop_none(
        RouteTableId=need(api, "routeTableId"),
        SubnetId=api.inputs.get("subnetId"),
        GatewayId=api.inputs.get("gatewayId"),
    )
    return Made(api.call("ec2", "associate_route_table", **params)["AssociationId"])


def _permissions(api: Api, rules: list[dict[str, Any]], own_group: str) -> list[dict[str, Any]]:
    """Inline ingress/egress blocks as IpPermissions. The provider's rules are a set: identical blocks are one."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for rule in rules:
        key = json.dumps(rule, sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        out.append(_permission(rule, own_group))
    return out


def _protocol(value: Any) -> str:
    text = str(int(value)) if isinstance(value, float) else str(value)
    return "-1" if text.lower() in ("all", "-1") else text


def _permission(rule: dict[str, Any], own_group: str) -> dict[str, Any]:
    desc = {"Description": rule["description"]} if rule.get("description") else {}
    groups = [*(rule.get("securityGroups") or []), *([own_group] if rule.get("self") else [])]
    perm: dict[str, Any] = {
        "IpProtocol": _protocol(rule.get("protocol", "-1")),
        "IpRanges": [{"CidrIp": c, **desc} for c in rule.get("cidrBlocks") or []],
        "Ipv6Ranges": [{"CidrIpv6": c, **desc} for c in rule.get("ipv6CidrBlocks") or []],
        "UserIdGroupPairs": [{"GroupId": g, **desc} for g in groups],
        "PrefixListIds": [{"PrefixListId": p, **desc} for p in rule.get("prefixListIds") or []],
    }
    if perm["IpProtocol"] != "-1":
        perm.update(drop_none(FromPort=whole(rule.get("fromPort")), ToPort=whole(rule.get("toPort"))))
    return {k: v for k, v in perm.items() if v != []}


def _apply_rules(api: Api, group: str, *, fresh: bool) -> None:
    """As the provider: drop the default allow-all egress of a fresh group, then authorize the blocks given."""
    if fresh:
        api.call(
            "ec2",
            "revoke_security_group_egress",
            GroupId=group,
            IpPermissions=[{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}],
        )
    for direction in ("ingress", "egress"):
        if permissions := _permissions(api, api.inputs.get(direction) or [], group):
            api.call("ec2", f"authorize_security_group_{direction}", GroupId=group, IpPermissions=permissions)


@builds("aws:ec2/securityGroup:SecurityGroup")
def security_group(api: Api) -> Made:
    params = drop_none(
        GroupName=physical_name(api, limit=255),
        Description=api.inputs.get("description") or "Managed by Pulumi",
        VpcId=api.inputs.get("vpcId"),
    )
    group = api.call("ec2", "create_security_group", **params)["GroupId"]
    _apply_rules(api, group, fresh="VpcId" in params)
    return Made(group)


@builds("aws:ec2/defaultSecurityGroup:DefaultSecurityGroup")
def default_security_group(api: Api) -> Made:
    # The provider adopts the VPC's default group, revokes every rule it has and authorizes the ones given.
    groups = api.call(
        "ec2",
        "describe_security_groups",
        Filters=[{"Name": "vpc-id", "Values": [need(api, "vpcId")]}, {"Name": "group-name", "Values": ["default"]}],
    )["SecurityGroups"]
    if not groups:
        raise Skip("the VPC's default security group is not there to adopt")
    group = groups[0]
    for direction, key in (("ingress", "IpPermissions"), ("egress", "IpPermissionsEgress")):
        if group.get(key):
            api.call("ec2", f"revoke_security_group_{direction}", GroupId=group["GroupId"], IpPermissions=group[key])
    _apply_rules(api, group["GroupId"], fresh=False)
    return Made(group["GroupId"])


@builds("aws:ec2/securityGroupRule:SecurityGroupRule")
def security_group_rule(api: Api) -> Made:
    group = need(api, "securityGroupId")
    rule = dict(api.inputs)
    if rule.get("sourceSecurityGroupId"):
        rule["securityGroups"] = [rule["sourceSecurityGroupId"]]
    direction = "egress" if api.inputs.get("type") == "egress" else "ingress"
    api.call("ec2", f"authorize_security_group_{direction}", GroupId=group, IpPermissions=[_permission(rule, group)])
    return Made(f"sgrule-{group}")


@builds(
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
)
def vpc_security_group_rule(api: Api) -> Made:
    group = need(api, "securityGroupId")
    rule = {
        "protocol": api.inputs.get("ipProtocol", "-1"),
        "fromPort": api.inputs.get("fromPort"),
        "toPort": api.inputs.get("toPort"),
        "cidrBlocks": [c] if (c := api.inputs.get("cidrIpv4")) else [],
        "ipv6CidrBlocks": [c] if (c := api.inputs.get("cidrIpv6")) else [],
        "securityGroups": [g] if (g := api.inputs.get("referencedSecurityGroupId")) else [],
        "prefixListIds": [p] if (p := api.inputs.get("prefixListId")) else [],
        "description": api.inputs.get("description"),
    }
    direction = "egress" if "Egress" in api.resource.type else "ingress"
    answer = api.call(
        "ec2", f"authorize_security_group_{direction}", GroupId=group, IpPermissions=[_permission(rule, group)]
    )
    rules = answer.get("SecurityGroupRules") or [{}]
    return Made(str(rules[0].get("SecurityGroupRuleId", f"sgr-{group}")))


def _acl_entry(api: Api, acl: str, entry: dict[str, Any], *, egress: bool) -> None:
    params = drop_none(
        NetworkAclId=acl,
        RuleNumber=whole(entry.get("ruleNo", entry.get("ruleNumber"))),
        Protocol=_protocol(entry.get("protocol", "-1")),
        RuleAction=entry.get("action", entry.get("ruleAction")),
        Egress=egress,
        CidrBlock=entry.get("cidrBlock"),
        Ipv6CidrBlock=entry.get("ipv6CidrBlock"),
    )
    if params["Protocol"] != "-1" and entry.get("fromPort") is not None:
        params["PortRange"] = {"From": whole(entry.get("fromPort")), "To": whole(entry.get("toPort"))}
    api.call("ec2", "create_network_acl_entry", **params)


@builds("aws:ec2/networkAcl:NetworkAcl")
def network_acl(api: Api) -> Made:
    acl = api.call("ec2", "create_network_acl", VpcId=need(api, "vpcId"))["NetworkAcl"]["NetworkAclId"]
    for direction in ("ingress", "egress"):
        for entry in api.inputs.get(direction) or []:
            _acl_entry(api, acl, entry, egress=direction == "egress")
    return Made(acl)


@builds("aws:ec2/networkAclRule:NetworkAclRule")
def network_acl_rule(api: Api) -> Made:
    acl = need(api, "networkAclId")
    _acl_entry(api, acl, api.inputs, egress=bool(api.inputs.get("egress")))
    return Made(f"nacl-entry-{acl}")


@builds("aws:ec2/vpcEndpoint:VpcEndpoint")
def vpc_endpoint(api: Api) -> Made:
    params = drop_none(
        VpcId=need(api, "vpcId"),
        ServiceName=need(api, "serviceName"),
        VpcEndpointType=api.inputs.get("vpcEndpointType", "Gateway"),
        SubnetIds=api.inputs.get("subnetIds"),
        SecurityGroupIds=api.inputs.get("securityGroupIds"),
        RouteTableIds=api.inputs.get("routeTableIds"),
        PrivateDnsEnabled=api.inputs.get("privateDnsEnabled"),
        PolicyDocument=api.inputs.get("policy"),
    )
    return Made(api.call("ec2", "create_vpc_endpoint", **params)["VpcEndpoint"]["VpcEndpointId"])


_TEMPLATE_RENAMES = {"vpcSecurityGroupIds": "securityGroupIds"}
_TEMPLATE_OWN = ("name", "namePrefix", "description", "tags", "updateDefaultVersion", "defaultVersion")


@builds("aws:ec2/launchTemplate:LaunchTemplate")
def launch_template(api: Api) -> Made:
    data = {_TEMPLATE_RENAMES.get(k, k): v for k, v in api.inputs.items() if k not in _TEMPLATE_OWN}
    answer = api.call(
        "ec2",
        "create_launch_template",
        LaunchTemplateName=physical_name(api, limit=128),
        LaunchTemplateData=api.shaped("ec2", "create_launch_template", "LaunchTemplateData", data),
        **drop_none(VersionDescription=api.inputs.get("description")),
    )
    return Made(answer["LaunchTemplate"]["LaunchTemplateId"])
