"""The rules set 29's EKS node group misses led to (written after its blind run, so not held out), each planted in the
shipped minimal render beside its correct twin: labels and taints EKS or the kubelet refuses (node-group-labels), the
node-level DaemonSets a node group needs not tolerating its taints (node-daemonsets-tolerate), a node group version
or AMI release off its cluster's (node-group-version), and exclusive IAM resources beside others that manage part of
the same relation (iam-exclusive-attachments). The planted defects are of other keys, values and resources than the
held-out cases'."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.proof.deployability.conftest import findings, mutated, planted, rendered, with_inputs
from tests.proof.deployability.test_set3_invariants import STACK, deployment, plus
from tokenplane.proof.deployability import Finding
from tokenplane.proof.render import RenderedResource, RenderResult

GPU_GROUP = "minimal-us-gpu-chat-ng"
SYSTEM_GROUP = "minimal-us-cluster-system"
NODE_ROLE_ATTACHMENT = "minimal-us-cluster-node-policy-amazoneksworkernodepolicy"


def _edit(name: str, edit: Callable[[dict[str, Any]], None]) -> Callable[[RenderedResource], RenderedResource]:
    def change(r: RenderedResource) -> RenderedResource:
        return with_inputs(r, edit) if r.name == name else r

    return change


def _rule(result: RenderResult, name: str) -> list[Finding]:
    return findings(STACK, result, rule=name)


def _aws(type_token: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return planted(STACK, type_token, name, inputs)


def _shipped(name: str) -> RenderedResource:
    return next(r for r in rendered(STACK).resources if r.name == name)


# --- node-group-labels --------------------------------------------------------------------------------------------


def _labels(name: str, **labels: str) -> Callable[[RenderedResource], RenderedResource]:
    return _edit(name, lambda i: i.__setitem__("labels", {**(i.get("labels") or {}), **labels}))


def _taints(name: str, *taints: dict[str, str]) -> Callable[[RenderedResource], RenderedResource]:
    return _edit(name, lambda i: i.__setitem__("taints", [*(i.get("taints") or []), *taints]))


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (_labels(SYSTEM_GROUP, **{"kubernetes.io/role": "system"}), "'kubernetes.io/role' is under a prefix"),
        (_labels(GPU_GROUP, **{"eks.amazonaws.com/team": "ml"}), "'eks.amazonaws.com/team' is under a prefix"),
        (_labels(SYSTEM_GROUP, **{"k8s.io/owner": "ml"}), "'k8s.io/owner' is under a prefix"),
        (_labels(SYSTEM_GROUP, **{"tokenplane.io/owner": "ml platform"}), "has value 'ml platform'"),
        (_labels(SYSTEM_GROUP, **{"tokenplane.io/owner": ""}), "has value ''"),
        (_taints(GPU_GROUP, {"key": "node.kubernetes.io/gpu", "value": "true", "effect": "NO_SCHEDULE"}), "taint"),
        (_taints(SYSTEM_GROUP, {"key": "tokenplane.io/system", "value": "true", "effect": "NoSchedule"}), "effect"),
        (
            _taints(SYSTEM_GROUP, *({"key": f"tokenplane.io/t{n}", "effect": "NO_SCHEDULE"} for n in range(51))),
            "51 taints",
        ),
    ],
)
def test_node_group_labels_and_taints_eks_refuses_are_reported(
    change: Callable[[RenderedResource], RenderedResource], says: str
) -> None:
    found = _rule(mutated(rendered(STACK), change), "node-group-labels")
    assert any(says in f.message and "InvalidParameterException" in f.message for f in found), found


def _user_data(text: str) -> Callable[[RenderedResource], RenderedResource]:
    encoded = base64.b64encode(text.encode()).decode()
    return _edit("minimal-us-gpu-chat-lt", lambda i: i.__setitem__("userData", encoded))


NODEADM = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="BOUNDARY"

--BOUNDARY
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    flags:
      - --node-labels={labels}
--BOUNDARY--
"""


def test_kubelet_node_labels_in_user_data_that_node_restriction_refuses_are_reported() -> None:
    found = _rule(
        mutated(rendered(STACK), _user_data(NODEADM.format(labels="team=ml,node-role.kubernetes.io/gpu=true"))),
        "node-group-labels",
    )
    assert len(found) == 1 and "node-role.kubernetes.io/gpu" in found[0].message, found
    assert "never join" in found[0].message


@pytest.mark.parametrize(
    "change",
    [
        _labels(SYSTEM_GROUP, **{"example.com/node-role": "system", "team": "ml-platform"}),
        _taints(GPU_GROUP, {"key": "example.com/dedicated", "value": "", "effect": "NO_EXECUTE"}),
        _user_data(NODEADM.format(labels="node.kubernetes.io/role=gpu,kubelet.kubernetes.io/pool=chat,team=ml")),
    ],
)
def test_labels_and_taints_eks_and_the_kubelet_accept_are_not_flagged(
    change: Callable[[RenderedResource], RenderedResource],
) -> None:
    assert _rule(mutated(rendered(STACK), change), "node-group-labels") == []


def test_the_shipped_node_groups_labels_are_accepted() -> None:
    assert _rule(rendered(STACK), "node-group-labels") == []


# --- node-daemonsets-tolerate -------------------------------------------------------------------------------------


def _values(release: str, **values: Any) -> Callable[[RenderedResource], RenderedResource]:
    return _edit(release, lambda i: i.__setitem__("values", {**(i.get("values") or {}), **values}))


def test_a_device_plugin_whose_tolerations_leave_out_the_gpu_taint_is_reported() -> None:
    change = _values(
        "minimal-us-nvidia-device-plugin", tolerations=[{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    )
    found = _rule(mutated(rendered(STACK), change), "node-daemonsets-tolerate")
    assert len(found) == 1 and GPU_GROUP in found[0].message and "advertise no nvidia.com/gpu" in found[0].message


def test_a_no_execute_taint_beside_the_gpu_taint_keeps_the_device_plugin_and_dcgm_off() -> None:
    change = _taints(GPU_GROUP, {"key": "example.com/maintenance", "value": "true", "effect": "NO_EXECUTE"})
    found = _rule(mutated(rendered(STACK), change), "node-daemonsets-tolerate")
    owners = sorted(f.message.split("which ")[1].split("'s")[0] for f in found)
    assert owners == ["minimal-us-dcgm-exporter", "minimal-us-nvidia-device-plugin"], found
    assert all("example.com/maintenance=true:NoExecute" in f.message for f in found)


def test_an_ebs_csi_node_plugin_that_stops_tolerating_all_taints_misses_a_tainted_group_with_volume_pods() -> None:
    config = json.dumps({"node": {"tolerateAllTaints": False}})
    addon = _edit("minimal-us-cluster-addon-aws-ebs-csi-driver", lambda i: i.__setitem__("configurationValues", config))
    pod = {
        "nodeSelector": {"tokenplane.io/pool": "chat"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        "containers": [{"name": "c", "image": "busybox:1.36", "volumeMounts": [{"name": "d", "mountPath": "/d"}]}],
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "scratch"}}],
    }
    found = _rule(plus(deployment("scratch", pod), change=addon), "node-daemonsets-tolerate")
    assert len(found) == 1 and "EBS CSI node plugin" in found[0].message and GPU_GROUP in found[0].message, found
    # The same addon configuration, and no pod with a volume on the tainted group: nothing to mount there.
    assert _rule(mutated(rendered(STACK), addon), "node-daemonsets-tolerate") == []


def test_daemonsets_that_tolerate_every_taint_and_the_shipped_addons_are_not_flagged() -> None:
    assert _rule(rendered(STACK), "node-daemonsets-tolerate") == []
    change = _values("minimal-us-nvidia-device-plugin", tolerations=[{"operator": "Exists"}])
    taint = _taints(GPU_GROUP, {"key": "example.com/batch", "value": "true", "effect": "NO_SCHEDULE"})
    found = _rule(mutated(mutated(rendered(STACK), change), taint), "node-daemonsets-tolerate")
    assert [f for f in found if "nvidia-device-plugin" in f.message] == []


# --- node-group-version -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"version": "1.36"}, "asks for Kubernetes 1.36"),
        ({"version": "1.31"}, "more than 3 minors older"),
        ({"releaseVersion": "1.33.4-20250801"}, "built for Kubernetes 1.33"),
        ({"version": "1.34", "releaseVersion": "1.35.0-20260110"}, "built for Kubernetes 1.35, on Kubernetes 1.34"),
    ],
)
def test_node_group_versions_and_releases_off_the_clusters_are_reported(fields: dict[str, str], says: str) -> None:
    found = _rule(mutated(rendered(STACK), _edit(SYSTEM_GROUP, lambda i: i.update(fields))), "node-group-version")
    assert any(says in f.message for f in found), found


@pytest.mark.parametrize(
    "fields",
    [
        {"version": "1.35", "releaseVersion": "1.35.2-20260201"},
        {"version": "1.33"},  # a staged upgrade: the control plane first, nodes two minors behind
        {"amiType": "BOTTLEROCKET_x86_64", "releaseVersion": "1.40.0-abc12345"},
    ],
)
def test_versions_within_the_skew_and_releases_of_the_version_are_not_flagged(fields: dict[str, str]) -> None:
    result = mutated(rendered(STACK), _edit(SYSTEM_GROUP, lambda i: i.update(fields)))
    assert _rule(result, "node-group-version") == []


# --- iam-exclusive-attachments ------------------------------------------------------------------------------------


def _node_role() -> str:
    return str(_shipped(NODE_ROLE_ATTACHMENT).inputs["role"])


def _policy(name: str) -> RenderedResource:
    return _aws("aws:iam/policy:Policy", name, {"policy": json.dumps({"Version": "2012-10-17", "Statement": []})})


def test_a_policy_attachment_of_a_customer_policy_another_role_also_holds_is_reported() -> None:
    arn = "arn:aws:iam::123456789012:policy/minimal-shared"
    extra = [
        _aws(
            "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
            "shared-on-node",
            {"role": _node_role(), "policyArn": arn},
        ),
        _aws(
            "aws:iam/policyAttachment:PolicyAttachment", "shared-exclusive", {"roles": ["other-role"], "policyArn": arn}
        ),
    ]
    found = _rule(mutated(rendered(STACK), lambda r: r, extra=extra), "iam-exclusive-attachments")
    assert len(found) == 1 and "shared-exclusive" in found[0].message and "shared-on-node" in found[0].message


def test_a_policy_attachment_of_an_aws_managed_policy_is_reported_even_alone() -> None:
    arn = "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"
    extra = [_aws("aws:iam/policyAttachment:PolicyAttachment", "s3-read", {"users": ["ci"], "policyArn": arn})]
    found = _rule(mutated(rendered(STACK), lambda r: r, extra=extra), "iam-exclusive-attachments")
    assert len(found) == 1 and "every other role, user and group of the account" in found[0].message


def test_exclusive_role_policy_attachments_that_leave_out_the_roles_other_attachments_are_reported() -> None:
    exclusive = _aws(
        "aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive",
        "node-role-exclusive",
        {"roleName": _node_role(), "policyArns": ["arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy"]},
    )
    found = _rule(mutated(rendered(STACK), lambda r: r, extra=[exclusive]), "iam-exclusive-attachments")
    assert len(found) == 1 and "AmazonEKS_CNI_Policy" in found[0].message and "WorkerNode" not in found[0].message


def test_a_roles_inline_policy_owner_beside_a_role_policy_and_a_group_membership_beside_a_user_membership() -> None:
    role = _node_role()
    extra = [
        _aws(
            "aws:iam/rolePoliciesExclusive:RolePoliciesExclusive", "node-inline", {"roleName": role, "policyNames": []}
        ),
        _aws("aws:iam/rolePolicy:RolePolicy", "node-extra", {"role": role, "name": "extra", "policy": "{}"}),
        _aws("aws:iam/groupMembership:GroupMembership", "ops-members", {"group": "ops", "users": ["alice"]}),
        _aws("aws:iam/userGroupMembership:UserGroupMembership", "bob-groups", {"user": "bob", "groups": ["ops"]}),
    ]
    found = _rule(mutated(rendered(STACK), lambda r: r, extra=extra), "iam-exclusive-attachments")
    assert sorted(f.urn.rsplit("::", 1)[-1] for f in found) == ["node-inline", "ops-members"], found


def test_exclusive_resources_that_declare_the_whole_relation_are_not_flagged() -> None:
    arns = [
        str(r.inputs["policyArn"])
        for r in rendered(STACK).resources
        if r.type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment" and r.inputs.get("role") == _node_role()
    ]
    extra = [
        _aws(
            "aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive",
            "node-role-exclusive",
            {"roleName": _node_role(), "policyArns": arns},
        ),
        _policy("own"),
        _aws(
            "aws:iam/policyAttachment:PolicyAttachment",
            "own-exclusive",
            {"roles": ["batch-role"], "policyArn": "arn:aws:iam::123456789012:policy/own-only"},
        ),
        _aws("aws:iam/groupMembership:GroupMembership", "ops-members", {"group": "ops", "users": ["alice", "bob"]}),
        _aws("aws:iam/userGroupMembership:UserGroupMembership", "bob-groups", {"user": "bob", "groups": ["ops"]}),
    ]
    assert _rule(mutated(rendered(STACK), lambda r: r, extra=extra), "iam-exclusive-attachments") == []
    assert _rule(rendered(STACK), "iam-exclusive-attachments") == []
