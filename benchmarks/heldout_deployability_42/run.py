"""Held-out deployability set 42, written blind: 18 defects and 8 correct variants of examples/single-region.

Run it from the repository root with ``.venv/bin/python -m benchmarks.heldout_deployability_42.run``; the runner
(``benchmarks.heldout_runner``) reads ``cases.yaml`` beside this file and reports what the offline checks say of
each case. The blind run was on main at 5718327 (the set merged onto 91d4810, set 41's fixes in); ``JUDGEMENT`` is
the reading of its messages.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "mirror_pull_secret_dockerconfigjson_under_dockercfg_key": (
        True,
        "api-validation: a dockerconfigjson Secret without the key .dockerconfigjson",
    ),
    "prompts_git_ssh_secret_key_named_id_ed25519": (
        True,
        "api-validation: an ssh-auth Secret without ssh-privatekey",
    ),
    "internal_dns_list_hosted_zones_on_zone_arn": (
        True,
        "iam-resource-type: route53:ListHostedZones authorised only on *",
    ),
    "weights_s3_claim_on_gp3_class": (
        False,
        "wrong reason: access-mode-supported says EBS cannot give ReadOnlyMany and asks for ReadWriteOnce; the defect "
        "is the claim's class, which is not the static S3 volume's, so it never binds to it",
    ),
    "karpenter_nodepool_node_class_ref_name_only": (
        False,
        "wrong reason: render/schema knows no CRD for Karpenter's kinds (and iam-no-wildcards); the defect is a "
        "nodeClassRef without group and kind",
    ),
    "karpenter_node_class_without_ami_selector_terms": (
        False,
        "wrong reason: render/schema knows no CRD for Karpenter's kinds; the defect is amiSelectorTerms missing",
    ),
    "karpenter_subnets_by_discovery_tag": (
        False,
        "wrong reason: render/schema knows no CRD for Karpenter's kinds; the defect is a subnet selector no subnet matches",
    ),
    "karpenter_nodes_own_role_without_access_entry": (
        False,
        "wrong reason: render/schema knows no CRD for Karpenter's kinds; the defect is a node role without an access entry",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 42, JUDGEMENT))
