"""Wall time of `tokenplane plan stacks/byteion.yaml` against a bare interpreter start.

Both are measured in the same run, interleaved, so that machine noise hits both alike.
The target is under 0.5 s wall for the plan. Run: python benchmarks/plan_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "stacks" / "byteion.yaml"
TARGET_S = 0.5


def _time(argv: list[str], expect: int = 0) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != expect:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    cases = {
        "bare interpreter (python -c pass)": [sys.executable, "-c", "pass"],
        "import tokenplane.cli": [sys.executable, "-c", "import tokenplane.cli"],
        "plan byteion.yaml (tables)": [sys.executable, "-m", "tokenplane", "plan", str(SPEC)],
        "plan byteion.yaml --json": [sys.executable, "-m", "tokenplane", "plan", str(SPEC), "--json"],
    }
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, argv in cases.items():
            samples[name].append(_time(argv))
    bare = statistics.median(samples["bare interpreter (python -c pass)"])
    print(f"{'case':40} {'median s':>9} {'p90 s':>7} {'x bare':>7}")
    for name, values in samples.items():
        med = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1] if len(values) >= 2 else med
        print(f"{name:40} {med:9.3f} {p90:7.3f} {med / bare:7.1f}")
    plan = statistics.median(samples["plan byteion.yaml (tables)"])
    verdict = "meets" if plan < TARGET_S else "misses"
    print(f"plan wall {plan:.3f} s {verdict} the {TARGET_S} s target; {plan - bare:.3f} s above bare start-up")


if __name__ == "__main__":
    main()
