"""A policy document that uses policy variables (``${aws:username}``) states ``"Version": "2012-10-17"``.

IAM substitutes policy variables only in the 2012-10-17 policy language: "you must include the Version element and
set the version to 2012-10-17 ... if you don't include the Version element ... variables such as ${aws:username}
aren't recognized as variables and are instead treated as literal strings in the policy"
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_variables.html; a document without Version is
read as 2008-10-17: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_version.html).
IAM and the services accept the document, but a Resource or condition value meant as ``uploads/${aws:username}/*``
matches only the literal text, so the statement never applies to what was meant (an Allow grants nothing: every
request it was written for is denied).

Judged where variables may stand: a statement's Resource, NotResource and Condition values, in identity policies
(managed, role, user and group policies, roles' inline policies) and resource policies (S3, SQS, SNS, KMS, ECR,
Secrets Manager, CloudWatch Logs). Cannot see: documents known only at apply time, policies of resource types not
listed in ``HOLDERS``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import document, statements
from tokenplane.proof.render import RenderedResource

RULE = "policy-variables-versioned"
VERSION = "2012-10-17"
# Resource type -> its inputs that hold a policy document.
HOLDERS = {
    "aws:iam/policy:Policy": ("policy",),
    "aws:iam/rolePolicy:RolePolicy": ("policy",),
    "aws:iam/userPolicy:UserPolicy": ("policy",),
    "aws:iam/groupPolicy:GroupPolicy": ("policy",),
    "aws:s3/bucketPolicy:BucketPolicy": ("policy",),
    "aws:s3/bucket:Bucket": ("policy",),
    "aws:sqs/queuePolicy:QueuePolicy": ("policy",),
    "aws:sqs/queue:Queue": ("policy",),
    "aws:sns/topicPolicy:TopicPolicy": ("policy",),
    "aws:sns/topic:Topic": ("policy",),
    "aws:kms/key:Key": ("policy",),
    "aws:kms/keyPolicy:KeyPolicy": ("policy",),
    "aws:ecr/repositoryPolicy:RepositoryPolicy": ("policy",),
    "aws:secretsmanager/secretPolicy:SecretPolicy": ("policy",),
    "aws:secretsmanager/secret:Secret": ("policy",),
    "aws:cloudwatch/logResourcePolicy:LogResourcePolicy": ("policyDocument",),
}
ROLE = "aws:iam/role:Role"


def check(graph: Graph) -> Iterator[Finding]:
    for resource, value in _documents(graph):
        policy = document(value)
        if policy is None:
            continue
        version = policy.get("Version")
        if version == VERSION:
            continue
        used = sorted({v for s in statements(policy) for v in _variables(s)})
        if not used:
            continue
        stated = "no Version" if version is None else f"Version {version!r}"
        yield Finding(
            RULE,
            resource.urn,
            f"{resource.name}'s policy uses the policy variable(s) {', '.join(used)} but states {stated}: IAM reads "
            "it as the 2008-10-17 language, where ${...} is literal text, so those Resource/Condition values match "
            "only the literal string and the statements never apply to what they were written for (IAM accepts "
            "the policy; the requests it should allow are denied)",
            f'add "Version": "{VERSION}" at the top of the document',
        )


def _documents(graph: Graph) -> Iterator[tuple[RenderedResource, Any]]:
    for typ, keys in HOLDERS.items():
        for resource in graph.of_type(typ):
            for key in keys:
                if resource.inputs.get(key):
                    yield resource, resource.inputs.get(key)
    for role in graph.of_type(ROLE):
        for inline in role.inputs.get("inlinePolicies") or []:
            if isinstance(inline, dict) and inline.get("policy"):
                yield role, inline.get("policy")


def _variables(statement: dict[str, Any]) -> Iterator[str]:
    """The ``${...}`` variables of a statement's Resource, NotResource and Condition values."""
    for key in ("Resource", "NotResource", "Condition"):
        yield from _in(statement.get(key))


def _in(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        start = value.find("${")
        while start != -1:
            end = value.find("}", start)
            if end == -1:
                return
            yield value[start : end + 1]
            start = value.find("${", end)
    elif isinstance(value, list):
        for item in value:
            yield from _in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _in(item)
