"""Held-out deployability set 26 (blind): 18 defects and 8 correct variants of examples/single-region.

Run from the repository root: ``python -m benchmarks.heldout_deployability_26.run``. JUDGEMENT is filled in only
after the messages have been read, by someone other than the set's author.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The lead's reading of the blind run's messages: case -> (caught for the right reason?, what fired or missed).
# The blind run: main at cf97d77 (session 22's fixes and rds-values' secret passwords; none written with this set in
# view; the set was written from 09:20 to 09:31 UTC). The author had set 25's brief: a fair sample of common mistakes.
JUDGEMENT: dict[str, tuple[bool, str]] = {
    "eks_metrics_server_addon_declared_again": (False, "missed: a second EKS add-on of a name the cluster installs"),
    "evals_db_max_storage_below_allocated": (True, "rds-values: maxAllocatedStorage under allocatedStorage"),
    "evals_db_backup_retention_forty_days": (True, "aws-resource-schema: BackupRetentionPeriod over 35"),
    "batch_launch_template_user_data_not_mime": (False, "missed: launch template user data not MIME multi-part"),
    "gateway_alias_record_with_own_zone_id": (False, "missed: an alias target's zone id that is not the NLB's"),
    "registry_inventory_egress_except_ipv6_in_ipv4_block": (True, "api-validation: an except outside its cidr"),
    "gateway_availability_rule_for_5min": (True, "render/schema: the PrometheusRule CRD's Duration pattern"),
    "qdrant_archive_headless_service_with_cluster_ip": (False, "missed: a StatefulSet governed by a ClusterIP Service"),
    "qdrant_archive_cluster_without_p2p_ingress": (False, "missed: Qdrant peers refused on 6335 by their own policy"),
    "evals_report_iam_policy_on_instance_identifier": (
        False,
        "generated-name-resolves took the instance identifier for a stale literal (it compares with the mock's id, "
        "the resource id): not that rds-db:connect wants the DbiResourceId",
    ),
    "registry_inventory_policy_s3_arn_with_region_account": (
        True,
        "aws-api-replay (MalformedPolicyDocument: region in an S3 ARN) and iam-resource-type (no bucket ARN)",
    ),
    "registry_inventory_egress_dns_only": (True, "egress-allowed: an IRSA pod with egress on 53 only"),
    "docs_hpa_target_extensions_v1beta1": (False, "missed: an HPA target in extensions/v1beta1"),
    "gpu_dashboard_configmap_in_serving_namespace": (False, "missed: a dashboard outside the sidecar's namespace"),
    "evals_db_cname_in_zone_without_vpc": (False, "missed: an internal name in an undelegated public zone"),
    "evals_report_verify_full_without_ca_bundle": (False, "missed: sslmode=verify-full without a root certificate"),
    "evals_report_pghost_from_endpoint_with_port": (False, "missed: PGHOST from the endpoint (host:port)"),
    "evals_db_free_storage_alarm_threshold_in_gib": (
        False,
        "generated-name-resolves on the DBInstanceIdentifier dimension (a false finding: the identifier is right), "
        "not the threshold in GiB of a metric in bytes",
    ),
}


# The run after the fixes this set's misses became (not held out).
AFTER_FIXES: dict[str, tuple[bool, str]] = {
    **JUDGEMENT,
    "eks_metrics_server_addon_declared_again": (True, "aws-unique-key: two add-ons metrics-server on one cluster"),
    "batch_launch_template_user_data_not_mime": (True, "node-user-data: AL2023 user data not MIME multi-part"),
    "gateway_alias_record_with_own_zone_id": (True, "alias-target-zone: the NLB's zone is Z3F0SRJ5LGBH90"),
    "qdrant_archive_headless_service_with_cluster_ip": (
        True,
        "governing-service-headless: the set's governing Service has a cluster IP; its pod names never resolve",
    ),
    "qdrant_archive_cluster_without_p2p_ingress": (True, "flow-allowed: the set's peers refused on 6335"),
    "evals_report_iam_policy_on_instance_identifier": (
        True,
        "iam-resource-matches: a dbuser ARN on the identifier where rds-db:connect takes the resource id",
    ),
    "docs_hpa_target_extensions_v1beta1": (True, "target-exists: extensions/v1beta1 Deployments are not served"),
    "gpu_dashboard_configmap_in_serving_namespace": (
        True,
        "dashboard-loaded: the ConfigMap is outside the sidecar's namespace",
    ),
    "evals_db_cname_in_zone_without_vpc": (True, "zone-answers: a VPC-only target in an undelegated public zone"),
    "evals_report_verify_full_without_ca_bundle": (True, "tls-ca-file-present: no root.crt under HOME"),
    "evals_report_pghost_from_endpoint_with_port": (True, "host-without-port: PGHOST is the endpoint (host:port)"),
    "evals_db_free_storage_alarm_threshold_in_gib": (
        True,
        "alarm-threshold-unit: FreeStorageSpace in bytes against 10 (generated-name-resolves no longer fires)",
    ),
}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 26, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
