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

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 39, JUDGEMENT))
