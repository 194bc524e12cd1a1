"""Held-out deployability set 37: 18 defects and 8 correct variants of examples/single-region, written blind.

Run from the repository root: ``.venv/bin/python -m benchmarks.heldout_deployability_37.run`` (cases.yaml lists
the cases; each folder is a full copy of the example's program with one change).
The blind run was on main at 96e725f (set 36's fixes in, the port of 21 more validations not yet).
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "trace_relay_volume_name_camel_case": (True, "api-validation: volume name 'relayConfig' is not a DNS-1123 label"),
    "trace_relay_flags_in_command_not_args": (
        False,
        "wrong reason: only probe-port, on the relay's health check port (13133), which the correct programs flag too",
    ),
    "trace_relay_egress_peer_ipblock_with_namespace_selector": (
        True,
        "api-validation: a peer may not specify both ipBlock and a selector",
    ),
    "trace_relay_pdb_max_unavailable_bare_string": (True, "api-validation: maxUnavailable '50' is not a percent"),
    "trace_relay_pipeline_processor_not_declared": (
        False,
        "wrong reason: only probe-port, on the relay's health check port (13133), which the correct programs flag too",
    ),
    "trace_relay_otlp_receiver_default_endpoint": (
        False,
        "wrong reason: only probe-port, on the relay's health check port (13133), which the correct programs flag too",
    ),
    "trace_relay_s3_exporter_region_us_east_1": (
        False,
        "wrong reason: only probe-port, on the relay's health check port (13133), which the correct programs flag too",
    ),
    "trace_relay_memory_limiter_above_container_limit": (
        False,
        "wrong reason: only probe-port, on the relay's health check port (13133), which the correct programs flag too",
    ),
    "trace_relay_s3_bucket_given_as_arn": (
        False,
        "wrong reason: only probe-port, on the relay's health check port (13133), which the correct programs flag too",
    ),
    "trace_relay_s3_exporter_disable_ssl_on_tls_only_bucket": (
        False,
        "wrong reason: only probe-port, on the relay's health check port (13133), which the correct programs flag too",
    ),
    "reports_bucket_cors_allows_options": (True, "aws-resource-schema: OPTIONS is not a CORS AllowedMethod"),
    "trace_relay_policy_action_put_objects": (True, "iam-name-exists: s3:PutObjects is not an action of s3"),
    "monitoring_endpoint_without_interface_type": (
        False,
        "missed: a VPC endpoint left Gateway for an Interface-only service",
    ),
    "monitoring_endpoint_security_group_prefix_sg": (False, "missed: a security group name starting sg-"),
    "pool_url_parameter_path_without_leading_slash": (
        False,
        "missed: an SSM parameter path without its leading /",
    ),
    "traces_key_alias_without_alias_prefix": (True, "aws-api-values: a KMS alias name must start with alias/"),
    "registry_5xx_alarm_without_request_metrics": (
        False,
        "missed: an S3 request-metric alarm without a metrics configuration or FilterId",
    ),
    "registry_size_alarm_without_storage_type": (
        False,
        "missed: BucketSizeBytes without its StorageType dimension",
    ),
}

AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "trace_relay_flags_in_command_not_args": (True, "exec-argv: a command whose first word is a flag"),
    "trace_relay_pipeline_processor_not_declared": (
        True,
        "otel-components-defined: the pipeline references processor batch, which is not configured",
    ),
    "trace_relay_otlp_receiver_default_endpoint": (
        True,
        "otel-receiver-loopback: the OTLP receiver listens on localhost by default from v0.104.0",
    ),
    "trace_relay_s3_exporter_region_us_east_1": (
        True,
        "collector-s3-export: the exporter's region is not the bucket's (301 PermanentRedirect)",
    ),
    "trace_relay_memory_limiter_above_container_limit": (
        True,
        "otel-memory-limiter: limit_mib at or above the container's memory limit",
    ),
    "trace_relay_s3_bucket_given_as_arn": (True, "collector-s3-export: s3_bucket is a bucket ARN, not its name"),
    "trace_relay_s3_exporter_disable_ssl_on_tls_only_bucket": (
        True,
        "collector-s3-export: disable_ssl against the bucket's aws:SecureTransport deny (403)",
    ),
    "monitoring_endpoint_without_interface_type": (
        True,
        "vpc-endpoint-values: a Gateway endpoint (the default) for an Interface-only service",
    ),
    "monitoring_endpoint_security_group_prefix_sg": (True, "aws-name: group names may not be in the format sg-*"),
    "pool_url_parameter_path_without_leading_slash": (
        True,
        "aws-api-values: a hierarchy name must be fully qualified (a leading /)",
    ),
    "registry_5xx_alarm_without_request_metrics": (
        True,
        "alarm-metric-exists: 5xxErrors needs FilterId and a request-metrics configuration",
    ),
    "registry_size_alarm_without_storage_type": (
        True,
        "alarm-metric-exists: BucketSizeBytes is published with StorageType",
    ),
}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 37, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
