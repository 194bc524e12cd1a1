"""Held-out deployability set 18: run it against this tree with the shared runner.

.venv/bin/python -m benchmarks.heldout_deployability_18.run [--jobs 2] [--only CASE ...] [--label merged-tree]
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The lead's reading of the blind run's messages: case -> (caught for the right reason?, what fired or missed).
# The blind run: main at 3721ffe (the checks with sets 16 and 17's fixes merged, none written with this set in view).
JUDGEMENT: dict[str, tuple[bool, str]] = {
    "feedback_queue_with_fifo_dead_letter_queue": (
        True,
        "aws-resource-schema: cfn-lint E3502, a FIFO DLQ of a standard queue",
    ),
    "oncall_role_session_of_a_day": (True, "aws-resource-schema: MaxSessionDuration above 43,200"),
    "eval_schedule_role_trusting_events": (False, "missed: a Scheduler role that trusts events.amazonaws.com only"),
    "promotion_workflow_logs_without_delivery_grant": (
        False,
        "missed: Step Functions logging without the logs:*Delivery grant",
    ),
    "gpu_check_toleration_exists_with_value": (True, "api-validation: operator Exists with a value"),
    "embedder_spread_min_domains_schedule_anyway": (True, "api-validation: minDomains with ScheduleAnyway"),
    "qdrant_read_load_indexed_without_completions": (True, "api-validation: Indexed without completions"),
    "batch_backlog_composite_before_its_alarms": (
        False,
        "missed: a composite alarm created before the alarms it names",
    ),
    # The finding says the validation record lands in a zone nothing delegates, so ACM never sees it: the mechanism
    # (public DNS cannot answer it) and the consequence are the case's, though it does not say the zone is private.
    "internal_certificate_validated_in_private_zone": (
        True,
        "first-run-order: validation record in a zone public DNS never answers",
    ),
    "embedder_policy_namespace_by_name_label": (
        True,
        "selector-selects and flow-allowed: no namespace has label 'name'",
    ),
    "embedder_pdb_on_plain_app_label": (True, "target-exists: the PDB selects no pod"),
    "embedder_replicas_beside_hpa": (False, "missed: spec.replicas kept in a Deployment an HPA scales"),
    "embedder_internal_traffic_policy_local": (
        False,
        "missed: internalTrafficPolicy Local with callers on other nodes",
    ),
    "qdrant_backup_plan_shorter_than_vault_lock": (
        False,
        "missed: a backup lifecycle shorter than the vault lock's minimum",
    ),
    # Flagged only by the policy pack's iam-no-wildcards on cloudwatch:PutMetricData, an action that takes no
    # resource: not the reserved concurrency of 0.
    "registry_rollup_reserved_concurrency_zero": (False, "iam-no-wildcards on PutMetricData, not the concurrency of 0"),
    "qdrant_snapshot_job_dns_policy_default": (False, "missed: dnsPolicy Default with a cluster Service name"),
    "registry_events_rule_without_bucket_eventbridge": (
        False,
        "missed: an S3 EventBridge rule on a bucket that sends none",
    ),
    "image_mirror_token_scoped_to_repository": (True, "iam-resource-type: GetAuthorizationToken on a repository ARN"),
}
# Three correct variants are flagged (false positives): promotion_workflow_logs_with_delivery_grant and
# image_mirror_token_on_all_resources by the policy pack's iam-no-wildcards, on actions that take no resource
# (logs:CreateLogDelivery..., ecr:GetAuthorizationToken), and registry_rollup_reserved_concurrency_unreserved by
# iam-no-wildcards (cloudwatch:PutMetricData) and aws-resource-schema (reserved concurrency -1, which the provider
# reads as "unreserved" and never sends, linted as CloudFormation's minimum of 0).

# After the fixes written with the set in view (not held out): the blind misses as now caught.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    **JUDGEMENT,
    "eval_schedule_role_trusting_events": (True, "service-role-trust: the Scheduler's role trusts events only"),
    "promotion_workflow_logs_without_delivery_grant": (True, "state-machine-log-delivery: no logs:*Delivery grant"),
    "batch_backlog_composite_before_its_alarms": (True, "first-run-order: the composite does not wait for its alarms"),
    "embedder_replicas_beside_hpa": (True, "replicas-owned: spec.replicas beside the HPA, not ignored"),
    "embedder_internal_traffic_policy_local": (True, "internal-traffic-local: a caller on nodes without an endpoint"),
    "qdrant_backup_plan_shorter_than_vault_lock": (True, "backup-retention: 14 days under the lock's 35"),
    "registry_rollup_reserved_concurrency_zero": (True, "function-invocable: reserved concurrency 0 with invokers"),
    "qdrant_snapshot_job_dns_policy_default": (True, "pod-dns-policy: dnsPolicy Default names a Service"),
    "registry_events_rule_without_bucket_eventbridge": (True, "events-emitted: the bucket sends EventBridge nothing"),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 18, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
