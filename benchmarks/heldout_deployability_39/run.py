"""Held-out deployability set 39: 18 defects and 8 correct variants of examples/single-region, written blind.

Run from the repository root::

    .venv/bin/python -m benchmarks.heldout_deployability_39.run

It loads ``cases.yaml`` beside this file and runs each case through the held-out runner. The blind run was on main
at c856204 (set 38's fixes in); ``JUDGEMENT`` is the reading of its messages.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "kafka_dev_brokers_in_one_az": (True, "aws-network: MSK takes 2 or 3 client subnets; this cluster has 1"),
    "second_pool_on_chat_node_group": (True, "node-capacity: the two pools' maxima ask 8 GPUs of a group that holds 4"),
    "gpu_group_sized_for_steady_state_below_burst_placement": (
        True,
        "node-capacity: 8 replicas' GPUs against a group of one 4-GPU node",
    ),
    "publish_jobs_into_source_bucket": (
        True,
        "weights-published: nothing publishes the weights to the registry prefix the pool fetches",
    ),
    "manifest_signing_key_ecc_default_usage": (True, "aws-api-values: an ECC_NIST_P256 key cannot be ENCRYPT_DECRYPT"),
    "prompt_cache_efs_one_zone_mount_targets_every_az": (
        True,
        "aws-api-values: a One Zone file system's mount targets must be in its zone",
    ),
}

# Read after set 39's fixes (the tree the after-fixes run names); the blind reading stands for the rest.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "tgw_attachment_private_and_public_subnets": (
        True,
        "one-subnet-per-zone: two subnets of one AZ in a transit gateway attachment",
    ),
    "grafana_cognito_domain_with_reserved_word": (
        True,
        "aws-api-values: a Cognito prefix domain with the reserved word cognito",
    ),
    "grafana_cognito_client_without_identity_providers": (
        True,
        "cognito-client-sign-in: OAuth flows with no supported identity provider",
    ),
    "prompt_server_spread_match_label_keys_in_selector": (
        True,
        "api-validation: a key in both matchLabelKeys and the labelSelector",
    ),
    "prompt_cache_access_point_without_creation_info": (
        True,
        "efs-access-point-root: a root directory that does not exist, without creation_info",
    ),
    "corp_resolver_endpoint_single_subnet": (
        True,
        "aws-api-values: a Resolver endpoint takes at least two IP addresses",
    ),
    "corp_resolver_rule_not_associated": (True, "resolver-forwarding: a FORWARD rule no association attaches to a VPC"),
    "corp_resolver_security_group_without_egress": (
        True,
        "resolver-forwarding: the outbound endpoint's groups allow no egress to the target on 53",
    ),
    "foundation_admin_role_is_deploy_role": (
        False,
        "not a defect on this tree: the cluster now creates itself without the creator bootstrap entry when admin_role_arns lists the deploying identity",
    ),
    "tenant_key_secret_on_cmk": (
        False,
        "not a defect on this tree: the gateways' role now has kms:Decrypt through Secrets Manager (kms:ViaService); kms-grant catches the same secret on the old role",
    ),
    "grafana_cognito_callback_trailing_slash": (
        False,
        "missed: Grafana's root_url is not in the program, so the redirect it sends is not known offline",
    ),
    "prompt_cache_access_point_root_owned_directory": (
        False,
        "missed: no pod of the program mounts the access point, and a read-only share may be root-owned",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 39, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
