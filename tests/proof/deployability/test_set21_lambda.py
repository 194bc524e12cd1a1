"""The rules set 21's misses led to (written after its blind run, so not held out), each planted in a shipped render
beside its correct twin: a VPC Lambda whose role may not manage its network interfaces, or gets the permission from
an attachment the function does not wait for (function-vpc-permissions); a log group EKS creates itself, made by the
program after the cluster (service-log-group-first); an autoscaled node group whose desired size Pulumi still owns
(node-group-size-owned)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.proof.deployability.conftest import findings, mutated, rendered
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof.deployability import function_vpc_permissions, node_group_size, service_log_groups
from tokenplane.proof.render import ACCOUNT_ID, RenderedResource, RenderResult, physical_id

STACK = "minimal"
ROLE = "aws:iam/role:Role"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
BASIC = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
VPC_ACCESS = "arn:aws:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"
ENI_POLICY = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": ["ec2:*NetworkInterface*"], "Resource": "*"}],
    }
)


def _after(resource: RenderedResource, *others: RenderedResource) -> RenderedResource:
    return dataclasses.replace(resource, dependencies=[*resource.dependencies, *(o.urn for o in others)])


def _rid(typ: str, name: str) -> str:
    return physical_id(typ, name).removesuffix("-id")


# function-vpc-permissions ----------------------------------------------------------------------------------------------


def _vpc_function(grants: str, *, waits: bool) -> list[RenderedResource]:
    """A role, its grants (``basic``, ``vpc-policy``, ``role-policy`` or ``inline``) and a function in the VPC."""
    inline = [{"name": "eni", "policy": ENI_POLICY}] if grants == "inline" else []
    role = _aws(ROLE, "rollup-role", {"assumeRolePolicy": "{}", "inlinePolicies": inline})
    name = _rid(ROLE, "rollup-role")
    holders = [_aws(ATTACHMENT, "rollup-logs", {"role": name, "policyArn": BASIC})]
    if grants == "vpc-policy":
        holders.append(_aws(ATTACHMENT, "rollup-vpc", {"role": name, "policyArn": VPC_ACCESS}))
    elif grants == "role-policy":
        holders.append(_aws(ROLE_POLICY, "rollup-eni", {"role": name, "policy": ENI_POLICY}))
    inputs = {
        "role": f"arn:aws:iam::{ACCOUNT_ID}:role/{name}",
        "runtime": "python3.12",
        "vpcConfig": {"subnetIds": ["subnet-a", "subnet-b"], "securityGroupIds": ["sg-1"]},
    }
    function = _after(_aws("aws:lambda/function:Function", "rollup", inputs), role)
    return [role, *holders, _after(function, *holders) if waits else function]


@pytest.mark.parametrize(
    ("grants", "waits", "expected"),
    [
        ("basic", True, "does not allow ec2:CreateNetworkInterface"),
        ("vpc-policy", False, "which the function does not wait for"),
        ("role-policy", False, "which the function does not wait for"),
        ("vpc-policy", True, None),
        ("role-policy", True, None),
        ("inline", False, None),
    ],
)
def test_a_vpc_function_s_role_may_manage_its_interfaces_before_it_is_created(
    grants: str, waits: bool, expected: str | None
) -> None:
    result = mutated(rendered(STACK), lambda r: r, extra=_vpc_function(grants, waits=waits))
    found = findings(STACK, result, rule=function_vpc_permissions.RULE)
    if expected is None:
        assert not found, found
        return
    assert len(found) == 1, found
    message = found[0].message + found[0].fix
    assert "rollup" in message and "vpcConfig.subnetIds" in message and expected in message, message
    assert "depend" in found[0].fix, found[0].fix


# service-log-group-first -----------------------------------------------------------------------------------------------


def _cluster(result: RenderResult) -> RenderedResource:
    clusters = [r for r in result.resources if r.type == service_log_groups.CLUSTER]
    assert len(clusters) == 1 and clusters[0].inputs.get("enabledClusterLogTypes"), clusters
    return clusters[0]


@pytest.mark.parametrize("order", ["group-after-cluster", "no-order", "cluster-after-group"])
def test_a_log_group_eks_creates_itself_is_created_before_the_cluster(order: str) -> None:
    base = rendered(STACK)
    cluster = _cluster(base)
    inputs = {"name": f"/aws/eks/{cluster.inputs['name']}/cluster", "retentionInDays": 30}
    group = _aws(service_log_groups.LOG_GROUP, "cluster-logs", inputs)
    if order == "group-after-cluster":
        group = _after(group, cluster)
    change: Callable[[RenderedResource], RenderedResource] = (
        (lambda r: _after(r, group) if r.urn == cluster.urn else r) if order == "cluster-after-group" else (lambda r: r)
    )
    found = findings(STACK, mutated(base, change, extra=[group]), rule=service_log_groups.RULE)
    if order == "cluster-after-group":
        assert not found, found
        return
    assert len(found) == 1, found
    assert "cluster-logs" in found[0].message and "enabledClusterLogTypes" in found[0].message, found[0].message
    assert f"make {cluster.name} depend on it" in found[0].fix, found[0].fix


# node-group-size-owned -------------------------------------------------------------------------------------------------


def _resized(ignore: list[str], scaling: dict[str, Any]) -> Callable[[RenderedResource], RenderedResource]:
    def change(r: RenderedResource) -> RenderedResource:
        if r.type != node_group_size.NODE_GROUP:
            return r
        return dataclasses.replace(r, ignore_changes=ignore, inputs={**r.inputs, "scalingConfig": scaling})

    return change


def test_the_shipped_node_groups_leave_their_size_to_the_autoscaler() -> None:
    groups = [r for r in rendered(STACK).resources if r.type == node_group_size.NODE_GROUP]
    assert groups and all("scalingConfig.desiredSize" in g.ignore_changes for g in groups), groups
    assert not findings(STACK, rule=node_group_size.RULE)


@pytest.mark.parametrize(
    ("ignore", "scaling", "flagged"),
    [
        ([], {"minSize": 1, "desiredSize": 1, "maxSize": 8}, True),
        (["tags"], {"minSize": 1, "desiredSize": 1, "maxSize": 8}, True),
        (["scalingConfig.desiredSize"], {"minSize": 1, "desiredSize": 1, "maxSize": 8}, False),
        (["scalingConfig"], {"minSize": 1, "desiredSize": 1, "maxSize": 8}, False),
        ([], {"minSize": 3, "desiredSize": 3, "maxSize": 3}, False),
    ],
)
def test_an_autoscaled_node_group_ignores_changes_to_its_desired_size(
    ignore: list[str], scaling: dict[str, Any], flagged: bool
) -> None:
    found = findings(STACK, mutated(rendered(STACK), _resized(ignore, scaling)), rule=node_group_size.RULE)
    if not flagged:
        assert not found, found
        return
    assert found, "no finding on a node group that scales without ignoreChanges"
    assert all("scalingConfig.desiredSize" in f.message and "ignore_changes" in f.fix for f in found), found
