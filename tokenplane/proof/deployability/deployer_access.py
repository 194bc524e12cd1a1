"""The identity that runs ``pulumi up`` keeps access to what it manages: no resource policy denies it.

An explicit Deny in a resource policy beats every Allow of the caller's IAM policies
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html). A policy that denies
every principal but a list of exempted ones therefore denies the deploying role too unless the list names it. The
first ``pulumi up`` succeeds (the policy is the last thing written), and from then on each refresh, update and
``pulumi destroy`` reads or writes the resource as the deployer and fails with AccessDenied: an S3 bucket's
versioning, encryption and policy (only the account's root user can still delete a bucket policy:
https://repost.aws/knowledge-center/s3-accidentally-denied-access), a queue's or topic's attributes, a secret's value
and policy, an ECR repository's policy.

The deploying identity is not in the program, so a statement is judged only where no deployer can be exempt: a Deny
to every principal (``"*"``, ``{"AWS": "*"}``) on an action the resource's management needs, whose conditions are
all exemptions by ``aws:PrincipalArn`` (``StringNotEquals``/``StringNotLike``/``ArnNotEquals``/``ArnNotLike``, with or
without ``IfExists``) listing only roles and users the program itself creates; a Deny with ``NotPrincipal`` listing
only those is read the same way. An exemption of anything else (the account root, a role made elsewhere, a
wildcard, ``aws:PrincipalAccount``, ``aws:PrincipalTag``, ``aws:PrincipalOrgID``) or any other condition
(``aws:SecureTransport``, a source VPC) may leave the deployer out of the Deny, and is not judged. KMS key policies
are left to the lockout safety check (``aws-api-values``): KMS refuses at create a policy that would not let the
caller put it again.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from tokenplane.proof.deployability import iam_policy
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "deployer-keeps-access"
# Exemptions by the principal's ARN: the Deny applies to every principal whose ARN is not listed.
EXEMPTING = {"stringnotequals", "stringnotlike", "arnnotequals", "arnnotlike"}
PRINCIPAL_ARN = "aws:principalarn"
PROGRAM_PRINCIPALS = ((":role/", "aws:iam/role:Role"), (":user/", "aws:iam/user:User"))


class Managed(NamedTuple):
    """A resource policy the program writes: what it guards, the calls Pulumi makes on that resource, and whether a
    statement must name the resource itself (an S3 bucket's ARN, not only its objects) to cover them."""

    service: str
    actions: tuple[str, ...]
    bucket_level: bool = False


# The calls every refresh and update makes on the resource (reading and writing its policy or attributes): a Deny of
# only others (s3:DeleteBucket, secretsmanager:GetSecretValue) is a guard the program may mean, and is not judged.
S3 = Managed("S3", ("s3:GetBucketPolicy", "s3:PutBucketPolicy"), True)
SQS = Managed("SQS", ("sqs:GetQueueAttributes", "sqs:SetQueueAttributes"))
SNS = Managed("SNS", ("sns:GetTopicAttributes", "sns:SetTopicAttributes"))
SECRETS = Managed(
    "Secrets Manager",
    ("secretsmanager:DescribeSecret", "secretsmanager:GetResourcePolicy", "secretsmanager:PutResourcePolicy"),
)
ECR = Managed("ECR", ("ecr:GetRepositoryPolicy", "ecr:SetRepositoryPolicy"))
# Where each resource type writes a resource policy.
POLICIES: dict[str, Managed] = {
    "aws:s3/bucketPolicy:BucketPolicy": S3,
    "aws:s3/bucket:Bucket": S3,
    "aws:sqs/queuePolicy:QueuePolicy": SQS,
    "aws:sqs/queue:Queue": SQS,
    "aws:sns/topicPolicy:TopicPolicy": SNS,
    "aws:sns/topic:Topic": SNS,
    "aws:secretsmanager/secretPolicy:SecretPolicy": SECRETS,
    "aws:secretsmanager/secret:Secret": SECRETS,
    "aws:ecr/repositoryPolicy:RepositoryPolicy": ECR,
}


def check(graph: Graph) -> Iterator[Finding]:
    for typ, managed in POLICIES.items():
        for resource in graph.of_type(typ):
            for statement in iam_policy.statements(resource.inputs.get("policy")):
                exempt = _exempted(graph, statement)
                if exempt is None or not _covers(statement, managed):
                    continue
                who = f" but {', '.join(r.name for r in exempt)}" if exempt else ""
                denied = [a for a in managed.actions if _names(statement, a)]
                yield Finding(
                    RULE,
                    resource.urn,
                    f"its {managed.service} resource policy denies {', '.join(denied)} to every principal{who} "
                    f"(statement {statement.get('Sid') or '?'}), so the identity that runs `pulumi up` is "
                    "denied too: an explicit Deny beats its Allow, and after this policy is written every refresh, "
                    "update and `pulumi destroy` of the resource fails with AccessDenied",
                    "exempt the deployer as well: add its role ARN (or the account root, "
                    '"arn:aws:iam::ACCOUNT:root", or an aws:PrincipalAccount/aws:PrincipalTag condition it satisfies) '
                    "to the exemption, or deny only the data actions (s3:GetObject, s3:PutObject...) to others",
                )


def _exempted(graph: Graph, statement: dict[str, Any]) -> list[RenderedResource] | None:
    """The program's principals a Deny to everyone exempts, when it exempts nothing else (an empty list: none); None
    when the statement is not such a Deny, or may exempt something the program does not create."""
    if statement.get("Effect") != "Deny":
        return None
    if "NotPrincipal" in statement:
        if statement.get("Condition"):
            return None
        return _program_principals(graph, _aws_principals(statement["NotPrincipal"]))
    if not _everyone(statement.get("Principal")):
        return None
    condition = statement.get("Condition")
    if not condition:
        return []
    if not isinstance(condition, dict):
        return None
    exempt: list[RenderedResource] = []
    for operator, clauses in condition.items():
        base = str(operator).lower().removesuffix("ifexists")
        if base not in EXEMPTING or not isinstance(clauses, dict):
            return None
        for key, values in clauses.items():
            if str(key).lower() != PRINCIPAL_ARN:
                return None
            found = _program_principals(graph, iam_policy.as_list(values))
            if found is None:
                return None
            exempt += found
    return exempt


def _everyone(principal: Any) -> bool:
    return principal == "*" or (isinstance(principal, dict) and "*" in iam_policy.as_list(principal.get("AWS")))


def _aws_principals(principal: Any) -> list[Any]:
    return iam_policy.as_list(principal.get("AWS")) if isinstance(principal, dict) else [principal]


def _program_principals(graph: Graph, arns: list[Any]) -> list[RenderedResource] | None:
    """The program's roles and users ``arns`` name, or None when one of them is anything else (a wildcard, the root,
    an identity made outside the program, a value unknown at render time)."""
    out: list[RenderedResource] = []
    for arn in arns:
        if not isinstance(arn, str) or "*" in arn or "?" in arn:
            return None
        expected = next((typ for marker, typ in PROGRAM_PRINCIPALS if marker in arn), None)
        found = graph.by_identifying_output.get(arn) or graph.by_physical_id.get(arn.rsplit("/", 1)[-1])
        if expected is None or found is None or found.type != expected:
            return None
        out.append(found)
    return out


def _names(statement: dict[str, Any], action: str) -> bool:
    """Whether the statement's Action (or what its NotAction leaves) covers ``action``, IAM's wildcards, any case."""
    if "NotAction" in statement:
        return not iam_policy.names_action(statement, action, "NotAction")
    return iam_policy.names_action(statement, action)


def _covers(statement: dict[str, Any], managed: Managed) -> bool:
    """Whether the Deny reaches one of the calls Pulumi makes on the resource: an action it names, on the resource
    itself (an S3 bucket's ARN or a pattern matching it, not only ``BUCKET/*``)."""
    if "NotResource" in statement or not any(_names(statement, a) for a in managed.actions):
        return False
    if not managed.bucket_level:
        return True
    resources = [str(r) for r in iam_policy.as_list(statement.get("Resource"))]
    return any(r == "*" or "/" not in r.split(":::", 1)[-1] for r in resources)
