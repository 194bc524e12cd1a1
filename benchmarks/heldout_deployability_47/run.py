"""Held-out deployability set 47: 18 defects and 8 correct variants of examples/single-region, written blind.

Run from the repository root: ``python -m benchmarks.heldout_deployability_47.run`` (or
``python benchmarks/heldout_deployability_47/run.py``). Each case folder is a full copy of the example with one
change; ``cases.yaml`` says what changed and what ``pulumi up`` or the running platform does.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 47, JUDGEMENT))
