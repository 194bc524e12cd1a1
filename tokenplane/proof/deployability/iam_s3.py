"""S3 actions in IAM policies are granted on the resource type they act on: objects for object actions,
buckets for bucket actions.

IAM matches an action against a statement's resources by the action's resource type. ``s3:GetObject`` acts on
an *object* (``arn:aws:s3:::BUCKET/KEY``); granted only on ``arn:aws:s3:::BUCKET`` it allows nothing, and the
call is denied (AccessDenied) although the policy seems to grant it. ``s3:ListBucket`` acts on the *bucket*;
granted only on ``BUCKET/*`` it allows nothing. The table below is AWS's Service Authorization Reference for
Amazon S3 ("Actions defined by Amazon S3", the Resource types column:
https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html), for the actions a
workload's policy commonly names.

A statement is judged only when it is an Allow with Action and Resource (not NotAction/NotResource) and an
action named exactly (a wildcard action such as ``s3:Get*`` spans both types). A resource with a wildcard
in the bucket name (``*``, ``arn:aws:s3:::b*``) may match both types and satisfies either; one after the
slash (``BUCKET/*``) is still an object ARN. Read from every policy document the
graph holds: role inline policies (``RolePolicy``, ``Role.inlinePolicies``), managed ``Policy`` and bucket
policies. The same rule reports actions that support no resource type allowed only on ARNs (``iam_unscoped``), and
actions of other services granted only on ARNs of resource types they do not act on (``iam_types``).
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import as_list, policy_documents, statements
from tokenplane.proof.deployability.iam_types import check as _typed
from tokenplane.proof.deployability.iam_unscoped import check as _unscoped

RULE = "iam-resource-type"
S3_ARN = "arn:aws:s3:::"
# Resource type "object" in the Service Authorization Reference.
OBJECT_ACTIONS = frozenset(
    {
        "AbortMultipartUpload",
        "BypassGovernanceRetention",
        "DeleteObject",
        "DeleteObjectTagging",
        "DeleteObjectVersion",
        "DeleteObjectVersionTagging",
        "GetObject",
        "GetObjectAcl",
        "GetObjectAttributes",
        "GetObjectLegalHold",
        "GetObjectRetention",
        "GetObjectTagging",
        "GetObjectTorrent",
        "GetObjectVersion",
        "GetObjectVersionAcl",
        "GetObjectVersionAttributes",
        "GetObjectVersionForReplication",
        "GetObjectVersionTagging",
        "GetObjectVersionTorrent",
        "ListMultipartUploadParts",
        "PutObject",
        "PutObjectAcl",
        "PutObjectLegalHold",
        "PutObjectRetention",
        "PutObjectTagging",
        "PutObjectVersionAcl",
        "PutObjectVersionTagging",
        "ReplicateDelete",
        "ReplicateObject",
        "ReplicateTags",
        "RestoreObject",
    }
)
# Resource type "bucket" in the Service Authorization Reference.
BUCKET_ACTIONS = frozenset(
    {
        "CreateBucket",
        "DeleteBucket",
        "DeleteBucketPolicy",
        "DeleteBucketWebsite",
        "GetAccelerateConfiguration",
        "GetBucketAcl",
        "GetBucketCORS",
        "GetBucketLocation",
        "GetBucketLogging",
        "GetBucketNotification",
        "GetBucketObjectLockConfiguration",
        "GetBucketOwnershipControls",
        "GetBucketPolicy",
        "GetBucketPolicyStatus",
        "GetBucketPublicAccessBlock",
        "GetBucketRequestPayment",
        "GetBucketTagging",
        "GetBucketVersioning",
        "GetBucketWebsite",
        "GetEncryptionConfiguration",
        "GetLifecycleConfiguration",
        "GetReplicationConfiguration",
        "ListBucket",
        "ListBucketMultipartUploads",
        "ListBucketVersions",
        "PutAccelerateConfiguration",
        "PutBucketAcl",
        "PutBucketCORS",
        "PutBucketLogging",
        "PutBucketNotification",
        "PutBucketObjectLockConfiguration",
        "PutBucketOwnershipControls",
        "PutBucketPolicy",
        "PutBucketPublicAccessBlock",
        "PutBucketRequestPayment",
        "PutBucketTagging",
        "PutBucketVersioning",
        "PutBucketWebsite",
        "PutEncryptionConfiguration",
        "PutLifecycleConfiguration",
        "PutReplicationConfiguration",
    }
)


def check(graph: Graph) -> Iterator[Finding]:
    yield from _unscoped(graph)
    yield from _typed(graph)
    for resource, document in policy_documents(graph):
        for statement in statements(document):
            if statement.get("Effect") != "Allow" or "Action" not in statement or "Resource" not in statement:
                continue
            kinds = {_kind(str(r)) for r in as_list(statement["Resource"])}
            for action in as_list(statement["Action"]):
                service, _, name = str(action).partition(":")
                if service.lower() != "s3":
                    continue
                needs = "object" if name in OBJECT_ACTIONS else "bucket" if name in BUCKET_ACTIONS else None
                if needs is None or needs in kinds or "any" in kinds:
                    continue
                resources = ", ".join(str(r) for r in as_list(statement["Resource"]))
                shape = "arn:aws:s3:::BUCKET/* (or a key prefix)" if needs == "object" else "arn:aws:s3:::BUCKET"
                yield Finding(
                    RULE,
                    resource.urn,
                    f"{resource.name} allows {action} only on {resources}: {action} acts on S3 {needs}s, and "
                    f"none of those is {'an object' if needs == 'object' else 'a bucket'} ARN, so the grant "
                    "matches nothing and the call is denied (AccessDenied)",
                    f"grant {action} on {shape} (AWS Service Authorization Reference, Amazon S3: resource type "
                    f"{needs})",
                )


def _kind(resource: str) -> str:
    """``object``, ``bucket``, ``any`` (a wildcard that may match both) or ``other`` (no S3 bucket or object)."""
    if not resource.startswith(S3_ARN):
        return "any" if "*" in resource or "?" in resource else "other"  # "*", "arn:aws:s3:*:..."
    bucket, slash, _ = resource.removeprefix(S3_ARN).partition("/")
    if any(c in bucket for c in "*?$"):
        return "any"  # a wildcard (or a policy variable) in the name may run on into a key
    return "object" if slash else "bucket"
