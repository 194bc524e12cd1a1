"""Held-out deployability set 46: 18 defects and 8 correct variants of ``examples/single-region``, written blind.

Run from the repository root::

    .venv/bin/python -m benchmarks.heldout_deployability_46.run

Each case folder is the example with one addition (``cases.yaml`` says what and why it fails or works).
The blind run was on main at 5ef62e7 (the set merged onto 1fb29e6: set 45's fixes and ``aws-api-model`` in);
``JUDGEMENT`` is the reading of its messages. Every case then also carried one false positive, ``aws-resource-schema``
on the status API's Lambda permission (a sourceArn built from an API output the mock did not give: 'None/*/*'), so a
case is caught for the right reason only by another finding.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

_ONLY_THE_FALSE_POSITIVE = "only aws-resource-schema's false positive on the Lambda permission's sourceArn ('None/*/*')"

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "status_api_detailed_metrics_without_throttling_limits": (False, _ONLY_THE_FALSE_POSITIVE),
    "status_api_named_stage_behind_stage_less_url": (False, _ONLY_THE_FALSE_POSITIVE),
    "status_lambda_log_levels_with_text_format": (
        True,
        "aws-resource-schema: LogLevel is not supported when LogFormat is set to 'Text' (cfn-lint E3696)",
    ),
    "status_lambda_powertools_layer_from_us_east_1": (False, _ONLY_THE_FALSE_POSITIVE),
    "status_lambda_payload_v1_with_bare_response": (False, _ONLY_THE_FALSE_POSITIVE),
    "status_role_tag_team_capitalised_beside_default_tag": (False, _ONLY_THE_FALSE_POSITIVE),
    "status_role_inline_policy_name_with_spaces": (
        True,
        "aws-name and aws-resource-schema: the policy name 'List registry models' does not match [\\w+=,.@-]+",
    ),
    "status_role_list_bucket_only_from_source_vpc": (False, _ONLY_THE_FALSE_POSITIVE),
    "tools_vpc_peering_overlapping_cidr": (
        True,
        "aws-network: the tools VPC's 10.0.0.0/16 overlaps the cluster VPC's: the VPCs can never be peered",
    ),
    "prober_icmp_net_raw_in_restricted_namespace": (
        True,
        "pod-security-admits: NET_RAW breaks the namespace's enforced restricted level; admission refuses the pods",
    ),
}

AFTER_FIXES: dict[str, tuple[bool, str]] = {
    **{k: v for k, v in JUDGEMENT.items() if v[0]},
    "status_api_permission_source_arn_from_api_arn": (
        True,
        "api-permission-execute-arn: the permission's source ARN is the API's management ARN, not execute-api's",
    ),
    "status_api_detailed_metrics_without_throttling_limits": (
        True,
        "http-api-throttle-limits-set: defaultRouteSettings without throttling limits, sent as 0 (every call 429)",
    ),
    "status_api_named_stage_behind_stage_less_url": (
        True,
        "http-api-url-has-stage: the exported URL is the stage-less endpoint of an API with no $default stage (404)",
    ),
    "status_lambda_powertools_layer_from_us_east_1": (
        True,
        "lambda-layer-region: a us-east-1 layer version on a function in eu-central-1 (layers are regional)",
    ),
    "status_lambda_payload_v1_with_bare_response": (
        True,
        "lambda-proxy-response-shape: payload format 1.0 and a handler returning a dict without statusCode (500)",
    ),
    "status_role_tag_team_capitalised_beside_default_tag": (
        True,
        "iam-tag-keys-case: 'Team' beside the default tag 'team' on a role: Duplicate tag keys (case-insensitive)",
    ),
    "status_role_list_bucket_only_from_source_vpc": (
        True,
        "identity-source-vpc: the only s3:ListBucket Allow needs aws:SourceVpc; the Lambda runs outside any VPC",
    ),
    "probes_namespace_enforce_version_without_v": (
        True,
        'pod-security-admits: enforce-version "1.35" must be "latest" or "v1.x": the namespace is refused',
    ),
    "prober_image_pinned_by_short_digest": (
        True,
        "image-reference: a 12-hex-character sha256 digest: invalid reference format, InvalidImageName",
    ),
    "prober_config_flag_single_dash": (
        True,
        "image-command: kingpin reads -config.file as the short flag -c and the exporter exits at start",
    ),
    "prober_module_timeout_without_unit": (
        True,
        "blackbox-config: timeout: 5 without a unit: the exporter's loader refuses the config and exits",
    ),
    "prober_monitor_module_not_in_config": (
        True,
        "blackbox-probe-params: the ServiceMonitor asks for a module the mounted config does not define (400)",
    ),
    "prober_monitor_two_targets_in_one_endpoint": (
        True,
        "blackbox-probe-params: two target values; the handler reads the first only",
    ),
    "prober_monitor_without_probe_path": (
        True,
        "blackbox-probe-params: params on the default /metrics path, where no probe runs",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 46, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
