"""Held-out deployability set 42, written blind: 18 defects and 8 correct variants of examples/single-region.

Run it from the repository root with ``.venv/bin/python -m benchmarks.heldout_deployability_42.run``; the runner
(``benchmarks.heldout_runner``) reads ``cases.yaml`` beside this file and reports what the offline checks say of
each case. ``JUDGEMENT`` is left empty for whoever scores the set.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 42, JUDGEMENT))
