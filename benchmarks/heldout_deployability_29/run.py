"""Held-out deployability set 29 (blind): 18 defects and 8 correct variants of examples/single-region.

Run from the repository root: ``python -m benchmarks.heldout_deployability_29.run``. JUDGEMENT stays empty: the
set's author wrote it blind to the checks, and records no verdicts of its own.
"""

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 29, JUDGEMENT))
