"""The rules set 22's AWS misses led to (written after its blind run, so not held out), each planted in dev's render
beside its correct twin: a security group with a fixed name that a database sits in (replaceable-name: an explicit
name makes Pulumi replace it delete-before-replace, and the delete fails while the database's interfaces use it),
and an RDS database a destroy or replacement deletes with nothing to restore from, or cannot delete at all
(database-recoverable)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted_findings
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof.deployability import database_recovery, replaceable_names
from tokenplane.proof.render import RenderedResource, physical_id

INSTANCE = "aws:rds/instance:Instance"
CLUSTER = "aws:rds/cluster:Cluster"
SG = "aws:ec2/securityGroup:SecurityGroup"
SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"


_findings = partial(planted_findings, stack="dev")


def _group(**inputs: Any) -> RenderedResource:
    return _aws(SG, "planted-db-sg", {"vpcId": "vpc-0abc", "description": "PostgreSQL from the VPC", **inputs})


# replaceable-name --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("naming", "used_by", "refused"),
    [
        ({"name": "acme-evals-db"}, INSTANCE, True),
        ({"name": "acme-evals-db"}, "aws:lambda/function:Function", True),
        ({"namePrefix": "acme-evals-db-"}, INSTANCE, False),
        ({}, INSTANCE, False),  # autonamed
        ({"name": "acme-evals-db"}, None, False),  # nothing sits in it: delete-before-replace works
        ({"name": "acme-evals-db"}, SG_RULE, False),  # its own rule is replaced with it
    ],
)
def test_a_group_something_sits_in_is_not_given_a_fixed_name(
    naming: dict[str, Any], used_by: str | None, refused: bool
) -> None:
    group = _group(**naming)
    gid = physical_id(SG, group.name)
    users = {
        INSTANCE: {"engine": "postgres", "vpcSecurityGroupIds": [gid]},
        "aws:lambda/function:Function": {"vpcConfig": {"securityGroupIds": [gid], "subnetIds": ["subnet-1"]}},
        SG_RULE: {"type": "ingress", "securityGroupId": gid, "fromPort": 5432, "toPort": 5432, "protocol": "tcp"},
    }
    extra = [group] + ([_aws(used_by, "planted-user", users[used_by])] if used_by else [])
    said = _findings(replaceable_names.check, *extra)
    assert bool(said) == refused, said
    assert all("planted-db-sg.name='acme-evals-db'" in f.message and "planted-user" in f.message for f in said)
    assert all("DependencyViolation" in f.message and "delete-before-replace" in f.message for f in said), said
    assert all("name_prefix='acme-evals-db-'" in f.fix for f in said), said


# database-recoverable ----------------------------------------------------------------------------------------------

SAFE = {"backupRetentionPeriod": 7, "skipFinalSnapshot": False, "finalSnapshotIdentifier": "evals-final"}


@pytest.mark.parametrize(
    ("inputs", "said_part"),
    [
        ({"backupRetentionPeriod": 0, "skipFinalSnapshot": True, "deletionProtection": False}, "nothing to restore"),
        ({"backupRetentionPeriod": 0, "skipFinalSnapshot": True}, "nothing to restore"),
        ({"backupRetentionPeriod": 0, "skipFinalSnapshot": True, "deletionProtection": True}, None),
        ({"backupRetentionPeriod": 7, "skipFinalSnapshot": True}, None),  # point-in-time recovery is on
        ({"backupRetentionPeriod": 0, "finalSnapshotIdentifier": "evals-final"}, None),  # a final snapshot
        (SAFE, None),
        ({"backupRetentionPeriod": 7}, "final_snapshot_identifier is required"),  # the provider's default
        ({"backupRetentionPeriod": 7, "skipFinalSnapshot": False}, "final_snapshot_identifier is required"),
        ({"replicateSourceDb": "evals-primary"}, None),  # a replica takes no final snapshot
    ],
)
def test_an_rds_instance_can_be_deleted_with_something_to_restore_from(
    inputs: dict[str, Any], said_part: str | None
) -> None:
    db = _aws(INSTANCE, "planted-db", {"engine": "postgres", "engineVersion": "16", **inputs})
    said = _findings(database_recovery.check, db)
    assert bool(said) == bool(said_part), said
    assert all(said_part and said_part in f.message and "planted-db" in f.message for f in said), said
    assert all("planted-db." in f.fix for f in said), said


@pytest.mark.parametrize(
    ("inputs", "refused"),
    [({}, True), ({"skipFinalSnapshot": True}, False), ({"finalSnapshotIdentifier": "evals-final"}, False)],
)
def test_an_rds_cluster_names_its_final_snapshot(inputs: dict[str, Any], refused: bool) -> None:
    cluster = _aws(CLUSTER, "planted-cluster", {"engine": "aurora-postgresql", "backupRetentionPeriod": 7, **inputs})
    said = _findings(database_recovery.check, cluster)
    assert bool(said) == refused, said
    assert all("DeleteDBCluster" in f.message and "planted-cluster.final_snapshot_identifier" in f.fix for f in said)
