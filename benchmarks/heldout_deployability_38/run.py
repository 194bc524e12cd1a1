"""Held-out deployability set 38: 18 defects and 8 correct variants of examples/single-region, written blind.

Run from the repository root:

    .venv/bin/python -m benchmarks.heldout_deployability_38.run

``cases.yaml`` says, per case, what changed and what a real ``pulumi up`` (or the running platform) does.
``JUDGEMENT`` stays empty: the author did not run the project's checks against the set.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 38, JUDGEMENT))
