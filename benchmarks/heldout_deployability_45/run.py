"""Held-out deployability set 45: 18 defects and 8 correct variants of ``examples/single-region``, written blind.

Run from the repository root::

    .venv/bin/python -m benchmarks.heldout_deployability_45.run

Each case folder is a full copy of the example's program with one change; ``cases.yaml`` says what changed and what
``pulumi up`` (or the running platform) does, with a public reference.
The blind run was on main at 23156c0 (the set merged onto 48c5884, set 44's fixes in); ``JUDGEMENT`` is the reading
of its messages.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "weights_lustre_persistent2_capacity_1000_gib": (
        True,
        "aws-resource-schema: StorageCapacity 1000 under the 1,200 GiB minimum of a Lustre file system (cfn-lint E3725)",
    ),
    "model_cards_lustre_pv_mount_name_fsx": (
        False,
        "addon-iam only: the FSx CSI add-on without an IAM role, not the mount name that fails every mount",
    ),
    "model_cards_lustre_claim_1_2_ti_on_1200_gi_volume": (
        True,
        "claim-binds: the claim's 1.2Ti is more than the volume's 1200Gi (requested PV is too small)",
    ),
    "model_cards_lustre_claim_read_only_many": (
        True,
        "claim-binds: ReadOnlyMany is not among the volume's access modes (incompatible accessMode)",
    ),
    "model_cards_pinned_to_lustre_zone_on_multi_az_group": (
        False,
        "addon-iam only: not the zone-pinned pods on a node group that spans three zones",
    ),
    "retrieval_search_three_data_nodes_two_zones": (
        True,
        "opensearch-values: three data nodes over two Availability Zones (an even number is required)",
    ),
    "model_cards_service_in_gateway_namespace": (
        True,
        "service-selects: the Service's selector matches no pod template in its own namespace",
    ),
    "model_cards_anti_affinity_without_topology_key": (
        True,
        "api-validation: a required pod anti-affinity term without a topologyKey (validatePodAffinityTerm)",
    ),
}

AFTER_FIXES: dict[str, tuple[bool, str]] = {
    "weights_lustre_maintenance_window_in_rds_format": (
        True,
        "fsx-settings: weekly_maintenance_start_time 'sun:03:00' is not d:HH:MM (the provider's pattern)",
    ),
    "weights_lustre_log_group_outside_aws_fsx_prefix": (
        True,
        "fsx-settings: the log group's name does not begin with /aws/fsx (CreateFileSystem refuses the destination)",
    ),
    "model_cards_lustre_pv_mount_name_fsx": (
        True,
        "fsx-mount-name: mountname 'fsx' on a PERSISTENT_2 file system, whose mount name is the API's MountName",
    ),
    "retrieval_search_domain_name_over_28_chars": (
        True,
        "opensearch-values: a 34-character domain name, over the 28 the provider and CreateDomain take",
    ),
    "retrieval_search_access_policy_on_domain_arn": (
        True,
        "opensearch-access-policy: es:ESHttp* allowed on the bare domain ARN, which covers no index or API",
    ),
    "usage_stream_on_demand_with_shard_count": (
        True,
        "aws-api-values: an ON_DEMAND stream with shard_count (the provider's CustomizeDiff refuses it)",
    ),
    "usage_stream_endpoint_service_name_kinesis": (
        True,
        "vpc-endpoint-values: com.amazonaws.<region>.kinesis does not exist; the service is kinesis-streams",
    ),
    "model_cards_pod_priority_value_set_directly": (
        True,
        "pod-priority-admits: spec.priority 1000 where the Priority plugin computes 0: every pod is forbidden",
    ),
    "model_cards_liveness_on_healthz_of_static_server": (
        True,
        "probe-path: liveness on /healthz of python's http.server, which serves only the files under /srv (404)",
    ),
    "model_cards_immutable_configmap_fixed_name": (
        True,
        "immutable-config-rollout: a fixed-name immutable ConfigMap replaced under its name, no rollout, never re-read",
    ),
    "model_cards_optional_volume_on_autonamed_configmap": (
        True,
        "references-exist: an optional reference to model-cards, while Pulumi autonames the program's ConfigMap",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 45, JUDGEMENT, {"after-fixes": AFTER_FIXES}))
