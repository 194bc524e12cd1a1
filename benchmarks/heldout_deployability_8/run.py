"""Held-out deployability set 8: run it against this tree with the shared runner.

.venv/bin/python -m benchmarks.heldout_deployability_8.run [--jobs 2] [--only CASE ...] [--label merged-tree]
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The lead's reading of the blind run's messages: case -> (caught for the right reason?, what fired or missed).
JUDGEMENT: dict[str, tuple[bool, str]] = {
    "dynamodb_unused_attribute_definition": (False, "missed: CreateTable refuses an attribute no key schema uses"),
    "cloudwatch_alarm_period_45_seconds": (False, "missed: an alarm period of 45 s (10, 20, 30 or a multiple of 60)"),
    "ecr_lifecycle_tagged_without_prefix": (
        False,
        "missed: a tagged lifecycle rule needs tagPrefixList or tagPatternList",
    ),
    "eks_addon_version_for_old_kubernetes": (False, "missed: an add-on build not compatible with Kubernetes 1.35"),
    "deployment_selector_not_matching_template": (True, "api-validation: the selector does not match the template"),
    "progress_deadline_below_min_ready": (True, "api-validation: progressDeadlineSeconds not above minReadySeconds"),
    "cpu_request_whole_node": (True, "pod-fits-node: 4 cpu against m6i.xlarge's 3.92 allocatable"),
    "gpu_pool_prober_without_toleration": (
        True,
        "node-capacity: only the GPU group carries the label, and the pod tolerates no nvidia.com/gpu taint",
    ),
    "secret_key_ref_wrong_key": (True, "key-exists: signing_key is not a key of the Secret (it holds signing-key)"),
    "configmap_volume_item_missing_key": (True, "key-exists: default.conf is not a key of the ConfigMap"),
    "keda_scaler_on_statefulset_as_deployment": (
        True,
        "target-exists: the ScaledObject scales a Deployment embedder that does not exist (it is a StatefulSet)",
    ),
    "network_policy_named_port_not_on_pod": (False, "missed: a policy's named port no selected pod names"),
    "secretsmanager_endpoint_sg_other_vpc_cidr": (
        True,
        "endpoint-admits: the endpoint's group admits 10.1.0.0/16, not the nodes' subnets",
    ),
    "irsa_trust_subject_plural_serviceaccounts": (
        True,
        "service-account-trust: the sub condition says serviceaccounts (plural), never the token's subject",
    ),
    "target_group_binding_before_lb_controller": (
        False,
        "render/schema fired for a reason that is not this one: it knows no schema for TargetGroupBinding, and "
        "flagged the correct twin the same way",
    ),
    "dead_letter_retention_shorter_than_source": (False, "missed: a dead-letter queue that keeps messages for less"),
    "launch_template_security_group_without_cluster_sg": (
        True,
        "nodes-join: the launch template's groups replace the cluster security group, the endpoint admits none",
    ),
    "servicemonitor_port_by_number": (True, "metrics-exported: the endpoint's port '9121' names no Service port"),
}


# The run after fixes written with the set in view (results-after-fixes.md): the lead's reading of its messages.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "dynamodb_unused_attribute_definition": (
        True,
        "aws-api-replay: moto's CreateTable refuses the attribute no key schema uses (ValidationException)",
    ),
    "cloudwatch_alarm_period_45_seconds": (
        True,
        "aws-api-values: a 45 s period, CloudWatch takes 10, 20, 30 or n x 60",
    ),
    "ecr_lifecycle_tagged_without_prefix": (
        True,
        "aws-api-values: a rule on tagged images with no tagPrefixList or tagPatternList",
    ),
    "network_policy_named_port_not_on_pod": (
        True,
        "flow-allowed: the ingress rule's named port http is named by no pod the policy selects",
    ),
    "target_group_binding_before_lb_controller": (
        True,
        "crd-order: the TargetGroupBinding does not wait for the LB controller's release, which installs its CRD",
    ),
    "dead_letter_retention_shorter_than_source": (
        True,
        "dead-letter-keeps: the dead-letter queue keeps messages less long than its source",
    ),
}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 8, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
