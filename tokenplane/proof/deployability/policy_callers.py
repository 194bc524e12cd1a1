"""A resource policy's Deny does not match the requests the program's own writers make.

An explicit Deny in a bucket, queue or topic policy beats every Allow of the caller's IAM policies
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html). The program grants its
own workloads (an IRSA role's policy, a Lambda's execution role) the writes they make (``s3:PutObject`` on a bucket's
objects, ``sqs:SendMessage``, ``sns:Publish``); a Deny to every principal whose conditions hold for those ordinary
requests denies each of them, and the workload fails with AccessDenied ("with an explicit deny in a resource-based
policy") after a ``pulumi up`` that succeeded (a publish Job that copies into the bucket fails its await).

Conditions are evaluated as IAM does for a request the writer makes with the AWS CLI or an SDK's defaults: over TLS
(``aws:SecureTransport`` true), and without the optional request headers they send only when asked (an S3 upload's
``x-amz-server-side-encryption`` and its KMS key ID, ACL and grant headers, storage class, object lock and tagging:
``aws s3 cp``/``sync`` send no encryption header unless given ``--sse``, and the bucket's default encryption then
applies: https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucket-encryption.html). For a key absent from the
request, a negated operator (``StringNotEquals``, ``StringNotLike``, ``ArnNotEquals``...) and any ``...IfExists``
operator match, ``Null: true`` matches and ``Null: false`` does not, and any other operator does not
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html: "If the key
that you specify in a policy condition is not present in the request context, the values do not match", and a
negated operator then returns true; the Null operator is how to test presence). So the classic "require SSE-KMS"
statement, ``StringNotEquals s3:x-amz-server-side-encryption aws:kms`` without ``Null: false`` beside it, denies every
upload that relies on the bucket's default encryption.

A statement is judged when it denies every principal (``"*"``, ``{"AWS": "*"}``) the writer's action on what the
writer is granted, and each of its conditions is one of those keys; any other key (a source VPC, a principal's ARN or
tag) may leave the writer out and is not judged.

It cannot see: writers outside the program, and a writer that does send the header (an SDK call setting
``ServerSideEncryption``, ``aws s3 cp --sse aws:kms``): this rule assumes the defaults, which is what the shipped
components' writers use. KMS key policies are the lockout check's (``aws-api-values``) and ``kms-grant``'s.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from typing import Any, NamedTuple

from tokenplane.proof.deployability import iam_policy
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "resource-policy-admits-callers"


class Guarded(NamedTuple):
    """A resource policy type: the input naming what it guards, the types that can be, the writes the program's
    workloads make there, and whether those name objects under the resource (S3) rather than the resource."""

    target: str
    types: tuple[str, ...]
    actions: tuple[str, ...]
    objects: bool = False


POLICIES: dict[str, Guarded] = {
    "aws:s3/bucketPolicy:BucketPolicy": Guarded(
        "bucket", ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2"), ("s3:PutObject",), objects=True
    ),
    "aws:sqs/queuePolicy:QueuePolicy": Guarded("queueUrl", ("aws:sqs/queue:Queue",), ("sqs:SendMessage",)),
    "aws:sns/topicPolicy:TopicPolicy": Guarded("arn", ("aws:sns/topic:Topic",), ("sns:Publish",)),
}
# Request headers an S3 writer sends only when asked to (condition keys in lower case, by prefix).
ABSENT_KEYS = (
    "s3:x-amz-server-side-encryption",  # and -aws-kms-key-id, -customer-algorithm
    "s3:x-amz-acl",
    "s3:x-amz-grant-",
    "s3:x-amz-storage-class",
    "s3:object-lock-",
    "s3:requestobjecttag",
    "s3:x-amz-website-redirect-location",
)
NEGATED = ("stringnot", "arnnot", "numericnotequals", "datenotequals", "notipaddress")


def check(graph: Graph) -> Iterator[Finding]:
    for policy_type, guarded in POLICIES.items():
        for policy in graph.of_type(policy_type):
            for target in _targets(graph, policy, guarded):
                yield from _judge(graph, policy, target, guarded)


def _targets(graph: Graph, policy: RenderedResource, guarded: Guarded) -> list[RenderedResource]:
    urns = policy.property_dependencies.get(guarded.target, [])
    return [graph.by_urn[u] for u in urns if u in graph.by_urn and graph.by_urn[u].type in guarded.types]


def _judge(graph: Graph, policy: RenderedResource, target: RenderedResource, guarded: Guarded) -> Iterator[Finding]:
    arns = iam_policy.arns_of(graph, target)
    for action in guarded.actions:
        writers = _writers(graph, action, arns, guarded.objects)
        if not writers:
            continue
        for statement in iam_policy.statements(policy.inputs.get("policy")):
            if not _denies_everyone(statement, action):
                continue
            denied = [name for name, resource in writers if _covers(statement, resource)]
            keys = _matches_ordinary(statement.get("Condition"))
            if not denied or keys is None:
                continue
            why = (
                f"its conditions hold for a request without {', '.join(keys)} (a negated or IfExists operator "
                "matches a key the request lacks)"
                if keys
                else "it has no condition that excludes them"
            )
            yield Finding(
                RULE,
                policy.urn,
                f"{policy.name} denies {action} on {target.name} to every principal"
                f"{' (' + str(statement['Sid']) + ')' if statement.get('Sid') else ''}, and {why}: the program's "
                f"own writers ({', '.join(sorted(set(denied)))}) make exactly those requests (the AWS CLI and SDKs "
                "send TLS and no optional headers; the bucket's default encryption applies), so every "
                f"{action} they make is refused with AccessDenied (an explicit deny in a resource-based policy "
                "beats their IAM Allow)",
                (
                    f'add "Null": {{"{keys[0]}": "false"}} to the statement\'s Condition so it denies only requests '
                    "that carry the key with another value (default encryption covers the rest), or make every "
                    "writer send it"
                    if keys
                    else f"narrow the Deny (a condition, or a principal exemption) so the writers' {action} passes"
                ),
            )


def _writers(graph: Graph, action: str, arns: tuple[str, ...], objects: bool) -> list[tuple[str, str]]:
    """The program's identity policies that allow ``action`` on the resource: (holder, the resource pattern)."""
    out: list[tuple[str, str]] = []
    for holder, document in iam_policy.policy_documents(graph):
        if holder.type in POLICIES:
            continue
        for statement in iam_policy.allowing(document, action):
            if statement.get("Condition"):
                continue  # a conditional grant is not a plain writer
            for resource in iam_policy.as_list(statement.get("Resource")):
                if isinstance(resource, str) and any(_names(resource, arn, objects) for arn in arns):
                    out.append((holder.name, resource))
    return out


def _names(pattern: str, arn: str, objects: bool) -> bool:
    if not objects:
        return fnmatch.fnmatchcase(arn, pattern)
    return pattern.startswith(f"{arn}/") or fnmatch.fnmatchcase(f"{arn}/key", pattern)


def _denies_everyone(statement: dict[str, Any], action: str) -> bool:
    if statement.get("Effect") != "Deny" or "NotPrincipal" in statement or "NotResource" in statement:
        return False
    principal = statement.get("Principal")
    everyone = principal == "*" or (
        isinstance(principal, dict) and "*" in iam_policy.as_list(principal.get("AWS")) and len(principal) == 1
    )
    if "NotAction" in statement:
        return everyone and not iam_policy.names_action(statement, action, "NotAction")
    return everyone and iam_policy.names_action(statement, action)


def _covers(statement: dict[str, Any], granted: str) -> bool:
    """Whether the Deny's Resource names what the writer writes (a sample of the granted pattern)."""
    sample = granted.replace("*", "x").replace("?", "x")
    patterns = [r for r in iam_policy.as_list(statement.get("Resource")) if isinstance(r, str)]
    return any(fnmatch.fnmatchcase(sample, p) for p in patterns)


def _matches_ordinary(condition: Any) -> list[str] | None:
    """The absent keys through which the condition block holds for a writer's ordinary request; None when it does
    not hold, or depends on a key this rule does not model."""
    if condition is None:
        return []
    if not isinstance(condition, dict):
        return None
    keys: list[str] = []
    for operator, entries in condition.items():
        if not isinstance(operator, str) or not isinstance(entries, dict):
            return None
        for key, values in entries.items():
            held = _holds(operator.lower(), str(key).lower(), iam_policy.as_list(values))
            if held is not True:
                return None
            if str(key).lower().startswith(ABSENT_KEYS):
                keys.append(str(key))
    return keys


def _holds(operator: str, key: str, values: list[Any]) -> bool | None:
    texts = {str(v).lower() for v in values}
    if key == "aws:securetransport":  # the writer's request is over TLS
        if operator.startswith("bool"):
            return "true" in texts
        if operator == "null":
            return "false" in texts
        return None
    if not key.startswith(ABSENT_KEYS):
        return None
    if operator == "null":
        return "true" in texts
    return operator.startswith(NEGATED) or operator.endswith("ifexists")
