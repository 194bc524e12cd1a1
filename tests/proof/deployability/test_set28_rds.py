"""The rules set 28's RDS and ElastiCache misses led to (written after its blind run, so not held out), each planted in
the shipped dev render beside its correct twin: a static parameter applied "immediately" (rds-static-parameter), a
read replica of a source without backups (rds-values), backup and maintenance windows that overlap or are too short
(backup-windows), replica-only and engine-only RDS metrics alarmed on the wrong instance (alarm-metric-exists), and
an ElastiCache AUTH token ElastiCache refuses, as a RandomPassword's mock result shows it (aws-api-values).
The planted defects are of other engines, parameters, resources and values than the held-out cases' (PostgreSQL 16's
shared_preload_libraries, a PostgreSQL source with retention 0, an instance's 03:00-04:00 against sun:03:30-sun:04:30,
ReplicaLag on a PostgreSQL primary, a 12-character token)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted_findings, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import (
    alarm_metrics,
    aws_values,
    backup_windows,
    rds_parameters,
    rds_values,
)
from tokenplane.proof.render import RenderedResource, mock_outputs

INSTANCE = "aws:rds/instance:Instance"
CLUSTER = "aws:rds/cluster:Cluster"
PARAMETER_GROUP = "aws:rds/parameterGroup:ParameterGroup"
CLUSTER_PARAMETER_GROUP = "aws:rds/clusterParameterGroup:ClusterParameterGroup"
REPLICATION_GROUP = "aws:elasticache/replicationGroup:ReplicationGroup"
CACHE_CLUSTER = "aws:elasticache/cluster:Cluster"
ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
PASSWORD = "random:index/randomPassword:RandomPassword"


_findings = partial(planted_findings, stack="dev")


def test_the_shipped_render_holds_none_of_these() -> None:
    graph = deploy.Graph(spec("dev"), rendered("dev"))
    assert not [*rds_parameters.check(graph), *backup_windows.check(graph)]
    assert not [f for f in [*rds_values.check(graph), *alarm_metrics.check(graph)] if "replica" in f.message.lower()]
    assert not [f for f in aws_values.check(graph) if "AUTH token that" in f.message]


# rds-static-parameter ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typ", "family", "parameter", "fires"),
    [
        (PARAMETER_GROUP, "mysql8.0", {"name": "performance_schema", "value": "1"}, True),
        (PARAMETER_GROUP, "postgres14", {"name": "shared_buffers", "value": "32768", "applyMethod": "immediate"}, True),
        (CLUSTER_PARAMETER_GROUP, "aurora-postgresql15", {"name": "rds.logical_replication", "value": "1"}, True),
        (PARAMETER_GROUP, "mariadb10.11", {"name": "innodb_ft_min_token_size", "value": "2"}, True),
        (PARAMETER_GROUP, "postgres17", {"name": "autovacuum_max_workers", "value": "5"}, True),
        # Correct twins: pending-reboot, a dynamic parameter, a parameter reloadable in that version, no table.
        (
            PARAMETER_GROUP,
            "mysql8.0",
            {"name": "performance_schema", "value": "1", "applyMethod": "pending-reboot"},
            False,
        ),
        (PARAMETER_GROUP, "postgres16", {"name": "work_mem", "value": "65536"}, False),
        (PARAMETER_GROUP, "postgres18", {"name": "autovacuum_max_workers", "value": "5"}, False),
        (PARAMETER_GROUP, "mariadb10.11", {"name": "innodb_read_io_threads", "value": "8"}, False),
        (PARAMETER_GROUP, "oracle-ee-19", {"name": "processes", "value": "300"}, False),
    ],
)
def test_a_static_parameter_waits_for_a_reboot(typ: str, family: str, parameter: dict[str, Any], fires: bool) -> None:
    group = _aws(typ, "planted-params", {"family": family, "parameters": [parameter]})
    said = _findings(rds_parameters.check, group)
    assert bool(said) == fires, said
    assert all(parameter["name"] in f.message and "pending-reboot" in f.fix for f in said), said


# rds-values: a read replica's source keeps backups ----------------------------------------------------------------


@pytest.mark.parametrize(("retention", "fires"), [(0, True), (1, False), (None, False)])
def test_a_read_replicas_source_keeps_automated_backups(retention: int | None, fires: bool) -> None:
    inputs: dict[str, Any] = {"engine": "mysql", "engineVersion": "8.0", "identifier": "planted-orders"}
    if retention is not None:
        inputs["backupRetentionPeriod"] = retention
    source = _aws(INSTANCE, "planted-orders", inputs)
    replica = _aws(INSTANCE, "planted-orders-replica", {"replicateSourceDb": "planted-orders"})
    said = [f for f in _findings(rds_values.check, source, replica) if "read replica" in f.message]
    assert bool(said) == fires, said
    assert all("planted-orders-replica" in f.urn and "backupRetentionPeriod" in f.fix for f in said), said


# backup-windows ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typ", "inputs", "said"),
    [
        # An Aurora cluster whose backup window wraps past midnight into Monday's maintenance.
        (
            CLUSTER,
            {"preferredBackupWindow": "23:30-00:30", "preferredMaintenanceWindow": "mon:00:00-mon:01:00"},
            "mon 00:00-00:30",
        ),
        # An ElastiCache snapshot window inside Tuesday's maintenance window.
        (
            REPLICATION_GROUP,
            {"snapshotWindow": "05:00-06:00", "maintenanceWindow": "tue:05:30-tue:06:30"},
            "snapshot window and maintenance window must not overlap",
        ),
        # A weekly window that wraps from Saturday into Sunday meets a daily window early on Sunday.
        (INSTANCE, {"backupWindow": "00:15-00:45", "maintenanceWindow": "sat:23:00-sun:01:00"}, "sun 00:15-00:45"),
        (INSTANCE, {"backupWindow": "03:00-03:20", "maintenanceWindow": "sun:05:00-sun:06:00"}, "30-minute minimum"),
        (CACHE_CLUSTER, {"snapshotWindow": "01:00-02:00", "maintenanceWindow": "wed:04:00-wed:04:30"}, "60-minute"),
        (INSTANCE, {"backupWindow": "3:00-4:00"}, "not of the form hh24:mi-hh24:mi"),
        (INSTANCE, {"maintenanceWindow": "sunday:03:00-sunday:04:00"}, "not of the form ddd"),
        # Correct twins: windows that only touch, a wrap that misses, an instance without backups, a replica.
        (INSTANCE, {"backupWindow": "03:00-04:00", "maintenanceWindow": "Sun:04:00-Sun:05:00"}, None),
        (INSTANCE, {"backupWindow": "02:00-03:00", "maintenanceWindow": "sat:23:00-sun:01:00"}, None),
        (REPLICATION_GROUP, {"snapshotWindow": "22:00-23:00", "maintenanceWindow": "tue:05:30-tue:06:30"}, None),
        (
            INSTANCE,
            {"backupWindow": "03:00-04:00", "maintenanceWindow": "sun:03:30-sun:04:30", "backupRetentionPeriod": 0},
            None,
        ),
    ],
)
def test_backup_and_maintenance_windows_are_well_formed_and_apart(
    typ: str, inputs: dict[str, Any], said: str | None
) -> None:
    found = _findings(backup_windows.check, _aws(typ, "planted-store", inputs))
    assert bool(found) == bool(said), found
    assert all(said and said in f.message for f in found), found


# alarm-metric-exists: replica-only and engine-only RDS metrics ----------------------------------------------------


def _db(name: str, **inputs: Any) -> RenderedResource:
    return _aws(INSTANCE, name, {"identifier": name, **inputs})


def _alarm(metric: str, instance: str, **inputs: Any) -> RenderedResource:
    dims = {"DBInstanceIdentifier": instance}
    return _aws(ALARM, "planted-alarm", {"namespace": "AWS/RDS", "metricName": metric, "dimensions": dims, **inputs})


MYSQL = {"engine": "mysql", "engineVersion": "8.0", "backupRetentionPeriod": 7}
POSTGRES = {"engine": "postgres", "engineVersion": "16", "backupRetentionPeriod": 7}


@pytest.mark.parametrize(
    ("metric", "watched", "said"),
    [
        ("ReplicaLag", "planted-mysql", "published only for a read replica"),  # a source, with a replica
        ("ReplicaLag", "planted-alone", "published only for a read replica"),  # no replica at all
        ("BinLogDiskUsage", "planted-pg", "only for mariadb and mysql"),
        ("MaximumUsedTransactionIDs", "planted-mysql-replica", "runs mysql"),  # the replica's engine is its source's
        ("OldestReplicationSlotLag", "planted-mysql", "only for postgres"),
        # Correct twins.
        ("ReplicaLag", "planted-mysql-replica", None),
        ("BinLogDiskUsage", "planted-mysql-replica", None),
        ("MaximumUsedTransactionIDs", "planted-pg", None),
        ("CPUUtilization", "planted-alone", None),
    ],
)
def test_an_rds_alarm_watches_a_metric_its_instance_publishes(metric: str, watched: str, said: str | None) -> None:
    found = _findings(
        alarm_metrics.check,
        _db("planted-mysql", **MYSQL),
        _db("planted-mysql-replica", replicateSourceDb="planted-mysql"),
        _db("planted-alone", **POSTGRES),
        _db("planted-pg", **POSTGRES),
        _alarm(metric, watched, treatMissingData="breaching"),
    )
    assert bool(found) == bool(said), found
    assert all(said and said in f.message and "goes to ALARM at once" in f.message for f in found), found


# aws-api-values: the ElastiCache AUTH token, and what the render shows of a RandomPassword ----------------------


def _cache(token: str, *, secret: bool) -> RenderedResource:
    inputs = {"transitEncryptionEnabled": True, "numCacheClusters": 2, "authToken": "[secret]" if secret else token}
    group = _aws(REPLICATION_GROUP, "planted-cache", inputs)
    if secret:
        group.secret_inputs["authToken"] = token
    return group


@pytest.mark.parametrize(
    ("token", "secret", "said"),
    [
        ("x" * 129, False, "129 characters, outside 16 to 128"),
        ("s3ssion-t0ken@cache", True, "'@'"),
        ("s3ssion-t0ken/cache%", False, "'%', '/'"),
        ("short-token-15ch", True, None),  # 16 characters
        ("Aa1!&#$^<>-" * 3, True, None),
        ("[secret]", False, None),  # a secret whose value the render does not hold
    ],
)
def test_an_elasticache_auth_token_is_one_elasticache_accepts(token: str, secret: bool, said: str | None) -> None:
    found = [f for f in _findings(aws_values.check, _cache(token, secret=secret)) if "AUTH token that" in f.message]
    assert bool(found) == bool(said), found
    assert all(said and said in f.message and token not in f.message for f in found if secret), found


@pytest.mark.parametrize(
    ("inputs", "length", "allowed"),
    [
        ({"length": 12, "special": False}, 12, str.isalnum),
        ({"length": 40, "upper": False, "numeric": False}, 40, str.islower),
        ({"length": 20, "minSpecial": 2, "overrideSpecial": "!-"}, 20, lambda c: c.isalnum() or c == "!"),
    ],
)
def test_a_random_passwords_mock_result_honours_its_length_and_classes(
    inputs: dict[str, Any], length: int, allowed: Any
) -> None:
    _, outputs = mock_outputs(PASSWORD, "planted-token", inputs, "us-east-1")
    result = outputs["result"]
    assert len(result) == length and all(allowed(c) for c in result), result
    assert result.count("!") == inputs.get("minSpecial", 0), result
