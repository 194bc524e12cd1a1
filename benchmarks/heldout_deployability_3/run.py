"""Run the third held-out set with the shared runner (``benchmarks/heldout_runner.py``: what counts as caught).

    .venv/bin/python -m benchmarks.heldout_deployability_3.run [--jobs 2] [--only CASE ...] [--label merged-tree]

Writes ``results.json`` and ``results.md`` (or ``results-LABEL.*``) beside this file.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The author's reading of each case's messages: (right reason?, why). Filled in after the first run; a case
# missing here is reported as "not judged".
JUDGEMENT: dict[str, tuple[bool, str]] = {
    "secret_volume_missing": (True, "references-exist names secret status-page-auth, which the stack does not create"),
    "service_selector_mismatch": (
        True,
        "service-selects: selector app.kubernetes.io/name=status matches no pod template",
    ),
    "pool_clients_drop_prometheus": (
        True,
        "flow-allowed: Prometheus (monitoring) -> vllm-chat:8000 blocked by the narrowed vllm-chat-ingress policy",
    ),
    "alert_on_unexported_metric": (
        True,
        "metrics-exported: nothing writes vllm:gpu_cache_usage_perc (did you mean vllm:kv_cache_usage_perc?)",
    ),
    "irsa_trust_wrong_namespace": (True, "service-account-trust: the sub condition names llm-data, not llm-serving"),
    "iam_listbucket_on_object_arn": (True, "iam-resource-type: s3:ListBucket granted only on an object ARN"),
    "iam_role_name_too_long": (True, "aws-name: the role name is 66 characters, IAM allows 64"),
    "eks_version_end_of_life": (True, "version-supported: EKS has no Kubernetes 1.25"),
    "servicemonitor_before_crd": (True, "crd-order: the ServiceMonitor does not wait for kube-prometheus-stack"),
    "cpu_request_over_allocatable": (
        False,
        "wrong reason: node-capacity sums the system group's requests at maxima (37.4 > 34.5 vCPU) and says raise "
        "maxSize; the defect is one pod (6 CPU) larger than any node (m6i.xlarge, 4 vCPU), which no maxSize fixes",
    ),
    "gpu_request_exceeds_node_gpus": (
        False,
        "wrong reason: node-capacity sums GPUs at maxima (10 > 4) and says raise maxSize; the defect is one pod "
        "asking 8 GPUs of a 4-GPU node type, which no maxSize fixes",
    ),
    "keda_second_scaledobject": (
        False,
        "wrong reason: autoscaling-composite-signals objects to the cron trigger's signals; nothing says vllm-chat "
        "already has a ScaledObject (KEDA's webhook rejects a second one)",
    ),
    "zone_anti_affinity_four_replicas": (False, "missed: required zone anti-affinity with 4 replicas over 3 AZs"),
    "pdb_min_available_equals_replicas": (False, "missed: PDB minAvailable equal to replicas blocks every drain"),
    "progress_deadline_below_min_ready": (
        False,
        "missed: progressDeadlineSeconds below minReadySeconds, which the API server rejects",
    ),
    "pvc_rwx_on_ebs": (False, "missed: a ReadWriteMany claim on the EBS CSI gp3 class, which EBS cannot provision"),
    "subnet_cidr_outside_vpc": (False, "missed: a subnet CIDR (10.1.0.0/24) outside its VPC (10.0.0.0/16)"),
    "netpol_default_deny_egress_serving": (
        False,
        "missed: a default-deny egress policy in llm-serving cuts DNS and S3 from the weight fetch and publish Jobs",
    ),
}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 3, JUDGEMENT))
