"""The rules set 25's RDS misses led to (written after its blind run, so not held out), each planted in a shipped
render beside its correct twin (rds-values): a master password with characters RDS refuses, a DB subnet group whose
subnets lie in one AZ, and a minor version pinned while RDS upgrades minors itself."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import Finding, rds_values
from tokenplane.proof.render import RenderedResource, physical_id

INSTANCE = "aws:rds/instance:Instance"
CLUSTER = "aws:rds/cluster:Cluster"
SUBNET = "aws:ec2/subnet:Subnet"
SUBNET_GROUP = "aws:rds/subnetGroup:SubnetGroup"


def _findings(*extra: RenderedResource) -> list[Finding]:
    graph = deploy.Graph(spec("dev"), mutated(rendered("dev"), lambda r: r, extra=list(extra)))
    return [f for f in rds_values.check(graph) if "planted" in f.urn]


def _db(**inputs: Any) -> RenderedResource:
    return _aws(INSTANCE, "planted-db", {"engine": "postgres", "engineVersion": "16", "username": "app", **inputs})


# The master password ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("engine", "inputs", "refused"),
    [
        ("postgres", {"password": "kT9@x!Lw2#Qm7/pE"}, "'/', '@'"),
        ("postgres", {"password": "kT9x!Lw2#Qm7pE%^"}, None),
        ("postgres", {"password": 'with"quote1'}, "'\"'"),
        ("postgres", {"password": "with space1"}, "' '"),
        ("postgres", {"password": "short1!"}, "7 characters, outside postgres's 8 to 128"),
        ("postgres", {"password": "x" * 100}, None),
        ("mysql", {"password": "x" * 42}, "42 characters, outside mysql's 8 to 41"),
        ("postgres", {"password": "[secret]"}, None),  # a secret whose value the graph does not hold
        ("postgres", {"password": "a@b/c d!", "manageMasterUserPassword": True}, None),
        ("postgres", {"manageMasterUserPassword": True}, None),
    ],
)
def test_an_instances_master_password_is_one_rds_accepts(
    engine: str, inputs: dict[str, Any], refused: str | None
) -> None:
    version = "8.0" if engine == "mysql" else "16"
    said = _findings(_db(engine=engine, engineVersion=version, autoMinorVersionUpgrade=False, **inputs))
    # A password beside manageMasterUserPassword is refused as a pair, whatever it holds (test_set42_dns.py).
    paired = [f for f in said if "conflicts with manage_master_user_password" in f.message]
    assert bool(paired) == bool(inputs.get("password") and inputs.get("manageMasterUserPassword")), said
    said = [f for f in said if f not in paired]
    assert bool(said) == bool(refused), said
    assert all(refused and refused in f.message and "planted-db.password" in f.message for f in said), said
    assert all("MasterUserPassword" in f.message and "manage_master_user_password" in f.fix for f in said), said


@pytest.mark.parametrize(("password", "refused"), [("p@ssword-long", True), ("password-long", False)])
def test_a_clusters_master_password_is_one_rds_accepts(password: str, refused: bool) -> None:
    cluster = _aws(
        CLUSTER,
        "planted-cluster",
        {"engine": "aurora-postgresql", "engineVersion": "16.4", "masterUsername": "app", "masterPassword": password},
    )
    said = _findings(cluster)
    assert bool(said) == refused and all("planted-cluster.masterPassword" in f.message for f in said), said


# The DB subnet group's AZs ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("zones", "refused"),
    [
        (["eu-central-1a"], True),
        (["eu-central-1a", "eu-central-1a"], True),
        (["eu-central-1a", "eu-central-1b"], False),
        (["eu-central-1a", None], False),  # an AZ the render does not know
    ],
)
def test_a_db_subnet_group_covers_two_azs(zones: list[str | None], refused: bool) -> None:
    subnets = [
        _aws(SUBNET, f"planted-subnet-{i}", {"cidrBlock": f"10.9.{i}.0/24"} | ({"availabilityZone": z} if z else {}))
        for i, z in enumerate(zones)
    ]
    group = _aws(SUBNET_GROUP, "planted-db-subnets", {"subnetIds": [physical_id(SUBNET, s.name) for s in subnets]})
    said = _findings(*subnets, group)
    assert bool(said) == refused, said
    assert all(
        "planted-db-subnets.subnetIds" in f.message and "DBSubnetGroupDoesNotCoverEnoughAZs" in f.message for f in said
    ), said
    assert all("second AZ" in f.fix for f in said), said


def test_a_db_subnet_group_of_subnets_not_the_programs_is_not_judged() -> None:
    group = _aws(SUBNET_GROUP, "planted-db-subnets", {"subnetIds": ["subnet-0123456789abcdef0"]})
    assert not _findings(group)


# A minor version pinned under automatic minor upgrades ------------------------------------------------------------


@pytest.mark.parametrize(
    ("engine", "version", "auto", "prefix"),
    [
        ("postgres", "16.11", None, "'16'"),  # the provider's default is on
        ("postgres", "16.11", True, "'16'"),
        ("postgres", "16.11", False, None),
        ("postgres", "16", True, None),
        ("postgres", "9.6.24", True, "'9.6'"),
        ("postgres", "9.6", True, None),
        ("mysql", "8.0.39", True, "'8.0'"),
        ("mysql", "8.0", True, None),
        ("mariadb", "10.11.9", None, "'10.11'"),
        ("mariadb", "10.11", None, None),
    ],
)
def test_a_minor_version_is_not_pinned_while_rds_upgrades_minors(
    engine: str, version: str, auto: bool | None, prefix: str | None
) -> None:
    inputs: dict[str, Any] = {"engine": engine, "engineVersion": version, "manageMasterUserPassword": True}
    if auto is not None:
        inputs["autoMinorVersionUpgrade"] = auto
    said = _findings(_db(**inputs))
    assert bool(said) == bool(prefix), said
    assert all("planted-db.engineVersion" in f.message and "autoMinorVersionUpgrade" in f.message for f in said)
    assert all(f"prefix {prefix}" in f.fix and "autoMinorVersionUpgrade=False" in f.fix for f in said), said
