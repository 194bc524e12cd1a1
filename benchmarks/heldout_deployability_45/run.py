"""Held-out deployability set 45: 18 defects and 8 correct variants of ``examples/single-region``, written blind.

Run from the repository root::

    .venv/bin/python -m benchmarks.heldout_deployability_45.run

Each case folder is a full copy of the example's program with one change; ``cases.yaml`` says what changed and what
``pulumi up`` (or the running platform) does, with a public reference.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 45, JUDGEMENT))
