"""Write the README's AWSGuard and Pod Security Standards tables from runs (tests/policies/comparison.py).

    .venv/bin/python scripts/policy_comparison.py          # rewrite the tables between the README's markers
    .venv/bin/python scripts/policy_comparison.py --check  # exit 1 when the README differs from the runs

Needs checkov (pip install -e '.[checkov]'): its column is what it flags on each planted defect.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the planted defects live in the test suite (tests/policies/mutations.py)

from tests.policies import comparison  # noqa: E402
from tokenplane.proof import checkov_scan  # noqa: E402


def main(argv: list[str]) -> int:
    if not checkov_scan.available():
        print(checkov_scan.INSTALL_HINT, file=sys.stderr)
        return 2
    readme = ROOT / "README.md"
    if "--check" in argv:
        text = readme.read_text(encoding="utf-8")
        stale = [n for n in comparison.TABLES if comparison.in_readme(text, n) != comparison.table(n)]
        for name in stale:
            print(
                f"README.md: the {name} table differs from the runs; run scripts/policy_comparison.py", file=sys.stderr
            )
        return 1 if stale else 0
    changed = comparison.write(readme)
    print("README.md: tables rewritten" if changed else "README.md: tables already match the runs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
