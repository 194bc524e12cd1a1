"""Held-out deployability set 27 (blind): 18 defects and 8 correct variants of examples/single-region.

Run from the repository root: ``python -m benchmarks.heldout_deployability_27.run``.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The lead's reading of the blind run's messages: case -> (caught for the right reason?, what fired or missed).
# The blind run: main at d2d4c60 (set 26's fixes merged, none written with this set in view; the set was written from
# 09:35 to 09:44 UTC while those fixes were being written). The author had set 26's brief.
JUDGEMENT: dict[str, tuple[bool, str]] = {
    "evals_db_name_with_hyphen": (False, "missed: an RDS DBName with a hyphen"),
    "evals_db_multi_az_with_fixed_az": (False, "missed: a Multi-AZ instance given an availability zone"),
    "batch_node_group_max_size_zero": (True, "aws-api-values and aws-resource-schema: maxSize 0"),
    "graviton_node_group_on_x86_ami": (True, "aws-api-values: an arm64 instance type on an x86_64 AMI type"),
    "batch_launch_template_root_on_sda1": (False, "missed: a root volume mapped at /dev/sda1 on an AMI rooted at xvda"),
    "eval_config_reader_ssm_arn_double_slash": (False, "missed: an SSM parameter ARN with a double slash"),
    "audit_pod_identity_trust_without_tag_session": (False, "missed: a Pod Identity trust without sts:TagSession"),
    "usage_report_logs_policy_on_log_group_arn": (False, "missed: PutLogEvents granted on the log group's ARN"),
    "registry_verify_job_pod_failure_policy_on_failure": (
        False,
        "missed: a podFailurePolicy with restartPolicy OnFailure",
    ),
    "eval_jobs_age_alarm_datapoints_above_periods": (False, "missed: DatapointsToAlarm over EvaluationPeriods"),
    "eval_jobs_dlq_alarm_on_messages_sent": (False, "missed: a DLQ alarm on NumberOfMessagesSent"),
    "qdrant_servicemonitor_timeout_above_interval": (False, "missed: a scrapeTimeout over the scrape interval"),
    "registry_lifecycle_keeps_200_noncurrent_versions": (False, "missed: NewerNoncurrentVersions over 100"),
    "registry_scratch_expiry_with_delete_marker_cleanup": (
        True,
        "aws-api-replay: S3 refuses ExpiredObjectDeleteMarker beside Days (MalformedXML)",
    ),
    "gateway_weighted_record_without_set_identifier": (True, "aws-api-values: a routing policy without a set id"),
    "registry_report_lambda_handler_module_mismatch": (False, "missed: a Lambda handler naming a module not archived"),
    "redis_exporter_on_bitnami_docker_hub_image": (False, "missed: a Bitnami image tag removed from docker.io"),
    "webhook_key_rotation_without_lambda_permission": (
        False,
        "missed: a rotation Lambda Secrets Manager may not invoke",
    ),
}


# The run after the fixes this set's misses became (not held out).
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    **JUDGEMENT,
    "evals_db_name_with_hyphen": (True, "rds-values: a DBName with '-'"),
    "evals_db_multi_az_with_fixed_az": (True, "rds-values: Multi-AZ with an availability zone"),
    "batch_launch_template_root_on_sda1": (True, "node-root-device: 200 GiB at /dev/sda1 on an AMI rooted at xvda"),
    "eval_config_reader_ssm_arn_double_slash": (True, "iam-resource-matches: parameter// names no parameter"),
    "audit_pod_identity_trust_without_tag_session": (True, "service-role-trust: no sts:TagSession for Pod Identity"),
    "usage_report_logs_policy_on_log_group_arn": (True, "iam-resource-type: log-stream actions on a log group ARN"),
    "registry_verify_job_pod_failure_policy_on_failure": (True, "api-validation: podFailurePolicy needs Never"),
    "eval_jobs_age_alarm_datapoints_above_periods": (True, "aws-api-values: M out of N with M > N"),
    "eval_jobs_dlq_alarm_on_messages_sent": (True, "alarm-metric-exists: nothing sends to the dead-letter queue"),
    "qdrant_servicemonitor_timeout_above_interval": (True, "metrics-exported: the operator rejects the monitor"),
    "registry_lifecycle_keeps_200_noncurrent_versions": (True, "aws-api-values: NewerNoncurrentVersions 200"),
    "registry_report_lambda_handler_module_mismatch": (True, "lambda-handler-resolves: no module index"),
    "redis_exporter_on_bitnami_docker_hub_image": (True, "image-tag-published: a versioned docker.io/bitnami tag"),
    "webhook_key_rotation_without_lambda_permission": (
        True,
        "service-admitted: Secrets Manager may not invoke the rotation function",
    ),
}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 27, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
