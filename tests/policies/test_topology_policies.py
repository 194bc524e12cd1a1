"""Topology policies: node groups counted by distinct AZ, data stores kept out of public subnets."""

from __future__ import annotations

import dataclasses
from typing import Any

from pulumi_policy import PolicyResource

from tests.policies.fixtures import dropping, node, rendered, stack_reports
from tokenplane.policies import topology
from tokenplane.proof.check import policy_resources
from tokenplane.proof.render import RenderedResource, RenderResult

SUBNET = "aws:ec2/subnet:Subnet"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


def subnet(name: str, az: str, **props: Any) -> PolicyResource:
    return node(SUBNET, {"availabilityZone": az, "cidrBlock": "10.0.0.0/24", **props}, name)


def node_group(subnets: list[PolicyResource], *, extra_ids: int = 0, environment: str = "dev") -> list[PolicyResource]:
    """A node group over the given subnets (plus ``extra_ids`` subnet IDs from outside the stack)."""
    ids = [f"{s.name}-id" for s in subnets] + [f"subnet-0{i}" for i in range(extra_ids)]
    props = {"subnetIds": ids, "tags": {"tokenplane:environment": environment}}
    return [*subnets, node(NODE_GROUP, props, "workers", inputs_from={"subnetIds": subnets})]


def test_two_subnets_in_one_az_are_one_az() -> None:
    # The defect this policy had: it counted subnets, so this group passed.
    graph = node_group([subnet("a1", "eu-west-1a"), subnet("a2", "eu-west-1a")])
    [found] = stack_reports(topology.node_groups_multi_az, graph)
    assert "2 subnet(s) in 1 distinct AZ(s) (eu-west-1a)" in found.message
    assert "at least 2 AZs" in found.message
    assert found.urn == graph[-1].urn


def test_two_subnets_in_two_azs_pass() -> None:
    graph = node_group([subnet("a", "eu-west-1a"), subnet("b", "eu-west-1b")])
    assert stack_reports(topology.node_groups_multi_az, graph) == []


def test_min_azs_comes_from_config() -> None:
    graph = node_group([subnet("a", "eu-west-1a"), subnet("b", "eu-west-1b")])
    [found] = stack_reports(topology.node_groups_multi_az, graph, {"minAzs": 3})
    assert "at least 3 AZs" in found.message


def test_subnets_from_outside_the_stack_count_as_possibly_distinct() -> None:
    assert stack_reports(topology.node_groups_multi_az, node_group([], extra_ids=2)) == []
    assert len(stack_reports(topology.node_groups_multi_az, node_group([], extra_ids=1))) == 1


def test_prod_three_az_rule_leaves_other_environments_alone() -> None:
    two = [subnet("a", "us-east-1a"), subnet("b", "us-east-1b")]
    assert stack_reports(topology.prod_node_groups_three_azs, node_group(two, environment="staging")) == []
    [found] = stack_reports(topology.prod_node_groups_three_azs, node_group(two, environment="prod"))
    assert found.message.startswith("prod node group workers has 2 subnet(s) in 2 distinct AZ(s)")


def _redis_subnet_group(r: RenderedResource) -> bool:
    return r.type == "aws:elasticache/subnetGroup:SubnetGroup"


def _public_subnet_urns(graph: RenderResult) -> list[str]:
    return [r.urn for r in graph.resources if r.type == SUBNET and "-public-" in r.name]


def test_the_dev_stack_keeps_its_data_stores_private() -> None:
    assert stack_reports(topology.data_stores_in_private_subnets, rendered("dev")) == []


def test_redis_in_the_public_subnets_is_reported() -> None:
    graph = rendered("dev")
    public = _public_subnet_urns(graph)
    assert len(public) == 2
    moved = [
        dataclasses.replace(r, property_dependencies={**r.property_dependencies, "subnetIds": public})
        if _redis_subnet_group(r)
        else r
        for r in graph.resources
    ]
    found = stack_reports(topology.data_stores_in_private_subnets, dataclasses.replace(graph, resources=moved))
    assert len(found) == 2
    assert all("its route table sends 0.0.0.0/0 to an internet gateway" in f.message for f in found)


def test_a_subnet_is_public_by_its_route_not_its_name() -> None:
    graph = rendered("dev")
    assert set(topology.public_subnets(policy_resources(graph))) == set(_public_subnet_urns(graph))
    # Without the route table associations, nothing routes those subnets to the internet gateway.
    unrouted = dropping(graph, lambda r: r.type == "aws:ec2/routeTableAssociation:RouteTableAssociation")
    assert topology.public_subnets(policy_resources(unrouted)) == {}


def test_map_public_ip_on_launch_makes_a_subnet_public() -> None:
    public = subnet("p", "eu-west-1a", mapPublicIpOnLaunch=True)
    group = node("aws:rds/subnetGroup:SubnetGroup", {"subnetIds": ["p-id"]}, "db", inputs_from={"subnetIds": [public]})
    [found] = stack_reports(topology.data_stores_in_private_subnets, [public, group])
    assert "SubnetGroup db places its nodes in subnet p, which is public (mapPublicIpOnLaunch is true)" in found.message
