"""The rules set 22's IAM misses led to (written after its blind run, so not held out), each planted in a shipped
render beside its correct twin: an Allow whose condition key none of its actions carry (condition-keys-apply), and a
kube2iam annotation in a cluster without kube2iam or kiam (annotation-reader-installed)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered
from tests.proof.deployability.test_aws_join import _aws
from tests.proof.deployability.test_set3_invariants import STACK, deployment, plus, rule, system_pod
from tokenplane.proof.render import RenderedResource, RenderResult

# condition-keys-apply: a condition key the statement's actions carry ---------------------------------------------------

BUCKET = "arn:aws:s3:::acme-registry"


def _statement(action: Any, condition: dict[str, Any], effect: str = "Allow") -> dict[str, Any]:
    return {
        "Sid": "Planted",
        "Effect": effect,
        "Action": action,
        "Resource": [BUCKET, f"{BUCKET}/*"],
        "Condition": condition,
    }


PREFIX = {"StringLike": {"s3:prefix": ["qwen-7b-chat/*"]}}


@pytest.mark.parametrize(
    ("statement", "dead"),
    [
        (_statement("s3:GetObject", PREFIX), True),
        (_statement("s3:ListBucket", PREFIX), False),
        (_statement(["s3:GetObject", "s3:ListBucket"], PREFIX), False),
        (_statement("s3:get*", PREFIX), True),
        (_statement("s3:List*", PREFIX), False),
        (_statement("s3:GetObject", {"StringLikeIfExists": {"s3:prefix": ["a/*"]}}), False),
        (_statement("s3:GetObject", {"Null": {"s3:prefix": "true"}}), False),
        (_statement("s3:GetObject", {"ForAllValues:StringLike": {"s3:prefix": ["a/*"]}}), False),
        (_statement("s3:GetObject", PREFIX, effect="Deny"), False),
        (_statement("s3:GetObject", {"Bool": {"aws:SecureTransport": "true"}}), False),
        (_statement("s3:GetObject", {"StringEquals": {"s3:ExistingObjectTag/team": "ml"}}), False),
        (_statement("kms:Decrypt", {"StringLike": {"kms:ViaService": "s3.*.amazonaws.com"}}), False),
        (_statement("kms:Decrypt", {"StringEquals": {"s3:x-amz-server-side-encryption": "aws:kms"}}), True),
        (_statement("s3:PutObject", {"StringEquals": {"s3:x-amz-server-side-encryption": "aws:kms"}}), False),
        (_statement(["s3:GetObject", "madeup:Thing"], PREFIX), False),  # a service the table lacks: not judged
    ],
)
@pytest.mark.parametrize("holder", ["aws:iam/policy:Policy", "aws:s3/bucketPolicy:BucketPolicy"])
def test_an_allow_conditions_only_on_keys_its_actions_carry(holder: str, statement: dict[str, Any], dead: bool) -> None:
    document = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
    planted = _aws(holder, "planted-policy", {"policy": document})
    said = [f for f in rule(_with(planted), "condition-keys-apply") if "planted-policy" in f.message]
    assert bool(said) == dead, said
    key = next(iter(next(iter(statement["Condition"].values()))))
    assert all("statement 'Planted'" in f.message and key in f.message for f in said), said
    if key == "s3:prefix":
        assert all("s3:ListBucket" in f.message and "scope the Resource ARN" in f.fix for f in said), said


def _with(*extra: RenderedResource) -> RenderResult:
    return mutated(rendered(STACK), lambda r: r, extra=list(extra))


def test_a_role_inline_policy_is_judged_too() -> None:
    document = json.dumps({"Version": "2012-10-17", "Statement": [_statement("s3:GetObject", PREFIX)]})
    role = _aws("aws:iam/role:Role", "planted-role", {"inlinePolicies": [{"name": "read", "policy": document}]})
    said = [f for f in rule(_with(role), "condition-keys-apply") if "planted-role" in f.message]
    assert len(said) == 1 and "s3:GetObject" in said[0].message, said


# annotation-reader-installed: kube2iam's annotation needs kube2iam or kiam ------------------------------------------------

ROLE_ARN = "arn:aws:iam::123456789012:role/planted-audit"


def _account(**annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "planted-audit", "namespace": "llm-data", "annotations": annotations},
    }


KUBE2IAM = {"iam.amazonaws.com/role": ROLE_ARN}
IRSA = {"eks.amazonaws.com/role-arn": ROLE_ARN}


def _kube2iam_daemonset() -> dict[str, Any]:
    pod = {"containers": [{"name": "kube2iam", "image": "jtblin/kube2iam:0.11.2"}], "hostNetwork": True}
    manifest = deployment("kube2iam", pod, namespace="kube-system")
    manifest["kind"] = "DaemonSet"
    del manifest["spec"]["replicas"]
    return manifest


def _annotated_pods() -> dict[str, Any]:
    manifest = deployment("planted-audit", system_pod(serviceAccountName="planted-audit"))
    manifest["spec"]["template"]["metadata"]["annotations"] = dict(KUBE2IAM)
    return manifest


ASSOCIATION = _aws(
    "aws:eks/podIdentityAssociation:PodIdentityAssociation",
    "planted-association",
    {"namespace": "llm-data", "serviceAccount": "planted-audit", "roleArn": ROLE_ARN, "clusterName": "c"},
)


@pytest.mark.parametrize(
    ("objects", "extra", "unread"),
    [
        ([_account(**KUBE2IAM)], [], ["ServiceAccount llm-data/planted-audit"]),
        ([_account(**IRSA)], [], []),
        ([_account(**KUBE2IAM, **IRSA)], [], []),
        ([_account(**KUBE2IAM), _kube2iam_daemonset()], [], []),
        ([_account(**KUBE2IAM)], [ASSOCIATION], []),  # minimal runs the eks-pod-identity-agent add-on
        ([_account(), _annotated_pods()], [], ["Deployment llm-data/planted-audit"]),
        ([_account(**IRSA), _annotated_pods()], [], []),
    ],
)
def test_kube2iams_annotation_needs_kube2iam_or_kiam(
    objects: list[dict[str, Any]], extra: list[RenderedResource], unread: list[str]
) -> None:
    result = mutated(plus(*objects), lambda r: r, extra=extra)
    said = [f for f in rule(result, "annotation-reader-installed") if "planted-audit" in f.message]
    assert sorted(m for m in unread if any(m in f.message for f in said)) == sorted(unread), said
    assert len(said) == len(unread), said
    assert all("iam.amazonaws.com/role" in f.message and "eks.amazonaws.com/role-arn" in f.fix for f in said), said
