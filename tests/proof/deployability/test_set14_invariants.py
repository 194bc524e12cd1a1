"""The rules set 14's misses led to (written after its blind run, so not held out), each planted in a shipped render
beside its correct twin: an env var with both value and valueFrom (api-validation), a non-SQS subscription on a FIFO
topic (aws-api-values), two resources writing one bucket's or queue's single setting (one-writer), a spread on an
``eks.amazonaws.com/`` label managed node groups do not set (topology-placeable), and an EBS class on a key the EBS
CSI driver's role may not use (kms-grant)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec, with_inputs
from tests.proof.deployability.test_aws_join import _aws
from tests.proof.deployability.test_set3_invariants import deployment, plus, rule, system_pod
from tests.proof.deployability.test_set6_a import _spread
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import aws_values, kms_grants, singletons, storage
from tokenplane.proof.render import RenderedResource, physical_id


def _wired(typ: str, name: str, inputs: dict[str, Any], **refs: RenderedResource) -> RenderedResource:
    return dataclasses.replace(_aws(typ, name, inputs), property_dependencies={k: [r.urn] for k, r in refs.items()})


# api-validation: an env var's value and valueFrom ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "refused"),
    [
        ({"name": "MODE", "value": "x", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}, "both a value"),
        ({"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}, None),
        (
            {
                "name": "MODE",
                "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}, "secretKeyRef": {"name": "s", "key": "k"}},
            },
            "several sources",
        ),
        ({"name": "MODE", "value": "x"}, None),
    ],
)
def test_an_env_var_takes_one_of_value_and_valuefrom(env: dict[str, Any], refused: str | None) -> None:
    pod = {"containers": [{"name": "app", "image": "nginx:1.27", "env": [env]}]}
    said = [f.message for f in rule(plus(deployment("planted-env", pod)), "api-validation") if "env MODE" in f.message]
    assert bool(said) == bool(refused) and all(refused and refused in m for m in said), said


# aws-api-values: a FIFO topic delivers only to SQS ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fifo", "protocol", "refused"), [(True, "email", True), (True, "sqs", False), (False, "email", False)]
)
def test_a_fifo_topic_takes_only_sqs_subscriptions(fifo: bool, protocol: str, refused: bool) -> None:
    topic = _aws(
        "aws:sns/topic:Topic", "planted-topic", {"name": "planted.fifo" if fifo else "planted", "fifoTopic": fifo}
    )
    subscription = _wired(
        "aws:sns/topicSubscription:TopicSubscription",
        "planted-subscription",
        {"protocol": protocol, "endpoint": "oncall@example.com"},
        topic=topic,
    )
    graph = deploy.Graph(spec("dev"), mutated(rendered("dev"), lambda r: r, extra=[topic, subscription]))
    said = [f.message for f in aws_values.check(graph) if "planted-subscription" in f.message]
    assert bool(said) == refused and all("FIFO" in m for m in said), said


# one-writer: a setting AWS holds once, written by two resources --------------------------------------------------------

POLICY = "aws:s3/bucketPolicy:BucketPolicy"


@pytest.mark.parametrize(
    ("planted", "found"),
    [
        ([(POLICY, "bucket", "acme-models"), (POLICY, "bucket", "acme-models")], True),
        ([(POLICY, "bucket", "acme-models"), (POLICY, "bucket", "acme-logs")], False),
        ([(POLICY, "bucket", "acme-models")], False),
        (
            [
                ("aws:sqs/queuePolicy:QueuePolicy", "queueUrl", "https://sqs/q"),
                ("aws:sqs/queuePolicy:QueuePolicy", "queueUrl", "https://sqs/q"),
            ],
            True,
        ),
        (
            [
                ("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration", "bucket", "acme-models"),
                ("aws:s3/bucketLifecycleConfigurationV2:BucketLifecycleConfigurationV2", "bucket", "acme-models"),
            ],
            True,  # two types, one setting
        ),
    ],
)
def test_a_setting_aws_holds_once_has_one_writer(planted: list[tuple[str, str, str]], found: bool) -> None:
    extra = [_aws(typ, f"planted-{i}", {field: holder}) for i, (typ, field, holder) in enumerate(planted)]
    graph = deploy.Graph(spec("dev"), mutated(rendered("dev"), lambda r: r, extra=extra))
    said = [f.message for f in singletons.check(graph)]
    assert bool(said) == found and all("planted-0, planted-1" in m for m in said), said


def test_the_shipped_stacks_write_each_setting_once() -> None:
    for name in ("dev", "minimal", "byteion"):
        assert list(singletons.check(deploy.Graph(spec(name), rendered(name)))) == [], name


# topology-placeable: eks.amazonaws.com/ labels a managed node group does not set ---------------------------------------


@pytest.mark.parametrize(
    ("key", "refused"),
    [
        ("eks.amazonaws.com/nodegroup-name", True),  # not a label EKS sets: eks.amazonaws.com/nodegroup is
        ("eks.amazonaws.com/nodegroup", False),
        ("eks.amazonaws.com/capacityType", False),
        ("topology.k8s.aws/zone-id", False),  # the cloud controller's: not judged
    ],
)
def test_a_spread_on_an_eks_label_no_managed_node_carries_places_no_pod(key: str, refused: bool) -> None:
    workload = deployment("rack-aware", system_pod(**_spread(key)), replicas=2)
    said = [f.message for f in rule(plus(workload), "topology-placeable") if "rack-aware" in f.message]
    assert bool(said) == refused and all(key in m for m in said), said


def test_under_auto_mode_eks_labels_are_not_judged() -> None:
    def auto(r: RenderedResource) -> RenderedResource:
        if r.type == "aws:eks/cluster:Cluster":
            return with_inputs(r, lambda i: i.update(computeConfig={"enabled": True}))
        return r

    workload = deployment("rack-aware", system_pod(**_spread("eks.amazonaws.com/instance-family")), replicas=2)
    assert [f for f in rule(plus(workload, change=auto), "topology-placeable") if "rack-aware" in f.message] == []


# kms-grant: an EBS class on a key the EBS CSI driver may not use ------------------------------------------------------


def _ebs_class(*extra: RenderedResource, key_policy: str | None = None, base: Any = None) -> list[str]:
    """kms-grant's findings on a class encrypting with a planted key, over ``base`` (minimal's render)."""
    key = _aws("aws:kms/key:Key", "planted-key", {"policy": key_policy} if key_policy else {})
    klass = dataclasses.replace(
        _aws(
            "kubernetes:storage.k8s.io/v1:StorageClass",
            "planted-class",
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": "gp3-cmk"},
                "provisioner": "ebs.csi.aws.com",
                "parameters": {"type": "gp3", "encrypted": "true", "kmsKeyId": "planted"},
            },
        ),
        property_dependencies={"parameters": [key.urn]},
        region="us",
    )
    result = mutated(base or rendered("minimal"), lambda r: r, extra=[key, klass, *extra])
    return [f.message for f in kms_grants.check(deploy.Graph(spec("minimal"), result)) if "gp3-cmk" in f.message]


def _ebs_role_policy(actions: list[str]) -> RenderedResource:
    role = next(r for r in rendered("minimal").resources if r.name == "minimal-us-cluster-ebs-csi-role")
    document = json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}]}
    )
    inputs = {"policy": document, "role": physical_id(role.type, role.name)}
    return _wired("aws:iam/rolePolicy:RolePolicy", "planted-ebs-kms", inputs, role=role)


def test_an_ebs_class_on_a_key_the_csi_role_may_not_use_is_found() -> None:
    said = _ebs_class()
    assert len(said) == 1 and "kms:CreateGrant" in said[0] and "Pending" in said[0], said


@pytest.mark.parametrize(
    ("actions", "found"),
    [(["kms:CreateGrant", "kms:GenerateDataKeyWithoutPlaintext"], False), (["kms:Decrypt"], True), (["kms:*"], False)],
)
def test_the_csi_roles_own_kms_grant_admits_the_class(actions: list[str], found: bool) -> None:
    assert bool(_ebs_class(_ebs_role_policy(actions))) == found


# The EBS controller's role by Pod Identity (the add-on's own associations or a separate one), for csi-iam and kms-grant


def _on_pod_identity(result: Any, account: str, *, separate: bool = False) -> tuple[Any, RenderedResource]:
    """``result`` with its EBS add-on's IRSA role replaced by a Pod Identity association for ``account``: the
    add-on's own, or (``separate``) an association resource."""
    role = _aws("aws:iam/role:Role", "planted-ebs-pod-identity", {"name": "planted-ebs-pod-identity"})
    arn = f"arn:aws:iam::123456789012:role/{physical_id(role.type, role.name)}"
    association = {"roleArn": arn, "serviceAccount": account}

    def rewire(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:eks/addon:Addon" or r.inputs.get("addonName") != "aws-ebs-csi-driver":
            return r

        def edit(inputs: dict[str, Any]) -> None:
            inputs.pop("serviceAccountRoleArn", None)
            if not separate:
                inputs["podIdentityAssociations"] = [association]

        return dataclasses.replace(with_inputs(r, edit), property_dependencies={})

    extra = [role]
    if separate:
        inputs = {"clusterName": "c", "namespace": "kube-system", **association}
        extra.append(_aws("aws:eks/podIdentityAssociation:PodIdentityAssociation", "planted-ebs-pia", inputs))
    return mutated(result, rewire, extra=extra), role


@pytest.mark.parametrize("separate", [False, True])
@pytest.mark.parametrize(("account", "found"), [("ebs-csi-controller-sa", False), ("ebs-csi-node-sa", True)])
def test_the_ebs_add_on_may_take_its_role_by_pod_identity_for_its_controllers_account(
    separate: bool, account: str, found: bool
) -> None:
    result, _ = _on_pod_identity(rendered("minimal"), account, separate=separate)
    said = [f.message for f in storage.check(deploy.Graph(spec("minimal"), result))]
    assert bool(said) == found, said


def test_kms_grant_judges_the_pod_identity_role_the_ebs_controller_runs_as() -> None:
    result, role = _on_pod_identity(rendered("minimal"), "ebs-csi-controller-sa")
    said = _ebs_class(base=result)
    assert len(said) == 1 and role.name in said[0] and "kms:CreateGrant" in said[0], said
