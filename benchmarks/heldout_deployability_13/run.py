"""Held-out deployability set 13: run it against this tree with the shared runner.

.venv/bin/python -m benchmarks.heldout_deployability_13.run [--jobs 2] [--only CASE ...] [--label merged-tree]
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The lead's reading of the blind run's messages: case -> (caught for the right reason?, what fired or missed).
# The blind run: main at 90e56c8 (set 12's fixes, none written with this set in view) with the set merged.
JUDGEMENT: dict[str, tuple[bool, str]] = {
    "route53_cname_at_zone_apex": (True, "aws-api-values: a CNAME at the zone apex"),
    "flow_log_filter_dimensions_with_default": (False, "missed: a metric filter with dimensions and a default value"),
    "backup_delete_within_90_days_of_cold": (True, "aws-resource-schema: deletion under 90 days after cold storage"),
    "job_restart_policy_always": (True, "api-validation: a Job's restartPolicy Always"),
    "docs_selector_not_in_template_labels": (True, "api-validation: the selector does not match the template labels"),
    "recreate_strategy_with_rolling_params": (False, "missed: rollingUpdate beside a Recreate strategy"),
    "pushgateway_claim_without_storage_class": (True, "storage-class-exists: no default StorageClass from 1.30"),
    "docs_service_selects_bare_app_label": (True, "service-selects: the selector matches no pod"),
    "docs_service_target_port_undeclared": (True, "service-target-port: a targetPort name no container declares"),
    "docs_node_selector_instance_type_absent": (True, "node-capacity: no node group matches the node selector"),
    "alarm_topic_on_aws_managed_sns_key": (False, "missed: CloudWatch cannot use SNS's AWS managed key"),
    "health_events_queue_without_policy": (False, "missed: no queue policy lets EventBridge send"),
    "log_group_cmk_without_logs_grant": (False, "missed: the key policy leaves out CloudWatch Logs"),
    "docs_exporter_port_closed_to_prometheus": (True, "flow-allowed: Prometheus to the exporter port is blocked"),
    "docs_scaled_object_before_keda": (True, "crd-order: the ScaledObject does not wait for KEDA's CRD"),
    "registry_notification_before_queue_policy": (True, "first-run-order: the notification races its queue policy"),
    "tenant_key_vault_reference": (False, "missed: a vault:// tenant key the gateways cannot resolve"),
    "waf_cloudfront_scope_in_eu_central_1": (False, "missed: a CLOUDFRONT web ACL outside us-east-1"),
}
# After the fixes written with the set in view (not held out): the same cases, the blind misses as now caught.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    **JUDGEMENT,
    "flow_log_filter_dimensions_with_default": (True, "aws-api-values: dimensions beside a default value"),
    "recreate_strategy_with_rolling_params": (True, "api-validation: rollingUpdate forbidden beside Recreate"),
    "alarm_topic_on_aws_managed_sns_key": (True, "service-admitted: CloudWatch cannot use an AWS managed key"),
    "health_events_queue_without_policy": (True, "service-admitted: no queue policy allows events.amazonaws.com"),
    "log_group_cmk_without_logs_grant": (True, "service-admitted: the key has no policy admitting CloudWatch Logs"),
    "tenant_key_vault_reference": (True, "the spec refuses vault://: not a scheme the gateways resolve"),
    "waf_cloudfront_scope_in_eu_central_1": (True, "aws-api-values: CLOUDFRONT scope only in us-east-1"),
}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 13, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
