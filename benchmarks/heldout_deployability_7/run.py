"""Held-out deployability set 7: run it against this tree with the shared runner.

.venv/bin/python -m benchmarks.heldout_deployability_7.run [--jobs 2] [--only CASE ...] [--label merged-tree]
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The lead's reading of the blind run's messages: case -> (caught for the right reason?, what fired or missed).
JUDGEMENT: dict[str, tuple[bool, str]] = {
    "s3_bucket_name_with_capitals": (True, "aws-name: 'Acme-EU-Eval-Datasets' does not match S3's bucket name rule"),
    "sqs_visibility_timeout_a_day": (False, "missed: SQS refuses a visibility timeout over 43,200 s"),
    "security_group_description_apostrophe": (False, "missed: EC2 refuses an apostrophe in a VPC group's description"),
    "container_name_with_underscore": (True, "api-validation: 'redis_exporter' is not an RFC 1123 label"),
    "pdb_min_available_and_max_unavailable": (True, "api-validation: minAvailable and maxUnavailable both set"),
    "job_restart_policy_always": (True, "api-validation: a Job's restartPolicy must be OnFailure or Never"),
    "zone_affinity_with_zone_id": (
        False,
        "node-capacity fired, but not for this reason: it modelled no zone label at all, so it flagged the correct "
        "twin (a real AZ name) too",
    ),
    "pvc_without_storage_class": (
        False,
        "missed: only namespace-exists fired (wrong reason); no default StorageClass on EKS 1.30+",
    ),
    "sc1_volume_below_minimum_size": (False, "missed: only namespace-exists fired (wrong reason); sc1 takes 125 GiB+"),
    "gateway_egress_serving_selected_by_name_label": (
        True,
        "flow-allowed: the egress policy's peers select namespaces by a 'name' label none carries",
    ),
    "scraped_exporter_without_ingress_from_monitoring": (
        True,
        "flow-allowed: Prometheus's scrape of the exporter is blocked by llm-data's default deny",
    ),
    "prometheus_rule_without_release_label": (False, "missed: a PrometheusRule the Prometheus's ruleSelector skips"),
    "pod_without_its_annotated_service_account": (
        False,
        "missed: only namespace-exists fired (wrong reason); the CronJob runs as default, not the IRSA account",
    ),
    "pod_identity_trust_on_irsa_service_account": (
        True,
        "service-account-trust: the role trusts pods.eks.amazonaws.com, no AssumeRoleWithWebIdentity statement",
    ),
    "priority_class_never_created": (
        False,
        "missed: only namespace-exists fired (wrong reason); priorityClassName names no PriorityClass",
    ),
    "s3_notification_before_queue_policy": (
        False,
        "missed: the mock gave the queue no url, so the QueuePolicy named no queue and the rule never saw it",
    ),
    "al2_node_group_on_current_kubernetes": (True, "aws-api-values: no Amazon Linux 2 AMI after Kubernetes 1.32"),
    "pdb_max_unavailable_zero": (True, "drain-blocked: maxUnavailable 0 allows no eviction"),
}


# The run after fixes written with the set in view (results-after-fixes.md): the lead's reading of its messages.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "sqs_visibility_timeout_a_day": (True, "aws-api-values: VisibilityTimeout 86400 s, SQS takes 0-43,200"),
    "security_group_description_apostrophe": (
        True,
        "aws-api-values: an apostrophe in a VPC security group's description, outside EC2's characters",
    ),
    "zone_affinity_with_zone_id": (
        True,
        "node-capacity: no node group's nodes are in zone euc1-az2 (their zones are the subnets' AZ names)",
    ),
    "pvc_without_storage_class": (
        True,
        "storage-class-exists: no class named, and no default on EKS 1.35 (gp2 is not marked default from 1.30)",
    ),
    "sc1_volume_below_minimum_size": (True, "storage-class-exists: 50 GiB of sc1, which takes 125-16,384 GiB"),
    "prometheus_rule_without_release_label": (
        True,
        "metrics-exported: the rule lacks release=kube-prometheus-stack, which the ruleSelector picks by default",
    ),
    "pod_without_its_annotated_service_account": (
        True,
        "service-account-trust: the IRSA account no pod runs as; the CronJob runs as default, without credentials",
    ),
    "priority_class_never_created": (True, "target-exists: priorityClassName tokenplane-critical names nothing"),
    "s3_notification_before_queue_policy": (
        True,
        "first-run-order: the notification does not wait for the QueuePolicy (the mock now gives the queue its url)",
    ),
}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 7, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
