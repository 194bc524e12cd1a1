"""Held-out deployability set 48: 18 defects and 8 correct variants of examples/single-region, written blind.

Run from the repository root: ``python -m benchmarks.heldout_deployability_48.run``. ``cases.yaml`` says what each case
changes and what a real ``pulumi up`` (or the running platform) does with it; ``JUDGEMENT`` holds any per-case verdicts
recorded after the offline checks were run against the set.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 48, JUDGEMENT))
