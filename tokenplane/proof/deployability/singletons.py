"""A setting AWS holds once per resource is written by one resource of the program.

A bucket has one policy, one lifecycle configuration, one versioning state, one default encryption, one public
access block, one notification configuration; a queue, a topic, an ECR repository and a KMS key one policy each.
The API that writes such a setting replaces it whole (PutBucketPolicy, PutBucketLifecycleConfiguration,
SetQueueAttributes ``Policy``, SetRepositoryPolicy, PutKeyPolicy: "replaces the existing policy",
https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketPolicy.html). Two Pulumi resources writing the same
one both report success: whichever is written last wins, the other's statements or rules are gone while Pulumi
records them as applied, and each later update that touches either flips the setting again (a refresh shows the
loser drifted). Merge them into one resource.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "one-writer"
# Resource type -> (the input naming what holds the setting, what the setting is).
SINGLETONS = {
    "aws:s3/bucketPolicy:BucketPolicy": ("bucket", "policy"),
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": ("bucket", "lifecycle configuration"),
    "aws:s3/bucketLifecycleConfigurationV2:BucketLifecycleConfigurationV2": ("bucket", "lifecycle configuration"),
    "aws:s3/bucketVersioning:BucketVersioning": ("bucket", "versioning"),
    "aws:s3/bucketVersioningV2:BucketVersioningV2": ("bucket", "versioning"),
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": (
        "bucket",
        "default encryption",
    ),
    "aws:s3/bucketServerSideEncryptionConfigurationV2:BucketServerSideEncryptionConfigurationV2": (
        "bucket",
        "default encryption",
    ),
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": ("bucket", "public access block"),
    "aws:s3/bucketNotification:BucketNotification": ("bucket", "notification configuration"),
    "aws:s3/bucketCorsConfiguration:BucketCorsConfiguration": ("bucket", "CORS configuration"),
    "aws:s3/bucketReplicationConfig:BucketReplicationConfig": ("bucket", "replication configuration"),
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls": ("bucket", "ownership controls"),
    "aws:sqs/queuePolicy:QueuePolicy": ("queueUrl", "policy"),
    "aws:sns/topicPolicy:TopicPolicy": ("arn", "policy"),
    "aws:ecr/lifecyclePolicy:LifecyclePolicy": ("repository", "lifecycle policy"),
    "aws:ecr/repositoryPolicy:RepositoryPolicy": ("repository", "policy"),
    "aws:kms/keyPolicy:KeyPolicy": ("keyId", "key policy"),
}


def check(graph: Graph) -> Iterator[Finding]:
    writers: dict[tuple[str | None, str, str], list[RenderedResource]] = {}
    for typ, (field, setting) in SINGLETONS.items():
        for resource in graph.of_type(typ):
            holder = resource.inputs.get(field)
            if isinstance(holder, str) and holder:  # known at render time; an unknown one is not judged
                writers.setdefault((resource.region, setting, holder), []).append(resource)
    for (_region, setting, holder), resources in writers.items():
        if len(resources) < 2:
            continue
        names = ", ".join(r.name for r in resources)
        yield Finding(
            RULE,
            resources[1].urn,
            f"{names} each write the {setting} of {holder}, which AWS holds once and replaces whole: the last "
            "written wins, the others' settings are gone while Pulumi records them as applied, and every later "
            "update that touches one flips it again",
            f"merge them into one resource that writes the whole {setting} (all statements or rules together)",
        )
