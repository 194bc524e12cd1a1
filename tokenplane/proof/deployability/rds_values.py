"""Values RDS refuses at create time, or fights later: a master username the engine reserves, a parameter group of
another family, allocated storage outside its engine's and storage type's range, a master password with characters
RDS refuses, a DB subnet group in one AZ, a minor version pinned while RDS upgrades minors itself, an initial
database name the engine refuses, a Multi-AZ instance told which AZ to use, a read replica of a source without
automated backups, a certificate authority RDS no longer offers.

- **Certificate authority** (``CreateDBInstance`` / ``CreateDBCluster`` ``CACertificateIdentifier``): one of the CAs
  RDS offers (``CA_CERTIFICATES``, dated); an expired one such as rds-ca-2019 (2024-08-22) fails CertificateNotFound.

- **Master username** (``CreateDBInstance`` / ``CreateDBCluster`` ``MasterUsername``): "Must start with a letter ...
  Can't be a reserved word for the chosen database engine"; PostgreSQL 1 to 63 letters, digits or underscores,
  MySQL and MariaDB 1 to 16 (https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_CreateDBInstance.html).
  ``admin`` is reserved on the PostgreSQL engines: InvalidParameterValue "MasterUsername admin cannot be used as it
  is a reserved word used by the engine" (aws/aws-cdk#10597, aws-cloudformation/cfn-lint#4425, verified against
  real deployments); ``rdsadmin`` and ``rdsrepladmin`` are the accounts RDS itself runs on every engine.
- **Parameter group family** (``CreateDBInstance`` / ``CreateDBCluster``): a DB instance takes only a parameter group
  of its engine version's family, InvalidParameterCombination "The parameter group ... with DBParameterGroupFamily
  postgres15 can't be used for this instance. Use a parameter group with DBParameterGroupFamily postgres16"
  (https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/USER_WorkingWithParamGroups.html). The family is the
  engine and its major version: ``postgres<major>`` from PostgreSQL 10 on (``postgres9.6`` before),
  ``aurora-postgresql<major>``, ``mysql<major>.<minor>``, ``mariadb<major>.<minor>``, ``aurora-mysql<major>.<minor>``
  (``aws rds describe-db-engine-versions`` ``DBParameterGroupFamily``).

- **Allocated storage** (``CreateDBInstance`` ``AllocatedStorage``, "Constraints to the amount of storage for each
  storage type"): RDS for MySQL, MariaDB and PostgreSQL take General Purpose SSD (gp2, gp3) from 20 to 65536 GiB,
  Provisioned IOPS SSD (io1, io2) from 100 to 65536 and magnetic (standard) from 5 to 3072
  (https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_CreateDBInstance.html); an unset storage type is
  io1 when ``iops`` is set, else gp2 (the provider's default), whose range is gp3's. ``MaxAllocatedStorage`` (storage
  autoscaling) is a ceiling above the allocation: one below it, or past the type's maximum, is refused too ("must be
  greater than or equal to allocated_storage or 0 to disable", the provider's ``maxAllocatedStorage``). On gp3 below
  the engine's 400 GiB threshold the volume runs at its baseline (3,000 IOPS, 125 MiB/s) and takes no ``iops`` or
  ``storageThroughput``: InvalidParameterCombination "You can't specify IOPS or storage throughput for engine
  postgres and a storage size less than 400" (the gp3 table of
  https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/CHAP_Storage.html; crossplane-contrib/provider-aws drops
  them below the threshold for that error, pkg/controller/rds/dbinstance ``isStorageTypeGP3BelowAllocatedStorageThreshold``).
  Aurora (``aws.rds.Cluster``) storage is not allocated and is not judged.
- **Master password** (``CreateDBInstance`` / ``CreateDBCluster`` ``MasterUserPassword``): "Can include any printable
  ASCII character except '/', '"', or '@'", and InvalidParameterValue "The parameter MasterUserPassword is not a valid
  password. Only printable ASCII characters besides '/', '@', '"', ' ' may be used" refuses a space too; MySQL and
  MariaDB 8 to 41 characters, PostgreSQL 8 to 128, an Aurora cluster 8 to 41
  (https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_CreateDBInstance.html,
  https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_CreateDBCluster.html). Judged only where the render
  holds the literal: a secret (config ``require_secret``, Secrets Manager) is redacted and unseen, and with
  ``manage_master_user_password`` RDS picks it.
- **A master password with ``manage_master_user_password``** (``aws.rds.Instance`` ``password``, ``aws.rds.Cluster``
  ``masterPassword``, or their write-only ``*Wo``): RDS picks the password itself and keeps it in Secrets Manager, so
  the two are exclusive. The provider's schema declares ``password`` ``ConflictsWith`` ``manage_master_user_password``
  (terraform-provider-aws internal/service/rds/instance.go, cluster.go), and its check refuses the pair with
  ``Conflicting configuration arguments: "password": conflicts with manage_master_user_password``
  (hashicorp/terraform-provider-aws#32002); CreateDBInstance's ManageMasterUserPassword: "Can't manage the master
  user password with AWS Secrets Manager if MasterUserPassword is specified"
  (https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_CreateDBInstance.html). Judged where the password
  is a value (a literal, a secret, a RandomPassword's result), not where it is known only at apply time.
- **DB subnet group AZs** (``CreateDBSubnetGroup``): "A DB subnet group ... must have subnets in at least two
  Availability Zones", even for a Single-AZ instance, else DBSubnetGroupDoesNotCoverEnoughAZs "The DB subnet group
  doesn't meet Availability Zone (AZ) coverage requirement ... Add subnets to cover at least 2 AZs"
  (https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/USER_VPC.WorkingWithRDSInstanceinaVPC.html#USER_VPC.Subnets).
  Judged where every subnet is the program's and names its AZ. (ElastiCache subnet groups need no second AZ.)
- **A minor version pinned under automatic minor upgrades** (``aws.rds.Instance``): with ``autoMinorVersionUpgrade``
  on (the provider's default) RDS moves the instance to a newer minor in a maintenance window
  (https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/USER_UpgradeDBInstance.Maintenance.html#USER_UpgradeDBInstance.Maintenance.AutoMinorVersionUpgrades).
  The provider keeps a configured *prefix* (``16`` for 16.12, ``8.0`` for 8.0.39) as it is, but reads any other
  running version back into ``engine_version`` (terraform-provider-aws internal/service/rds ``compareActualEngineVersion``:
  ``if oldVersion != newVersion && oldVersion+"." == newVersionSubstr { return }``, else
  ``d.Set(names.AttrEngineVersion, newVersion)``), and ``aws_db_instance`` has no diff suppression on it
  (hashicorp/terraform-provider-aws#27240 open; #49496, the fix that would add one, open): the next update plans
  16.12 -> 16.11 and ModifyDBInstance answers InvalidParameterCombination "Cannot upgrade postgres from 16.12 to
  16.11". The provider's docs: "If auto_minor_version_upgrade is enabled, you can provide a prefix of the version
  such as 8.0 (for 8.0.36)". A cluster is not judged (its own suppression landed upstream in #49396).
- **Initial database name** (``CreateDBInstance`` ``DBName``, ``CreateDBCluster`` ``DatabaseName``): "Must begin
  with a letter. Subsequent characters can be letters, underscores, or digits (0-9)"; RDS for PostgreSQL and Aurora
  PostgreSQL 1 to 63 characters, MySQL, MariaDB and Aurora MySQL 1 to 64 (the CreateDBInstance reference's DBName
  constraints per engine, https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_CreateDBInstance.html, and
  botocore's rds service-2.json). A hyphen, allowed in the instance *identifier*, is refused here:
  InvalidParameterValue "DBName must begin with a letter and contain only alphanumeric characters"
  (terraform-aws-modules/terraform-aws-rds#425). Reserved words are not judged (no table of them).
- **Multi-AZ with an AZ** (``CreateDBInstance``): "The AvailabilityZone parameter can't be specified if the DB
  instance is a Multi-AZ deployment" (the same reference): RDS places the primary and the standby itself, and
  answers InvalidParameterCombination "Requesting a specific availability zone is not valid for Multi-AZ
  instances" (hashicorp/terraform-provider-aws#485, #39225). Judged on every engine.

- **A read replica of a source without automated backups** (``aws.rds.Instance`` ``replicateSourceDb``): "Before
  a DB instance can serve as a source instance, make sure to turn on automatic backups on the source DB instance. To
  do this, set the backup retention period to a value other than 0"
  (https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/USER_ReadRepl.Create.html);
  CreateDBInstanceReadReplica answers InvalidDBInstanceState "Automated backups are not enabled for this database
  instance". Judged where the source is the program's instance (by identifier or ARN) with
  ``backupRetentionPeriod`` 0; unset, RDS keeps one day.

- **Enhanced Monitoring** (``MonitoringInterval``, ``MonitoringRoleArn`` of ``CreateDBInstance``, and the same of
  an Aurora ``aws.rds.ClusterInstance`` and of ``CreateDBCluster``): "Valid Values: 0 | 1 | 5 | 10 | 15 | 30 | 60",
  and "If MonitoringInterval is set to a value other than 0, supply a MonitoringRoleArn value"
  (https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_CreateDBInstance.html,
  https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_CreateDBCluster.html). Without the role RDS answers
  InvalidParameterCombination "A MonitoringRoleARN value is required if you specify a MonitoringInterval value
  other than 0" (hashicorp/terraform#5455, cloudposse/terraform-aws-rds#64); another interval is InvalidParameterValue.
  (The role's trust in monitoring.rds.amazonaws.com is ``service-role-trust``'s.)

Cannot see: an engine or version unknown at render time, other engines (Oracle, SQL Server, Db2), a parameter group
not created by the program.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "rds-values"

INSTANCE = "aws:rds/instance:Instance"
CLUSTER = "aws:rds/cluster:Cluster"
CLUSTER_INSTANCE = "aws:rds/clusterInstance:ClusterInstance"
# The certificate authorities RDS offers (DescribeCertificates; ``describe-db-engine-versions``'
# SupportedCACertificateIdentifiers), as of the date below, from
# https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/UsingWithRDS.SSL.html ("Certificate authorities"): all three
# valid until 2061-2121. rds-ca-2019 expired 2024-08-22 and rds-ca-2015 2020-03-05; since then RDS answers
# CertificateNotFound for them (aws/aws-cdk#31387: "Certificate not found: rds-ca-2019 (Service: Rds, Status Code:
# 404"; hashicorp/terraform-provider-aws#12854 for rds-ca-2015). Revisit when AWS announces a new CA generation.
CA_CERTIFICATES = ("rds-ca-rsa2048-g1", "rds-ca-rsa4096-g1", "rds-ca-ecc384-g1")
CA_CERTIFICATES_AS_OF = "2026-12"
RETIRED_CA_CERTIFICATES = {"rds-ca-2019": "2024-08-22", "rds-ca-2015": "2020-03-05"}
MONITORING_INTERVALS = (0, 1, 5, 10, 15, 30, 60)  # seconds, MonitoringInterval's valid values
CREATE_CALL = {INSTANCE: "CreateDBInstance", CLUSTER: "CreateDBCluster", CLUSTER_INSTANCE: "CreateDBInstance"}
PARAMETER_GROUP = "aws:rds/parameterGroup:ParameterGroup"
CLUSTER_PARAMETER_GROUP = "aws:rds/clusterParameterGroup:ClusterParameterGroup"
# The parameter-group input of each, and the group type it names.
GROUP_INPUTS = {
    INSTANCE: ("parameterGroupName", PARAMETER_GROUP),
    CLUSTER: ("dbClusterParameterGroupName", CLUSTER_PARAMETER_GROUP),
}
USERNAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
# Longest master username by engine (CreateDBInstance's MasterUsername constraints).
# Longest initial database name by engine (CreateDBInstance's DBName constraints); the same first-letter pattern.
DB_NAME_MAX = {"postgres": 63, "aurora-postgresql": 63, "mysql": 64, "mariadb": 64, "aurora-mysql": 64}
USERNAME_MAX = {"postgres": 63, "aurora-postgresql": 63, "mysql": 16, "mariadb": 16, "aurora-mysql": 16}
RDS_ACCOUNTS = frozenset({"rdsadmin", "rdsrepladmin"})  # the accounts RDS runs the engine with, on every engine
RESERVED = {
    "postgres": frozenset({"admin", *RDS_ACCOUNTS}),
    "aurora-postgresql": frozenset({"admin", *RDS_ACCOUNTS}),
    "mysql": RDS_ACCOUNTS,
    "mariadb": RDS_ACCOUNTS,
    "aurora-mysql": RDS_ACCOUNTS,
}
VERSION = re.compile(r"^(\d+)(?:\.(\d+))?")
# AllocatedStorage (GiB) by storage type for RDS for MySQL, MariaDB and PostgreSQL (CreateDBInstance's constraints).
STORAGE_ENGINES = frozenset({"postgres", "mysql", "mariadb"})
STORAGE_RANGE = {
    "gp2": (20, 65536),
    "gp3": (20, 65536),
    "io1": (100, 65536),
    "io2": (100, 65536),
    "standard": (5, 3072),
}
GP3_THRESHOLD = 400  # GiB: below it gp3 runs at its baseline and takes no iops or throughput (these three engines)
SUBNET_GROUP = "aws:rds/subnetGroup:SubnetGroup"
SUBNET = "aws:ec2/subnet:Subnet"
REDACTED = "[secret]"  # what the render leaves of a secret value
PASSWORD_REFUSED = frozenset('/"@ ')
# MasterUserPassword length by engine on an instance (CreateDBInstance); a cluster takes 8 to 41 (CreateDBCluster).
PASSWORD_LENGTH = {"postgres": (8, 128), "mysql": (8, 41), "mariadb": (8, 41)}
CLUSTER_PASSWORD_LENGTH = (8, 41)
# How many dot-separated parts an engine's version prefix has when it pins no minor: PostgreSQL 10+ "16",
# MySQL and MariaDB "8.0" / "10.11" (a PostgreSQL 9.x prefix is "9.6").
PREFIX_PARTS = {"postgres": 1, "mysql": 2, "mariadb": 2}


def check(graph: Graph) -> Iterator[Finding]:
    for db in graph.of_type(CLUSTER_INSTANCE):
        yield from _monitoring(db)
        yield from _ca_certificate(db)
    for typ in (INSTANCE, CLUSTER):
        for db in graph.of_type(typ):
            yield from _monitoring(db)
            yield from _ca_certificate(db)
            yield from _managed_and_given_password(db)
            if typ == INSTANCE:
                yield from _multi_az_zone(db)
                yield from _replica_source_backups(graph, db)
            engine = str(db.inputs.get("engine"))
            if engine not in USERNAME_MAX:
                continue
            yield from _username(db, engine)
            yield from _db_name(db, engine)
            yield from _family(graph, db, engine)
            yield from _password(db, engine)
            if typ == INSTANCE and engine in STORAGE_ENGINES:
                yield from _storage(db, engine)
                yield from _minor_pinned(db, engine)
    for group in graph.of_type(SUBNET_GROUP):
        yield from _subnet_group_azs(graph, group)


def _ca_certificate(db: RenderedResource) -> Iterator[Finding]:
    """A CA RDS still offers: an expired or unknown one fails CertificateNotFound (see ``CA_CERTIFICATES``)."""
    ca = db.inputs.get("caCertIdentifier") or db.inputs.get("caCertificateIdentifier")  # instance / cluster
    if not isinstance(ca, str) or not ca or ca in CA_CERTIFICATES:
        return  # unset (RDS's default, rds-ca-rsa2048-g1), or known only at apply time
    expired = RETIRED_CA_CERTIFICATES.get(ca)
    why = (
        f"{ca} expired on {expired} and RDS no longer offers it"
        if expired
        else f"{ca} is not one of the CAs RDS offers ({', '.join(CA_CERTIFICATES)}, as of {CA_CERTIFICATES_AS_OF})"
    )
    yield Finding(
        RULE,
        db.urn,
        f"{db.name}.caCertIdentifier={ca!r}: {why}, so {CREATE_CALL[db.type]} answers CertificateNotFound "
        f'("Certificate not found: {ca}", 404) and `pulumi up` fails there: the database is never created',
        "set ca_cert_identifier to rds-ca-rsa2048-g1 (RDS's default; rds-ca-rsa4096-g1 or rds-ca-ecc384-g1 where the "
        "clients trust them) and give clients the regional bundle from https://truststore.pki.rds.amazonaws.com/",
    )


def _monitoring(db: RenderedResource) -> Iterator[Finding]:
    """MonitoringInterval is one of RDS's values, and one other than 0 comes with the role RDS publishes through."""
    interval = db.inputs.get("monitoringInterval")
    if isinstance(interval, bool) or not isinstance(interval, int | float):
        return  # unset (0, no Enhanced Monitoring) or known only at apply time
    call = CREATE_CALL[db.type]
    if interval not in MONITORING_INTERVALS:
        yield Finding(
            RULE,
            db.urn,
            f"{db.name}.monitoringInterval={interval:g} is not one of RDS's Enhanced Monitoring intervals "
            f"({', '.join(map(str, MONITORING_INTERVALS))} seconds), so {call} refuses it (InvalidParameterValue) "
            "and `pulumi up` fails there",
            f"set monitoringInterval to one of {', '.join(map(str, MONITORING_INTERVALS[1:]))} (or 0 to turn "
            "Enhanced Monitoring off)",
        )
        return
    if interval == 0 or db.inputs.get("monitoringRoleArn"):
        return
    yield Finding(
        RULE,
        db.urn,
        f"{db.name}.monitoringInterval={interval:g} turns on Enhanced Monitoring without a monitoringRoleArn: RDS "
        f"publishes the OS metrics through a role it assumes, so {call} refuses it (InvalidParameterCombination "
        '"A MonitoringRoleARN value is required if you specify a MonitoringInterval value other than 0") and '
        "`pulumi up` fails there: the database is never created",
        "create an aws.iam.Role trusting Service monitoring.rds.amazonaws.com with the AWS managed policy "
        "arn:aws:iam::aws:policy/service-role/AmazonRDSEnhancedMonitoringRole attached, set monitoringRoleArn to its "
        "arn and make the database depend on the attachment; or set monitoringInterval=0",
    )


def _password(db: RenderedResource, engine: str) -> Iterator[Finding]:
    key = "password" if db.type == INSTANCE else "masterPassword"
    password = db.inputs.get(key)
    if password == REDACTED:  # read from a secret (config.require_secret): judged on its value, never printed
        password = db.secret_inputs.get(key)
    if not isinstance(password, str) or db.inputs.get("manageMasterUserPassword") is True:
        return
    if db.type == INSTANCE:
        if engine not in PASSWORD_LENGTH:
            return
        low, high = PASSWORD_LENGTH[engine]
    else:
        low, high = CLUSTER_PASSWORD_LENGTH
    refused = sorted({c for c in password if c in PASSWORD_REFUSED or not (" " <= c <= "~")})
    why = None
    if refused:
        why = f"holds {', '.join(repr(c) for c in refused)}: only printable ASCII characters besides '/', '@', '\"' "
        why += "and space may be used"
    elif not low <= len(password) <= high:
        why = f"is {len(password)} characters, outside {engine}'s {low} to {high}"
    if why is not None:
        call = "CreateDBInstance" if db.type == INSTANCE else "CreateDBCluster"
        yield Finding(
            RULE,
            db.urn,
            f'{db.name}.{key} {why}, so {call} refuses it (InvalidParameterValue "The parameter MasterUserPassword '
            'is not a valid password") and `pulumi up` fails there',
            f"set {key} to {low} to {high} printable ASCII characters without '/', '@', '\"' or space (regenerate it, "
            "e.g. random.RandomPassword with override_special), or set manage_master_user_password=True",
        )


def _managed_and_given_password(db: RenderedResource) -> Iterator[Finding]:
    """manage_master_user_password has RDS pick the master password: a password given too is refused."""
    if db.inputs.get("manageMasterUserPassword") is not True:
        return
    prefix = "password" if db.type == INSTANCE else "masterPassword"
    for key in (prefix, f"{prefix}Wo"):
        value = db.inputs.get(key)
        if value == REDACTED:
            value = db.secret_inputs.get(key)
        if not isinstance(value, str) or not value:
            continue  # unset, or known only at apply time
        flag = "manage_master_user_password"
        yield Finding(
            RULE,
            db.urn,
            f"{db.name} sets both manageMasterUserPassword=True and {key}: with a managed master password RDS picks "
            "the password and keeps it in Secrets Manager, so the provider refuses the pair (Conflicting "
            f'configuration arguments: "{key}": conflicts with {flag}; {CREATE_CALL[db.type]} refuses '
            "MasterUserPassword with ManageMasterUserPassword) and `pulumi up` fails there: the database is never "
            "created",
            f"drop {key} and let clients read the password from the secret RDS manages (masterUserSecrets[0]."
            f"secretArn), or drop {flag} and keep the password yourself",
        )


def _minor_pinned(db: RenderedResource, engine: str) -> Iterator[Finding]:
    version = db.inputs.get("engineVersion")
    if not isinstance(version, str) or db.inputs.get("autoMinorVersionUpgrade") is False:
        return
    if not re.fullmatch(r"\d+(\.\d+)*", version):
        return
    parts = version.split(".")
    prefix = 2 if engine == "postgres" and int(parts[0]) < 10 else PREFIX_PARTS[engine]
    if len(parts) <= prefix:
        return
    major = ".".join(parts[:prefix])
    said = "on" if db.inputs.get("autoMinorVersionUpgrade") is True else "on (the provider's default)"
    yield Finding(
        RULE,
        db.urn,
        f"{db.name}.engineVersion={version!r} pins a minor version while autoMinorVersionUpgrade is {said}: RDS "
        f"upgrades the instance past {version} in a maintenance window, the provider reads the newer version back, "
        f"and the next `pulumi up` plans a downgrade to {version} that ModifyDBInstance refuses "
        f'(InvalidParameterCombination "Cannot upgrade {engine} from <newer> to {version}")',
        f"set engineVersion to the prefix {major!r} (the running minor is engineVersionActual), or set "
        "autoMinorVersionUpgrade=False to keep the pin",
    )


def _subnet_group_azs(graph: Graph, group: RenderedResource) -> Iterator[Finding]:
    ids = group.inputs.get("subnetIds")
    if not isinstance(ids, list) or not ids:
        return
    subnets = [s for s in graph.by_physical_ids(ids) if s.type == SUBNET]
    if len(subnets) != len(ids):
        return  # a subnet not the program's, or an ID the render does not know
    zones = {s.inputs.get("availabilityZone") or s.inputs.get("availabilityZoneId") for s in subnets}
    if len(zones) != 1 or not all(isinstance(z, str) and z for z in zones):
        return
    zone = str(next(iter(zones)))
    yield Finding(
        RULE,
        group.urn,
        f"{group.name}.subnetIds ({', '.join(s.name for s in subnets)}) all lie in {zone}: a DB subnet group must "
        "cover at least two Availability Zones, even for a Single-AZ instance, so CreateDBSubnetGroup answers "
        "DBSubnetGroupDoesNotCoverEnoughAZs and `pulumi up` fails there, and no database in it is created",
        f"add a subnet of a second AZ to {group.name}.subnetIds (e.g. all the VPC's private subnets); the instance "
        "still runs in one AZ unless multiAz is set (availabilityZone picks which)",
    )


def _username(db: RenderedResource, engine: str) -> Iterator[Finding]:
    key = "username" if db.type == INSTANCE else "masterUsername"
    name = db.inputs.get(key)
    if not isinstance(name, str):
        return
    why = None
    if name.lower() in RESERVED[engine]:
        why = f'{name!r} is a reserved word of the {engine} engine (InvalidParameterValue "MasterUsername {name} '
        why += 'cannot be used as it is a reserved word used by the engine")'
    elif not USERNAME.match(name):
        why = f"{name!r} must start with a letter and hold only letters, digits and underscores"
    elif len(name) > USERNAME_MAX[engine]:
        why = f"{name!r} is {len(name)} characters, over {engine}'s {USERNAME_MAX[engine]}"
    if why is not None:
        yield Finding(
            RULE,
            db.urn,
            f"{db.name}.{key}={name!r}: {why}, so CreateDB{'Instance' if db.type == INSTANCE else 'Cluster'} "
            "refuses it and `pulumi up` fails there",
            f"set {key} to a name of your own that starts with a letter, of letters, digits and underscores, at "
            f"most {USERNAME_MAX[engine]} characters, not a word the engine reserves (e.g. 'app_owner')",
        )


def _db_name(db: RenderedResource, engine: str) -> Iterator[Finding]:
    key = "dbName" if db.type == INSTANCE else "databaseName"
    name = db.inputs.get(key)
    if not isinstance(name, str) or not name:
        return  # unset: no initial database (PostgreSQL still has its postgres database)
    most = DB_NAME_MAX[engine]
    why = None
    if not USERNAME.match(name):
        bad = sorted({c for c in name if not (c.isascii() and (c.isalnum() or c == "_"))})
        held = f" (holds {', '.join(repr(c) for c in bad)})" if bad else ""
        why = f"must begin with a letter and hold only letters, digits and underscores{held}"
    elif len(name) > most:
        why = f"is {len(name)} characters, over {engine}'s {most}"
    if why is None:
        return
    call = "CreateDBInstance" if db.type == INSTANCE else "CreateDBCluster"
    fixed = re.sub(r"[^A-Za-z0-9_]", "_", name)
    fixed = (fixed if fixed[:1].isalpha() else f"db_{fixed}")[:most]
    yield Finding(
        RULE,
        db.urn,
        f"{db.name}.{key}={name!r} (the initial database) {why}, so {call} refuses it (InvalidParameterValue "
        '"DBName must begin with a letter and contain only alphanumeric characters") and `pulumi up` fails '
        "there: no database is created",
        f"set {key} to a name that begins with a letter, of letters, digits and underscores, at most {most} "
        f"characters (e.g. {fixed!r}); a hyphen belongs only in the instance identifier",
    )


def _multi_az_zone(db: RenderedResource) -> Iterator[Finding]:
    zone = db.inputs.get("availabilityZone")
    if db.inputs.get("multiAz") is not True or not isinstance(zone, str) or not zone:
        return
    yield Finding(
        RULE,
        db.urn,
        f"{db.name} is Multi-AZ (multiAz=True) and names availabilityZone={zone!r}: RDS places a Multi-AZ "
        "instance's primary and standby itself, so CreateDBInstance refuses the pair (InvalidParameterCombination "
        '"Requesting a specific availability zone is not valid for Multi-AZ instances") and `pulumi up` fails there',
        "drop availabilityZone (the DB subnet group's AZs bound where RDS puts primary and standby), or set "
        "multiAz=False to pin a Single-AZ instance to that zone",
    )


def _replica_source_backups(graph: Graph, db: RenderedResource) -> Iterator[Finding]:
    source_ref = db.inputs.get("replicateSourceDb")
    if not isinstance(source_ref, str) or not source_ref:
        return
    source = graph.by_identifying_output.get(source_ref)
    if source is None or source.type != INSTANCE:
        return
    retention = source.inputs.get("backupRetentionPeriod")
    if isinstance(retention, bool) or not isinstance(retention, int | float) or retention != 0:
        return
    yield Finding(
        RULE,
        db.urn,
        f"{db.name} is a read replica of {source.name} (replicateSourceDb), whose backupRetentionPeriod is 0: RDS "
        "makes a read replica only of a source with automated backups on, so CreateDBInstanceReadReplica answers "
        'InvalidDBInstanceState "Automated backups are not enabled for this database instance" and `pulumi up` '
        "fails there: the replica is never created",
        f"set {source.name}.backupRetentionPeriod to 1 or more (7 is the console's default); the replica is no "
        "substitute for backups, it copies every mistake at once",
    )


def family_of(engine: str, version: str) -> str | None:
    """The DB parameter group family of ``engine`` at ``version``; None where the version is too vague to say."""
    matched = VERSION.match(version)
    if matched is None:
        return None
    major, minor = int(matched.group(1)), matched.group(2)
    if engine in ("postgres", "aurora-postgresql") and major >= 10:
        return f"{engine}{major}"
    if minor is None:
        return None
    return f"{engine}{major}.{minor}"


def _family(graph: Graph, db: RenderedResource, engine: str) -> Iterator[Finding]:
    key, group_type = GROUP_INPUTS[db.type]
    version = db.inputs.get("engineVersion")
    if not isinstance(version, str) or (wanted := family_of(engine, version)) is None:
        return
    for group in graph.referenced(db, key):
        family = group.inputs.get("family")
        if group.type != group_type or not isinstance(family, str) or family == wanted:
            continue
        yield Finding(
            RULE,
            db.urn,
            f"{db.name}.{key} names parameter group {group.name} of family {family!r}, but engine {engine} "
            f"{version} takes only family {wanted!r}: CreateDB{'Instance' if db.type == INSTANCE else 'Cluster'} "
            f'fails with InvalidParameterCombination "... Use a parameter group with DBParameterGroupFamily {wanted}"',
            f"set {group.name}.family to {wanted!r} (a family change replaces the group), or the engine version "
            f"to the group's family",
        )


def _gib(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) or (isinstance(value, str) and value.strip().isdigit()):
        return int(float(value))
    return None


def _storage(db: RenderedResource, engine: str) -> Iterator[Finding]:
    allocated = _gib(db.inputs.get("allocatedStorage"))
    if allocated is None:
        return
    declared = db.inputs.get("storageType")
    storage = declared if isinstance(declared, str) else "io1" if db.inputs.get("iops") else "gp2"
    if storage not in STORAGE_RANGE:
        return
    low, high = STORAGE_RANGE[storage]
    said = f"storage type {storage}" + ("" if isinstance(declared, str) else " (the default)")
    refused = "so CreateDBInstance refuses it (InvalidParameterValue) and `pulumi up` fails there"
    if not low <= allocated <= high:
        yield Finding(
            RULE,
            db.urn,
            f"{db.name}.allocatedStorage={allocated} GiB is outside {engine}'s {low} to {high} GiB on {said}, "
            f"{refused}",
            f"set allocatedStorage between {low} and {high} (e.g. {low}); let maxAllocatedStorage grow it later",
        )
        return
    ceiling = _gib(db.inputs.get("maxAllocatedStorage"))
    if ceiling and not allocated <= ceiling <= high:
        yield Finding(
            RULE,
            db.urn,
            f"{db.name}.maxAllocatedStorage={ceiling} GiB must lie between allocatedStorage ({allocated}) and "
            f"{engine}'s {high} GiB on {said} (storage autoscaling grows the allocation up to it), {refused}",
            f"set maxAllocatedStorage between {allocated} and {high}, or 0 to turn storage autoscaling off",
        )
    if storage == "gp3" and allocated < GP3_THRESHOLD:
        tuned = [key for key in ("iops", "storageThroughput") if db.inputs.get(key)]
        if tuned:
            yield Finding(
                RULE,
                db.urn,
                f"{db.name} sets {' and '.join(tuned)} on {allocated} GiB of gp3, below {engine}'s {GP3_THRESHOLD} "
                "GiB threshold where gp3 runs at its 3,000 IOPS / 125 MiB/s baseline: CreateDBInstance refuses it "
                f"(InvalidParameterCombination \"You can't specify IOPS or storage throughput for engine {engine} and "
                f'a storage size less than {GP3_THRESHOLD}") and `pulumi up` fails there',
                f"drop {' and '.join(tuned)} (the baseline applies), or allocate at least {GP3_THRESHOLD} GiB",
            )
