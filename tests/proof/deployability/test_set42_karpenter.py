"""What set 42's Karpenter misses led to (written after its blind run, so not held out), planted in the shipped dev
render beside correct twins: Karpenter 1.11.1's v1 CRDs (NodePool, NodeClaim, EC2NodeClass) in the render's schema
check, crd-order reading an OCI chart reference by its chart name, and nodes-join on an EC2NodeClass whose node role
has no access entry on an API-mode cluster or whose subnet selector matches no subnet. The planted defects differ
from the held-out cases: a role given by ARN and by instance profile, a NodePool missing only its kind, a misspelt
selector field, a cluster tag with the wrong value, two terms neither of which matches."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane import package_data
from tokenplane.proof.deployability import nodes_join, ordering
from tokenplane.proof.render import RenderedResource, validate_manifest

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)
ROLE_NAME = "planted-karpenter-nodes"
ROLE_ARN = f"arn:aws:iam::123456789012:role/{ROLE_NAME}"
CLUSTER_NODE_ROLE = "dev-local-cluster-node-role-678054b"  # the dev render's managed node groups' role
PRIVATE_A = "dev-local-network-private-a-efbd6b7-id"
GOOD_SUBNETS = [{"tags": {"kubernetes.io/cluster/dev-local": "shared", "kubernetes.io/role/internal-elb": "1"}}]


def _aws(type_token: str, name: str, inputs: dict[str, Any], **kw: Any) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION, **kw)


def _node_class(name: str = "planted-class", **spec: Any) -> RenderedResource:
    body = {
        "role": CLUSTER_NODE_ROLE,
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": GOOD_SUBNETS,
        "securityGroupSelectorTerms": [{"tags": {"aws:eks:cluster-name": "dev-local"}}],
        **spec,
    }
    body = {k: v for k, v in body.items() if v is not None}
    manifest = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": name}, "spec": body}
    return _aws("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", name, manifest)


def _node_role() -> RenderedResource:
    trust = {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
    return _aws(
        "aws:iam/role:Role",
        "planted-node-role",
        {"name": ROLE_NAME, "assumeRolePolicy": json.dumps({"Version": "2012-10-17", "Statement": [trust]})},
    )


def _entry(principal: str = ROLE_ARN, entry_type: str = "EC2_LINUX") -> RenderedResource:
    return _aws(
        "aws:eks/accessEntry:AccessEntry",
        "planted-entry",
        {"clusterName": "dev-local", "principalArn": principal, "type": entry_type},
    )


def _join(*extra: RenderedResource) -> list[str]:
    return [f.message for f in _findings(nodes_join.check, *extra) if f.rule == nodes_join.RULE]


# --- the CRD schemas -------------------------------------------------------------------------------------------


NODE_POOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "batch"},
    "spec": {
        "template": {
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "batch"},
                "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
            }
        },
        "limits": {"cpu": "32"},
    },
}


def test_the_karpenter_schemas_are_the_chart_releases_crds() -> None:
    for key in (
        ("karpenter.sh/v1", "NodePool"),
        ("karpenter.sh/v1", "NodeClaim"),
        ("karpenter.k8s.aws/v1", "EC2NodeClass"),
    ):
        schema = json.loads(package_data.path(package_data.CRD_SCHEMAS[key]).read_text(encoding="utf-8"))
        assert "at chart 1.11.1, tag v1.11.1" in schema["$comment"], schema["$comment"]


def test_a_v1_node_pool_and_node_class_validate() -> None:
    assert validate_manifest(NODE_POOL, "1.35") is None
    node_class = _node_class("batch", role="KarpenterNodeRole-dev").inputs
    assert validate_manifest(node_class, "1.35") is None


def test_a_node_class_ref_without_its_kind_is_refused() -> None:
    spec = json.loads(json.dumps(NODE_POOL["spec"]))
    del spec["template"]["spec"]["nodeClassRef"]["kind"]
    error = validate_manifest({**NODE_POOL, "spec": spec}, "1.35")
    assert error is not None and "nodeClassRef" in error and "'kind' is a required property" in error, error


def test_a_node_class_without_ami_selector_terms_or_with_a_misspelt_selector_is_refused() -> None:
    no_amis = validate_manifest(_node_class("batch", amiSelectorTerms=None, amiFamily="Bottlerocket").inputs, "1.35")
    assert no_amis is not None and "'amiSelectorTerms' is a required property" in no_amis, no_amis
    typo = _node_class("batch", subnetSelectorTerms=[{"tag": {"kubernetes.io/role/internal-elb": "1"}}]).inputs
    error = validate_manifest(typo, "1.35")
    assert error is not None and "subnetSelectorTerms" in error, error


def test_a_karpenter_resource_waits_for_the_oci_charts_release() -> None:
    release = _aws(
        "kubernetes:helm.sh/v3:Release",
        "planted-karpenter",
        {"name": "karpenter", "chart": "oci://public.ecr.aws/karpenter/karpenter", "version": "1.11.1"},
    )
    pool = _aws("kubernetes:karpenter.sh/v1:NodePool", "planted-pool", NODE_POOL, dependencies=[release.urn])
    assert not [f for f in _findings(ordering.check_crd_order, release, pool) if f.urn == pool.urn]
    alone = _aws("kubernetes:karpenter.sh/v1:NodePool", "planted-pool-alone", NODE_POOL)
    messages = [f.message for f in _findings(ordering.check_crd_order, release, alone)]
    assert any("does not wait for the karpenter release" in m for m in messages), messages


# --- nodes-join: Karpenter's node role ---------------------------------------------------------------------------


def test_a_node_class_role_by_name_without_an_access_entry_is_found() -> None:
    messages = _join(_node_role(), _node_class(role=ROLE_NAME))
    assert any("has no EKS access entry" in m and "authentication mode is API" in m for m in messages), messages


def test_a_node_class_role_by_arn_without_an_access_entry_is_found() -> None:
    messages = _join(_node_role(), _node_class(role=ROLE_ARN))
    assert any(f"IAM role {_node_role().name}" in m and "no EKS access entry" in m for m in messages), messages


def test_a_node_class_instance_profile_whose_role_has_no_access_entry_is_found() -> None:
    profile = _aws(
        "aws:iam/instanceProfile:InstanceProfile", "planted-profile", {"name": "planted-nodes", "role": ROLE_NAME}
    )
    messages = _join(_node_role(), profile, _node_class(role=None, instanceProfile="planted-nodes"))
    assert any("instance profile planted-nodes" in m and "no EKS access entry" in m for m in messages), messages


def test_a_node_class_role_with_an_access_entry_or_the_managed_groups_role_is_clean() -> None:
    assert not _join(_node_role(), _entry(), _node_class(role=ROLE_NAME))
    assert not _join(_node_class(role=CLUSTER_NODE_ROLE))
    assert not _join(_node_class(role="KarpenterNodeRole-dev-local"))  # a role the program does not create


# --- nodes-join: Karpenter's subnet selector ---------------------------------------------------------------------


def test_a_subnet_selector_by_a_tag_no_subnet_carries_is_found() -> None:
    messages = _join(_node_class(subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "dev-local"}}]))
    assert any("which no subnet carries" in m and "karpenter.sh/discovery=dev-local" in m for m in messages), messages


def test_a_subnet_selector_whose_cluster_tag_has_another_value_is_found() -> None:
    messages = _join(_node_class(subnetSelectorTerms=[{"tags": {"kubernetes.io/cluster/dev-local": "owned"}}]))
    assert any("SubnetsReady" in m for m in messages), messages


def test_two_subnet_selector_terms_neither_of_which_matches_are_found() -> None:
    terms = [{"tags": {"Name": "dev-local-network-private-z"}}, {"tags": {"kubernetes.io/role/internal-elb": "0"}}]
    messages = _join(_node_class(subnetSelectorTerms=terms))
    assert any("which no subnet carries" in m for m in messages), messages


def test_subnet_selectors_that_match_a_subnet_or_name_one_by_id_are_clean() -> None:
    assert not _join(_node_class())
    assert not _join(_node_class(subnetSelectorTerms=[{"tags": {"kubernetes.io/role/internal-elb": "*"}}]))
    assert not _join(_node_class(subnetSelectorTerms=[{"id": "subnet-0123456789abcdef0"}]))
    terms = [{"tags": {"karpenter.sh/discovery": "dev-local"}}, {"tags": {"Name": "dev-local-network-private-b"}}]
    assert not _join(_node_class(subnetSelectorTerms=terms))
    tag = _aws(
        "aws:ec2/tag:Tag",
        "planted-discovery-tag",
        {"resourceId": PRIVATE_A, "key": "karpenter.sh/discovery", "value": "dev-local"},
    )
    assert not _join(tag, _node_class(subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "dev-local"}}]))
