"""Held-out deployability set 31 (blind): 18 defects and 8 correct variants of examples/single-region.

Run from the repository root: ``python -m benchmarks.heldout_deployability_31.run``. The set's author wrote it blind
to the checks; JUDGEMENT is the reading of the blind run's messages, written after it.

``registry_inventory_script_mode_decimal_755`` also drew a false ``mount-hides-image`` finding in the blind run (its
script comes from the ConfigMap mounted over its directory); the rule was mended after the run, and the case was
judged on its ``api-validation`` finding, which names the decimal mode.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "evals_db_subnets_overlap_private_subnet": (
        True,
        "subnet-range and aws-api-replay: the /24s overlap private subnet a (InvalidSubnet.Conflict)",
    ),
    "usage_report_lambda_subnets_without_route_table": (
        True,
        "function-egress: the subnets use the main route table, which has no NAT route, and no endpoint serves s3",
    ),
    "sts_endpoint_in_private_and_public_subnets": (
        True,
        "vpc-endpoint-values: two subnets in one AZ (DuplicateSubnetsInSameZone)",
    ),
    "eval_artifacts_expiration_on_transition_day": (
        True,
        "aws-api-values: expiration days not after the transition's",
    ),
    "registry_policy_requires_sse_header": (
        False,
        "missed: a StringNotEquals SSE condition denies header-less writers",
    ),
    "evals_db_performance_insights_retention_10_days": (
        True,
        "aws-resource-schema: PerformanceInsightsRetentionPeriod 10 is not an allowed value",
    ),
    "usage_report_lambda_memory_64_mb": (True, "aws-resource-schema: MemorySize 64 is below the minimum of 128"),
    "eval_jobs_consumer_reserved_concurrency_one": (
        False,
        "missed: reserved concurrency below the SQS pollers' minimum",
    ),
    "eval_jobs_dead_letter_queue_on_function": (
        False,
        "missed: a function DLQ under a synchronous SQS event source",
    ),
    "tenant_table_ssm_standard_tier_over_4kb": (False, "missed: a Standard-tier parameter over 4 KB"),
    "embedder_hpa_cpu_target_type_value": (
        True,
        "api-validation: a Resource metric's target of type Value (validateResourceSource)",
    ),
    "registry_inventory_script_mode_decimal_755": (
        True,
        "api-validation: defaultMode 755 in decimal is beyond 0777 octal",
    ),
    "embedder_readiness_probe_host_localhost": (False, "missed: a probe host of localhost probes the node"),
    "embedder_trigger_https_to_plain_prometheus": (
        False,
        "missed: an https:// serverAddress against Prometheus's plain HTTP",
    ),
    "legacy_search_external_name_with_ip": (False, "missed: an ExternalName that is an IP address"),
    "legacy_search_endpoint_slice_without_service_name_label": (
        False,
        "missed: an EndpointSlice without the kubernetes.io/service-name label",
    ),
    "kafka_disk_alarms_dimensions_without_spaces": (
        True,
        "alarm-metric-exists: AWS/Kafka's dimensions are Cluster Name and Broker ID",
    ),
    "usage_report_errors_alarm_on_function_arn": (
        True,
        "alarm-metric-exists: FunctionName holds the function's ARN, not its name",
    ),
}

# After the set's fixes (not held out: written with these programs in view), read from results-after-fixes.md.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "registry_policy_requires_sse_header": (
        True,
        "resource-policy-admits-callers: the Deny's negated condition matches the publish Job's header-less writes",
    ),
    "eval_jobs_consumer_reserved_concurrency_one": (
        True,
        "sqs-pollers-within-concurrency: 1 reserved execution against 5 pollers",
    ),
    "eval_jobs_dead_letter_queue_on_function": (
        True,
        "failure-destination-used: a function DLQ under an SQS event source, the queue without a redrive policy",
    ),
    "tenant_table_ssm_standard_tier_over_4kb": (True, "aws-api-values: a 6,301-character value in the Standard tier"),
    "embedder_readiness_probe_host_localhost": (True, "probe-host: host 'localhost' is the node's own loopback"),
    "embedder_trigger_https_to_plain_prometheus": (
        True,
        "service-url-scheme: https:// to kube-prometheus-stack's Prometheus, which has no web.tlsConfig",
    ),
    "legacy_search_external_name_with_ip": (True, "external-name-resolves: an IPv4 ExternalName never resolves"),
    "legacy_search_endpoint_slice_without_service_name_label": (
        True,
        "manual-endpoints: the slice has no kubernetes.io/service-name label, so the Service has no endpoints",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 31, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
