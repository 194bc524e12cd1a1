"""Held-out deployability set 36: 18 defects and 8 correct variants of examples/single-region, written blind.

Run from the repository root:

    .venv/bin/python -m benchmarks.heldout_deployability_36.run

The blind run was on main at 1a1e3f8 (81c3e23 plus the set itself). It hands the set (cases.yaml and the case folders beside this file) to the shared held-out runner.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "verify_job_selector_without_manual_selector": (
        False,
        "missed: a Job selector without manualSelector (the API server generates it)",
    ),
    "verify_job_indexed_without_completions": (True, "api-validation: Indexed completion mode needs completions"),
    "verify_job_log_shipper_as_regular_container": (
        False,
        "missed: a never-ending regular container keeps the Job from completing",
    ),
    "catalog_env_field_ref_whole_labels": (False, "missed: env fieldRef metadata.labels (only labels['key'])"),
    "verify_job_env_reference_before_definition": (
        True,
        "env-reference-defined: $(REGISTRY_BUCKET) used above its definition stays literal",
    ),
    "catalog_dns_policy_none_with_options_only": (
        True,
        "api-validation: dnsPolicy None needs dnsConfig nameservers",
    ),
    "catalog_page_sub_path_absolute": (False, "missed: an absolute subPath"),
    "catalog_config_mounted_over_etc_nginx": (
        False,
        "missed: a ConfigMap mounted over /etc/nginx hides nginx.conf",
    ),
    "catalog_preferred_anti_affinity_without_weight": (
        True,
        "api-validation: a preferred term's weight must be 1-100 (and the schema: weight required)",
    ),
    "catalog_node_affinity_does_not_exist_with_values": (
        True,
        "api-validation: DoesNotExist takes no values",
    ),
    "flow_log_s3_aggregation_interval_30": (False, "missed: a flow log's max aggregation interval 30 (60 or 600)"),
    "flow_log_s3_destination_bucket_name": (False, "missed: a flow log's S3 destination given as a name, not an ARN"),
    "flow_log_role_without_create_log_stream": (
        False,
        "missed: a flow log delivery role without logs:CreateLogStream",
    ),
    "dlm_snapshot_interval_five_hours": (False, "missed: a DLM schedule interval of 5 hours"),
    "dlm_targets_provider_default_tag": (
        False,
        "missed: a DLM target tag from provider default_tags, which CSI-made volumes never carry",
    ),
    "dlm_targets_claim_template_name": (
        False,
        "missed: a DLM target tag naming the claim template, not the claims",
    ),
    "catalog_htpasswd_secret_basic_auth_type": (
        True,
        "api-validation: a basic-auth Secret without username or password",
    ),
    "catalog_htpasswd_plain_password": (
        False,
        "missed: an htpasswd entry with a plain password (nginx reads it as a crypt() hash)",
    ),
}

AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "verify_job_selector_without_manual_selector": (
        True,
        "api-validation: `selector` not auto-generated (ValidateGeneratedSelector)",
    ),
    "verify_job_log_shipper_as_regular_container": (
        True,
        "job-containers-exit: the OpenTelemetry Collector as a regular container never exits",
    ),
    "catalog_env_field_ref_whole_labels": (True, "api-validation: env fieldRef 'metadata.labels' is not supported"),
    "catalog_page_sub_path_absolute": (True, "api-validation: subPath must be a relative path"),
    "catalog_config_mounted_over_etc_nginx": (True, "mount-hides-image: the mount hides /etc/nginx/nginx.conf"),
    "flow_log_s3_aggregation_interval_30": (True, "aws-api-values: maxAggregationInterval takes 60 or 600"),
    "flow_log_s3_destination_bucket_name": (True, "aws-api-values: logDestination is the bucket's name, not its ARN"),
    "flow_log_role_without_create_log_stream": (
        True,
        "flow-log-delivery-role: the role does not allow logs:CreateLogStream on the group",
    ),
    "dlm_snapshot_interval_five_hours": (True, "aws-api-values: createRule.interval takes 1, 2, 3, 4, 6, 8, 12 or 24"),
    "dlm_targets_provider_default_tag": (
        True,
        "dlm-targets-volumes: provider default tags never reach the CSI driver's volumes",
    ),
    "dlm_targets_claim_template_name": (
        True,
        "dlm-targets-volumes: pvc/name is the claim template's name, not a claim's",
    ),
    "catalog_htpasswd_plain_password": (True, "htpasswd-hash: a password in clear, with no scheme nginx recognises"),
}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 36, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
