"""Held-out deployability set 40: 18 deployment defects and 8 correct variants of examples/single-region,
written blind to the project's offline checks (see README.md).

Run from the repository root:

    .venv/bin/python -m benchmarks.heldout_deployability_40.run

The blind run was on main at bbb194d (the set merged onto 2e2a76e); ``JUDGEMENT`` is the reading of its messages.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "eval_batch_role_max_session_duration_one_day": (
        True,
        "aws-resource-schema: MaxSessionDuration 86400 over the maximum of 43200",
    ),
    "deployers_access_entry_in_system_masters": (
        True,
        "access-entry-request: a Kubernetes group beginning with system: is refused",
    ),
    "batch_node_group_remote_access_with_launch_template": (
        True,
        "aws-api-values: remote_access with a launch template is refused",
    ),
    "weights_shards_success_policy_without_indexed_mode": (
        True,
        "api-validation: spec.successPolicy requires indexed completion mode",
    ),
    "usage_consumer_maximum_concurrency_one": (True, "aws-api-values: maximumConcurrency takes 2-1,000"),
    "gateway_cert_validation_records_for_apex_and_wildcard": (
        False,
        "wrong reason: host-resolves says the certificate's names have no record; the defect is the apex's and the "
        "wildcard's one validation CNAME created twice (the render's ACM mock gave them two)",
    ),
    "gateway_cert_without_transparency_logging": (
        False,
        "wrong reason: host-resolves (the certificate's names have no record in the program); the defect is CT "
        "logging disabled on a public listener",
    ),
}

# Read after set 40's fixes (the tree the after-fixes run names); the blind reading stands for the rest.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "gateway_cert_validation_records_for_apex_and_wildcard": (
        True,
        "aws-unique-key: the apex's and the wildcard's one validation CNAME created twice without allow_overwrite",
    ),
    "gateway_cert_without_transparency_logging": (
        True,
        "tls-listener: a public certificate without CT logging on an internet-facing listener",
    ),
    "registry_report_policy_source_ip_vpc_cidr": (
        True,
        "source-ip-can-match: aws:SourceIp in the VPC's private CIDR, which AWS never sees",
    ),
    "batch_tenant_key_stored_as_secret_binary": (
        True,
        "platform-contract: the tenant key stored as secretBinary, which the gateway never reads",
    ),
    "registry_inventory_downward_api_volume_without_container_name": (
        True,
        "api-validation: a downwardAPI volume's resourceFieldRef.containerName is required",
    ),
    "eval_results_topic_min_insync_equal_to_replication": (
        True,
        "topic-replication: min.insync.replicas equal to the replication factor",
    ),
    "usage_stream_retention_twelve_hours": (True, "aws-api-values: Kinesis retention takes 24-8,760 hours"),
    "usage_consumer_batch_failures_without_response_type": (
        True,
        "batch-item-failures-reported: the handler returns batchItemFailures without ReportBatchItemFailures",
    ),
    "usage_consumer_filter_on_top_level_field": (
        True,
        "event-filter-matches-records: a filter key at the top level of an SQS record, not under body",
    ),
    "usage_consumer_log_group_named_without_autoname_suffix": (
        True,
        "lambda-log-group-written: /aws/lambda/<logical name> of an autonamed function",
    ),
    "eval_sweeps_priority_class_above_serving": (
        True,
        "priority-preempts-serving: a class above the pools' priority on their GPU node group",
    ),
    "weights_edge_bucket_dotted_name_with_transfer_acceleration": (
        True,
        "aws-api-values: Transfer Acceleration on a bucket name with periods",
    ),
    "tenant_key_secret_created_under_its_existing_name": (
        False,
        "missed: that the secret exists beforehand is said only in a comment; a program may create a tenant's secret",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 40, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
