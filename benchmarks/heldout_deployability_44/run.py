"""Held-out deployability set 44, written blind: 18 defects and 8 correct variants of examples/single-region.

Run it from the repository root with ``.venv/bin/python -m benchmarks.heldout_deployability_44.run``; the runner
(``benchmarks.heldout_runner``) reads ``cases.yaml`` beside this file and reports what the offline checks say of
each case. The blind run was on main at ab4a401 (the set merged onto 3c63c79, set 43's fixes in); ``JUDGEMENT`` is
the reading of its messages.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "ssm_pool_url_parameter_path_without_leading_slash": (
        True,
        "aws-api-values: a hierarchical parameter name without its leading slash (Parameter name must be a fully"
        " qualified name)",
    ),
    "athena_workgroup_cutoff_given_in_megabytes": (
        True,
        "aws-resource-schema: BytesScannedCutoffPerQuery 1024, below the schema's minimum of 10,000,000",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 44, JUDGEMENT))
