"""Held-out deployability set 47: 18 defects and 8 correct variants of examples/single-region, written blind.

Run from the repository root: ``python -m benchmarks.heldout_deployability_47.run`` (or
``python benchmarks/heldout_deployability_47/run.py``). Each case folder is a full copy of the example with one
change; ``cases.yaml`` says what changed and what ``pulumi up`` or the running platform does.
The blind run was on main at 94aeb7f (the set merged onto 50ce225, set 46's fixes in); ``JUDGEMENT`` is the reading
of its messages.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "model_docs_key_rotation_every_30_days": (
        True,
        "aws-api-values, aws-api-replay and aws-resource-schema: a 30-day rotation period, under EnableKeyRotation's 90",
    ),
    "gpu_fleet_dashboard_labelled_true": (
        True,
        "dashboard-loaded: the Grafana sidecar selects grafana_dashboard='1'; the ConfigMap's 'true' is never read",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 47, JUDGEMENT))
