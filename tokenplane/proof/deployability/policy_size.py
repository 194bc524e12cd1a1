"""Every policy document fits the size its service takes, and every role or user holds no more managed policies than
IAM attaches.

Size limits are checked when the document is written, so ``pulumi up`` fails at that resource (and whatever waits for
it) with the service's error:

- **IAM** (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html, "IAM and AWS STS character
  limits"): a role's inline policies together at most 10,240 characters, a user's 2,048, a group's 5,120 (PutRolePolicy:
  ``LimitExceeded: Maximum policy size of 10240 bytes exceeded for role ...``); a managed policy at most 6,144
  (CreatePolicy: ``LimitExceeded``); a role's trust policy at most 2,048 by default ("Role trust policy length",
  adjustable to 4,096 through Service Quotas: CreateRole ``LimitExceeded``). "IAM doesn't count white space": the
  sizes here are of the document without any. Managed policies attached to a role or a user: 10 by default, 20 at
  most (the "Managed policies per role/user" quota: AttachRolePolicy ``LimitExceeded: Cannot exceed quota for
  PoliciesPerRole: 10``; https://repost.aws/knowledge-center/iam-increase-policy-size).
- **Resource policies**: an S3 bucket policy at most 20 KB ("Bucket policies are limited to 20 KB in size":
  https://docs.aws.amazon.com/AmazonS3/latest/userguide/using-iam-policies.html); an SQS queue policy 8,192 bytes
  (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-policies.html); an SNS topic
  policy 30 KB (https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-language-api-permissions-reference.html,
  "Policy quotas"); a KMS key policy 32 KB, not adjustable
  (https://docs.aws.amazon.com/kms/latest/developerguide/resource-limits.html); an ECR repository policy 10,240
  characters and a lifecycle policy 30,720 (SetRepositoryPolicy ``policyText``, PutLifecyclePolicy
  ``lifecyclePolicyText``: botocore's ecr service-2.json ``max``); a Secrets Manager secret policy 20,480
  (PutResourcePolicy ``ResourcePolicy``: secretsmanager service-2.json). These services count the document as sent,
  white space included; the size here leaves it out, so a document judged too large is too large however it is
  formatted.

Judged on documents known at render time; one known only at apply time adds nothing to a role's total (what is known
is already a lower bound).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from tokenplane.proof.deployability import iam_policy
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "policy-size"
ROLE = "aws:iam/role:Role"
USER = "aws:iam/user:User"
GROUP = "aws:iam/group:Group"
MANAGED_POLICY = "aws:iam/policy:Policy"
USER_ATTACHMENT = "aws:iam/userPolicyAttachment:UserPolicyAttachment"
_WHITESPACE = re.compile(r"\s+")


class Inline(NamedTuple):
    """An IAM principal type whose inline policies IAM limits together: where they are written, and the limit."""

    label: str
    writers: tuple[tuple[str, str], ...]  # (resource type, input naming the principal)
    limit: int
    call: str


INLINE = {
    ROLE: Inline("role", (("aws:iam/rolePolicy:RolePolicy", "role"),), 10_240, "PutRolePolicy"),
    USER: Inline("user", (("aws:iam/userPolicy:UserPolicy", "user"),), 2_048, "PutUserPolicy"),
    GROUP: Inline("group", (("aws:iam/groupPolicy:GroupPolicy", "group"),), 5_120, "PutGroupPolicy"),
}
MANAGED_LIMIT = 6_144
TRUST_LIMIT = (2_048, 4_096)  # the quota's default, and the most Service Quotas raises it to
ATTACHED_LIMIT = (10, 20)


class Limit(NamedTuple):
    """A service's limit on a resource policy, and the call that writes it."""

    service: str
    call: str
    limit: int


# Resource policies: (resource type, input) -> the service's limit on the document.
RESOURCE_POLICIES: dict[tuple[str, str], Limit] = {
    ("aws:s3/bucketPolicy:BucketPolicy", "policy"): Limit("S3", "PutBucketPolicy", 20_480),
    ("aws:s3/bucket:Bucket", "policy"): Limit("S3", "PutBucketPolicy", 20_480),
    ("aws:sqs/queuePolicy:QueuePolicy", "policy"): Limit("SQS", "SetQueueAttributes", 8_192),
    ("aws:sqs/queue:Queue", "policy"): Limit("SQS", "SetQueueAttributes", 8_192),
    ("aws:sns/topicPolicy:TopicPolicy", "policy"): Limit("SNS", "SetTopicAttributes", 30_720),
    ("aws:sns/topic:Topic", "policy"): Limit("SNS", "SetTopicAttributes", 30_720),
    ("aws:kms/key:Key", "policy"): Limit("KMS", "CreateKey/PutKeyPolicy", 32_768),
    ("aws:ecr/repositoryPolicy:RepositoryPolicy", "policy"): Limit("ECR", "SetRepositoryPolicy", 10_240),
    ("aws:ecr/lifecyclePolicy:LifecyclePolicy", "policy"): Limit("ECR", "PutLifecyclePolicy", 30_720),
    ("aws:secretsmanager/secretPolicy:SecretPolicy", "policy"): Limit("Secrets Manager", "PutResourcePolicy", 20_480),
    ("aws:secretsmanager/secret:Secret", "policy"): Limit("Secrets Manager", "PutResourcePolicy", 20_480),
}


def size(value: Any) -> int | None:
    """A policy document's size as IAM counts it: characters without white space (UTF-8 bytes, a bound on both); None
    when it is not a document known at render time."""
    if isinstance(value, dict):
        text = json.dumps(value, separators=(",", ":"))
    elif isinstance(value, str) and iam_policy.document(value) is not None:
        text = value
    else:
        return None
    return len(_WHITESPACE.sub("", text).encode())


def check(graph: Graph) -> Iterator[Finding]:
    for typ, inline in INLINE.items():
        for principal in graph.of_type(typ):
            yield from _inline(graph, principal, inline)
    for policy in graph.of_type(MANAGED_POLICY):
        found = size(policy.inputs.get("policy"))
        if found is not None and found > MANAGED_LIMIT:
            yield Finding(
                RULE,
                policy.urn,
                f"managed policy {policy.name} is {found:,} characters without white space, over IAM's {MANAGED_LIMIT:,}"
                " for a managed policy: CreatePolicy fails with LimitExceeded and every attachment of it waits forever",
                "split it into several managed policies (up to 10 attach to a role by default), or use wildcards "
                "and prefixes in Resource instead of listing each ARN",
            )
    for role in graph.of_type(ROLE):
        yield from _trust(role)
        yield from _attached(role, [a for _, a in iam_policy.attached(graph, role)], "role", "AttachRolePolicy")
    for user in graph.of_type(USER):
        arns = [
            str(a.inputs.get("policyArn"))
            for a in graph.of_type(USER_ATTACHMENT)
            if any(u.urn == user.urn for u in graph.referenced(a, "user"))
        ]
        yield from _attached(user, arns, "user", "AttachUserPolicy")
    for (typ, key), limit in RESOURCE_POLICIES.items():
        for resource in graph.of_type(typ):
            found = size(resource.inputs.get(key))
            if found is not None and found > limit.limit:
                yield Finding(
                    RULE,
                    resource.urn,
                    f"the {limit.service} resource policy of {resource.name} is at least {found:,} bytes (without its "
                    f"white space), over the {limit.limit:,} {limit.service} takes: {limit.call} refuses it and the "
                    "policy is never written",
                    "shorten it: one statement per principal and action set, wildcards or prefixes in Resource "
                    "instead of listing each ARN, or move the grants to the principals' IAM policies",
                )


def _inline(graph: Graph, principal: RenderedResource, inline: Inline) -> Iterator[Finding]:
    holders: list[tuple[RenderedResource, Any]] = [
        (principal, p.get("policy")) for p in principal.inputs.get("inlinePolicies") or [] if isinstance(p, dict)
    ]
    for typ, key in inline.writers:
        for writer in graph.of_type(typ):
            if any(r.urn == principal.urn for r in graph.referenced(writer, key)):
                holders.append((writer, writer.inputs.get("policy")))
    sizes = [(holder, found) for holder, document in holders if (found := size(document)) is not None]
    total = sum(found for _, found in sizes)
    if total <= inline.limit:
        return
    largest = max(sizes, key=lambda s: s[1])[0]
    parts = f" ({', '.join(f'{h.name} {n:,}' for h, n in sizes)})" if len(sizes) > 1 else ""
    yield Finding(
        RULE,
        largest.urn,
        f"{inline.label} {principal.name}'s inline policies total {total:,} characters without white space{parts},"
        f" over IAM's {inline.limit:,} for a {inline.label}'s inline policies together: {inline.call} fails with "
        f"LimitExceeded (Maximum policy size of {inline.limit} bytes exceeded) and the {inline.label} never gets them",
        "move the grants into customer managed policies (6,144 characters each) attached to it, or shorten them: "
        "wildcards or prefixes in Resource (e.g. BUCKET/models/*) instead of one ARN per object",
    )


def _trust(role: RenderedResource) -> Iterator[Finding]:
    found = size(role.inputs.get("assumeRolePolicy"))
    default, most = TRUST_LIMIT
    if found is None or found <= default:
        return
    raised = (
        f"beyond even the {most:,} Service Quotas can raise it to"
        if found > most
        else f"unless the account's 'Role trust policy length' quota was raised (up to {most:,})"
    )
    yield Finding(
        RULE,
        role.urn,
        f"role {role.name}'s trust policy is {found:,} characters without white space, over IAM's default {default:,} "
        f"for a trust policy, {raised}: CreateRole (or UpdateAssumeRolePolicy) fails with LimitExceeded",
        "trust fewer principals by name: an aws:PrincipalOrgID or aws:PrincipalAccount condition, or one role per "
        "group of callers",
    )


def _attached(principal: RenderedResource, arns: list[str], label: str, call: str) -> Iterator[Finding]:
    distinct = sorted(set(arns))
    default, most = ATTACHED_LIMIT
    if len(distinct) <= default:
        return
    raised = (
        f"beyond even the {most} the quota can be raised to"
        if len(distinct) > most
        else f"unless the account's 'Managed policies per {label}' quota was raised (up to {most})"
    )
    yield Finding(
        RULE,
        principal.urn,
        f"{label} {principal.name} has {len(distinct)} managed policies attached, over IAM's default {default} per "
        f"{label}, {raised}: the {call} past the {default}th fails with LimitExceeded",
        f"merge customer managed policies so that at most {default} attach to the {label}",
    )
