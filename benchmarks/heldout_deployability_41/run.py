"""Held-out deployability set 41: 18 deployment defects and 8 correct variants of examples/single-region, written
blind to the project's checks (see README.md).

Run from the repository root: ``.venv/bin/python -m benchmarks.heldout_deployability_41.run``.

The blind run was on main at f393471 (the set merged onto 46e9ec5, set 40's fixes in); ``JUDGEMENT`` is the reading
of its messages.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "registry_index_service_account_autonamed": (
        False,
        "half: service-account-trust says the trust's subject is not the account's, but names the account '' (the "
        "render gave a Kubernetes object without metadata.name no name, where Pulumi autonames it) and also asks to "
        "set serviceAccountName to ''",
    ),
    "registry_index_role_description_with_em_dash": (
        True,
        "aws-resource-schema: the role description's em dash is outside IAM's character pattern",
    ),
    "registry_index_dns_egress_to_coredns_label": (
        True,
        "egress-allowed: DNS egress allowed to k8s-app=coredns, while cluster DNS is k8s-app=kube-dns",
    ),
    "registry_index_dns_egress_port_53_without_protocol": (
        True,
        "egress-allowed: egress to cluster DNS on 53/UDP is blocked (the port's protocol is TCP)",
    ),
    "registry_index_https_egress_to_all_namespaces": (
        True,
        "egress-allowed: egress on 443 reaches no AWS endpoint (a namespace selector selects pods only)",
    ),
    "model_catalog_readiness_probe_scheme_lowercase": (True, "api-validation: a probe scheme 'http', not HTTP/HTTPS"),
    "model_catalog_node_selector_os_capitalised": (
        True,
        "node-capacity: the pod's node selector matches no node group's labels",
    ),
    "model_catalog_cron_scaler_desired_replicas_integer": (
        True,
        "render/schema: KEDA's CRD takes desiredReplicas as a string",
    ),
    "registry_reindex_lambda_ephemeral_storage_256_mb": (
        True,
        "aws-resource-schema: EphemeralStorage.Size 256 under the minimum of 512",
    ),
    "catalog_table_billing_mode_on_demand": (
        True,
        "aws-resource-schema: BillingMode ON_DEMAND is not PAY_PER_REQUEST or PROVISIONED",
    ),
    "catalog_table_attribute_type_string": (True, "aws-resource-schema: AttributeType STRING is not B, N or S"),
}

# Read after set 41's fixes (the tree the after-fixes run names); the blind reading stands for the rest.
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "registry_index_service_account_autonamed": (
        True,
        "service-account-trust: the trust's subject names registry-index, the account is the autonamed "
        "eu-registry-index-sa-<hex> (the render now names unnamed Kubernetes objects as pulumi-kubernetes does)",
    ),
    "registry_index_role_with_s3_read_only_managed_policy": (
        True,
        "aws-cli-permissions: aws s3 cp needs s3:PutObject, which AmazonS3ReadOnlyAccess does not allow",
    ),
    "registry_index_non_root_without_user_on_root_image": (
        True,
        "run-as-user: runAsNonRoot without runAsUser on the AWS CLI image, which runs as root",
    ),
    "registry_index_upload_with_public_read_acl": (
        True,
        "s3-acls-disabled: aws s3 cp --acl public-read into a bucket with ACLs disabled",
    ),
    "registry_index_scratch_ephemeral_claim_named": (
        True,
        "api-validation: an ephemeral claim template's metadata.name cannot be set",
    ),
    "registry_index_shell_in_args_behind_aws_entrypoint": (
        True,
        "image-command: a shell in args behind the AWS CLI image's aws entrypoint",
    ),
    "model_catalog_cron_scaler_timezone_cest": (
        True,
        "keda-cron-trigger: CEST is no time zone Go's time.LoadLocation loads",
    ),
    "node_monitoring_addon_resolve_conflicts_on_create_preserve": (
        True,
        "aws-api-values: resolve_conflicts_on_create takes NONE or OVERWRITE",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 41, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
