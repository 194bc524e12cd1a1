"""An S3 replication rule replicates what its source holds: SSE-KMS objects are selected with a replica key, and the
replication role may do everything replication does as it.

S3 replicates as the configuration's role, object by object, after ``pulumi up`` has succeeded; what it cannot do shows
only as replication status FAILED (or as nothing at all), and the destination bucket stays empty until the day it is
needed (https://docs.aws.amazon.com/AmazonS3/latest/userguide/replication-requirements.html).

- ``s3-replication-kms``: "By default, Amazon S3 doesn't replicate objects that are stored at rest using server-side
  encryption with AWS KMS keys" (https://docs.aws.amazon.com/AmazonS3/latest/userguide/replication-config-for-kms-objects.html):
  a rule replicates them only with ``SourceSelectionCriteria.SseKmsEncryptedObjects`` Enabled, and such a rule must name
  ``Destination.EncryptionConfiguration.ReplicaKmsKeyID`` (PutBucketReplication refuses it otherwise: InvalidRequest).
  A source whose default encryption is ``aws:kms`` holds SSE-KMS objects, so a rule that does not select them
  replicates none of what is uploaded without its own encryption header. The role then needs ``kms:Decrypt`` on the
  source objects' key and ``kms:Encrypt`` on the replica key (the same page, "Granting additional permissions"):
  judged for the program's own keys (an AWS managed ``aws/s3`` key's policy lets every principal of the account use
  it through S3), from the role's policies and the key's policy.
- ``s3-replication-role``: the role may ``s3:GetReplicationConfiguration`` and ``s3:ListBucket`` on the source bucket,
  ``s3:GetObjectVersionForReplication`` on its objects and ``s3:ReplicateObject`` on the destination's objects
  (``s3:ReplicateDelete`` too where delete markers are replicated): the replication-requirements page's policy.

Judged only where every policy of the role is known at render time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import (
    AWS_MANAGED,
    ROLE,
    allows_on,
    arns_of,
    as_list,
    attached,
    aws_managed_document,
    document,
    role_documents,
    role_named,
)
from tokenplane.proof.deployability.kms_grants import BUCKETS, SSE_CONFIGS, key_in, key_of
from tokenplane.proof.deployability.kms_grants import _key_policy_allows as key_policy_allows
from tokenplane.proof.render import RenderedResource, physical_id

RULE = "s3-replication-kms"
ROLE_RULE = "s3-replication-role"
REPLICATION = "aws:s3/bucketReplicationConfig:BucketReplicationConfig"


def check(graph: Graph) -> Iterator[Finding]:
    for config in graph.of_type(REPLICATION):
        for source in (b for b in graph.referenced(config, "bucket") if b.type in BUCKETS):
            yield from _judge(graph, config, source)


def check_role(graph: Graph) -> Iterator[Finding]:
    for config in graph.of_type(REPLICATION):
        role = _role(graph, config)
        documents = _documents(graph, role) if role is not None else None
        if role is None or documents is None:
            continue
        for source in (b for b in graph.referenced(config, "bucket") if b.type in BUCKETS):
            source_arns = _bucket_arns(graph, source)
            needs = [
                ("s3:GetReplicationConfiguration", source_arns, False, source.name),
                ("s3:ListBucket", source_arns, False, source.name),
                ("s3:GetObjectVersionForReplication", source_arns, True, f"{source.name}'s objects"),
            ]
            for rule in _enabled_rules(config):
                destination = _block(rule.get("destination"))
                dest_arns, dest_name = _destination(graph, destination.get("bucket"))
                if not dest_arns:
                    continue
                needs.append(("s3:ReplicateObject", dest_arns, True, f"{dest_name}'s objects"))
                if _block(rule.get("deleteMarkerReplication")).get("status") == "Enabled":
                    needs.append(("s3:ReplicateDelete", dest_arns, True, f"{dest_name}'s objects"))
            missing = list(
                dict.fromkeys(
                    f"{a} on {where}"
                    for a, arns, objects, where in needs
                    if not allows_on(documents, a, arns, objects=objects)
                )
            )
            if missing:
                yield Finding(
                    ROLE_RULE,
                    config.urn,
                    f"replication from {source.name} runs as role {role.name}, which may not "
                    f"{'; '.join(missing)}: S3 replicates as the role, so the configuration is accepted and every "
                    "object's replication fails (or never starts), leaving the destination empty",
                    f"allow {'; '.join(missing)} in {role.name}'s policy "
                    "(https://docs.aws.amazon.com/AmazonS3/latest/userguide/setting-repl-config-perm-overview.html)",
                )


def _judge(graph: Graph, config: RenderedResource, source: RenderedResource) -> Iterator[Finding]:
    sse_kms, source_key = _source_encryption(graph, source)
    role = _role(graph, config)
    documents = _documents(graph, role) if role is not None else None
    for rule in _enabled_rules(config):
        label = f"rule {rule.get('id') or '(unnamed)'}"
        selected = _block(_block(rule.get("sourceSelectionCriteria")).get("sseKmsEncryptedObjects"))
        destination = _block(rule.get("destination"))
        replica = _block(destination.get("encryptionConfiguration")).get("replicaKmsKeyId")
        if selected.get("status") != "Enabled":
            if sse_kms:
                yield Finding(
                    RULE,
                    config.urn,
                    f"{source.name}'s default encryption is SSE-KMS, but replication {label} does not select SSE-KMS "
                    "objects (sourceSelectionCriteria.sseKmsEncryptedObjects): S3 does not replicate objects encrypted "
                    "with KMS keys unless a rule opts in, so what is uploaded there is never replicated and the "
                    "destination stays empty",
                    'set source_selection_criteria={"sse_kms_encrypted_objects": {"status": "Enabled"}} and '
                    "destination.encryption_configuration.replica_kms_key_id (a key in the destination's region), "
                    "and allow the role kms:Decrypt on the source key and kms:Encrypt on the replica key",
                )
            continue
        if not replica:
            yield Finding(
                RULE,
                config.urn,
                f"replication {label} selects SSE-KMS objects but names no replica key "
                "(destination.encryptionConfiguration.replicaKmsKeyId): PutBucketReplication refuses it "
                "(InvalidRequest: ReplicaKmsKeyID must be specified if SseKmsEncryptedObjects tag is present)",
                "set destination.encryption_configuration.replica_kms_key_id to a KMS key in the destination "
                "bucket's region",
            )
            continue
        if role is None or documents is None:
            continue
        keys = [(source_key, "kms:Decrypt", "the source objects' key")] if source_key is not None else []
        replica_key = key_of(graph, replica) or _replica_key(graph, config)
        if replica_key is not None:
            keys.append((replica_key, "kms:Encrypt", "the replica key"))
        for key, action, what in keys:
            if allows_on(documents, action, arns_of(graph, key)) or key_policy_allows(graph, key, role, action):
                continue
            yield Finding(
                RULE,
                config.urn,
                f"replication {label} from {source.name} runs as role {role.name}, which may not {action} on "
                f"{what} {key.name} (neither its policies nor the key's policy allow it): S3 calls KMS as the "
                "role for each object, so every SSE-KMS object's replication fails (status FAILED) and the "
                "destination stays empty",
                f"allow {action}"
                + (" and kms:GenerateDataKey" if action == "kms:Encrypt" else "")
                + f" on {key.name}.arn in {role.name}'s policy (conditioned on kms:ViaService s3.<its region>."
                "amazonaws.com if you like), or grant the role in the key's policy",
            )


def _enabled_rules(config: RenderedResource) -> list[dict[str, Any]]:
    return [r for r in as_list(config.inputs.get("rules")) if isinstance(r, dict) and r.get("status") == "Enabled"]


def _block(value: Any) -> dict[str, Any]:
    """A nested block: the provider renders one as an object or a one-element list."""
    if isinstance(value, list):
        value = value[0] if value else None
    return value if isinstance(value, dict) else {}


def _source_encryption(graph: Graph, bucket: RenderedResource) -> tuple[bool, RenderedResource | None]:
    """Whether ``bucket``'s default encryption is SSE-KMS (``aws:kms``, ``aws:kms:dsse``), and the program's key it
    names (None for the AWS managed key, or a key not of the program)."""
    for config in (r for t in SSE_CONFIGS for r in graph.of_type(t)):
        if not any(b.urn == bucket.urn for b in graph.referenced(config, "bucket")):
            continue
        for rule in as_list(config.inputs.get("rules")):
            default = _block(rule.get("applyServerSideEncryptionByDefault")) if isinstance(rule, dict) else {}
            if str(default.get("sseAlgorithm", "")).startswith("aws:kms"):
                return True, key_of(graph, default.get("kmsMasterKeyId"))
    return False, None


def _role(graph: Graph, config: RenderedResource) -> RenderedResource | None:
    found = role_named(graph, config.inputs.get("role"))
    if found is not None:
        return found
    urns = config.property_dependencies.get("role", [])
    roles = [graph.by_urn[u] for u in urns if u in graph.by_urn and graph.by_urn[u].type == ROLE]
    return roles[0] if roles else None


def _replica_key(graph: Graph, config: RenderedResource) -> RenderedResource | None:
    """The program's key the rules' input was computed from, where the ARN itself is not recognisable."""
    return key_in(graph, config, "rules", None)


def _documents(graph: Graph, role: RenderedResource) -> list[Any] | None:
    documents = role_documents(graph, role) + [
        aws_managed_document(arn) for _, arn in attached(graph, role) if arn.startswith(AWS_MANAGED)
    ]
    return None if any(document(d) is None for d in documents) else documents


def _bucket_arns(graph: Graph, bucket: RenderedResource) -> tuple[str, ...]:
    name = str(bucket.inputs.get("bucket") or physical_id(bucket.type, bucket.name))
    return tuple(sorted({*arns_of(graph, bucket), f"arn:aws:s3:::{name}"}))


def _destination(graph: Graph, value: Any) -> tuple[tuple[str, ...], str]:
    """The ARNs a policy may name the destination bucket by, and its name, from the rule's ``destination.bucket``."""
    if not isinstance(value, str) or not value:
        return (), ""
    for typ in BUCKETS:
        for bucket in graph.of_type(typ):
            arns = _bucket_arns(graph, bucket)
            if value in arns:
                return arns, bucket.name
    return (value,), value.removeprefix("arn:aws:s3:::")
