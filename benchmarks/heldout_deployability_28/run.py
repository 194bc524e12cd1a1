"""Held-out deployability set 28 (blind): 18 defects and 8 correct variants of examples/single-region.

Run it from the repository root: ``.venv/bin/python -m benchmarks.heldout_deployability_28.run [--jobs 2]``.
"""

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# case id -> (caught for the right reason?, why), written after reading the check's messages; empty until then.
JUDGEMENT: dict[str, tuple[bool, str]] = {}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 28, JUDGEMENT))
