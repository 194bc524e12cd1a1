"""Held-out deployability set 10: run it against this tree with the shared runner.

.venv/bin/python -m benchmarks.heldout_deployability_10.run [--jobs 2] [--only CASE ...] [--label merged-tree]
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The lead's reading of the blind run's messages: case -> (caught for the right reason?, what fired or missed).
# The blind run: main at 0cecb62 (the set-9 fixes, namespace-admits and 25 more aws-resource-schema types, all
# written before this set was read) with the set merged.
JUDGEMENT: dict[str, tuple[bool, str]] = {
    "log_group_retention_45_days": (True, "aws-api-values and aws-resource-schema: 45 is not a retention period"),
    "eventbridge_cron_five_fields": (True, "aws-resource-schema (cfn-lint E3027): an EventBridge cron has six fields"),
    "cronjob_schedule_with_seconds": (True, "api-validation: six fields in a CronJob schedule"),
    "hpa_min_replicas_zero": (True, "api-validation: minReplicas 0 without the alpha gate"),
    "embedder_on_spot_capacity": (True, "node-capacity: no node group's labels (capacity type) match the selector"),
    "zone_anti_affinity_four_replicas": (True, "topology-placeable: four replicas, one per zone, three zones"),
    "embedder_service_account_renamed": (True, "service-account-trust: the pod's service account does not exist"),
    "pushgateway_claim_on_gp3_class": (True, "storage-class-exists: no StorageClass gp3"),
    "gpu_smoke_test_runtime_class": (False, "missed: runtimeClassName names no RuntimeClass"),
    "docs_nlb_auto_mode_class": (
        False,
        "only the policy only-ai-gateway-load-balancer fired, which flags the correct twin the same way: missed a "
        "loadBalancerClass no controller of this cluster serves (EKS Auto Mode's)",
    ),
    "docs_hpa_exporter_without_cpu_request": (True, "utilization-request: a container without a CPU request"),
    "embedder_policy_on_service_port": (True, "flow-allowed: the policy admits the Service's port, not the pod's"),
    "secret_policy_arn_without_suffix": (True, "iam-resource-matches: a secret ARN without its random suffix"),
    "eval_bucket_cmk_reader_without_decrypt": (
        False,
        "only S3 hygiene policies fired (versioning, TLS): missed kms:Decrypt on the bucket's key",
    ),
    "sqs_alarm_queue_url_dimension": (False, "missed: an alarm on a dimension AWS/SQS does not publish"),
    "edge_node_group_in_public_subnets": (True, "nodes-join: public subnets that give the nodes no address"),
    "embedder_replicas_share_rwo_cache": (True, "access-mode-supported: one RWO volume for two spread replicas"),
    "cluster_pinned_to_1_31": (True, "version-supported: 1.31's extended support ended on 2026-11-26"),
}

# After the fixes written with the set in view (not held out): the same cases, the blind misses as now caught.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    **JUDGEMENT,
    "gpu_smoke_test_runtime_class": (True, "target-exists: runtimeClassName 'nvidia' names no RuntimeClass"),
    "docs_nlb_auto_mode_class": (
        True,
        "lb-controller: loadBalancerClass eks.amazonaws.com/nlb on a cluster without Auto Mode (the policy still flags the twin)",
    ),
    "eval_bucket_cmk_reader_without_decrypt": (
        True,
        "kms-grant: s3:GetObject on SSE-KMS objects without kms:Decrypt on the key",
    ),
    "sqs_alarm_queue_url_dimension": (True, "alarm-metric-exists: AWS/SQS publishes no QueueUrl dimension"),
}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 10, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
