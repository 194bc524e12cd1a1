"""Held-out deployability set 25: run it against this tree with the shared runner.

.venv/bin/python -m benchmarks.heldout_deployability_25.run [--jobs 2] [--only CASE ...] [--label merged-tree]
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The lead's reading of the blind run's messages: case -> (caught for the right reason?, what fired or missed).
JUDGEMENT: dict[str, tuple[bool, str]] = {}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 25, JUDGEMENT))
