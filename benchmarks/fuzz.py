"""The fuzz suites, scaled up, and the cases they tried: schemathesis against the gateway, hypothesis on the loader.

Runs ``tests/serving/gateway/test_gateway_fuzz.py`` (schemathesis: every operation of the
live gateway's ``/openapi.json``, valid and invalid requests, no 5xx and every
answer as documented) and ``tests/test_load_fuzz.py`` (mutated YAML: the loader
returns a spec or a located error, never a crash) with ``TOKENPLANE_FUZZ_SCALE``
times their CI sizes, then reports what they wrote to ``tests/.fuzz_counts.json``
and whether they passed. A failure is reported, not raised: the counts still
matter, and ``BENCHMARKS.md`` says it failed.

Run: ``python benchmarks/fuzz.py [--quick] [--json]`` (``--quick``: the CI sizes).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COUNTS = ROOT / "tests" / ".fuzz_counts.json"
SUITES = ("tests/serving/gateway/test_gateway_fuzz.py", "tests/test_load_fuzz.py")
FULL_SCALE = 8  # about 4,800 gateway requests and 11,700 mutated specs in about two minutes on two cores


def run(scale: float) -> dict[str, object]:
    COUNTS.unlink(missing_ok=True)  # only this run's counts are reported
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SUITES]
    env = {**os.environ, "TOKENPLANE_FUZZ_SCALE": str(scale)}
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    counts = json.loads(COUNTS.read_text(encoding="utf-8")) if COUNTS.exists() else {}
    return {
        "scale": scale,
        "passed": done.returncode == 0,
        "summary": lines[-1] if lines else done.stderr.strip()[-300:],
        "failures": [line for line in lines if line.startswith("FAILED")][:10],
        # What failed, in pytest's own words: a fuzz finding is worth nothing without its input.
        "details": [line[:300] for line in lines if line.startswith("E ")][:20],
        "gateway": counts.get("gateway"),
        "load": counts.get("load"),
    }


def total(counts: object) -> object:
    return counts.get("total") if isinstance(counts, dict) else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the CI sizes instead of 8x")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    result = run(1 if args.quick else FULL_SCALE)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['summary']}: gateway {total(result['gateway'])} cases, loader {total(result['load'])} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
