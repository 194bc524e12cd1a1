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

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 30, JUDGEMENT))
