"""Held-out deployability set 43, written blind: 18 defects and 8 correct variants of examples/single-region.

Run it from the repository root with ``.venv/bin/python -m benchmarks.heldout_deployability_43.run``; the runner
(``benchmarks.heldout_runner``) reads ``cases.yaml`` beside this file and reports what the offline checks say of
each case. The blind run was on main at 5c269e5 (the set merged onto aa382aa, set 42's fixes in); ``JUDGEMENT`` is
the reading of its messages.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "restarter_role_deployments_in_core_api_group": (
        True,
        'rbac-rule-resolves: deployments under apiGroups [""], served in "apps": the rule grants nothing',
    ),
    "restarter_pod_spec_without_service_account_token": (
        True,
        "rbac-grant-token: the pods mount no service-account token, so the in-cluster client fails",
    ),
    "restarter_tmp_size_limit_megabytes": (
        True,
        "api-validation: emptyDir sizeLimit '64MB' is not a resource quantity",
    ),
    "restarter_node_selector_on_node_role_label": (
        True,
        "node-capacity: no node group's labels match the pod's node selector",
    ),
    "serving_lifecycle_since_pushed_without_count_unit": (
        True,
        "aws-api-values: a sinceImagePushed lifecycle rule without countUnit (InvalidParameterException)",
    ),
    "admin_access_entry_for_assumed_role_session": (
        True,
        "access-entry-request: the principal is an STS assumed-role session, not an IAM role",
    ),
}

AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "restarter_role_patch_without_get": (
        True,
        "kubectl-permissions: rollout restart first GETs the deployments, which the Role does not grant",
    ),
    "restarter_binding_role_ref_kind_cluster_role": (
        True,
        "rbac-role-exists: roleRef names a ClusterRole the program does not create (a Role of that name exists)",
    ),
    "serving_repository_tag_immutable": (
        True,
        "immutable-tag-moves: a fixed tag pushed again to an IMMUTABLE repository (ImageTagAlreadyExistsException)",
    ),
    "adot_addon_without_cert_manager": (
        True,
        "addon-prerequisites: the adot add-on needs cert-manager, which nothing installs",
    ),
    "prompt_cache_ecpu_limit_below_minimum": (
        True,
        "aws-api-values: ECPU per second 500, below the 1,000 minimum (the program spells the key as Terraform's"
        " ecpu_per_second, which the check reads too)",
    ),
    "prompt_cache_without_security_group": (
        True,
        "store-port-open: no security group, so the VPC's default one, which the program keeps without ingress",
    ),
    "prompt_cache_snapshot_retention_ninety_days": (
        True,
        "aws-api-values: snapshot retention 90 days, over the 35-day limit",
    ),
    "eval_artifacts_abort_rule_with_tag_filter": (
        True,
        "aws-api-values: AbortIncompleteMultipartUpload in a rule filtered on tags",
    ),
    "eval_artifacts_bucket_acl_private": (
        True,
        "s3-acls-disabled: a BucketAcl on a bucket with ACLs disabled (AccessControlListNotSupported)",
    ),
    "region_budget_daily_with_forecasted_alert": (
        True,
        "aws-api-values: a FORECASTED notification on a DAILY budget",
    ),
    "region_budget_topic_without_budgets_publish_policy": (
        True,
        "service-admitted: the topic's policy does not let budgets.amazonaws.com publish",
    ),
    "usage_signing_secret_replica_in_own_region": (
        True,
        "aws-api-values: a replica in the secret's own Region (Invalid replica region)",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 43, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
