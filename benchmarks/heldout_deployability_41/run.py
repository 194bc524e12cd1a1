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

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 41, JUDGEMENT))
