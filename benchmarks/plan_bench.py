"""Wall time of `tokenplane plan` on the byteion blueprint, against a bare interpreter start.

All cases run in the same process tree, interleaved, so that machine noise hits them alike.
Each case's CPU seconds (user + system, from the child's rusage) are reported beside its wall
time: on a shared machine the wall time measures the other tenants too.
The capacity fast path is timed with the pool model's pricing cache off (a first plan) and
warm (the same spec planned again: ``tokenplane.model.pricing_cache``), each in its own folder.
Targets: the capacity fast path (`plan --capacity-only`) under 0.5 s; the full plan, which
also renders the Pulumi graph under the mock runtime and validates every Kubernetes object,
under 5 s. A breakdown of the full plan's phases, measured in-process, says where time goes.

Run: python benchmarks/plan_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "stacks" / "byteion.yaml"
CAPACITY_TARGET_S = 0.5
FULL_TARGET_S = 5.0


# A normal install caches bytecode; some sandboxes set PYTHONDONTWRITEBYTECODE, which would make every
# run recompile the project and measure the compiler instead of tokenplane.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _time(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``argv``."""
    cpu, start = _cpu(), time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return elapsed, _cpu() - cpu


def _breakdown() -> list[tuple[str, float]]:
    """Phases of one full plan, in a fresh interpreter, so that first-import costs count."""
    code = f"""
import time, json
t = [time.perf_counter()]
from tokenplane.load import load_spec; from tokenplane.model.planner import plan
spec = load_spec({str(SPEC)!r}); plan(spec); t.append(time.perf_counter())
import pulumi, pulumi_aws, pulumi_kubernetes, components.platform; t.append(time.perf_counter())
from tokenplane.proof import render as R
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
    parser.add_argument("--capacity-only", action="store_true", help="leave out the full plan (tens of seconds)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tokenplane-bench-cache-") as warm_dir:
        _run(args.runs, args.capacity_only, warm_dir)


def _run(runs: int, capacity_only: bool, warm_dir: str) -> None:
    off = ENV | {"TOKENPLANE_CACHE_DIR": "off"}
    warm = ENV | {"TOKENPLANE_CACHE_DIR": warm_dir}
    fast_argv = [sys.executable, "-m", "tokenplane", "plan", str(SPEC), "--capacity-only"]
    cases: dict[str, tuple[list[str], dict[str, str]]] = {
        "bare interpreter (python -c pass)": ([sys.executable, "-c", "pass"], off),
        "plan --capacity-only (no cache)": (fast_argv, off),
        "plan --capacity-only (warm cache)": (fast_argv, warm),
        "plan --capacity-only --json (no cache)": (
            [
                sys.executable,
                "-m",
                "tokenplane",
                "plan",
                str(SPEC),
                "--capacity-only",
                "--json",
            ],
            off,
        ),
    }
    if not capacity_only:
        cases["plan (capacity + render + validate)"] = ([sys.executable, "-m", "tokenplane", "plan", str(SPEC)], off)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for argv, env in cases.values():  # warm-up: bytecode caches, the OS page cache, and the warm pricing cache
        _time(argv, env)
    for _ in range(runs):
        for name, (argv, env) in cases.items():
            samples[name].append(_time(argv, env))
    bare = statistics.median(wall for wall, _ in samples["bare interpreter (python -c pass)"])
    print(f"{'case':42} {'median s':>9} {'min s':>7} {'x bare':>7} {'cpu s':>6}")
    for name, values in samples.items():
        med = statistics.median(wall for wall, _ in values)
        cpu = statistics.median(c for _, c in values)
        print(f"{name:42} {med:9.3f} {min(w for w, _ in values):7.3f} {med / bare:7.1f} {cpu:6.3f}")
    for name in ("plan --capacity-only (no cache)", "plan --capacity-only (warm cache)"):
        fast = statistics.median(wall for wall, _ in samples[name])
        verdict = "meets" if fast < CAPACITY_TARGET_S else "misses"
        print(f"{name}: {fast:.3f} s {verdict} the {CAPACITY_TARGET_S} s target")
    if capacity_only:
        return
    full = statistics.median(wall for wall, _ in samples["plan (capacity + render + validate)"])
    print(f"full plan {full:.3f} s {'meets' if full < FULL_TARGET_S else 'misses'} the {FULL_TARGET_S} s target")
    print("where the full plan's time goes (one fresh run):")
    for name, value in _breakdown():
        print(f"  {name:40} {value:8.3f}" if isinstance(value, float) else f"  {name:40} {value:8d}")


if __name__ == "__main__":
    main()
