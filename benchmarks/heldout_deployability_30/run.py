"""Held-out deployability set 30 (blind): 18 defects and 8 correct variants of examples/single-region.

Run from the repository root: ``python -m benchmarks.heldout_deployability_30.run``. The set's author wrote it blind
to the checks; JUDGEMENT is the reading of the blind run's messages, written after it.

Of the two correct variants the blind run flagged, one is not correct: ``ok_kafka_disk_alarm_expression_only_returns_data``
publishes its alarm to an SNS topic encrypted with ``alias/aws/sns``, an AWS managed key whose policy CloudWatch may not
use, so no alarm notification is ever delivered (SNS developer guide, "Enable compatibility between event sources from
AWS services and encrypted topics"); ``service-admitted`` says so. It is still counted as flagged.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "embedder_readiness_probe_termination_grace_period": (
        False,
        "missed: terminationGracePeriodSeconds on a readiness probe",
    ),
    "embedder_init_container_readiness_probe": (
        True,
        "api-validation: a readiness probe on an init container without restartPolicy Always",
    ),
    "eval_shards_job_backoff_limit_per_index_without_indexed": (
        True,
        "api-validation: backoffLimitPerIndex and maxFailedIndexes need completionMode Indexed",
    ),
    "embedder_scaledobject_idle_replicas_equal_min": (False, "missed: idleReplicaCount not below minReplicaCount"),
    "embedder_alb_ingress_prefix_path_with_wildcard": (
        False,
        "wrong reason: controller-permissions on the shipped controller role (true of any ALB Ingress here), not the "
        "wildcard in a Prefix path",
    ),
    "embedder_alb_ip_targets_without_readiness_gate": (
        False,
        "wrong reason: controller-permissions on the shipped controller role, not the missing pod readiness gate",
    ),
    "s3_interface_endpoint_private_dns_without_gateway_endpoint": (
        False,
        "missed: an S3 interface endpoint with private DNS and no gateway endpoint",
    ),
    "kafka_disk_alarm_broker_queries_return_data": (
        True,
        "aws-api-values: every metric query of the alarm sets returnData",
    ),
    "embedder_servicemonitor_interval_without_unit": (
        True,
        "render/schema: the ServiceMonitor CRD's Duration pattern refuses an interval of '30'",
    ),
    "retrieval_search_three_subnets_without_zone_awareness": (
        False,
        "missed: three subnets on an OpenSearch domain without zone awareness",
    ),
    "retrieval_search_firewall_on_port_9200": (False, "missed: an OpenSearch domain's security group without 443"),
    "embedder_mirror_lifecycle_any_rule_not_last": (False, "missed: an ECR lifecycle rule on any tag not last"),
    "eval_archive_bucket_policy_denies_deployer": (False, "missed: a bucket policy that denies the deploying role"),
    "registry_reader_inline_policy_over_size_limit": (False, "missed: inline role policies over 10,240 characters"),
    "node_reporter_cluster_role_binding_subject_without_namespace": (
        False,
        "missed: a ClusterRoleBinding's ServiceAccount subject without a namespace",
    ),
    "node_reporter_without_service_account_token": (
        False,
        "missed: an API client whose pod mounts no service account token",
    ),
    "embedder_health_check_on_internal_nlb": (
        False,
        "wrong reason: tls-listener (a TCP target health check) and a house rule, not a Route 53 health check on an "
        "internal load balancer's private addresses",
    ),
    "semantic_cache_user_group_without_default_user": (
        False,
        "missed: an ElastiCache user group without the default user",
    ),
}

# After the set's fixes (not held out: written with these programs in view), read from results-after-fixes.md.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "embedder_readiness_probe_termination_grace_period": (
        True,
        "api-validation: terminationGracePeriodSeconds on a readiness probe (validateReadinessProbe)",
    ),
    "embedder_init_container_readiness_probe": (True, "api-validation: a readiness probe on a plain init container"),
    "eval_shards_job_backoff_limit_per_index_without_indexed": (
        True,
        "api-validation: backoffLimitPerIndex without completionMode Indexed",
    ),
    "embedder_scaledobject_idle_replicas_equal_min": (
        True,
        "api-validation: KEDA's webhook, idleReplicaCount 1 not below minReplicaCount 1",
    ),
    "embedder_alb_ingress_prefix_path_with_wildcard": (
        True,
        "controller-values: the controller refuses a wildcard in a Prefix path",
    ),
    "embedder_alb_ip_targets_without_readiness_gate": (
        True,
        "ip-target-readiness: ip targets in a namespace without the pod readiness gate label",
    ),
    "s3_interface_endpoint_private_dns_without_gateway_endpoint": (
        True,
        "vpc-endpoint-values: private DNS on an S3 interface endpoint with no gateway endpoint",
    ),
    "kafka_disk_alarm_broker_queries_return_data": (True, "aws-api-values: every metric query sets returnData"),
    "embedder_servicemonitor_interval_without_unit": (True, "render/schema: the Duration pattern refuses '30'"),
    "retrieval_search_three_subnets_without_zone_awareness": (
        True,
        "opensearch-values: three subnets without zone awareness",
    ),
    "retrieval_search_firewall_on_port_9200": (
        True,
        "store-port-open: OpenSearch listens on 443, the group opens 9200",
    ),
    "embedder_mirror_lifecycle_any_rule_not_last": (True, "aws-api-values: the tagStatus any rule is not last"),
    "eval_archive_bucket_policy_denies_deployer": (
        True,
        "deployer-keeps-access: the bucket policy's Deny leaves out the deploying identity",
    ),
    "registry_reader_inline_policy_over_size_limit": (
        True,
        "policy-size: 18,096 characters of inline policy against IAM's 10,240",
    ),
    "node_reporter_cluster_role_binding_subject_without_namespace": (
        True,
        "api-validation: a ClusterRoleBinding's ServiceAccount subject without a namespace",
    ),
    "node_reporter_without_service_account_token": (
        True,
        "rbac-grant-token: the bound ServiceAccount's pods mount no token",
    ),
    "embedder_health_check_on_internal_nlb": (
        True,
        "health-check-reachable: a Route 53 health check on an internal load balancer's name",
    ),
    "semantic_cache_user_group_without_default_user": (
        True,
        "elasticache-rbac: the user group has no user named default",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 30, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
