"""Held-out deployability set 9: run it against this tree with the shared runner.

.venv/bin/python -m benchmarks.heldout_deployability_9.run [--jobs 2] [--only CASE ...] [--label merged-tree]
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The lead's reading of the blind run's messages: case -> (caught for the right reason?, what fired or missed).
# The blind run: main at cbe8efa (aws-resource-schema, written before the set was read) with the set merged.
JUDGEMENT: dict[str, tuple[bool, str]] = {
    "sqs_retention_twenty_days": (
        True,
        "aws-api-values and aws-resource-schema: MessageRetentionPeriod over 1,209,600 s",
    ),
    "container_port_name_sixteen_chars": (
        True,
        "api-validation: a port name over 15 characters, on the pod and the Service",
    ),
    "label_value_image_reference": (True, "api-validation: a label value with '/' and ':'"),
    "rolling_update_no_surge_no_unavailable": (True, "api-validation: maxSurge 0 and maxUnavailable 0"),
    "node_selector_arm64": (True, "node-capacity: no node group's labels (arch amd64) match the selector"),
    "ephemeral_storage_beyond_node_disk": (
        True,
        "node-disk: 60 GiB of pod disk against the 20 GiB default root volume",
    ),
    "configmap_in_other_namespace": (True, "references-exist: the ConfigMap does not exist in the pod's namespace"),
    "probe_on_renamed_port": (True, "probe-port: the probes name a port the container does not declare"),
    "ingress_class_without_controller": (
        True,
        "ingress-claimed and target-exists: no IngressClass or controller for 'nginx'",
    ),
    "hpa_target_logical_name": (True, "target-exists: the HPA scales a Deployment that does not exist"),
    "gateway_egress_without_dns": (
        True,
        "flow-allowed and egress-allowed: the gateways' egress policy blocks cluster DNS",
    ),
    "nacl_without_ephemeral_ports": (True, "nodes-join: the ACL drops the replies on ephemeral ports"),
    "s3_object_read_on_bucket_arn": (True, "iam-resource-type: s3:GetObject granted on the bucket ARN only"),
    "kubernetes_objects_on_default_provider": (
        False,
        "missed: Kubernetes objects on Pulumi's default provider (ambient kubeconfig)",
    ),
    "gp3_iops_above_ratio": (False, "missed: gp3 IOPS above 500 per GiB of the claim"),
    "hpa_autoscaling_v2beta2": (True, "render/schema: Kubernetes 1.35 serves no autoscaling/v2beta2"),
    "scrape_annotations_on_deployment": (False, "missed: prometheus.io annotations on the Deployment, not its pods"),
    "keda_trigger_wrong_prometheus": (
        True,
        "service-address: the trigger's serverAddress names no Service (metrics-exported too)",
    ),
}

# After the fixes written with the set in view (not held out): the same cases, the blind misses as now caught.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    **JUDGEMENT,
    "kubernetes_objects_on_default_provider": (
        True,
        "cluster-provider: the objects name no provider, so Pulumi's default one (the ambient kubeconfig) gets them",
    ),
    "gp3_iops_above_ratio": (True, "storage-class-exists: 16,000 IOPS on a 20 GiB gp3 claim, over 500 per GiB"),
    "scrape_annotations_on_deployment": (
        True,
        "annotation-placed: prometheus.io annotations on the Deployment, where no scrape role reads them",
    ),
}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 9, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
