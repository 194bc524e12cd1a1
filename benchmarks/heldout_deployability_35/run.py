"""Held-out deployability set 35: 18 defects and 8 correct variants of examples/single-region, written blind.

Run from the repository root: ``.venv/bin/python -m benchmarks.heldout_deployability_35.run``. It runs the
project's offline checks on every case in cases.yaml and reports what they catch. JUDGEMENT is filled in after the
first run, by reading each finding against the case's expected reason.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 35, JUDGEMENT))
