"""Held-out deployability set 42, written blind: 18 defects and 8 correct variants of examples/single-region.

Run it from the repository root with ``.venv/bin/python -m benchmarks.heldout_deployability_42.run``; the runner
(``benchmarks.heldout_runner``) reads ``cases.yaml`` beside this file and reports what the offline checks say of
each case. The blind run was on main at 5718327 (the set merged onto 91d4810, set 41's fixes in); ``JUDGEMENT`` is
the reading of its messages.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "mirror_pull_secret_dockerconfigjson_under_dockercfg_key": (
        True,
        "api-validation: a dockerconfigjson Secret without the key .dockerconfigjson",
    ),
    "prompts_git_ssh_secret_key_named_id_ed25519": (
        True,
        "api-validation: an ssh-auth Secret without ssh-privatekey",
    ),
    "internal_dns_list_hosted_zones_on_zone_arn": (
        True,
        "iam-resource-type: route53:ListHostedZones authorised only on *",
    ),
    "weights_s3_claim_on_gp3_class": (
        False,
        "wrong reason: access-mode-supported says EBS cannot give ReadOnlyMany and asks for ReadWriteOnce; the defect "
        "is the claim's class, which is not the static S3 volume's, so it never binds to it",
    ),
    "karpenter_nodepool_node_class_ref_name_only": (
        False,
        "wrong reason: render/schema knows no CRD for Karpenter's kinds (and iam-no-wildcards); the defect is a "
        "nodeClassRef without group and kind",
    ),
    "karpenter_node_class_without_ami_selector_terms": (
        False,
        "wrong reason: render/schema knows no CRD for Karpenter's kinds; the defect is amiSelectorTerms missing",
    ),
    "karpenter_subnets_by_discovery_tag": (
        False,
        "wrong reason: render/schema knows no CRD for Karpenter's kinds; the defect is a subnet selector no subnet matches",
    ),
    "karpenter_nodes_own_role_without_access_entry": (
        False,
        "wrong reason: render/schema knows no CRD for Karpenter's kinds; the defect is a node role without an access entry",
    ),
}

# Read after set 42's fixes (the tree the after-fixes run names); the blind reading stands for the rest.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "weights_s3_claim_on_gp3_class": (
        True,
        "claim-binds: the claim's class gp3-encrypted does not match the static volume's '': never bound",
    ),
    "karpenter_nodepool_node_class_ref_name_only": (
        True,
        "render/schema (Karpenter's v1 CRDs): nodeClassRef requires group and kind",
    ),
    "karpenter_node_class_without_ami_selector_terms": (
        True,
        "render/schema (Karpenter's v1 CRDs): amiSelectorTerms is required",
    ),
    "karpenter_subnets_by_discovery_tag": (True, "nodes-join: the subnet selector's tags are on no subnet"),
    "karpenter_nodes_own_role_without_access_entry": (
        True,
        "nodes-join: the NodeClass's role has no access entry on an API-mode cluster",
    ),
    "evals_db_managed_password_with_explicit_password": (
        True,
        "rds-values: manage_master_user_password with a password is refused",
    ),
    "registry_access_logs_into_sse_kms_bucket": (True, "s3-log-delivery: an SSE-KMS target gets no access logs"),
    "registry_access_logs_to_us_east_1_bucket": (
        True,
        "s3-log-delivery: a target in another region (CrossLocationLoggingProhibitted)",
    ),
    "registry_access_logs_policy_source_arn_of_log_bucket": (
        True,
        "s3-log-delivery: the grant's aws:SourceArn names the log bucket, not the source",
    ),
    "internal_dns_external_dns_public_zone_type": (
        True,
        "host-resolves: --aws-zone-type=public drops the program's private zone",
    ),
    "internal_dns_qdrant_service_cluster_ip": (
        True,
        "host-resolves: a ClusterIP Service without --publish-internal-services",
    ),
    "audit_trail_bucket_policy_tls_only": (
        True,
        "cloudtrail-delivery: the bucket policy grants CloudTrail nothing (InsufficientS3BucketPolicyException)",
    ),
    "audit_trail_write_grant_without_key_prefix": (
        True,
        "cloudtrail-delivery: the PutObject grant misses the prefix's AWSLogs path",
    ),
    "audit_trail_log_group_arn_without_stream_wildcard": (
        True,
        "cloudtrail-delivery: a log group ARN without :*",
    ),
    "evals_db_password_copied_into_kube_secret": (
        False,
        "missed: the render keeps no invoke's arguments, so a value read from the RDS-managed secret cannot be traced "
        "to it",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 42, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
