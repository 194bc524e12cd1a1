"""Run the fifth held-out set with the shared runner (``benchmarks/heldout_runner.py``: what counts as caught).

    .venv/bin/python -m benchmarks.heldout_deployability_5.run [--jobs 2] [--only CASE ...] [--label merged-tree]

Writes ``results.json`` and ``results.md`` (or ``results-LABEL.*``) beside this file.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The lead's reading of each case's messages: (right reason?, why). Filled in after the first run; a case missing
# here is reported as "not judged".
JUDGEMENT: dict[str, tuple[bool, str]] = {
    "elasticache_auth_token_without_tls": (True, "aws-api-values: an AUTH token without in-transit encryption"),
    "s3_lifecycle_standard_ia_after_7_days": (True, "aws-api-values: STANDARD_IA after 7 days, at least 30"),
    "batch_nodes_role_without_cni_policy": (True, "nodes-join: the node role has no AmazonEKS_CNI_Policy"),
    "batch_nodes_in_isolated_subnets": (True, "nodes-join: the node subnets have no route out and no endpoints"),
    "status_page_arm64_node_selector": (
        True,
        "node-capacity: no node group's labels match the pod's node selector (kubernetes.io/arch arm64)",
    ),
    "qdrant_archive_volume_without_fs_group": (False, "missed: a volume Qdrant's non-root user cannot write"),
    "status_page_exec_probe_curl_in_slim_image": (False, "missed: an exec probe runs curl, which the image lacks"),
    "config_viewer_mounts_configmap_of_other_namespace": (
        True,
        "references-exist: the ConfigMap is not created in the pod's namespace (it lives in another)",
    ),
    "cpu_hpa_beside_keda_scaledobject": (True, "one-autoscaler: an HPA beside the ScaledObject on vllm-chat"),
    "grafana_ingress_without_class": (False, "missed: an Ingress no controller claims"),
    "pool_egress_policy_without_dns": (True, "egress-allowed: the pool's egress policy cuts DNS"),
    "ecr_endpoint_on_default_security_group": (False, "missed: interface endpoints on a group that admits nothing"),
    "irsa_trust_for_other_namespace": (True, "service-account-trust: the trust names another namespace's account"),
    "audit_policy_get_object_on_bucket_arn": (True, "iam-resource-type: s3:GetObject on the bucket ARN"),
    "rollout_max_surge_and_unavailable_zero": (True, "api-validation: maxSurge 0 and maxUnavailable 0"),
    "servicemonitor_before_prometheus_crds": (True, "crd-order: the ServiceMonitor does not wait for its CRD"),
    "eks_pinned_to_1_29": (True, "version-supported: 1.29's extended support ended 2026-03-23"),
    "model_gateway_pool_urls_keyed_by_model": (False, "missed: the model gateway's pool URLs keyed by model name"),
}

# The run after fixes written with the set in view (results-after-fixes.md): the lead's reading of its messages.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "qdrant_archive_volume_without_fs_group": (
        True,
        "volume-writable: user 1000 writes an EBS volume the pod gives no fsGroup, owned by root",
    ),
    "status_page_exec_probe_curl_in_slim_image": (
        True,
        "image-command: python:3.11.11-slim-bookworm has no curl, the readiness probe fails every period",
    ),
    "grafana_ingress_without_class": (True, "ingress-claimed: no class and no default IngressClass (known: alb)"),
    "ecr_endpoint_on_default_security_group": (
        True,
        "endpoint-admits: the ECR endpoints' default group admits nothing on 443 from the nodes",
    ),
    "model_gateway_pool_urls_keyed_by_model": (
        True,
        "GatewayArgs refuses pool_urls keyed by a model name: the program fails at render with the pool to use",
    ),
}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 5, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
