"""Held-out deployability set 31 (written blind to the checks): run it with
``python -m benchmarks.heldout_deployability_31.run`` from the repository root.

JUDGEMENT is left empty: the set's author does not judge the check suite's answers.
"""

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 31, JUDGEMENT))
