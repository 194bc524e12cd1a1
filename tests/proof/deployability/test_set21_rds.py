"""The rules set 21's RDS misses led to (written after its blind run, so not held out), each planted in a shipped
render beside its correct twin: a master username the engine reserves and a parameter group of another family
(rds-values), an RDS alarm on the instance's resource id (alarm-metric-exists), and a security group's inline rules
beside a rule resource on the same group and direction (security-group-rules-owned)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted_findings
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof.deployability import alarm_metrics, rds_values, security_group_rules
from tokenplane.proof.render import RenderedResource, physical_id

INSTANCE = "aws:rds/instance:Instance"
CLUSTER = "aws:rds/cluster:Cluster"
PARAMS = "aws:rds/parameterGroup:ParameterGroup"
CLUSTER_PARAMS = "aws:rds/clusterParameterGroup:ClusterParameterGroup"
SG = "aws:ec2/securityGroup:SecurityGroup"


_findings = partial(planted_findings, stack="dev")


def _db(**inputs: Any) -> RenderedResource:
    # autoMinorVersionUpgrade off: these pin minors on purpose (rds-values flags a pin RDS would upgrade past)
    return _aws(
        INSTANCE,
        "planted-db",
        {"engine": "postgres", "engineVersion": "16", "autoMinorVersionUpgrade": False, **inputs},
    )


# rds-values: the master username ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("engine", "username", "refused"),
    [
        ("postgres", "admin", "reserved word"),
        ("postgres", "evals_owner", None),
        ("postgres", "postgres", None),
        ("postgres", "1st_owner", "start with a letter"),
        ("postgres", "evals-owner", "start with a letter"),
        ("mysql", "admin", None),
        ("mysql", "rdsadmin", "reserved word"),
        ("mysql", "an_owner_name_of_17", "over mysql's 16"),
        ("postgres", "an_owner_name_of_17", None),
    ],
)
def test_a_master_username_is_one_the_engine_accepts(engine: str, username: str, refused: str | None) -> None:
    version = "8.0.39" if engine == "mysql" else "16"
    said = _findings(rds_values.check, _db(engine=engine, engineVersion=version, username=username))
    assert bool(said) == bool(refused), said
    assert all(refused and refused in f.message and "planted-db.username" in f.message for f in said), said
    assert all("set username" in f.fix for f in said), said


# rds-values: the parameter group's family -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("engine", "version", "family", "wanted"),
    [
        ("postgres", "16", "postgres15", "postgres16"),
        ("postgres", "16.4", "postgres16", None),
        ("postgres", "9.6.24", "postgres9.6", None),
        ("mysql", "8.0.39", "mysql5.7", "mysql8.0"),
        ("mysql", "8.0.39", "mysql8.0", None),
        ("mariadb", "10.11.9", "mariadb10.11", None),
        ("mysql", "8", "mysql5.7", None),  # too vague to say which family
    ],
)
def test_an_instances_parameter_group_is_of_its_engine_versions_family(
    engine: str, version: str, family: str, wanted: str | None
) -> None:
    group = _aws(PARAMS, "planted-params", {"family": family})
    db = _db(engine=engine, engineVersion=version, parameterGroupName=physical_id(PARAMS, group.name))
    said = _findings(rds_values.check, group, db)
    assert bool(said) == bool(wanted), said
    assert all(wanted and f"family {wanted!r}" in f.message and "parameterGroupName" in f.message for f in said)
    assert all(f"planted-params.family to {wanted!r}" in f.fix for f in said), said


@pytest.mark.parametrize(("family", "refused"), [("aurora-postgresql15", True), ("aurora-postgresql16", False)])
def test_a_clusters_parameter_group_is_of_its_engine_versions_family(family: str, refused: bool) -> None:
    group = _aws(CLUSTER_PARAMS, "planted-cluster-params", {"family": family})
    cluster = _aws(
        CLUSTER,
        "planted-cluster",
        {
            "engine": "aurora-postgresql",
            "engineVersion": "16.4",
            "masterUsername": "app_owner",
            "dbClusterParameterGroupName": physical_id(CLUSTER_PARAMS, group.name),
        },
    )
    said = _findings(rds_values.check, group, cluster)
    assert bool(said) == refused and all("aurora-postgresql16" in f.message for f in said), said


# alarm-metric-exists: an RDS alarm on the instance's id -----------------------------------------------------------


@pytest.mark.parametrize(("dimension", "refused"), [("id", True), ("identifier", False), ("literal", False)])
def test_an_rds_alarm_names_the_instance_identifier_not_its_resource_id(dimension: str, refused: bool) -> None:
    db = _db(identifier="evals-db", username="evals_owner")
    value = {"id": physical_id(INSTANCE, db.name), "identifier": "evals-db", "literal": "legacy-db"}[dimension]
    alarm = _aws(
        alarm_metrics.ALARM,
        "planted-alarm",
        {"namespace": "AWS/RDS", "metricName": "FreeStorageSpace", "dimensions": {"DBInstanceIdentifier": value}},
    )
    said = _findings(alarm_metrics.check, db, alarm)
    assert bool(said) == refused, said
    assert all("DBI resource id" in f.message and "planted-db.identifier" in f.fix for f in said), said


def test_the_render_gives_an_rds_instance_its_resource_id_and_identifier() -> None:
    from tokenplane.proof.render import mock_outputs

    rid, outputs = mock_outputs(INSTANCE, "evals-db", {"identifier": "evals"}, "eu-west-1")
    assert rid.startswith("db-") and outputs["resourceId"] == rid and outputs["identifier"] == "evals"
    _, named = mock_outputs(INSTANCE, "evals-db", {}, "eu-west-1")
    assert named["identifier"].startswith("evals-db-")


# security-group-rules-owned: inline rules beside rule resources ----------------------------------------------------


def _group(**inline: Any) -> RenderedResource:
    return _aws(SG, "planted-sg", {"vpcId": "vpc-1", "description": "db", **inline})


INLINE = [{"protocol": "tcp", "fromPort": 5432, "toPort": 5432, "cidrBlocks": ["10.0.0.0/16"]}]


@pytest.mark.parametrize(
    ("inline", "rule_type", "rule_inputs", "refused"),
    [
        # The set's defect: inline ingress plus a SecurityGroupRule of type ingress on the same group.
        ({"ingress": INLINE}, security_group_rules.SG_RULE, {"type": "ingress"}, True),
        ({"ingress": INLINE}, security_group_rules.SG_INGRESS_RULE, {}, True),
        ({"egress": INLINE}, security_group_rules.SG_EGRESS_RULE, {}, True),
        # The correct twins: every rule a resource of its own, or all inline (no rule resource), or another direction.
        ({}, security_group_rules.SG_RULE, {"type": "ingress"}, False),
        ({}, security_group_rules.SG_INGRESS_RULE, {}, False),
        ({"ingress": INLINE}, security_group_rules.SG_RULE, {"type": "egress"}, False),
    ],
)
def test_a_security_groups_rules_of_one_direction_have_one_owner(
    inline: dict[str, Any], rule_type: str, rule_inputs: dict[str, Any], refused: bool
) -> None:
    group = _group(**inline)
    rule = _aws(
        rule_type,
        "planted-rule",
        {"securityGroupId": physical_id(SG, group.name), "fromPort": 5432, "toPort": 5432, **rule_inputs},
    )
    said = _findings(security_group_rules.check, group, rule)
    assert bool(said) == refused, said
    assert all("planted-sg" in f.message and "planted-rule" in f.message and "one style" in f.fix for f in said)


def test_all_inline_rules_are_not_flagged() -> None:
    assert not _findings(security_group_rules.check, _group(ingress=INLINE, egress=INLINE))
