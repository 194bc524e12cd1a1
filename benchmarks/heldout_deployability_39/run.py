"""Held-out deployability set 39: 18 defects and 8 correct variants of examples/single-region, written blind.

Run from the repository root::

    .venv/bin/python -m benchmarks.heldout_deployability_39.run

It loads ``cases.yaml`` beside this file and runs each case through the held-out runner.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 39, JUDGEMENT))
