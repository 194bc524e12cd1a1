"""Run the second held-out set with the shared runner (``benchmarks/heldout_runner.py``: what counts as caught).

    .venv/bin/python -m benchmarks.heldout_deployability_2.run [--jobs 2] [--only CASE ...] [--label merged-tree]

Writes ``results.json`` and ``results.md`` (or ``results-LABEL.*``) beside this file.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The author's reading of each case's messages: (right reason?, why). Filled in after the first run; a case
# missing here is reported as "not judged".
JUDGEMENT: dict[str, tuple[bool, str]] = {
    "gpu_missing_toleration": (
        True,
        "node-capacity: the reranker lands on no node group (labels or taints); the taint is the cause here",
    ),
    "netpol_egress_blocks_redis": (True, "flow-allowed names every blocked flow: Redis 6379, MSK 9098, Qdrant, vLLM"),
    "iam_malformed_arn": (
        True,
        "names the Resource 'arn:aws:s3::acme-models/*' as not an ARN (MalformedPolicyDocument)",
    ),
    "namespace_not_created": (True, "names namespace llm-cache, which the stack does not create"),
    "cert_arn_wrong_region": (True, "the certificate is not one of eu-central-1: the NLB listener rejects it"),
    "spec_az_not_in_region": (True, "spec load error: AZ us-east-1g does not exist in us-east-1"),
    "spec_tp_exceeds_instance_gpus": (True, "spec load error: TP 2 needs 2 GPUs, g6e.xlarge has 1"),
    "spec_max_model_len_above_model": (True, "spec load error: 131072 exceeds max_position_embeddings 32768"),
    "cm_key_typo": (False, "missed: the configMapKeyRef key no ConfigMap has is not checked"),
    "pvc_unknown_storageclass": (False, "missed: a PVC's storageClassName no StorageClass provides is not checked"),
    "hpa_target_typo": (False, "missed: an HPA's scaleTargetRef to a Deployment that does not exist"),
    "helm_chart_version_missing": (False, "missed: a Helm chart version that does not exist (offline: unknowable?)"),
    "rollout_zero_surge": (False, "missed: maxSurge 0 with maxUnavailable 0, which the API server rejects"),
    "ingress_class_not_installed": (False, "missed: ingressClassName 'nginx' with no such controller installed"),
    "kafka_topic_rf_above_brokers": (False, "missed: an MSK topic's replication_factor above the broker count"),
    "route53_record_outside_zone": (False, "missed: a Route 53 record name outside its hosted zone"),
    "readiness_probe_wrong_port": (False, "missed: probes on a port the container does not listen on"),
    "serviceaccount_missing": (False, "missed: serviceAccountName of a ServiceAccount nothing creates"),
}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 2, JUDGEMENT))
