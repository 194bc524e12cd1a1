"""Held-out deployability set 44, written blind: 18 defects and 8 correct variants of examples/single-region.

Run it from the repository root with ``.venv/bin/python -m benchmarks.heldout_deployability_44.run``; the runner
(``benchmarks.heldout_runner``) reads ``cases.yaml`` beside this file and reports what the offline checks say of
each case. The blind run was on main at ab4a401 (the set merged onto 3c63c79, set 43's fixes in); ``JUDGEMENT`` is
the reading of its messages.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "ssm_pool_url_parameter_path_without_leading_slash": (
        True,
        "aws-api-values: a hierarchical parameter name without its leading slash (Parameter name must be a fully"
        " qualified name)",
    ),
    "athena_workgroup_cutoff_given_in_megabytes": (
        True,
        "aws-resource-schema: BytesScannedCutoffPerQuery 1024, below the schema's minimum of 10,000,000",
    ),
}

AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "eks_audit_metric_filter_dimensions_on_term_pattern": (
        True,
        "aws-api-values: dimensions on a term pattern, neither JSON nor space-delimited (The specified filter pattern"
        " does not support dimensions)",
    ),
    "admission_binding_deny_and_warn": (
        True,
        "api-validation: a binding's validationActions hold both Deny and Warn (validateValidationActions)",
    ),
    "admission_no_privileged_binding_cluster_wide": (
        True,
        "admission-denies-workloads: the policy, bound in every namespace, denies EKS's aws-node (and kube-proxy)"
        " pods, so a node that joins never becomes Ready",
    ),
    "admission_deployment_policy_reads_pod_fields": (
        True,
        "admission-denies-workloads: object.spec.containers on a Deployment errors (no such key) and failurePolicy"
        " Fail denies the gateways' and the pool's Deployments",
    ),
    "athena_workgroup_enforced_without_result_location": (
        True,
        "aws-api-values: an enforced workgroup with no output location (No output location provided)",
    ),
    "cur_report_definition_on_regional_provider": (
        True,
        "aws-api-values: a report definition through an eu-central-1 provider; the CUR API is in us-east-1 only",
    ),
    "cur_report_athena_artifact_with_create_new_report": (
        True,
        "aws-api-values: the ATHENA artifact with CREATE_NEW_REPORT (it must be OVERWRITE_REPORT)",
    ),
    "cur_report_bucket_without_billing_reports_policy": (
        True,
        "service-admitted: the bucket's policy does not let billingreports.amazonaws.com read its ACL and policy"
        " and write",
    ),
    "amp_scraper_in_one_subnet": (
        True,
        "amp-scraper-zones: the scraper's subnets span one Availability Zone; CreateScraper needs two",
    ),
    "amp_scraper_on_own_security_group": (
        True,
        "amp-scraper-reaches-cluster: the cluster security group admits 443 only from itself, not the scraper's group",
    ),
    "amp_scraper_static_target_by_service_name": (
        True,
        "amp-scraper-static-target: a static target named by a cluster DNS name, which the collector cannot resolve",
    ),
    "prober_apparmor_runtime_default_on_al2023": (
        True,
        "apparmor-on-host: an AppArmor profile on AL2023 nodes (AppArmor is not enabled on the host)",
    ),
    "prober_seccomp_localhost_profile_not_on_nodes": (
        True,
        "seccomp-profile-on-node: a Localhost profile nothing in the program puts on the nodes",
    ),
    "prober_run_as_non_root_without_numeric_user": (
        True,
        "run-as-user: runAsNonRoot on an image that runs as root (the image sets no USER: the kubelet's error is"
        " 'image will run as root', not the case's 'non-numeric user'; the same pod that never starts)",
    ),
    "prober_probe_query_in_scrape_path_annotation": (
        True,
        "scrape-path-query: a '?' in the annotated metrics path, which Prometheus escapes into the URL's path",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 44, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
