"""Held-out deployability set 33: 18 defects and 8 correct variants of examples/single-region, written blind.

Run from the repository root: ``python -m benchmarks.heldout_deployability_33.run`` (or
``python benchmarks/heldout_deployability_33/run.py``). The cases are in ``cases.yaml``; ``README.md`` says how
they were chosen and checked against their sources. JUDGEMENT is the reading of the blind run's messages,
written after it.

The blind run: 5/18 caught, 3/18 for the right reason. The security policy ``s3-buckets-private-versioned-encrypted``
(a data store's hardening, not whether it deploys) flagged the correct ALB log bucket for lacking versioning, and was
the only new finding on two defects (the internet-facing ALB, the alarm in AWS/ELB): those are judged caught for
the wrong reason, and the correct program counts as flagged (1/8), by no deployability rule (0/8).
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "pod_cidr_secondary_block_192_168": (False, "missed: a 192.168/16 secondary block beside a 10/8 primary"),
    "pod_cidr_secondary_block_whole_100_64_slash_10": (False, "missed: a /10 VPC block (blocks are /16 to /28)"),
    "manifest_signing_key_ecc_with_rotation": (False, "missed: rotation on an asymmetric KMS key"),
    "manifest_signer_policy_on_alias_arn": (False, "missed: kms:Sign granted on the alias ARN, not the key"),
    "manifest_signer_rsa_algorithm_on_ecc_key": (False, "missed: an RSA signing algorithm on an ECC key"),
    "manifest_signer_second_oidc_provider": (
        True,
        "aws-api-replay: CreateOpenIDConnectProvider EntityAlreadyExists (a second provider for the issuer URL)",
    ),
    "manifest_signer_service_account_custom_audience": (
        False,
        "missed: a token audience the role's trust and the OIDC provider do not accept",
    ),
    "manifest_signer_boundary_s3_read_only": (False, "missed: a permissions boundary that denies kms:Sign"),
    "tools_alb_single_private_subnet": (True, "aws-resource-schema: an ALB needs at least 2 subnets (cfn-lint E3680)"),
    "tools_alb_access_logs_to_sse_kms_bucket": (False, "missed: ALB access logs to an SSE-KMS bucket"),
    "tools_alb_internet_facing_in_private_subnets": (
        False,
        "wrong reason: only the log bucket's versioning (a security policy) fired",
    ),
    "tools_alb_5xx_alarm_in_classic_elb_namespace": (
        False,
        "wrong reason: only the log bucket's versioning (a security policy) fired",
    ),
    "fargate_publish_profile_in_public_subnets": (False, "missed: a Fargate profile in public subnets"),
    "fargate_publish_profile_whole_serving_namespace": (
        False,
        "missed: a namespace-wide Fargate profile that takes the GPU pods",
    ),
    "status_page_sysctl_somaxconn": (False, "missed: an unsafe sysctl the kubelet forbids"),
    "status_page_projected_token_five_minutes": (False, "missed: a projected token shorter than 10 minutes"),
    "status_page_service_require_dual_stack": (False, "missed: RequireDualStack on a single-stack cluster"),
    "status_page_hpa_scale_down_zero_pods_policy": (
        True,
        "api-validation: a scaling policy's value must be greater than zero",
    ),
}

# After the set's fixes (not held out: written with these programs in view), read from results-after-fixes.md.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "pod_cidr_secondary_block_192_168": (True, "vpc-cidr-block: 192.168/16 restricted beside a 10/8 primary"),
    "pod_cidr_secondary_block_whole_100_64_slash_10": (True, "vpc-cidr-block: a /10 (blocks are /16 to /28)"),
    "manifest_signing_key_ecc_with_rotation": (True, "aws-api-values: EnableKeyRotation on an asymmetric key"),
    "manifest_signer_policy_on_alias_arn": (True, "iam-resource-type and aws-cli-permissions: kms:Sign on the key"),
    "manifest_signer_rsa_algorithm_on_ecc_key": (True, "kms-key-usage: RSASSA_PSS_SHA_256 on ECC_NIST_P256"),
    "manifest_signer_service_account_custom_audience": (
        True,
        "service-account-trust: the token's audience is not the trust's aud",
    ),
    "manifest_signer_boundary_s3_read_only": (True, "aws-cli-permissions: no permissions boundary allows kms:Sign"),
    "tools_alb_access_logs_to_sse_kms_bucket": (True, "lb-access-log-bucket: ALB logs support only SSE-S3"),
    "tools_alb_internet_facing_in_private_subnets": (
        True,
        "lb-subnets: internet-facing, only in subnets without an internet gateway route",
    ),
    "tools_alb_5xx_alarm_in_classic_elb_namespace": (
        True,
        "alarm-metric-exists: an ALB's arn_suffix publishes to AWS/ApplicationELB",
    ),
    "fargate_publish_profile_in_public_subnets": (True, "fargate-private-subnets: a subnet routed to the IGW"),
    "fargate_publish_profile_whole_serving_namespace": (True, "fargate-pod-supported: GPU pods taken by the profile"),
    "status_page_sysctl_somaxconn": (True, "sysctls-allowed: net.core.somaxconn not allowlisted"),
    "status_page_projected_token_five_minutes": (True, "api-validation: expirationSeconds under 600"),
    "status_page_service_require_dual_stack": (True, "cluster-ip-in-range: RequireDualStack on an IPv4 cluster"),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 33, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
