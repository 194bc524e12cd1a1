"""A static RDS parameter is applied at the next reboot, never "immediately".

``ModifyDBParameterGroup`` / ``ModifyDBClusterParameterGroup`` take each parameter's ``ApplyMethod``: "You can use
the immediate value with dynamic parameters only. You can use the pending-reboot value for both dynamic and static
parameters" (https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_ModifyDBParameterGroup.html,
API_Parameter.html). The provider's ``apply_method`` defaults to ``immediate``, and it sets a new group's parameters
with that call right after creating it, so a static parameter left at the default fails the group's creation with
InvalidParameterCombination "cannot use immediate apply method for static parameter"
(hashicorp/terraform-provider-aws#216), and every instance or cluster that names the group waits on it. A new
instance boots with its group, so ``pending-reboot`` takes effect from the first start.

Which parameters are static is DescribeEngineDefaultParameters' ``ApplyType``. RDS marks static exactly the engine
settings that take effect only at server start:

- **PostgreSQL** (RDS ``postgres*`` and ``aurora-postgresql*``, instance and cluster groups): the ``postmaster``
  context, "This parameter can only be set at server start" in each parameter's entry of
  https://www.postgresql.org/docs/current/runtime-config.html (``pg_settings.context``), plus the extensions'
  ``pg_stat_statements.max`` (https://www.postgresql.org/docs/current/pgstatstatements.html) and pg_cron's
  ``cron.database_name`` / ``cron.max_running_jobs`` (citusdata/pg_cron README: "requires a restart"), and RDS's own
  ``rds.logical_replication`` ("This parameter requires a reboot", the RDS user guide's logical replication page,
  https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/PostgreSQL.Concepts.General.FeatureSupport.LogicalReplication.html).
  ``autovacuum_max_workers`` is server-start only up to PostgreSQL 17 (18 made it reloadable).
- **MySQL and MariaDB** (``mysql*``, ``mariadb*``): the system variables whose "Dynamic" is "No" in every version
  RDS runs (https://dev.mysql.com/doc/refman/8.0/en/server-system-variables.html,
  https://dev.mysql.com/doc/refman/8.0/en/innodb-parameters.html, https://mariadb.com/kb/en/server-system-variables/);
  those that became dynamic in some version (``innodb_open_files`` in MySQL 8.0.28, the InnoDB I/O threads in
  MariaDB 10.11) are left out.

Cannot see: Aurora MySQL, Oracle and SQL Server groups, static parameters not in these tables, a group's parameters
known only at apply time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "rds-static-parameter"

GROUPS = ("aws:rds/parameterGroup:ParameterGroup", "aws:rds/clusterParameterGroup:ClusterParameterGroup")
POSTGRES_STATIC = frozenset(
    {
        "archive_mode",
        "autovacuum_freeze_max_age",
        "autovacuum_multixact_freeze_max_age",
        "cron.database_name",
        "cron.max_running_jobs",
        "dynamic_shared_memory_type",
        "hot_standby",
        "huge_pages",
        "max_connections",
        "max_files_per_process",
        "max_locks_per_transaction",
        "max_logical_replication_workers",
        "max_pred_locks_per_transaction",
        "max_prepared_transactions",
        "max_replication_slots",
        "max_wal_senders",
        "max_worker_processes",
        "min_dynamic_shared_memory",
        "pg_stat_statements.max",
        "rds.logical_replication",
        "shared_buffers",
        "shared_memory_type",
        "shared_preload_libraries",
        "superuser_reserved_connections",
        "track_activity_query_size",
        "track_commit_timestamp",
        "wal_buffers",
        "wal_decode_buffer_size",
        "wal_level",
        "wal_log_hints",
    }
)
POSTGRES_STATIC_UNTIL_18 = frozenset({"autovacuum_max_workers"})
MARIADB_STATIC = frozenset(
    {
        "back_log",
        "ft_max_word_len",
        "ft_min_word_len",
        "innodb_autoinc_lock_mode",
        "innodb_ft_max_token_size",
        "innodb_ft_min_token_size",
        "innodb_rollback_on_timeout",
        "innodb_sort_buffer_size",
        "lower_case_table_names",
        "performance_schema",
        "skip_name_resolve",
    }
)
MYSQL_STATIC = MARIADB_STATIC | {
    "innodb_buffer_pool_instances",
    "innodb_purge_threads",
    "innodb_read_io_threads",
    "innodb_write_io_threads",
    "table_open_cache_instances",
}
FAMILY = re.compile(r"^(aurora-postgresql|postgres|mysql|mariadb)(\d+)")


def check(graph: Graph) -> Iterator[Finding]:
    for typ in GROUPS:
        for group in graph.of_type(typ):
            family = group.inputs.get("family")
            static = static_parameters(family) if isinstance(family, str) else frozenset()
            for parameter in group.inputs.get("parameters") or []:
                if not isinstance(parameter, dict) or str(parameter.get("name", "")).lower() not in static:
                    continue
                method = parameter.get("applyMethod")
                if method not in (None, "", "immediate"):
                    continue
                yield _finding(group, str(parameter["name"]), str(family), method)


def static_parameters(family: str) -> frozenset[str]:
    """The parameters of ``family`` (``postgres16``, ``mysql8.0``...) whose ApplyType is static, as far as known."""
    matched = FAMILY.match(family)
    if matched is None:
        return frozenset()
    engine, major = matched.group(1), int(matched.group(2))
    if engine in ("postgres", "aurora-postgresql"):
        return POSTGRES_STATIC | (POSTGRES_STATIC_UNTIL_18 if major < 18 else frozenset())
    return MYSQL_STATIC if engine == "mysql" else MARIADB_STATIC


def _finding(group: RenderedResource, name: str, family: str, method: object) -> Finding:
    said = (
        "apply_method='immediate'" if method == "immediate" else "no apply_method (the provider's default, 'immediate')"
    )
    call = "ModifyDBParameterGroup" if group.type == GROUPS[0] else "ModifyDBClusterParameterGroup"
    return Finding(
        RULE,
        group.urn,
        f"{group.name} sets {name!r}, a static parameter of {family} (it takes effect only at server start), with "
        f"{said}: {call} accepts 'immediate' for dynamic parameters only and answers InvalidParameterCombination "
        '"cannot use immediate apply method for static parameter", so the group is never set up and `pulumi up` '
        "fails there, with every database that names it",
        f"set apply_method='pending-reboot' on {name!r}: a new database boots with its group, so it applies from "
        "the first start (a running one at its next reboot)",
    )
