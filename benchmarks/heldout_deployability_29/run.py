"""Held-out deployability set 29 (blind): 18 defects and 8 correct variants of examples/single-region.

Run from the repository root: ``python -m benchmarks.heldout_deployability_29.run``. JUDGEMENT stays empty: the
set's author wrote it blind to the checks, and records no verdicts of its own.
"""

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "evals_db_enhanced_monitoring_without_role": (False, "missed: a monitoring interval without a monitoring role"),
    "evals_aurora_serverless_v2_without_instance": (False, "missed: an Aurora cluster with no instance to answer"),
    "batch_node_group_label_kubernetes_io_prefix": (False, "missed: a node group label under kubernetes.io/"),
    "batch_gpu_node_group_taint_not_tolerated_by_device_plugin": (
        False,
        "wrong reason: gpu-node-groups-tainted asks for the nvidia.com/gpu taint to keep CPU pods off, not that the "
        "device plugin cannot run on the node",
    ),
    "batch_node_group_version_ahead_of_cluster": (False, "missed: a node group a minor ahead of its cluster"),
    "eval_report_cronjob_cron_tz_in_schedule": (
        True,
        "api-validation: the API server rejects CRON_TZ in spec.schedule (use spec.timeZone)",
    ),
    "registry_access_logs_bucket_acl_log_delivery_write": (False, "missed: a canned ACL on a bucket with ACLs off"),
    "eval_results_bucket_policy_principal_built_from_role_name": (
        False,
        "missed: a policy principal built from a role's name, not waiting for the role",
    ),
    "batch_node_role_policies_attached_exclusively": (False, "missed: the exclusive aws.iam.PolicyAttachment"),
    "eval_report_irsa_annotation_without_role_path": (False, "missed: a role ARN without the role's path"),
    "s3_gateway_endpoint_policy_without_ecr_layer_bucket": (
        False,
        "missed: an S3 endpoint policy that leaves out ECR's layer bucket",
    ),
    "secrets_endpoint_firewall_all_protocols_with_port": (False, "missed: protocol -1 with ports in a rule"),
    "eval_jobs_fifo_queue_target_without_message_group": (
        False,
        "missed: a FIFO queue target without a message group",
    ),
    "grafana_ingress_class_field_and_annotation": (
        False,
        "wrong reason: controller-permissions on the ALB calls (true of any ALB Ingress here), not the class field "
        "beside the class annotation",
    ),
    "vllm_alert_rule_with_grafana_rate_interval": (False, "missed: a Grafana variable in a PromQL rule"),
    "domain_caa_record_without_amazon": (False, "missed: a CAA record that leaves out Amazon"),
    "eval_corpus_static_pv_without_zone_affinity": (False, "missed: a static EBS volume without zone affinity"),
    "ebs_default_cmk_without_autoscaling_grant": (
        False,
        "missed: EBS default encryption with a key Auto Scaling may not use",
    ),
}

# After the set's fixes (not held out: written with these programs in view), read from results-after-fixes.md.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "evals_db_enhanced_monitoring_without_role": (True, "rds-values: a monitoring interval of 60 without a role"),
    "evals_aurora_serverless_v2_without_instance": (True, "aurora-instances: the cluster has no ClusterInstance"),
    "batch_node_group_label_kubernetes_io_prefix": (True, "node-group-labels: a label under kubernetes.io/"),
    "batch_gpu_node_group_taint_not_tolerated_by_device_plugin": (
        True,
        "node-daemonsets-tolerate: the device plugin and DCGM do not tolerate the node group's taint",
    ),
    "batch_node_group_version_ahead_of_cluster": (True, "node-group-version: 1.36 on a 1.35 cluster"),
    "eval_report_cronjob_cron_tz_in_schedule": (True, "api-validation: CRON_TZ in spec.schedule"),
    "registry_access_logs_bucket_acl_log_delivery_write": (
        True,
        "s3-acls-disabled: an ACL on a bucket with ACLs off (and s3-log-delivery: no policy for log delivery)",
    ),
    "eval_results_bucket_policy_principal_built_from_role_name": (
        True,
        "first-run-order: a principal written as a string, nothing orders the policy after the role",
    ),
    "batch_node_role_policies_attached_exclusively": (True, "iam-exclusive-attachments: exclusive PolicyAttachment"),
    "eval_report_irsa_annotation_without_role_path": (True, "iam-arn-exact: the annotation's ARN lacks /workloads/"),
    "s3_gateway_endpoint_policy_without_ecr_layer_bucket": (
        True,
        "s3-endpoint-admits: ECR's layer bucket is not allowed",
    ),
    "secrets_endpoint_firewall_all_protocols_with_port": (True, "aws-api-values: protocol -1 with ports 443-443"),
    "eval_jobs_fifo_queue_target_without_message_group": (
        True,
        "aws-api-values: a FIFO queue target without sqsTarget.messageGroupId",
    ),
    "grafana_ingress_class_field_and_annotation": (
        True,
        "api-validation: the class annotation beside spec.ingressClassName",
    ),
    "vllm_alert_rule_with_grafana_rate_interval": (True, "prometheus-rule-valid: $__rate_interval is not PromQL"),
    "domain_caa_record_without_amazon": (True, "caa-allows-acm: the CAA record allows none of ACM's CAs"),
    "eval_corpus_static_pv_without_zone_affinity": (True, "static-volume-zone: the PV names no zone"),
    "ebs_default_cmk_without_autoscaling_grant": (
        True,
        "autoscaling-key-grant: the key policy does not admit Auto Scaling's service-linked role",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 29, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
