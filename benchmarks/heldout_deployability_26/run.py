"""Held-out deployability set 26 (blind): 18 defects and 8 correct variants of examples/single-region.

Run from the repository root: ``python -m benchmarks.heldout_deployability_26.run``. JUDGEMENT is filled in only
after the messages have been read, by someone other than the set's author.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# case id -> (right reason?, why): written after reading the check's messages, never before.
JUDGEMENT: dict[str, tuple[bool, str]] = {}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 26, JUDGEMENT))
