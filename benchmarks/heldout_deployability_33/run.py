"""Held-out deployability set 33: 18 defects and 8 correct variants of examples/single-region, written blind.

Run from the repository root: ``python -m benchmarks.heldout_deployability_33.run`` (or
``python benchmarks/heldout_deployability_33/run.py``). The cases are in ``cases.yaml``; ``README.md`` says how
they were chosen and checked against their sources.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 33, JUDGEMENT))
