"""The mutation suite's per-policy detection, printed in pytest's terminal summary."""

from __future__ import annotations

import sys
from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    suite = sys.modules.get("tests.policies.test_mutations")  # only when the suite was collected
    if suite is None or not suite.DETECTION:
        return
    from tests.policies.mutations import MUTATIONS

    DETECTION: dict[str, tuple[bool, bool]] = suite.DETECTION  # noqa: N806 - the suite's name for it
    caught = sum(1 for flagged, clean in DETECTION.values() if flagged and clean)
    terminalreporter.section("policy mutation detection")
    terminalreporter.write_line(
        f"{caught}/{len(MUTATIONS)} policies caught their mutation and passed the fixed program"
    )
    for name in sorted(MUTATIONS):
        flagged, clean = DETECTION.get(name, (False, False))
        if name not in DETECTION:
            verdict = "NOT RUN/ERROR"
        else:
            verdict = "caught" if flagged and clean else ("MISSED" if not flagged else "FALSE POSITIVE")
        terminalreporter.write_line(f"  {verdict:<14} {name:<40} {MUTATIONS[name].mutation}")
