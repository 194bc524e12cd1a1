"""Held-out deployability set 44: 18 defects and 8 correct variants of examples/single-region, written blind.

Run from the repository root: ``.venv/bin/python -m benchmarks.heldout_deployability_44.run``
(cases.yaml lists each case, its kind and the expected reason; README.md says how the set was written).
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 44, JUDGEMENT))
