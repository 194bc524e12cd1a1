"""Held-out deployability set 47: 18 defects and 8 correct variants of examples/single-region, written blind.

Run from the repository root: ``python -m benchmarks.heldout_deployability_47.run`` (or
``python benchmarks/heldout_deployability_47/run.py``). Each case folder is a full copy of the example with one
change; ``cases.yaml`` says what changed and what ``pulumi up`` or the running platform does.
The blind run was on main at 94aeb7f (the set merged onto 50ce225, set 46's fixes in); ``JUDGEMENT`` is the reading
of its messages.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "model_docs_key_rotation_every_30_days": (
        True,
        "aws-api-values, aws-api-replay and aws-resource-schema: a 30-day rotation period, under EnableKeyRotation's 90",
    ),
    "gpu_fleet_dashboard_labelled_true": (
        True,
        "dashboard-loaded: the Grafana sidecar selects grafana_dashboard='1'; the ConfigMap's 'true' is never read",
    ),
}

AFTER_FIXES: dict[str, tuple[bool, str]] = {
    **JUDGEMENT,
    "model_docs_cdn_forwarded_values_with_cache_policy": (
        True,
        "cloudfront-distribution-accepted: a cache policy and forwarded_values on one behavior (InvalidArgument)",
    ),
    "model_docs_cdn_oac_on_s3_website_endpoint": (
        True,
        "cloudfront-distribution-accepted: an s3 origin access control on a custom (website) origin: types differ",
    ),
    "model_docs_cdn_oac_on_aws_managed_key_bucket": (
        True,
        "cloudfront-oac-kms-decrypt: the bucket's aws/s3 key cannot let cloudfront.amazonaws.com kms:Decrypt (403)",
    ),
    "model_docs_key_policy_object_arn_context_with_bucket_key": (
        True,
        "kms-s3-encryption-context: object-ARN context condition with an S3 Bucket Key, which sends the bucket ARN",
    ),
    "ci_deployer_mapped_in_aws_auth_configmap": (
        True,
        "eks-access: aws-auth maps the CI role on a cluster in API mode, which ignores aws-auth (Unauthorized)",
    ),
    "gpu_node_events_log_group_named_aws_prefix": (
        True,
        "aws-api-values: a log group name starting with aws/ (CreateLogGroup: InvalidParameterException)",
    ),
    "gpu_node_events_log_group_without_resource_policy": (
        True,
        "service-admitted: an EventBridge target log group with no Logs resource policy admitting events (denied)",
    ),
    "gpu_node_events_policy_for_aws_events_prefix_only": (
        True,
        "service-admitted: the resource policy admits EventBridge on /aws/events/* only, not the target group",
    ),
    "model_uploaders_policy_variable_without_version": (
        True,
        "policy-variables-versioned: ${aws:username} in a policy without Version 2012-10-17 is literal text",
    ),
    "tenant_m2m_client_credentials_with_code_flow": (
        True,
        "cognito-client-oauth: client_credentials with the code flow (InvalidOAuthFlowException)",
    ),
    "tenant_m2m_client_credentials_without_secret": (
        True,
        "cognito-client-oauth: client_credentials on a client without a secret (InvalidOAuthFlowException)",
    ),
    "tenant_m2m_scope_without_resource_server_identifier": (
        True,
        "cognito-client-oauth: scope 'invoke' without its resource server identifier (ScopeDoesNotExistException)",
    ),
    "corp_vpn_prefix_list_100_entries_on_cluster_sg": (
        True,
        "security-group-rules-quota: a prefix list of 100 max entries counts as 100 rules, over the 60 per group",
    ),
    "registry_events_on_put_only": (
        True,
        "events-emitted: Put only, while the registry's writers copy (Copy or CompleteMultipartUpload events)",
    ),
    "registry_events_prefix_of_source_layout": (
        True,
        "events-emitted: filterPrefix 'qwen-7b-chat/' starts no key the writers put (models/<name>/<version>/)",
    ),
    "registry_events_to_fifo_topic": (
        True,
        "s3-notification-destination: an SNS FIFO topic, which S3 does not accept as a destination",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 47, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
