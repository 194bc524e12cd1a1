"""Held-out deployability set 40: 18 deployment defects and 8 correct variants of examples/single-region,
written blind to the project's offline checks (see README.md).

Run from the repository root:

    .venv/bin/python -m benchmarks.heldout_deployability_40.run

The blind run was on main at bbb194d (the set merged onto 2e2a76e); ``JUDGEMENT`` is the reading of its messages.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "eval_batch_role_max_session_duration_one_day": (
        True,
        "aws-resource-schema: MaxSessionDuration 86400 over the maximum of 43200",
    ),
    "deployers_access_entry_in_system_masters": (
        True,
        "access-entry-request: a Kubernetes group beginning with system: is refused",
    ),
    "batch_node_group_remote_access_with_launch_template": (
        True,
        "aws-api-values: remote_access with a launch template is refused",
    ),
    "weights_shards_success_policy_without_indexed_mode": (
        True,
        "api-validation: spec.successPolicy requires indexed completion mode",
    ),
    "usage_consumer_maximum_concurrency_one": (True, "aws-api-values: maximumConcurrency takes 2-1,000"),
    "gateway_cert_validation_records_for_apex_and_wildcard": (
        False,
        "wrong reason: host-resolves says the certificate's names have no record; the defect is the apex's and the "
        "wildcard's one validation CNAME created twice (the render's ACM mock gave them two)",
    ),
    "gateway_cert_without_transparency_logging": (
        False,
        "wrong reason: host-resolves (the certificate's names have no record in the program); the defect is CT "
        "logging disabled on a public listener",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 40, JUDGEMENT))
