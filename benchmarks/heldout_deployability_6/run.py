"""Held-out deployability set 6: run it against this tree with the shared runner.

.venv/bin/python -m benchmarks.heldout_deployability_6.run [--jobs 2] [--only CASE ...] [--label merged-tree]
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The lead's reading of the blind run's messages: case -> (caught for the right reason?, what fired or missed).
JUDGEMENT: dict[str, tuple[bool, str]] = {
    "sqs_fifo_queue_without_fifo_suffix": (
        True,
        "aws-api-replay: SQS refuses CreateQueue, a FIFO name must end in .fifo",
    ),
    "batch_nodegroup_disk_size_with_launch_template": (
        True,
        "aws-api-values: EKS refuses disk_size beside a launch template",
    ),
    "log_group_retention_45_days": (True, "aws-api-values: 45 days is not one of CloudWatch Logs' retention periods"),
    "cronjob_six_field_schedule": (False, "missed: a six-field cron schedule the API server refuses"),
    "deployment_service_account_never_created": (
        True,
        "service-account-trust: the Deployment's service account is created nowhere, its pods never are",
    ),
    "workload_in_uncreated_batch_namespace": (True, "namespace-exists: llm-batch is not created"),
    "embedder_memory_above_system_node": (True, "pod-fits-node: 24 GiB against m6i.xlarge's 16 GiB"),
    "topology_spread_on_gke_zone_label": (False, "missed: a spread over a label no EKS node carries"),
    "ebs_volume_read_write_many": (True, "access-mode-supported: ReadWriteMany on the EBS CSI class"),
    "rwo_volume_shared_by_spread_replicas": (
        False,
        "missed: one ReadWriteOnce claim mounted by replicas on several nodes",
    ),
    "netpol_allows_service_port": (False, "missed: a NetworkPolicy admitting the Service's port, not the pod's"),
    "postgres_firewall_on_mysql_port": (True, "store-port-open: RDS listens on 5432, its group opens 3306"),
    "service_account_annotated_with_role_name": (
        True,
        "irsa-trust: no role ARN reaches the ServiceAccount, the pods get no credentials; right fix, though the "
        "message says there is no annotation where there is one holding a bare role name",
    ),
    "access_policy_before_access_entry": (
        False,
        "missed: an access policy association that does not wait for its entry",
    ),
    "policy_attached_by_constructed_arn": (
        False,
        "missed: a policy attached by a built ARN, not waiting for the policy",
    ),
    "lambda_python38_runtime": (False, "missed: a Lambda runtime whose creation AWS has blocked"),
    "alb_ingress_to_clusterip_service": (
        True,
        "lb-subnets: target type instance needs a NodePort or LoadBalancer Service, platform-docs is ClusterIP",
    ),
    "servicemonitor_in_monitoring_without_namespace_selector": (
        False,
        "missed: a ServiceMonitor without namespaceSelector selects only its own namespace's Services",
    ),
}

# The run after fixes written with the set in view (results-after-fixes.md): the lead's reading of its messages.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "cronjob_six_field_schedule": (True, "api-validation: '0 0 */6 * * *' has six fields, ParseStandard wants five"),
    "topology_spread_on_gke_zone_label": (
        True,
        "topology-placeable: a DoNotSchedule spread on topology.gke.io/zone, which no node it may land on carries",
    ),
    "rwo_volume_shared_by_spread_replicas": (
        True,
        "access-mode-supported: one ReadWriteOnce EBS claim, two pods its spread puts on different nodes",
    ),
    "netpol_allows_service_port": (
        True,
        "flow-allowed: the policy admits the Service's port 80, the pods listen on 8080 after the Service's DNAT",
    ),
    "access_policy_before_access_entry": (True, "eks-access: the association does not wait for its access entry"),
    "policy_attached_by_constructed_arn": (
        True,
        "first-run-order: policyArn names the program's policy by a written ARN, not its output, so nothing waits",
    ),
    "lambda_python38_runtime": (True, "version-supported: python3.8 creation blocked since 2025-02-28"),
    "servicemonitor_in_monitoring_without_namespace_selector": (
        True,
        "metrics-exported: without namespaceSelector the ServiceMonitor reads only monitoring, its Service is in "
        "llm-serving",
    ),
}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 6, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
