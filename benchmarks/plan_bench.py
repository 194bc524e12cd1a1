"""Wall time of `tokenplane plan` on the byteion blueprint, against a bare interpreter start.

All cases run in the same process tree, interleaved, so that machine noise hits them alike.
Targets: the capacity fast path (`plan --capacity-only`) under 0.5 s; the full plan, which
also renders the Pulumi graph under the mock runtime and validates every Kubernetes object,
under 5 s. A breakdown of the full plan's phases, measured in-process, says where time goes.

Run: python benchmarks/plan_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "stacks" / "byteion.yaml"
CAPACITY_TARGET_S = 0.5
FULL_TARGET_S = 5.0


# A normal install caches bytecode; some sandboxes set PYTHONDONTWRITEBYTECODE, which would make every
# run recompile the project and measure the compiler instead of tokenplane.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _time(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return elapsed


def _breakdown() -> list[tuple[str, float]]:
    """Phases of one full plan, in a fresh interpreter, so that first-import costs count."""
    code = f"""
import time, json
t = [time.perf_counter()]
from tokenplane.load import load_spec; from tokenplane.planner import plan
spec = load_spec({str(SPEC)!r}); plan(spec); t.append(time.perf_counter())
import pulumi, pulumi_aws, pulumi_kubernetes, components.platform; t.append(time.perf_counter())
from tokenplane import render as R
result = R.render(spec, validate=False); t.append(time.perf_counter())
R._check(result.resources, spec.platform.kubernetes_version); t.append(time.perf_counter())
print(json.dumps([len([r for r in result.resources if r.custom])] + [b - a for a, b in zip(t, t[1:])]))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=ENV, capture_output=True, text=True, check=True
    ).stdout
    import json

    count, *phases = json.loads(out)
    names = [
        "load spec + capacity plan",
        "import pulumi SDKs + components",
        "register resources under mocks",
        "validate Kubernetes objects",
    ]
    return [("resources", count), *zip(names, phases, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    cases = {
        "bare interpreter (python -c pass)": [sys.executable, "-c", "pass"],
        "plan --capacity-only": [sys.executable, "-m", "tokenplane", "plan", str(SPEC), "--capacity-only"],
        "plan --capacity-only --json": [
            sys.executable,
            "-m",
            "tokenplane",
            "plan",
            str(SPEC),
            "--capacity-only",
            "--json",
        ],
        "plan (capacity + render + validate)": [sys.executable, "-m", "tokenplane", "plan", str(SPEC)],
    }
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for argv in cases.values():  # warm-up: bytecode caches and the OS page cache
        _time(argv)
    for _ in range(args.runs):
        for name, argv in cases.items():
            samples[name].append(_time(argv))
    bare = statistics.median(samples["bare interpreter (python -c pass)"])
    print(f"{'case':40} {'median s':>9} {'min s':>7} {'x bare':>7}")
    for name, values in samples.items():
        med = statistics.median(values)
        print(f"{name:40} {med:9.3f} {min(values):7.3f} {med / bare:7.1f}")
    fast = statistics.median(samples["plan --capacity-only"])
    full = statistics.median(samples["plan (capacity + render + validate)"])
    print(
        f"capacity fast path {fast:.3f} s {'meets' if fast < CAPACITY_TARGET_S else 'misses'} the {CAPACITY_TARGET_S} s target"
    )
    print(f"full plan {full:.3f} s {'meets' if full < FULL_TARGET_S else 'misses'} the {FULL_TARGET_S} s target")
    print("where the full plan's time goes (one fresh run):")
    for name, value in _breakdown():
        print(f"  {name:40} {value:8.3f}" if isinstance(value, float) else f"  {name:40} {value:8d}")


if __name__ == "__main__":
    main()
