"""Held-out deployability set 11: run it against this tree with the shared runner.

.venv/bin/python -m benchmarks.heldout_deployability_11.run [--jobs 2] [--only CASE ...] [--label merged-tree]
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The lead's reading of the blind run's messages: case -> (caught for the right reason?, what fired or missed).
# The blind run: main at 93568aa (set 10's fixes, all written before this set was read) with the set merged.
JUDGEMENT: dict[str, tuple[bool, str]] = {
    "lifecycle_ia_after_7_days": (True, "aws-api-values: a transition to STANDARD_IA before 30 days"),
    "kms_key_policy_without_account": (False, "missed: a key policy no AWS principal may put again (lockout check)"),
    "gpu_request_without_limit": (True, "api-validation: nvidia.com/gpu requested without a limit"),
    "service_name_starts_with_digit": (True, "api-validation: a Service name that is no DNS-1035 label"),
    "batch_node_group_al2_on_1_35": (True, "aws-api-values: no Amazon Linux 2 AMI after Kubernetes 1.32"),
    "prefix_index_memory_above_node": (False, "missed: 16 GiB of memory on an m6i.xlarge, whose allocatable is less"),
    "limitrange_below_gateway_cpu": (True, "namespace-admits: the gateways' CPU limits over the LimitRange's max"),
    "priority_class_never_created": (True, "target-exists: priorityClassName names no PriorityClass"),
    "second_hpa_on_ai_gateway": (True, "one-autoscaler: a second HPA on the AI gateway"),
    "irsa_wildcard_under_string_equals": (True, "service-account-trust: a wildcard under StringEquals"),
    "role_arn_on_pod_not_service_account": (True, "annotation-placed: the IRSA role annotation on the pod template"),
    "servicemonitor_without_namespace_selector": (True, "metrics-exported: a ServiceMonitor without namespaceSelector"),
    "metrics_policy_admits_release_name": (True, "flow-allowed: a namespace selector on a name no namespace has"),
    "nginx_read_only_root_without_tmp": (True, "read-only-root: nginx writes /tmp on a read-only root"),
    "pdb_min_available_equals_replicas": (True, "drain-blocked: minAvailable equal to the replicas"),
    "st1_claim_below_minimum_size": (True, "storage-class-exists: a 50 GiB st1 claim (125 GiB minimum)"),
    "qdrant_copy_without_fs_group": (True, "volume-writable: uid 1000 on a root-owned EBS volume without fsGroup"),
    "cronjob_time_zone_europe_frankfurt": (True, "api-validation: an unknown IANA time zone"),
}

# After the fixes written with the set in view (not held out): the same cases, the blind misses as now caught.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    **JUDGEMENT,
    "kms_key_policy_without_account": (True, "aws-api-values: the key policy lets no AWS principal put it again"),
    "prefix_index_memory_above_node": (True, "pod-fits-node: 16 GiB asked, at most 15.4 GiB allocatable on m6i.xlarge"),
}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 11, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
