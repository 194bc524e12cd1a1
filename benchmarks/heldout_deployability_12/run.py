"""Held-out deployability set 12: run it against this tree with the shared runner.

.venv/bin/python -m benchmarks.heldout_deployability_12.run [--jobs 2] [--only CASE ...] [--label merged-tree]
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The lead's reading of the blind run's messages: case -> (caught for the right reason?, what fired or missed).
# The blind run: main at 46eea0a (set 11's fixes, none written with this set in view) with the set merged.
JUDGEMENT: dict[str, tuple[bool, str]] = {
    "sqs_fifo_name_without_suffix": (True, "aws-api-replay and aws-resource-schema: a FIFO queue's name without .fifo"),
    "alarm_period_45_seconds": (True, "aws-api-values and aws-resource-schema: a 45-second alarm period"),
    "ecr_lifecycle_tagged_without_filter": (True, "aws-api-values: a tagged lifecycle rule without a tag filter"),
    "liveness_success_threshold_two": (False, "missed: a liveness probe's successThreshold of 2"),
    "min_ready_equals_default_deadline": (True, "api-validation: minReadySeconds not below the default deadline"),
    "pdb_min_available_and_max_unavailable": (True, "api-validation: minAvailable and maxUnavailable both set"),
    "configmap_key_dash_underscore": (True, "key-exists: a key the ConfigMap does not hold"),
    "docs_pages_rwx_on_gp3": (True, "access-mode-supported: ReadWriteMany on an EBS class"),
    "backup_cronjob_batch_v1beta1": (True, "render/schema: Kubernetes 1.35 serves no batch/v1beta1 CronJob"),
    "backup_irsa_trusts_serving_namespace": (True, "service-account-trust: the trust names another namespace"),
    "gpu_embedder_without_toleration": (True, "node-capacity: the GPU nodes' taint is not tolerated"),
    "gateway_quota_at_replica_floor": (True, "namespace-admits: the quota under the gateways at their maxima"),
    "qdrant_vpa_without_crd": (True, "render/schema: no VerticalPodAutoscaler kind in the cluster"),
    "grafana_alb_instance_target_clusterip": (
        False,
        "only controller-permissions fired (the controller's WAF permissions for ALB Ingresses, a real gap of the "
        "program but not this case's): missed instance targets on a ClusterIP Service",
    ),
    "servicemonitor_port_number_not_name": (True, "metrics-exported: the endpoint's port is no Service port name"),
    "reranker_peer_by_name_label": (False, "missed: a namespaceSelector on a label key no namespace carries"),
    "pool_lockdown_egress_without_rules": (True, "egress-allowed: an Egress policy with no rules blocks DNS and AWS"),
    "registry_lifecycle_expires_current": (False, "missed: a lifecycle Expiration on the model registry's weights"),
}

# After the fixes written with the set in view (not held out): the same cases, the blind misses as now caught.
# backup_irsa_same_namespace, a correct variant, is flagged by service-account-trust, rightly: its trust names
# namespace 'data' (the key of Foundation's namespaces) where its ServiceAccount is in 'llm-data'.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    **JUDGEMENT,
    "liveness_success_threshold_two": (True, "api-validation: a liveness probe's successThreshold must be 1"),
    "reranker_peer_by_name_label": (True, "selector-selects: no namespace carries the label 'name'"),
}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 12, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
