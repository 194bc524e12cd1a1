"""An RDS database can be deleted (by a destroy or a replacement) with something left to restore it from.

``database-recoverable``, two ways a later update or teardown goes wrong:

- **Nothing to restore from**: "Setting the backup retention period to 0 disables automated backups"
  (https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/USER_WorkingWithAutomatedBackups.html), so there is no
  point-in-time recovery; ``skip_final_snapshot=True`` deletes the instance without a final snapshot, and without
  ``deletion_protection`` nothing stops the delete
  (https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/USER_DeleteInstance.html). Any change to a ForceNew input
  (engine, storage encryption, KMS key, identifier, username, db_name) replaces the instance, and a replacement or a
  ``pulumi destroy`` deletes the data for good. Judged on instances (a cluster's retention is at least 1 day).
- **A delete the provider refuses**: ``skip_final_snapshot`` defaults to false, and then the provider's delete
  needs a snapshot name: terraform-provider-aws internal/service/rds/instance.go ``resourceInstanceDelete`` returns
  "final_snapshot_identifier is required when skip_final_snapshot is false" (cluster.go: "RDS Cluster
  final_snapshot_identifier is required when skip_final_snapshot is false") before calling DeleteDBInstance, so
  every replacement and every ``pulumi destroy`` of the database fails. Read replicas (``replicate_source_db``)
  are not judged.

Cannot see: snapshots or AWS Backup plans made outside the program, values known only at apply time.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.rds_values import CLUSTER, INSTANCE
from tokenplane.proof.render import RenderedResource

RULE = "database-recoverable"


def check(graph: Graph) -> Iterator[Finding]:
    for typ in (INSTANCE, CLUSTER):
        for db in graph.of_type(typ):
            if db.inputs.get("replicateSourceDb") or db.inputs.get("replicationSourceIdentifier"):
                continue
            if db.inputs.get("skipFinalSnapshot") is True:
                yield from _unrecoverable(db)
            elif not db.inputs.get("finalSnapshotIdentifier"):
                yield _undeletable(db)


def _unrecoverable(db: RenderedResource) -> Iterator[Finding]:
    retention = db.inputs.get("backupRetentionPeriod")
    if db.type != INSTANCE or retention not in (0, "0") or db.inputs.get("deletionProtection") is True:
        return
    yield Finding(
        RULE,
        db.urn,
        f"{db.name} has backupRetentionPeriod=0 (automated backups and point-in-time recovery off), "
        "skipFinalSnapshot=True and no deletionProtection: a destroy, or any update that replaces it (engine, "
        "storageEncrypted, kmsKeyId, identifier, username, dbName), deletes the database with nothing to restore from",
        f"set {db.name}.backup_retention_period to 1 or more (7 is usual), and skip_final_snapshot=False with a "
        "final_snapshot_identifier (or deletion_protection=True)",
    )


def _undeletable(db: RenderedResource) -> Finding:
    what = "DeleteDBInstance" if db.type == INSTANCE else "DeleteDBCluster"
    return Finding(
        RULE,
        db.urn,
        f"{db.name} takes a final snapshot on delete (skipFinalSnapshot is false, the provider's default) but names "
        f'no finalSnapshotIdentifier: the provider refuses before calling {what} ("final_snapshot_identifier is '
        'required when skip_final_snapshot is false"), so every replacement and every `pulumi destroy` of it fails',
        f"set {db.name}.final_snapshot_identifier (e.g. '{db.name}-final'), or skip_final_snapshot=True where "
        "the data is disposable",
    )
