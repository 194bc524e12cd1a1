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

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 34, JUDGEMENT))
