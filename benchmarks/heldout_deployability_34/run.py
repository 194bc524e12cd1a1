"""Held-out deployability set 34: 18 deployment defects and 8 correct variants of ``examples/single-region``.

Written blind to the project's offline checks (see README.md). Run from the repository root:

    .venv/bin/python -m benchmarks.heldout_deployability_34.run

The set was written without running any check against it; ``JUDGEMENT`` is the reading of the blind run's
messages (on main at 9249a5f, set 33's fixes in), written after it.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "catalog_toleration_seconds_with_no_schedule": (
        True,
        "api-validation: tolerationSeconds needs effect NoExecute (ValidateTolerations)",
    ),
    "catalog_deployment_active_deadline_seconds": (False, "missed: activeDeadlineSeconds in a Deployment's pods"),
    "log_readers_cluster_role_binding_to_role": (
        True,
        "api-validation: a ClusterRoleBinding's roleRef must be a ClusterRole",
    ),
    "log_readers_role_on_pods_logs_subresource": (False, "missed: pods/logs is not a subresource (pods/log is)"),
    "log_readers_role_core_api_group_as_v1": (False, "missed: apiGroups v1 names no group (the core group is '')"),
    "usage_archive_dynamic_partitioning_default_buffer": (False, "missed: dynamic partitioning under a 64 MiB buffer"),
    "usage_archive_prefix_expression_without_error_prefix": (
        False,
        "missed: a prefix with expressions and no error output prefix",
    ),
    "usage_table_without_partition_projection": (False, "missed: partitions nothing registers"),
    "usage_table_projection_date_format_mismatch": (
        False,
        "missed: a projection format the writer's prefix does not use",
    ),
    "usage_table_tenant_column_and_partition_key": (False, "missed: a column that is also a partition key"),
    "promotion_workflow_express_with_sync_integration": (False, "missed: .sync in an Express state machine"),
    "promotion_workflow_sync_role_without_events_rule_grant": (
        False,
        "missed: .sync:2 without the managed rule's events grants",
    ),
    "promotion_workflow_express_soaks_ten_minutes": (False, "missed: an Express workflow past its 5 minutes"),
    "s3_endpoint_route_table_reassociates_private_subnets": (
        False,
        "wrong reason: nodes-join read the second association as replacing the first; AWS refuses it "
        "(Resource.AlreadyAssociated)",
    ),
    "tenant_key_secret_named_by_reference_uri": (False, "missed: a secret name with ':' (CreateSecret refuses it)"),
    "tenant_key_secret_stored_as_json": (False, "missed: a JSON secret where the gateway reads the whole string"),
    "model_cache_efs_mount_targets_in_every_subnet": (False, "missed: two EFS mount targets in one AZ"),
    "model_cache_efs_provisioned_without_throughput": (False, "missed: provisioned throughput mode without a rate"),
}

# After the set's fixes (not held out: written with these programs in view), read from results-after-fixes.md.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "catalog_deployment_active_deadline_seconds": (
        True,
        "api-validation: activeDeadlineSeconds in ReplicaSet is not Supported",
    ),
    "log_readers_role_on_pods_logs_subresource": (True, "rbac-rule-resolves: pods/logs is not served (pods/log)"),
    "log_readers_role_core_api_group_as_v1": (True, "rbac-rule-resolves: v1 is no API group (the core group is '')"),
    "usage_archive_dynamic_partitioning_default_buffer": (
        True,
        "aws-api-values: the provider's default 5 MiB under dynamic partitioning's 64",
    ),
    "usage_archive_prefix_expression_without_error_prefix": (
        True,
        "aws-api-values: ErrorOutputPrefix cannot be empty when Prefix contains expressions",
    ),
    "usage_table_without_partition_projection": (True, "table-partitions-found: nothing registers the partitions"),
    "usage_table_projection_date_format_mismatch": (
        True,
        "table-partitions-found: Athena reads dt=2026/12/07, the stream writes dt=2026-12-07",
    ),
    "usage_table_tenant_column_and_partition_key": (
        True,
        "athena-table-metadata: tenant both a column and a partition key",
    ),
    "promotion_workflow_express_with_sync_integration": (
        True,
        "state-machine-definition: Express does not support .sync:2",
    ),
    "promotion_workflow_sync_role_without_events_rule_grant": (
        True,
        "state-machine-sync-permissions: events actions on the managed rule",
    ),
    "promotion_workflow_express_soaks_ten_minutes": (
        True,
        "state-machine-express-duration: every way waits at least 600 s",
    ),
    "s3_endpoint_route_table_reassociates_private_subnets": (
        True,
        "aws-unique-key: a second association of the subnet (Resource.AlreadyAssociated)",
    ),
    "tenant_key_secret_named_by_reference_uri": (True, "aws-name: ':' is not allowed in a secret name"),
    "tenant_key_secret_stored_as_json": (True, "platform-contract: a JSON secret where the gateway reads the string"),
    "model_cache_efs_mount_targets_in_every_subnet": (True, "aws-unique-key: two mount targets in one AZ"),
    "model_cache_efs_provisioned_without_throughput": (
        True,
        "aws-api-values: provisioned throughput without provisionedThroughputInMibps",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 34, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
