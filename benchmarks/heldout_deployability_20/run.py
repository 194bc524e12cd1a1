"""Held-out deployability set 20: run it against this tree with the shared runner.

.venv/bin/python -m benchmarks.heldout_deployability_20.run [--jobs 2] [--only CASE ...] [--label merged-tree]
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The lead's reading of the blind run's messages: case -> (caught for the right reason?, what fired or missed).
# The blind run: main at 471faa8 (set 19's fixes merged, none written with this set in view).
JUDGEMENT: dict[str, tuple[bool, str]] = {
    "node_role_access_entry_duplicated": (
        False,
        "missed: an access entry for a node group's role, which EKS creates itself",
    ),
    "alarm_action_topic_in_us_east_1": (False, "missed: an alarm action naming a topic in another region"),
    "route53_health_check_interval_20": (False, "missed: a health check interval other than 10 or 30"),
    "registry_report_role_path_without_slashes": (
        True,
        "aws-resource-schema: cfn-lint E3031, an IAM path without slashes",
    ),
    "usage_rollup_batch_100_without_window": (False, "missed: an SQS batch above 10 without a batching window"),
    "promotion_workflow_next_state_missing": (False, "missed: a state machine whose Next names no state"),
    "embedder_cluster_ip_outside_service_cidr": (False, "missed: a clusterIP outside the cluster's service CIDR"),
    "registry_report_concurrency_policy_never": (True, "api-validation: concurrencyPolicy Never"),
    "embedder_policy_end_port_on_named_port": (True, "api-validation: endPort with a named port"),
    "embedder_image_pull_policy_never": (
        True,
        "image-published: imagePullPolicy Never on nodes that never hold the image",
    ),
    "gateway_namespace_pdb_over_gateway_pdbs": (False, "missed: pods selected by two PodDisruptionBudgets"),
    "dns_heartbeat_policy_on_requested_region": (
        False,
        "missed: aws:RequestedRegion on Route 53, a global service signed in us-east-1",
    ),
    "oncall_pages_filter_on_message_attributes": (
        False,
        "missed: an SNS filter on message attributes CloudWatch never sets",
    ),
    "nodes_cpu_alarm_on_container_insights": (False, "missed: a ContainerInsights alarm without Container Insights"),
    "embedder_hpa_on_pods_metric_without_adapter": (True, "platform-contract: a Pods metric no adapter serves"),
    "registry_report_egress_only_to_vpc_cidr": (
        False,
        "missed: egress only to the VPC CIDR, without endpoints for STS and S3",
    ),
    "usage_ledger_ttl_on_created_at": (False, "missed: a DynamoDB TTL on the creation time"),
    "status_page_as_bare_pod": (False, "missed: a bare Pod, lost at the first drain"),
}


# The run after the fixes this set's misses became (not held out).
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    **JUDGEMENT,
    "node_role_access_entry_duplicated": (True, "eks-access: EKS makes the node role's entry itself in API mode"),
    "alarm_action_topic_in_us_east_1": (True, "aws-api-values: an alarm action's topic in another region"),
    "route53_health_check_interval_20": (True, "aws-api-values: RequestInterval 10 or 30"),
    "usage_rollup_batch_100_without_window": (True, "aws-api-values: an SQS batch above 10 needs a batching window"),
    "promotion_workflow_next_state_missing": (True, "state-machine-definition: MISSING_TRANSITION_TARGET"),
    "embedder_cluster_ip_outside_service_cidr": (True, "cluster-ip-in-range: 10.100.0.50 outside 172.20.0.0/16"),
    "gateway_namespace_pdb_over_gateway_pdbs": (True, "one-disruption-budget: two budgets over the gateways' pods"),
    "dns_heartbeat_policy_on_requested_region": (True, "iam-requested-region: Route 53 calls are made in us-east-1"),
    "oncall_pages_filter_on_message_attributes": (True, "sns-filter-scope: CloudWatch sets no message attributes"),
    "nodes_cpu_alarm_on_container_insights": (True, "alarm-metric-exists: nothing publishes ContainerInsights"),
    "registry_report_egress_only_to_vpc_cidr": (True, "egress-allowed: no interface endpoint for sts and s3"),
    "usage_ledger_ttl_on_created_at": (True, "ttl-expires: a TTL on the creation time"),
    "status_page_as_bare_pod": (True, "pod-owned: a bare Pod with restartPolicy Always"),
}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 20, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
