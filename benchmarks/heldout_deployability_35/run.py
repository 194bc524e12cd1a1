"""Held-out deployability set 35: 18 defects and 8 correct variants of examples/single-region, written blind.

Run from the repository root: ``.venv/bin/python -m benchmarks.heldout_deployability_35.run``. It runs the
project's offline checks on every case in cases.yaml and reports what they catch. JUDGEMENT is filled in after the
first run, by reading each finding against the case's expected reason: the blind run was on main at 3d526e4
(sets 33 and 34's fixes in), and its author saw five commit subjects of set 34's fixes (see README.md).
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "status_page_nginx_command_without_daemon_off": (False, "missed: nginx run without daemon off exits at once"),
    "status_page_container_port_protocol_lowercase": (False, "missed: protocol 'tcp' (supported: TCP, UDP, SCTP)"),
    "status_page_deployment_restart_policy_on_failure": (
        True,
        "api-validation: a Deployment's pods take only restartPolicy Always",
    ),
    "status_page_alb_healthcheck_interval_equal_to_timeout": (
        False,
        "missed: an ALB health check interval equal to its timeout",
    ),
    "evals_db_security_group_without_vpc_id": (
        False,
        "wrong reason: store-private read the group's VPC as unknown and its CIDR as outside it; AWS refuses a DB "
        "and a security group in different VPCs",
    ),
    "evals_db_subnet_group_in_one_az": (True, "rds-values: DBSubnetGroupDoesNotCoverEnoughAZs"),
    "weights_verify_policy_sids_with_hyphens": (True, "aws-resource-schema: identity policy Sids are alphanumeric"),
    "registry_cors_origin_with_trailing_slash": (False, "missed: a CORS origin with a trailing slash"),
    "weights_events_notification_prefix_with_leading_slash": (False, "missed: an event filter prefix with a '/'"),
    "registry_dashboard_metric_widget_without_region": (False, "missed: a dashboard metric widget without region"),
    "registry_size_alarm_period_five_minutes": (False, "missed: a 5-minute alarm on a daily S3 storage metric"),
    "registry_indexer_duration_alarm_unit_seconds": (True, "alarm-threshold-unit: Duration is in Milliseconds"),
    "eval_jobs_standard_queue_content_based_deduplication": (
        True,
        "aws-resource-schema: ContentBasedDeduplication on a standard queue",
    ),
    "weights_created_rule_source_service_principal": (False, "missed: an event pattern source s3.amazonaws.com"),
    "gateway_priority_class_system_prefix": (True, "api-validation: the system- prefix is reserved"),
    "internal_ca_tls_secret_without_key": (True, "api-validation: a kubernetes.io/tls Secret without tls.key"),
    "registry_indexer_env_key_with_hyphens": (False, "missed: a Lambda environment key with hyphens"),
    "data_backups_role_with_restore_policy_only": (False, "missed: a backup role with only the restores policy"),
}

# After the set's fixes (not held out: written with these programs in view), read from results-after-fixes.md.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "status_page_nginx_command_without_daemon_off": (True, "image-command: command nginx drops -g 'daemon off;'"),
    "status_page_container_port_protocol_lowercase": (True, "api-validation: protocol 'tcp' (validateContainerPorts)"),
    "status_page_alb_healthcheck_interval_equal_to_timeout": (
        True,
        "controller-values: health check interval must be greater than the timeout",
    ),
    "evals_db_security_group_without_vpc_id": (
        True,
        "aws-api-values: a group without vpcId lands in the default VPC, its DB is in the program's",
    ),
    "registry_cors_origin_with_trailing_slash": (True, "s3-cors-origin-matches: an origin with a trailing slash"),
    "weights_events_notification_prefix_with_leading_slash": (True, "events-emitted: S3 keys never start with '/'"),
    "registry_dashboard_metric_widget_without_region": (True, "dashboard-body-valid: a metric widget without region"),
    "registry_size_alarm_period_five_minutes": (True, "alarm-metric-exists: S3 storage metrics are daily"),
    "weights_created_rule_source_service_principal": (True, "events-emitted: source is aws.s3, not a principal"),
    "registry_indexer_env_key_with_hyphens": (True, "aws-api-values: Lambda environment keys [a-zA-Z]([a-zA-Z0-9_])+"),
    "data_backups_role_with_restore_policy_only": (
        True,
        "backup-role-can-back-up: the role lacks ec2:CreateSnapshot and tag:GetResources",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 35, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
