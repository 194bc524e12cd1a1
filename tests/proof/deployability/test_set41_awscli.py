"""The rules set 41's aws-cli misses led to (written after its blind run, so not held out), planted beside correct
twins, each of other commands, policies, ACLs and resources than the held-out cases (a read-only AWS managed policy
attached by a RolePolicyAttachment, DynamoDB and SQS read-only policies, s3api calls, group grants):

- aws-cli-permissions: an AWS managed policy attached to the pod's role is read from its published document (moto's
  record of IAM ListPolicies --scope AWS), so a read-only one does not cover a write the job makes; an unknown one,
  or one of NotAction, stays "may grant anything";
- s3-acls-disabled: an aws command of a container that puts an ACL granting others (``--acl public-read``,
  ``--grant-read uri=...``) into a bucket of the program whose ACLs are disabled (BucketOwnerEnforced).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pytest

from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import aws_cli, s3_acls
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.render import render_program

REGION = "us-east-1"
ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"


def _findings(
    check: Callable[[deploy.Graph], Any],
    script: str,
    *,
    managed: tuple[str, ...] = (),
    statements: list[dict[str, Any]] | None = None,
    ownership: str | None = None,
) -> list[Finding]:
    """What ``check`` finds on a program of a bucket ``reports`` (with a BucketOwnershipControls of ``ownership``),
    a table ``ledger``, a queue ``work``, an IRSA role with the AWS managed policies ``managed`` (attached by
    RolePolicyAttachments) and an inline ``statements`` policy, and a Job running ``script`` as that role."""

    def program() -> None:
        bucket = aws.s3.Bucket("reports", bucket="tp-reports-41")
        if ownership:
            aws.s3.BucketOwnershipControls("reports-ownership", bucket=bucket.id, rule={"object_ownership": ownership})
        table = aws.dynamodb.Table(
            "ledger",
            name="ledger",
            hash_key="id",
            attributes=[{"name": "id", "type": "S"}],
            billing_mode="PAY_PER_REQUEST",
        )
        queue = aws.sqs.Queue("work")
        trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRoleWithWebIdentity"}]}
        role = aws.iam.Role("reporter", assume_role_policy=json.dumps(trust))
        for i, arn in enumerate(managed):
            aws.iam.RolePolicyAttachment(f"reporter-managed-{i}", role=role.name, policy_arn=arn)
        if statements is not None:
            document = json.dumps({"Version": "2012-10-17", "Statement": statements})
            aws.iam.RolePolicy("reporter-policy", role=role.id, policy=document)
        k8s.core.v1.ServiceAccount(
            "reporter-sa",
            metadata={"name": "reporter", "namespace": "jobs", "annotations": {"eks.amazonaws.com/role-arn": role.arn}},
        )
        env = [
            {"name": "BUCKET", "value": bucket.bucket},
            {"name": "TABLE", "value": table.name},
            {"name": "QUEUE", "value": queue.url},
        ]
        container = {"name": "report", "image": "public.ecr.aws/aws-cli/aws-cli:2.22.35"}
        container |= {"command": ["/bin/sh", "-c", script], "env": env}
        pod = {"serviceAccountName": "reporter", "restartPolicy": "Never", "containers": [container]}
        k8s.batch.v1.Job(
            "reporter", metadata={"name": "reporter", "namespace": "jobs"}, spec={"template": {"spec": pod}}
        )

    result = render_program(program, regions={REGION: REGION}, stack="test", project="test", default_region=REGION)
    return list(check(deploy.Graph(None, result)))


def _managed(name: str) -> str:
    return f"arn:aws:iam::aws:policy/{name}"


# --- aws-cli-permissions: AWS managed policies read from their documents ----------------------------------------


@pytest.mark.parametrize(
    ("policy", "script", "said"),
    [
        (
            "AmazonS3ReadOnlyAccess",
            'aws s3 ls "s3://$BUCKET/in/" && aws s3 sync /work/out "s3://$BUCKET/out/"',
            "needs s3:PutObject on arn:aws:s3:::",
        ),
        (
            "AmazonS3ReadOnlyAccess",
            'aws s3 rm --recursive "s3://$BUCKET/tmp/"',
            "needs s3:DeleteObject on arn:aws:s3:::",
        ),
        (
            "AmazonDynamoDBReadOnlyAccess",
            'aws dynamodb put-item --table-name $TABLE --item \'{"id": {"S": "x"}}\'',
            "needs dynamodb:PutItem on arn:aws:dynamodb:",
        ),
        (
            "AmazonSQSReadOnlyAccess",
            "aws sqs receive-message --queue-url $QUEUE --wait-time-seconds 20",
            "needs sqs:ReceiveMessage on arn:aws:sqs:",
        ),
    ],
    ids=["s3-read-only-sync-up", "s3-read-only-rm", "dynamodb-read-only-put", "sqs-read-only-receive"],
)
def test_a_read_only_aws_managed_policy_denies_the_jobs_write(policy: str, script: str, said: str) -> None:
    found = _findings(aws_cli.check, script, managed=(_managed(policy),))
    assert [f.rule for f in found] == [aws_cli.RULE], found
    assert said in found[0].message and "role reporter" in found[0].message, found[0].message


@pytest.mark.parametrize(
    ("managed", "statements", "script"),
    [
        (("AmazonS3FullAccess",), None, 'aws s3 sync /work/out "s3://$BUCKET/out/"'),
        (("AmazonS3ReadOnlyAccess",), None, 'aws s3 ls "s3://$BUCKET/in/" && aws s3 cp "s3://$BUCKET/in/a" /tmp/a'),
        (
            ("AmazonDynamoDBReadOnlyAccess",),
            None,
            "aws dynamodb query --table-name $TABLE --key-condition-expression x",
        ),
        # NotAction (PowerUserAccess allows all but iam/organizations/account): not read, so not judged.
        (("PowerUserAccess",), None, 'aws s3 sync /work/out "s3://$BUCKET/out/"'),
        # A managed policy whose document is not known here may grant anything.
        (("NoSuchManagedPolicyForTokenplane",), None, 'aws s3 sync /work/out "s3://$BUCKET/out/"'),
        (
            ("AmazonS3ReadOnlyAccess",),
            [{"Effect": "Allow", "Action": "s3:PutObject", "Resource": "*"}],
            'aws s3 cp /tmp/a "s3://$BUCKET/out/a"',
        ),
    ],
    ids=["s3-full", "s3-read-only-reads", "dynamodb-read-only-query", "power-user", "unknown", "read-only-plus-inline"],
)
def test_an_aws_managed_policy_that_covers_the_job_or_is_unknown_passes(
    managed: tuple[str, ...], statements: list[dict[str, Any]] | None, script: str
) -> None:
    assert _findings(aws_cli.check, script, managed=tuple(map(_managed, managed)), statements=statements) == []


# --- s3-acls-disabled: an ACL a container's aws command puts --------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "ownership", "said"),
    [
        ('aws s3 sync /work/site "s3://$BUCKET/site/" --acl authenticated-read', None, "(authenticated-read)"),
        (
            'aws s3api put-object --bucket "$BUCKET" --key daily.csv --body /tmp/daily.csv --acl public-read-write',
            None,
            "(public-read-write)",
        ),
        (
            f'aws s3api put-object-acl --bucket "$BUCKET" --key daily.csv --grant-read uri={ALL_USERS}',
            None,
            ALL_USERS,
        ),
        (
            f'aws s3 cp /tmp/daily.csv "s3://$BUCKET/daily.csv" --grants read=uri={ALL_USERS}',
            "BucketOwnerEnforced",
            ALL_USERS,
        ),
    ],
    ids=["sync-authenticated-read", "s3api-put-object-public-read-write", "s3api-grant-all-users", "explicit-enforced"],
)
def test_a_command_putting_an_acl_on_a_bucket_without_acls_is_refused(
    script: str, ownership: str | None, said: str
) -> None:
    found = _findings(s3_acls.check, script, ownership=ownership)
    assert [f.rule for f in found] == [s3_acls.RULE], found
    assert said in found[0].message and "AccessControlListNotSupported" in found[0].message, found[0].message
    assert "Job jobs/reporter container report" in found[0].message, found[0].message


@pytest.mark.parametrize(
    ("script", "ownership"),
    [
        ('aws s3 cp /tmp/daily.csv "s3://$BUCKET/daily.csv" --acl bucket-owner-full-control', None),
        ('aws s3api put-object --bucket "$BUCKET" --key daily.csv --body /tmp/daily.csv --acl private', None),
        ('aws s3 cp /tmp/daily.csv "s3://$BUCKET/daily.csv" --acl public-read', "BucketOwnerPreferred"),
        ("aws s3 cp /tmp/daily.csv s3://someone-elses-bucket/daily.csv --acl public-read", None),
        ('aws s3 cp "s3://$BUCKET/daily.csv" /tmp/daily.csv', None),
        ('aws s3 cp /tmp/daily.csv "s3://$TARGET/daily.csv" --acl public-read', None),
    ],
    ids=["owner-full-control", "private", "acls-enabled", "not-the-programs-bucket", "download", "unresolved-bucket"],
)
def test_a_command_whose_acl_the_bucket_takes_passes(script: str, ownership: str | None) -> None:
    assert _findings(s3_acls.check, script, ownership=ownership) == []
