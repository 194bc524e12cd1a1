"""Held-out deployability set 22: run it against this tree with the shared runner.

.venv/bin/python -m benchmarks.heldout_deployability_22.run [--jobs 2] [--only CASE ...] [--label merged-tree]
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The lead's reading of the blind run's messages: case -> (caught for the right reason?, what fired or missed).
# The blind run: main at bf02372 (set 21's fixes merged, none written with this set in view). The author had set
# 21's brief: a fair sample of common mistakes, no instruction to differ from earlier families.
JUDGEMENT: dict[str, tuple[bool, str]] = {
    "embedder_env_value_integer": (True, "render/schema: an env value that is a number, not a string"),
    "embedder_service_port_name_underscore": (True, "api-validation: a Service port name that is not a DNS label"),
    "embedder_target_group_name_over_32_chars": (True, "aws-name: a target group name over 32 characters"),
    "weights_kms_key_deletion_window_three_days": (True, "aws-api-values: a KMS deletion window under 7 days"),
    "session_cache_failover_single_node": (True, "aws-api-values: automatic failover without a replica"),
    "batch_node_role_trusting_eks_service": (True, "nodes-join: the node role does not trust ec2.amazonaws.com"),
    "embedder_memory_milli_suffix": (False, "missed: memory of 4096m, four bytes"),
    "gpu_check_node_group_standard_ami": (True, "gpu-advertised: a GPU request on an AMI without the NVIDIA driver"),
    "embedder_cache_on_efs_class_without_driver": (False, "missed: an EFS StorageClass with no EFS CSI driver"),
    "second_model_gateway_default_app_name": (
        True,
        "render/duplicate-object: both gateways declare the same objects (and two PDBs, two HPAs over one workload)",
    ),
    "registry_reader_irsa_kube2iam_annotation": (False, "missed: a kube2iam annotation where only IRSA's is read"),
    "registry_reader_get_object_with_prefix_condition": (False, "missed: s3:prefix on GetObject never matches"),
    "embedder_trigger_query_wrong_namespace_label": (
        False,
        "metrics-exported fired for not knowing TEI's metric at all (it would with the right namespace), not the label",
    ),
    "embedder_scrape_annotation_service_port": (
        False,
        "flow-allowed fired on the policy refusing port 80, not on nothing listening there",
    ),
    "vectors_snapshot_cronjob_not_a_qdrant_client": (
        False,
        "missed: a refused flow to Qdrant, whose URL is in the job's command, where flow-allowed does not look",
    ),
    "qdrant_archive_claims_deleted_with_statefulset": (False, "missed: claims deleted with a replaced StatefulSet"),
    "eval_db_security_group_fixed_name": (False, "missed: a fixed security group name, replaced create-before-delete"),
    "eval_db_without_backups_skip_final_snapshot": (False, "missed: no backups, no final snapshot, no protection"),
}
# Correct variants flagged: ok_session_cache_failover_two_nodes by elasticache-encrypted-with-auth alone (a house
# security rule: an auth token on the tenants' cache); ok_second_model_gateway_own_app_name by flow-allowed, rightly:
# the pool's ingress policy admits the model gateway's app label only, so the canary's calls to the pool are refused
# (and node-capacity: the system nodes at their maximum cannot hold every gateway at its maximum).

# The run after the fixes this set's misses became (not held out).
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    **JUDGEMENT,
    "embedder_memory_milli_suffix": (True, "memory-startable: 4096m is four bytes, below what a container starts in"),
    "embedder_cache_on_efs_class_without_driver": (True, "provisioner-served: nothing serves efs.csi.aws.com"),
    "registry_reader_irsa_kube2iam_annotation": (
        True,
        "annotation-reader-installed: iam.amazonaws.com/role without kube2iam or kiam",
    ),
    "registry_reader_get_object_with_prefix_condition": (
        True,
        "condition-keys-apply: no GetObject request carries s3:prefix",
    ),
    "embedder_trigger_query_wrong_namespace_label": (
        True,
        'metrics-exported: the scrape sets namespace to llm-serving, which namespace="serving" never matches',
    ),
    "embedder_scrape_annotation_service_port": (True, "scrape-port: the pod declares no port 80 (8080, 9000)"),
    "vectors_snapshot_cronjob_not_a_qdrant_client": (
        True,
        "flow-allowed: the URL in the job's command, refused by Qdrant's policy",
    ),
    "qdrant_archive_claims_deleted_with_statefulset": (True, "claims-retained: whenDeleted and whenScaled Delete"),
    "eval_db_security_group_fixed_name": (
        True,
        "replaceable-name: a fixed name makes the replacement delete-first, refused while the database uses it",
    ),
    "eval_db_without_backups_skip_final_snapshot": (True, "database-recoverable: nothing to restore from"),
}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 22, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
