"""Held-out deployability set 38: 18 defects and 8 correct variants of examples/single-region, written blind.

Run from the repository root:

    .venv/bin/python -m benchmarks.heldout_deployability_38.run

``cases.yaml`` says, per case, what changed and what a real ``pulumi up`` (or the running platform) does.
The blind run was on main at 694ecfc (set 37's fixes and the port of 21 validations in). ``JUDGEMENT`` is the
reading of the blind run's messages: the author did not run the project's checks against the set.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "catalog_alb_name_over_32_chars": (
        False,
        "wrong reason: only ip-target-readiness (the catalog's ALB ip targets in a namespace without the readiness gate label), which the correct catalog programs carry too",
    ),
    "catalog_alb_dualstack_in_ipv4_vpc": (
        False,
        "wrong reason: only ip-target-readiness (the catalog's ALB ip targets in a namespace without the readiness gate label), which the correct catalog programs carry too",
    ),
    "catalog_alb_backend_protocol_https_to_plain_http": (
        False,
        "wrong reason: only ip-target-readiness (the catalog's ALB ip targets in a namespace without the readiness gate label), which the correct catalog programs carry too",
    ),
    "catalog_status_proxy_variable_without_resolver": (
        False,
        "wrong reason: only ip-target-readiness (the catalog's ALB ip targets in a namespace without the readiness gate label), which the correct catalog programs carry too",
    ),
    "catalog_status_proxy_resolver_vpc_dns": (
        False,
        "wrong reason: only ip-target-readiness (the catalog's ALB ip targets in a namespace without the readiness gate label), which the correct catalog programs carry too",
    ),
    "catalog_status_proxy_svc_short_name": (
        False,
        "wrong reason: only ip-target-readiness (the catalog's ALB ip targets in a namespace without the readiness gate label), which the correct catalog programs carry too",
    ),
    "catalog_scaledobject_cpu_average_value_as_percent": (
        False,
        "wrong reason: only ip-target-readiness (the catalog's ALB ip targets in a namespace without the readiness gate label), which the correct catalog programs carry too",
    ),
    "catalog_scaledobject_cpu_only_min_replicas_zero": (
        True,
        "api-validation: KEDA's webhook refuses cpu-only triggers with minReplicaCount 0",
    ),
    "heartbeat_put_metric_data_on_namespace_arn": (
        True,
        'iam-resource-type: cloudwatch:PutMetricData supports no resource type, so only "*" authorises it',
    ),
}

# Read after set 38's fixes (the tree the after-fixes run names).
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "catalog_alb_name_over_32_chars": (
        True,
        "controller-values: the controller refuses a load balancer name over 32 characters",
    ),
    "catalog_alb_dualstack_in_ipv4_vpc": (True, "lb-subnets: dualstack on subnets without an IPv6 CIDR block"),
    "catalog_alb_backend_protocol_https_to_plain_http": (
        True,
        "alb-backend-protocol: HTTPS to a port nginx serves without ssl",
    ),
    "catalog_status_proxy_variable_without_resolver": (
        True,
        "nginx-runtime-resolver: a variable proxy_pass with no resolver in scope",
    ),
    "catalog_status_proxy_resolver_vpc_dns": (
        True,
        "nginx-runtime-resolver: the VPC resolver does not serve cluster.local",
    ),
    "catalog_status_proxy_svc_short_name": (
        True,
        "nginx-runtime-resolver: nginx's resolver applies no search domains to NAME.NS.svc",
    ),
    "catalog_scaledobject_cpu_only_min_replicas_zero": (
        True,
        "api-validation: KEDA's webhook refuses cpu-only triggers with minReplicaCount 0",
    ),
    "catalog_scaledobject_cpu_average_value_as_percent": (
        True,
        "average-value-reachable: AverageValue 70 cores against a 100m limit",
    ),
    "registry_backup_start_window_30_minutes": (True, "backup-plan-values: start window under 60 minutes"),
    "registry_backup_continuous_retention_90_days": (
        True,
        "backup-plan-values: continuous backups are kept 1 to 35 days",
    ),
    "registry_backup_role_without_s3_policies": (True, "backup-role-can-back-up: the role lacks the S3 backup actions"),
    "heartbeat_put_metric_data_on_namespace_arn": (
        True,
        "iam-resource-type: cloudwatch:PutMetricData supports no resource type",
    ),
    "heartbeat_alarm_missing_data_not_breaching": (
        True,
        "alarm-absence-breaching: an alarm that fires only on absence treats missing data as not breaching",
    ),
    "heartbeat_alarm_period_shorter_than_schedule": (
        True,
        "alarm-window-publisher-interval: 60 s periods against a five-minute CronJob, missing data breaching",
    ),
    "sessions_memorydb_tls_disabled_with_acl": (True, "memorydb-values: without TLS the ACL must be open-access"),
    "sessions_memorydb_r6gd_without_data_tiering": (True, "memorydb-values: r6gd nodes need data tiering"),
    "vectors_encryption_policy_for_other_collection_name": (
        True,
        "opensearch-serverless-encryption: no encryption policy matches the collection",
    ),
    "vectors_collection_name_over_32_chars": (True, "opensearch-serverless-names: a collection name of 35 characters"),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 38, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
