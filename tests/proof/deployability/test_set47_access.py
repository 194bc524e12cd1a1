"""The rules set 47's access misses led to, planted in the shipped dev render beside correct twins: an aws-auth
ConfigMap mapping principals that have no access entry on a cluster in API authentication mode (eks-access), and
security group rules over the default 60 rules per group and direction, prefix lists counted at their maxEntries
(security-group-rules-quota). The planted defects differ from the held-out cases: a mapUsers user, two roles of
which one has an entry, an ARN on an API_AND_CONFIG_MAP cluster left alone; an egress rule, a SecurityGroupRule
with CIDRs summed with a prefix list on one group, an IPv6 list, inline rules and the cluster security group."""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any

import yaml

from tests.proof.deployability.conftest import mutated, planted, planted_findings, rendered, spec
from tokenplane.proof.deployability import access, security_group_rule_quota
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, cluster_security_group_id, physical_id

STACK = "dev"
REGION = "local"
ACCOUNT = "123456789012"
_quota = partial(planted_findings, security_group_rule_quota.check, stack=STACK)
PREFIX_LIST = "aws:ec2/managedPrefixList:ManagedPrefixList"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
SG = "aws:ec2/securityGroup:SecurityGroup"


def _aws(type_token: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION)


# --- eks-access: aws-auth on an API-mode cluster ------------------------------------------------------------------


def _aws_auth(data: dict[str, list[dict[str, Any]]], name: str = "planted-aws-auth") -> RenderedResource:
    like = next(r for r in rendered(STACK).resources if r.type == "kubernetes:core/v1:ConfigMap")
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "aws-auth", "namespace": "kube-system"},
        "data": {key: yaml.safe_dump(value) for key, value in data.items()},
    }
    return dataclasses.replace(like, urn=like.urn.rsplit("::", 1)[0] + f"::{name}", name=name, inputs=manifest)


def _entry(principal: str) -> RenderedResource:
    return _aws(
        "aws:eks/accessEntry:AccessEntry",
        "planted-entry",
        {"clusterName": "dev-local-cluster-eks", "principalArn": principal, "type": "STANDARD"},
    )


def _access(*extra: RenderedResource, mode: str = "API") -> list[str]:
    def set_mode(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:eks/cluster:Cluster":
            return r
        return dataclasses.replace(r, inputs={**r.inputs, "accessConfig": {"authenticationMode": mode}})

    graph = Graph(spec(STACK), mutated(rendered(STACK), set_mode, extra=list(extra)))
    return [f.message for f in access.check(graph) if "aws-auth" in f.message]


def test_the_dev_cluster_is_in_api_mode() -> None:
    clusters = [r for r in rendered(STACK).resources if r.type == "aws:eks/cluster:Cluster"]
    assert [c.inputs["accessConfig"]["authenticationMode"] for c in clusters] == ["API"]


def test_a_user_mapped_in_aws_auth_is_unauthorized_in_api_mode() -> None:
    arn = f"arn:aws:iam::{ACCOUNT}:user/release-bot"
    found = _access(_aws_auth({"mapUsers": [{"userarn": arn, "username": "release-bot", "groups": ["releasers"]}]}))
    assert len(found) == 1 and arn in found[0] and "Unauthorized" in found[0] and "mapUsers" in found[0]


def test_only_the_mapped_role_without_an_entry_is_flagged() -> None:
    with_entry, without = f"arn:aws:iam::{ACCOUNT}:role/ops", f"arn:aws:iam::{ACCOUNT}:role/data-loader"
    cm = _aws_auth(
        {
            "mapRoles": [
                {"rolearn": with_entry, "username": "ops", "groups": ["ops"]},
                {"rolearn": without, "username": "loader", "groups": ["loaders"]},
            ]
        }
    )
    found = _access(cm, _entry(with_entry))
    assert len(found) == 1 and without in found[0] and with_entry not in found[0]


def test_a_node_role_mapped_in_aws_auth_is_flagged_too() -> None:
    arn = f"arn:aws:iam::{ACCOUNT}:role/self-managed-nodes"
    cm = _aws_auth({"mapRoles": [{"rolearn": arn, "username": "system:node:{{EC2PrivateDNSName}}"}]})
    assert len(_access(cm)) == 1


def test_aws_auth_counts_in_api_and_config_map_mode_and_with_entries() -> None:
    arn = f"arn:aws:iam::{ACCOUNT}:role/data-loader"
    cm = _aws_auth({"mapRoles": [{"rolearn": arn, "username": "loader", "groups": ["loaders"]}]})
    assert _access(cm, mode="API_AND_CONFIG_MAP") == []
    assert _access(cm, mode="CONFIG_MAP") == []
    assert _access(cm, _entry(arn)) == []


def test_another_config_map_or_an_unparsable_mapping_is_left_alone() -> None:
    arn = f"arn:aws:iam::{ACCOUNT}:role/data-loader"
    other = _aws_auth({"mapRoles": [{"rolearn": arn}]})
    other.inputs["metadata"] = {"name": "aws-auth-backup", "namespace": "kube-system"}
    broken = _aws_auth({}, name="planted-broken")
    broken.inputs["data"] = {"mapRoles": "- rolearn: [unclosed"}
    assert _access(other, broken) == []


# --- security-group-rules-quota -----------------------------------------------------------------------------------


def _prefix_list(name: str, max_entries: float, family: str = "IPv4") -> RenderedResource:
    return _aws(PREFIX_LIST, name, {"name": name, "addressFamily": family, "maxEntries": max_entries})


def _list_id(name: str) -> str:
    return physical_id(PREFIX_LIST, name)


def test_an_egress_rule_to_a_large_prefix_list_is_over_the_quota() -> None:
    found = _quota(
        _prefix_list("planted-partners", 75.0),
        _aws(
            EGRESS, "planted-to-partners", {"securityGroupId": "sg-0aa", "prefixListId": _list_id("planted-partners")}
        ),
    )
    assert len(found) == 1
    assert "75 IPv4 outbound rules" in found[0].message and "AuthorizeSecurityGroupEgress" in found[0].message


def test_cidrs_and_a_prefix_list_on_one_group_are_summed() -> None:
    cidrs = [f"10.{i}.0.0/16" for i in range(25)]
    rule = _aws(
        SG_RULE,
        "planted-offices",
        {"type": "ingress", "securityGroupId": "sg-0bb", "protocol": "tcp", "fromPort": 443.0, "toPort": 443.0}
        | {"cidrBlocks": cidrs},
    )
    listed = _aws(INGRESS, "planted-vpn", {"securityGroupId": "sg-0bb", "prefixListId": _list_id("planted-vpn")})
    found = _quota(_prefix_list("planted-vpn", 40.0), rule, listed)
    assert len(found) == 1 and "65 IPv4 inbound rules" in found[0].message
    # the same rules spread over two groups fit
    other = _aws(INGRESS, "planted-vpn", {"securityGroupId": "sg-0cc", "prefixListId": _list_id("planted-vpn")})
    assert _quota(_prefix_list("planted-vpn", 40.0), rule, other) == []


def test_an_ipv6_list_counts_apart_from_ipv4_rules() -> None:
    v6 = _prefix_list("planted-v6", 61.0, "IPv6")
    rule = _aws(INGRESS, "planted-v6-rule", {"securityGroupId": "sg-0dd", "prefixListId": _list_id("planted-v6")})
    found = _quota(v6, rule)
    assert len(found) == 1 and "61 IPv6 inbound rules" in found[0].message
    # 40 IPv4 and 40 IPv6 are each within 60
    four = _prefix_list("planted-v4", 40.0)
    six = _prefix_list("planted-v6", 40.0, "IPv6")
    assert (
        _quota(
            four,
            six,
            _aws(INGRESS, "planted-a", {"securityGroupId": "sg-0dd", "prefixListId": _list_id("planted-v4")}),
            _aws(INGRESS, "planted-b", {"securityGroupId": "sg-0dd", "prefixListId": _list_id("planted-v6")}),
        )
        == []
    )


def test_inline_rules_of_a_group_count_each_cidr() -> None:
    ingress = [
        {"protocol": "tcp", "fromPort": 22.0, "toPort": 22.0, "cidrBlocks": [f"192.0.{i}.0/24" for i in range(61)]}
    ]
    found = _quota(_aws(SG, "planted-bastion", {"vpcId": "vpc-1", "ingress": ingress}))
    assert len(found) == 1 and "61 IPv4 inbound rules" in found[0].message
    assert (
        _quota(
            _aws(
                SG,
                "planted-bastion",
                {"vpcId": "vpc-1", "ingress": [dict(ingress[0], cidrBlocks=ingress[0]["cidrBlocks"][:60])]},
            )
        )
        == []
    )


def test_rules_on_the_cluster_security_group_are_summed_and_named() -> None:
    sg = cluster_security_group_id("dev-local-cluster-eks")
    rules = [
        _aws(INGRESS, f"planted-cidr-{i}", {"securityGroupId": sg, "cidrIpv4": f"172.16.{i}.0/24"}) for i in range(30)
    ]
    found = _quota(
        _prefix_list("planted-vpn", 31.0),
        *rules,
        _aws(INGRESS, "planted-vpn-rule", {"securityGroupId": sg, "prefixListId": _list_id("planted-vpn")}),
    )
    assert len(found) == 1 and "61 IPv4 inbound rules" in found[0].message
    assert "cluster security group of dev-local-cluster-eks" in found[0].message


def test_unknown_values_and_small_lists_are_not_flagged() -> None:
    unknown_size = _aws(PREFIX_LIST, "planted-unsized", {"name": "planted-unsized", "addressFamily": "IPv4"})
    assert (
        _quota(
            unknown_size,
            _aws(INGRESS, "planted-a", {"securityGroupId": "sg-0ee", "prefixListId": _list_id("planted-unsized")}),
            _aws(INGRESS, "planted-b", {"prefixListId": _list_id("planted-unsized")}),
            _prefix_list("planted-small", 20.0),
            _aws(INGRESS, "planted-c", {"securityGroupId": "sg-0ff", "prefixListId": _list_id("planted-small")}),
        )
        == []
    )
