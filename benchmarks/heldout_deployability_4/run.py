"""Run the fourth held-out set with the shared runner (``benchmarks/heldout_runner.py``: what counts as caught).

    .venv/bin/python -m benchmarks.heldout_deployability_4.run [--jobs 2] [--only CASE ...] [--label merged-tree]

Writes ``results.json`` and ``results.md`` (or ``results-LABEL.*``) beside this file.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The lead's reading of each case's messages: (right reason?, why). Filled in after the first run; a case missing
# here is reported as "not judged".
JUDGEMENT: dict[str, tuple[bool, str]] = {
    "msk_brokers_not_multiple_of_azs": (
        True,
        "aws-api-values: 4 brokers over 3 client subnets (version-supported also, rightly: the case's own cluster "
        "copies the old 3.6.0 pin)",
    ),
    "route53_cname_at_zone_apex": (True, "aws-api-values: a CNAME at the apex of llm.acme-example.com"),
    "al2_nodegroup_on_eks_1_35": (True, "aws-api-values: AL2_x86_64 on Kubernetes 1.35, no AL2 AMI after 1.32"),
    "statefulset_storage_class_gp3_missing": (True, "storage-class-exists: 'gp3' is neither created nor shipped"),
    "grafana_alb_ingress_without_controller_permissions": (
        False,
        "wrong reason: host-resolves says the Ingress host has no record; the defect is the Load Balancer "
        "Controller's IAM policy lacking the ALB actions (CreateRule ...)",
    ),
    "gateway_certificate_never_validated": (
        True,
        "tls-listener: the listener takes the certificate's ARN directly and no record validates it",
    ),
    "model_gateway_in_data_namespace": (
        True,
        "flow-allowed: model-gateway (llm-data) -> vllm-chat blocked by the pool's ingress policy",
    ),
    "irsa_trust_condition_with_scheme": (
        True,
        "service-account-trust: the sub condition key carries https://, a claim of another issuer",
    ),
    "pdb_max_unavailable_zero": (True, "drain-blocked: maxUnavailable 0 allows no disruption"),
    "s3_notification_before_queue_policy": (False, "missed: the notification does not wait for the queue policy"),
    "nodegroup_in_public_subnets": (
        True,
        "nodes-join (merged tree): the node subnets route to the internet gateway but map no public IP",
    ),
    "nodegroup_sg_without_egress": (False, "missed: a node security group with no egress, nodes never join"),
    "gpu_smoke_job_without_toleration": (False, "missed: a GPU Job without the GPU taint's toleration"),
    "status_page_read_only_root_without_tmp": (False, "missed: nginx with a read-only root and no writable /tmp"),
    "hpa_pods_metric_without_adapter": (False, "missed: an HPA Pods metric with no custom metrics adapter"),
    "private_nacl_drops_return_traffic": (False, "missed: a network ACL without return-traffic ports"),
    "secret_arn_without_random_suffix": (False, "missed: a Secrets Manager ARN without its random suffix"),
    "kafka_without_topics": (False, "missed: MSK with no topics while auto-creation is off"),
}

# The run after fixes written with the set in view (results-after-fixes.md): the lead's reading of its messages.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "s3_notification_before_queue_policy": (
        True,
        "first-run-order: the notification does not wait for the QueuePolicy that lets S3 send",
    ),
    "nodegroup_sg_without_egress": (
        True,
        "nodes-join: the launch template's groups replace the cluster group and let nothing out on 443",
    ),
    "gpu_smoke_job_without_toleration": (
        True,
        "node-capacity: the Job tolerates no nvidia.com/gpu taint and lands on no node group",
    ),
    "status_page_read_only_root_without_tmp": (
        True,
        "read-only-root: nginx-unprivileged writes /tmp, no writable volume is mounted there",
    ),
    "hpa_pods_metric_without_adapter": (True, "platform-contract: no adapter serves custom.metrics.k8s.io"),
    "grafana_alb_ingress_without_controller_permissions": (
        True,
        "controller-permissions: the controller's role lacks CreateRule and the WAF/Shield reads",
    ),
    "private_nacl_drops_return_traffic": (
        True,
        "nodes-join: the node subnets' ACL refuses the replies of the nodes' HTTPS on 32768-60999",
    ),
    "secret_arn_without_random_suffix": (
        True,
        "iam-resource-matches: a secret ARN without its six random characters matches nothing",
    ),
    "kafka_without_topics": (True, "platform-contract: the gateways' topics are not created, auto-create is off"),
}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 4, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
