"""The rules set 30's IAM, S3 bucket policy and ECR lifecycle misses led to (written after its blind run, so not held
out), each planted in the shipped dev render beside its correct twin: policy documents over their service's size
(policy-size), resource policies that deny every principal but the program's own roles (deployer-keeps-access), and ECR
lifecycle policies PutLifecyclePolicy refuses (aws-api-values). The planted defects are of other resources and values
than the held-out cases' (a role's RolePolicy over 10,240 characters, an S3 bucket policy exempting one role by
StringNotEquals, a tagStatus any rule at priority 1): inline policies on the role itself, users, groups, managed and
trust policies, attachments, SQS, KMS and ECR policies; SQS, Secrets Manager and ECR policies and an exemption by
NotPrincipal; duplicate priorities, tag lists on untagged rules, wildcards, count units."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted_findings, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import aws_values, deployer_access, policy_size
from tokenplane.proof.render import RenderedResource, mock_outputs, physical_id

ROLE = "aws:iam/role:Role"
USER = "aws:iam/user:User"
GROUP = "aws:iam/group:Group"
ECR_LIFECYCLE = "aws:ecr/lifecyclePolicy:LifecyclePolicy"
TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}


_findings = partial(planted_findings, stack="dev")


def _policy(objects: int, *, indent: int | None = None) -> str:
    """An identity policy granting s3:GetObject on ``objects`` object ARNs (about 50 characters each)."""
    resources = [f"arn:aws:s3:::planted-registry/models/model-{i:04d}/v1/*" for i in range(objects)]
    statement = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": resources}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]}, indent=indent)


def _arn(typ: str, name: str) -> str:
    return str(mock_outputs(typ, name, {}, "us-east-1")[1]["arn"])


def test_the_shipped_render_holds_none_of_these() -> None:
    graph = deploy.Graph(spec("dev"), rendered("dev"))
    assert not [*policy_size.check(graph), *deployer_access.check(graph)]
    assert not [f for f in aws_values.check(graph) if "ECR refuses" in f.message]


# policy-size ------------------------------------------------------------------------------------------------------


def _role(name: str, **inputs: Any) -> RenderedResource:
    return _aws(ROLE, name, {"assumeRolePolicy": json.dumps(TRUST), **inputs})


@pytest.mark.parametrize(
    ("extra", "fires"),
    [
        # A role's own inlinePolicies, two of them together over 10,240.
        (
            lambda: [
                _role(
                    "planted-inline",
                    inlinePolicies=[{"name": "a", "policy": _policy(120)}, {"name": "b", "policy": _policy(120)}],
                )
            ],
            True,
        ),
        # A user's UserPolicy over 2,048; a group's GroupPolicy over 5,120.
        (
            lambda: [
                _aws(USER, "planted-user", {}),
                _aws(
                    "aws:iam/userPolicy:UserPolicy",
                    "planted-user-policy",
                    {"user": physical_id(USER, "planted-user"), "policy": _policy(45)},
                ),
            ],
            True,
        ),
        (
            lambda: [
                _aws(GROUP, "planted-group", {}),
                _aws(
                    "aws:iam/groupPolicy:GroupPolicy",
                    "planted-group-policy",
                    {"group": physical_id(GROUP, "planted-group"), "policy": _policy(110)},
                ),
            ],
            True,
        ),
        # A managed policy over 6,144.
        (lambda: [_aws("aws:iam/policy:Policy", "planted-managed", {"policy": _policy(130)})], True),
        # A trust policy over 2,048 (forty accounts by ARN).
        (
            lambda: [
                _role(
                    "planted-trust",
                    assumeRolePolicy=json.dumps(
                        {
                            "Version": "2012-10-17",
                            "Statement": [
                                {
                                    "Effect": "Allow",
                                    "Principal": {"AWS": [f"arn:aws:iam::{100000000000 + i}:root" for i in range(70)]},
                                    "Action": "sts:AssumeRole",
                                }
                            ],
                        }
                    ),
                )
            ],
            True,
        ),
        # Eleven managed policies on one role.
        (
            lambda: [
                _role(
                    "planted-attached",
                    managedPolicyArns=[f"arn:aws:iam::123456789012:policy/planted-{i}" for i in range(11)],
                )
            ],
            True,
        ),
        # An SQS queue policy over 8,192, a KMS key policy over 32 KB, an ECR repository policy over 10,240.
        (lambda: [_aws("aws:sqs/queue:Queue", "planted-queue", {"policy": _policy(170)})], True),
        (lambda: [_aws("aws:kms/key:Key", "planted-key", {"policy": _policy(700)})], True),
        (
            lambda: [
                _aws(
                    "aws:ecr/repositoryPolicy:RepositoryPolicy",
                    "planted-repo-policy",
                    {"repository": "x", "policy": _policy(220)},
                )
            ],
            True,
        ),
        # Correct twins: within each limit, white space not counted (indented far past 10,240 with it).
        (
            lambda: [_role("planted-inline-ok", inlinePolicies=[{"name": "a", "policy": _policy(180, indent=12)}])],
            False,
        ),
        (lambda: [_aws("aws:iam/policy:Policy", "planted-managed-ok", {"policy": _policy(100)})], False),
        (
            lambda: [
                _role(
                    "planted-attached-ok",
                    managedPolicyArns=[f"arn:aws:iam::123456789012:policy/planted-{i}" for i in range(10)],
                )
            ],
            False,
        ),
        (lambda: [_aws("aws:sqs/queue:Queue", "planted-queue-ok", {"policy": _policy(140)})], False),
        (lambda: [_aws("aws:kms/key:Key", "planted-key-ok", {"policy": _policy(500)})], False),
    ],
)
def test_a_policy_fits_its_services_size(extra: Any, fires: bool) -> None:
    said = _findings(policy_size.check, *extra())
    assert bool(said) == fires, said
    assert all(f.rule == "policy-size" and "over" in f.message for f in said), said


def test_a_roles_inline_policies_are_counted_together() -> None:
    role = _role("planted-sum")
    halves = [
        _aws(
            "aws:iam/rolePolicy:RolePolicy",
            f"planted-half-{i}",
            {"role": physical_id(ROLE, "planted-sum"), "policy": p},
        )
        for i, p in enumerate([_policy(110), _policy(110)])
    ]
    said = _findings(policy_size.check, role, *halves)
    assert len(said) == 1 and "planted-half-0" in said[0].message and "planted-half-1" in said[0].message, said
    assert not _findings(policy_size.check, role, halves[0])


# deployer-keeps-access --------------------------------------------------------------------------------------------


def _deny(actions: Any, resource: Any, **rest: Any) -> dict[str, Any]:
    return {"Sid": "OnlyTheWorkload", "Effect": "Deny", "Action": actions, "Resource": resource, **rest}


def _doc(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


READER = _arn(ROLE, "planted-reader")
EVERYONE_BUT_READER = {"Principal": "*", "Condition": {"ArnNotLike": {"aws:PrincipalArn": [READER]}}}


@pytest.mark.parametrize(
    ("typ", "statement", "fires"),
    [
        # An SQS queue's inline policy: sqs:* denied to all but the reader, by ArnNotLike.
        ("aws:sqs/queue:Queue", _deny("sqs:*", "*", **EVERYONE_BUT_READER), True),
        # A Secrets Manager secret policy exempting the reader by NotPrincipal.
        (
            "aws:secretsmanager/secretPolicy:SecretPolicy",
            _deny("secretsmanager:*", "*", NotPrincipal={"AWS": READER}),
            True,
        ),
        # An ECR repository policy, {"AWS": "*"} and StringNotEqualsIfExists.
        (
            "aws:ecr/repositoryPolicy:RepositoryPolicy",
            _deny(
                "ecr:*",
                "*",
                Principal={"AWS": "*"},
                Condition={"StringNotEqualsIfExists": {"aws:PrincipalArn": READER}},
            ),
            True,
        ),
        # An S3 bucket policy denying the bucket's policy to everyone, no exemption at all.
        ("aws:s3/bucketPolicy:BucketPolicy", _deny(["s3:*Policy"], "arn:aws:s3:::planted-b", Principal="*"), True),
        # Correct twins: the account root or another account's principals exempt, a wildcard role, objects only,
        # the secret's value only, a condition the deployer does not meet, a role made outside the program.
        (
            "aws:sqs/queue:Queue",
            _deny(
                "sqs:*",
                "*",
                Principal="*",
                Condition={"ArnNotLike": {"aws:PrincipalArn": [READER, "arn:aws:iam::123456789012:root"]}},
            ),
            False,
        ),
        (
            "aws:sqs/queue:Queue",
            _deny("sqs:*", "*", Principal="*", Condition={"StringNotEquals": {"aws:PrincipalAccount": "123456789012"}}),
            False,
        ),
        (
            "aws:s3/bucketPolicy:BucketPolicy",
            _deny("s3:*", "arn:aws:s3:::planted-b/*", **EVERYONE_BUT_READER),
            False,
        ),
        (
            "aws:secretsmanager/secretPolicy:SecretPolicy",
            _deny("secretsmanager:GetSecretValue", "*", **EVERYONE_BUT_READER),
            False,
        ),
        (
            "aws:s3/bucketPolicy:BucketPolicy",
            _deny(
                "s3:*", "arn:aws:s3:::planted-b", Principal="*", Condition={"Bool": {"aws:SecureTransport": "false"}}
            ),
            False,
        ),
        (
            "aws:ecr/repositoryPolicy:RepositoryPolicy",
            _deny(
                "ecr:*",
                "*",
                Principal="*",
                Condition={"ArnNotLike": {"aws:PrincipalArn": [READER, "arn:aws:iam::123456789012:role/deployer"]}},
            ),
            False,
        ),
        (
            "aws:ecr/repositoryPolicy:RepositoryPolicy",
            _deny("ecr:*", "*", Principal="*", Condition={"ArnNotLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/*"}}),
            False,
        ),
    ],
)
def test_a_resource_policy_leaves_the_deployer_its_access(typ: str, statement: dict[str, Any], fires: bool) -> None:
    reader = _role("planted-reader")
    holder = _aws(typ, "planted-holder", {"policy": _doc(statement)})
    said = _findings(deployer_access.check, reader, holder)
    assert bool(said) == fires, said
    assert all("denied too" in f.message and "exempt the deployer" in f.fix for f in said), said


# aws-api-values: ECR lifecycle policies ---------------------------------------------------------------------------


def _rule(priority: int, status: str, **selection: Any) -> dict[str, Any]:
    counted = selection or {"countType": "imageCountMoreThan", "countNumber": 10}
    return {"rulePriority": priority, "selection": {"tagStatus": status, **counted}, "action": {"type": "expire"}}


DAYS = {"countType": "sinceImagePushed", "countUnit": "days", "countNumber": 14}


@pytest.mark.parametrize(
    ("rules", "said_part"),
    [
        # Two rules of one priority; an any rule below a tagged one (not the held-out untagged one).
        ([_rule(1, "untagged", **DAYS), _rule(1, "any")], "share rulePriority 1"),
        (
            [_rule(5, "any"), _rule(10, "tagged", tagPrefixList=["v"], countType="imageCountMoreThan", countNumber=3)],
            "tagStatus any",
        ),
        # An untagged rule with a tag list; both lists; five wildcards.
        ([_rule(1, "untagged", tagPrefixList=["pr-"], **DAYS)], "must omit both"),
        (
            [
                _rule(
                    1,
                    "tagged",
                    tagPrefixList=["v"],
                    tagPatternList=["v*"],
                    countType="imageCountMoreThan",
                    countNumber=3,
                )
            ],
            "both a tagPrefixList and a tagPatternList",
        ),
        ([_rule(1, "tagged", tagPatternList=["*a*b*c*d*"], **DAYS)], "5 wildcards"),
        # sinceImagePushed without a unit; imageCountMoreThan with one.
        ([_rule(1, "untagged", countType="sinceImagePushed", countNumber=7)], "without a countUnit"),
        ([_rule(1, "any", countType="imageCountMoreThan", countUnit="days", countNumber=30)], "with a countUnit"),
        # Correct twins: any last, distinct priorities, four wildcards, the units where they belong.
        (
            [
                _rule(1, "untagged", **DAYS),
                _rule(2, "tagged", tagPatternList=["*a*b*c*"], countType="imageCountMoreThan", countNumber=5),
                _rule(7, "any"),
            ],
            None,
        ),
        ([_rule(3, "tagged", tagPrefixList=["release-"], **DAYS)], None),
    ],
)
def test_an_ecr_lifecycle_policy_is_one_ecr_takes(rules: list[dict[str, Any]], said_part: str | None) -> None:
    policy = _aws(ECR_LIFECYCLE, "planted-lifecycle", {"repository": "x", "policy": json.dumps({"rules": rules})})
    said = [f for f in _findings(aws_values.check, policy) if "ECR refuses" in f.message]
    if said_part is None:
        assert not said, said
    else:
        assert said and all(said_part in f.message for f in said), said
        assert all("PutLifecyclePolicy fails" in f.message for f in said), said
