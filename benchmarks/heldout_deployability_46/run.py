"""Held-out deployability set 46: 18 defects and 8 correct variants of ``examples/single-region``, written blind.

Run from the repository root::

    .venv/bin/python -m benchmarks.heldout_deployability_46.run

Each case folder is the example with one addition (``cases.yaml`` says what and why it fails or works).
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 46, JUDGEMENT))
