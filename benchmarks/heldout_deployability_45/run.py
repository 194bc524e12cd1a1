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

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 45, JUDGEMENT))
