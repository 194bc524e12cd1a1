"""The rules set 28's EKS misses led to (written after its blind run, so not held out), each planted in the shipped dev
render beside its correct twin: values CreateAccessEntry refuses (access-entry-request), an access entry that
authorizes nothing (access-entry-authorizes), an EKS add-on that calls AWS with no role by any route (addon-iam), and
a KEDA AWS trigger whose pod identity has no role with the scaler's permission (keda-aws-identity). The planted
defects are of other values, add-ons and scalers than the held-out cases'."""

from __future__ import annotations

import dataclasses
import json
from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted_findings, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import access_entries, addon_iam, keda_identity
from tokenplane.proof.render import RenderedResource

ENTRY = "aws:eks/accessEntry:AccessEntry"
ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
ADDON = "aws:eks/addon:Addon"
POD_IDENTITY = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
ROLE = "aws:iam/role:Role"
ONCALL = "arn:aws:iam::123456789012:role/oncall"
STACK = "dev"


def _local(resource: RenderedResource) -> RenderedResource:
    """A planted resource in dev's region (``local``), named planted-* so findings on it are told apart."""
    return dataclasses.replace(resource, region="local")


def _kube(manifest: dict[str, Any]) -> RenderedResource:
    kind, name = manifest["kind"], manifest["metadata"]["name"]
    group = manifest["apiVersion"] if "/" in manifest["apiVersion"] else f"core/{manifest['apiVersion']}"
    return _local(
        dataclasses.replace(
            _aws(f"kubernetes:{group}:{kind}", f"planted-{name}", manifest),
            provider=f"urn:pulumi:{STACK}::tokenplane::pulumi:providers:kubernetes::planted-k8s",
        )
    )


_findings = partial(planted_findings, stack=STACK)


def test_the_shipped_render_holds_none_of_these() -> None:
    graph = deploy.Graph(spec(STACK), rendered(STACK))
    assert not [
        *access_entries.check(graph),
        *access_entries.authorizes(graph),
        *addon_iam.check(graph),
        *keda_identity.check(graph),
    ]


# access-entry-request ---------------------------------------------------------------------------------------------


def _entry(name: str = "planted-entry", **inputs: Any) -> RenderedResource:
    return _local(_aws(ENTRY, name, {"clusterName": "dev-local", "principalArn": ONCALL, **inputs}))


@pytest.mark.parametrize(
    ("inputs", "said"),
    [
        ({"kubernetesGroups": ["ops", "system:nodes"]}, "'system:nodes' begins with 'system:'"),
        ({"userName": "eks:oncall"}, "reserved prefix"),
        ({"userName": "amazon:{{SessionName}}"}, "reserved prefix"),
        ({"type": "EC2_LINUX", "kubernetesGroups": ["ops"]}, "only STANDARD entries take Kubernetes groups"),
        ({"principalArn": "arn:aws:sts::123456789012:assumed-role/oncall/alice"}, "is an STS session"),
        ({"principalArn": "arn:aws:iam::123456789012:instance-profile/nodes"}, "is an instance profile"),
        (
            {"principalArn": "arn:aws:iam::123456789012:role/aws-service-role/eks.amazonaws.com/AWSServiceRoleForX"},
            "service-linked role",
        ),
        ({"type": "FARGATE_LINUX", "principalArn": "arn:aws:iam::123456789012:user/ci"}, "must be an IAM role"),
        # Correct twins: a group of one's own, a username of one's own, a node entry with neither, a user on STANDARD.
        ({"kubernetesGroups": ["ops-system"]}, None),
        ({"userName": "oncall:{{SessionName}}"}, None),
        ({"type": "EC2_LINUX"}, None),
        ({"principalArn": "arn:aws:iam::123456789012:user/ci"}, None),
    ],
)
def test_values_create_access_entry_refuses(inputs: dict[str, Any], said: str | None) -> None:
    found = _findings(access_entries.check, _entry(**inputs))
    assert (said is None) == (not found), found
    assert said is None or said in found[0].message


def test_an_access_policy_on_a_node_entry_is_refused() -> None:
    node_role = "arn:aws:iam::123456789012:role/self-managed-nodes"
    policy = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"
    association = _local(
        _aws(ASSOCIATION, "planted-assoc", {"clusterName": "dev-local", "principalArn": node_role, "policyArn": policy})
    )
    found = _findings(access_entries.check, _entry(type="EC2_LINUX", principalArn=node_role), association)
    assert [f.urn for f in found] == [association.urn]
    assert not _findings(access_entries.check, _entry(principalArn=node_role), association)


# access-entry-authorizes ------------------------------------------------------------------------------------------


def _binding(kind: str, group: str, namespace: str | None = None) -> RenderedResource:
    metadata = {"name": f"{group}-binding", **({"namespace": namespace} if namespace else {})}
    role = "ClusterRole"
    return _kube(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": kind,
            "metadata": metadata,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role, "name": "edit"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
        }
    )


def test_an_entry_with_groups_no_binding_names_authorizes_nothing() -> None:
    # An entry for a user (not the held-out role) in two groups, neither bound.
    entry = _entry(principalArn="arn:aws:iam::123456789012:user/ci", kubernetesGroups=["deployers", "readers"])
    found = _findings(access_entries.authorizes, entry)
    assert len(found) == 1 and "['deployers', 'readers'] are named by no RoleBinding" in found[0].message
    # One of them bound by a namespaced RoleBinding is enough.
    assert not _findings(access_entries.authorizes, entry, _binding("RoleBinding", "deployers", "llm-serving"))


def test_an_entry_without_groups_or_policy_authorizes_nothing() -> None:
    found = _findings(access_entries.authorizes, _entry())
    assert len(found) == 1 and "names no Kubernetes groups" in found[0].message
    association = _local(
        _aws(
            ASSOCIATION,
            "planted-assoc",
            {
                "clusterName": "dev-local",
                "principalArn": ONCALL,
                "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy",
            },
        )
    )
    assert not _findings(access_entries.authorizes, _entry(), association)


def test_a_binding_of_another_kind_of_subject_does_not_count() -> None:
    binding = _binding("ClusterRoleBinding", "deployers")
    binding.inputs["subjects"] = [{"kind": "User", "name": "deployers"}]
    found = _findings(access_entries.authorizes, _entry(kubernetesGroups=["deployers"]), binding)
    assert len(found) == 1


# addon-iam ----------------------------------------------------------------------------------------------------------


def _addon(name: str, **inputs: Any) -> RenderedResource:
    return _local(_aws(ADDON, f"planted-{name}", {"clusterName": "dev-local", "addonName": name, **inputs}))


@pytest.mark.parametrize(
    "name",
    ["aws-efs-csi-driver", "aws-mountpoint-s3-csi-driver", "aws-network-flow-monitoring-agent"],
)  # aws-fsx-csi-driver is judged only beside an FSx StorageClass: test_set45_fsx.py
def test_an_addon_that_calls_aws_without_a_role(name: str) -> None:
    found = _findings(addon_iam.check, _addon(name))
    assert len(found) == 1 and f"EKS add-on {name}" in found[0].message


def test_an_addon_with_a_role_by_any_route_is_served() -> None:
    role = "arn:aws:iam::123456789012:role/efs-csi"
    assert not _findings(addon_iam.check, _addon("aws-efs-csi-driver", serviceAccountRoleArn=role))
    inline = [{"serviceAccount": "efs-csi-controller-sa", "roleArn": role}]
    assert not _findings(addon_iam.check, _addon("aws-efs-csi-driver", podIdentityAssociations=inline))
    association = _local(
        _aws(
            POD_IDENTITY,
            "planted-efs-identity",
            {
                "clusterName": "dev-local",
                "namespace": "kube-system",
                "serviceAccount": "efs-csi-controller-sa",
                "roleArn": role,
            },
        )
    )
    assert not _findings(addon_iam.check, _addon("aws-efs-csi-driver"), association)
    # An association for another account does not serve it.
    other = dataclasses.replace(association, inputs={**association.inputs, "serviceAccount": "efs-csi-node-sa"})
    assert _findings(addon_iam.check, _addon("aws-efs-csi-driver"), other)


def test_the_node_role_route() -> None:
    # dev's node role holds AmazonEKS_CNI_Policy: a second vpc-cni without a role of its own is served by it.
    assert not _findings(addon_iam.check, _addon("vpc-cni"))
    # An add-on that needs no AWS permissions is not judged.
    assert not _findings(addon_iam.check, _addon("coredns"), _addon("snapshot-controller"))


# keda-aws-identity --------------------------------------------------------------------------------------------------


def _auth(identity: dict[str, Any], kind: str = "TriggerAuthentication") -> RenderedResource:
    metadata = {"name": "aws-auth", **({"namespace": "llm-data"} if kind == "TriggerAuthentication" else {})}
    return _kube(
        {"apiVersion": "keda.sh/v1alpha1", "kind": kind, "metadata": metadata, "spec": {"podIdentity": identity}}
    )


def _scaled(trigger_type: str, metadata: dict[str, Any], auth_kind: str = "TriggerAuthentication") -> RenderedResource:
    return _kube(
        {
            "apiVersion": "keda.sh/v1alpha1",
            "kind": "ScaledObject",
            "metadata": {"name": "consumer", "namespace": "llm-data"},
            "spec": {
                "scaleTargetRef": {"name": "consumer"},
                "triggers": [
                    {
                        "type": trigger_type,
                        "metadata": metadata,
                        "authenticationRef": {"name": "aws-auth", "kind": auth_kind},
                    }
                ],
            },
        }
    )


def _consumer(account: str = "consumer") -> RenderedResource:
    pod = {"serviceAccountName": account, "containers": [{"name": "c", "image": "nginx:1.27"}]}
    return _kube(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "consumer", "namespace": "llm-data"},
            "spec": {"selector": {"matchLabels": {"app": "consumer"}}, "template": {"spec": pod}},
        }
    )


def _irsa(actions: list[str]) -> list[RenderedResource]:
    policy = json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}]}
    )
    role = _local(
        _aws(ROLE, "planted-consumer-role", {"assumeRolePolicy": "{}", "inlinePolicies": [{"policy": policy}]})
    )
    account = _kube(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {
                "name": "consumer",
                "namespace": "llm-data",
                "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/planted-consumer-role"},
            },
        }
    )
    account = dataclasses.replace(account, property_dependencies={"metadata": [role.urn]})
    return [role, account]


CLOUDWATCH = {
    "namespace": "AWS/Kinesis",
    "metricName": "GetRecords.IteratorAgeMilliseconds",
    "targetMetricValue": "1000",
}


@pytest.mark.parametrize(
    ("trigger", "metadata", "auth_kind"),
    [
        ("aws-cloudwatch", CLOUDWATCH, "TriggerAuthentication"),
        ("aws-kinesis-stream", {"streamName": "events", "shardCount": "2"}, "ClusterTriggerAuthentication"),
        ("aws-dynamodb-streams", {"tableName": "jobs", "shardCount": "2"}, "TriggerAuthentication"),
    ],
)
def test_the_operator_owns_the_identity_and_has_no_role(trigger: str, metadata: dict[str, Any], auth_kind: str) -> None:
    found = _findings(keda_identity.check, _auth({"provider": "aws"}, auth_kind), _scaled(trigger, metadata, auth_kind))
    assert len(found) == 1 and "as its operator's service account keda/keda-operator" in found[0].message
    # Explicitly keda: the same.
    assert _findings(
        keda_identity.check,
        _auth({"provider": "aws", "identityOwner": "keda"}, auth_kind),
        _scaled(trigger, metadata, auth_kind),
    )


def test_an_operator_given_a_role_is_served() -> None:
    role = "arn:aws:iam::123456789012:role/keda-operator"
    association = _local(
        _aws(
            POD_IDENTITY,
            "planted-keda-identity",
            {"clusterName": "dev-local", "namespace": "keda", "serviceAccount": "keda-operator", "roleArn": role},
        )
    )
    assert not _findings(
        keda_identity.check, _auth({"provider": "aws"}), _scaled("aws-cloudwatch", CLOUDWATCH), association
    )
    # A roleArn in the TriggerAuthentication, or an identity that is not AWS's, is not judged.
    assert not _findings(
        keda_identity.check, _auth({"provider": "aws", "roleArn": role}), _scaled("aws-cloudwatch", CLOUDWATCH)
    )
    assert not _findings(
        keda_identity.check, _auth({"provider": "azure-workload"}), _scaled("aws-cloudwatch", CLOUDWATCH)
    )


def test_the_workload_owns_the_identity() -> None:
    auth = _auth({"provider": "aws", "identityOwner": "workload"})
    sqs = _scaled(
        "aws-sqs-queue", {"queueURL": "https://sqs.eu-north-1.amazonaws.com/123456789012/jobs", "queueLength": "5"}
    )
    # Its role receives messages but may not read the queue's attributes.
    found = _findings(keda_identity.check, auth, sqs, _consumer(), *_irsa(["sqs:ReceiveMessage", "sqs:DeleteMessage"]))
    assert len(found) == 1 and "does not allow sqs:GetQueueAttributes" in found[0].message
    # No role at all.
    found = _findings(keda_identity.check, auth, sqs, _consumer("default"))
    assert len(found) == 1 and "it has no IAM role" in found[0].message
    # The twin: a role that allows it.
    assert not _findings(
        keda_identity.check, auth, sqs, _consumer(), *_irsa(["sqs:ReceiveMessage", "sqs:GetQueueAttributes"])
    )
