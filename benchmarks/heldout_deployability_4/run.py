"""Run the fourth held-out set with the shared runner (``benchmarks/heldout_runner.py``: what counts as caught).

    .venv/bin/python -m benchmarks.heldout_deployability_4.run [--jobs 2] [--only CASE ...] [--label merged-tree]

Writes ``results.json`` and ``results.md`` (or ``results-LABEL.*``) beside this file.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

# The lead's reading of each case's messages: (right reason?, why). Filled in after the first run; a case missing
# here is reported as "not judged".
JUDGEMENT: dict[str, tuple[bool, str]] = {}


if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 4, JUDGEMENT))
