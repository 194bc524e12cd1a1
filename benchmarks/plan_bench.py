"""Wall and CPU time of `tokenplane plan --capacity-only` on the three stacks, against a bare interpreter start.

Cases, each a fresh process, interleaved round by round so that machine noise hits them alike:

- ``python -c pass``, the floor any command pays;
- per stack (byteion, dev, minimal), the capacity plan with a cold pricing cache (an empty
  ``TOKENPLANE_CACHE_DIR`` each run: a first plan, which also writes the cache) and with a warm one
  (the same spec planned again: ``tokenplane.model.pricing_cache``);
- on byteion, warm: ``--json``, the ``tokenplane`` console script instead of ``python -m tokenplane``,
  and the same plan without bytecode caches (``PYTHONDONTWRITEBYTECODE`` with an empty
  ``PYTHONPYCACHEPREFIX``: every module compiled on every run, the standard library's too);
- on byteion, cold: ``--jobs 1`` (the pools sized in one process: the baseline of the forked workers,
  ``tokenplane.model.plan_workers``);
- on byteion, cold and warm, from the built wheel installed in a venv (``uv build``, ``uv pip install
  --compile-bytecode``; its dependencies are this environment's, through a ``.pth`` file): the shape
  that ships. The checkout's editable install resolves every ``tokenplane`` import through
  setuptools' editable finder, which a user's install does not;
- without ``--capacity-only``: the full plan (render under Pulumi's mocks, validate every object).

Each case's CPU seconds (user + system, from the child's rusage) are reported beside its wall time,
with the median and range over ``--runs``, and the load average before and after: on a shared machine
the wall time measures the other tenants too, so the CPU seconds are the figure to compare across runs.
A breakdown of one warm capacity plan's CPU, measured in process, says where its time goes.
Target (issue 28): the capacity plan on byteion under 0.5 s wall on a quiet two-core machine.

Run: python benchmarks/plan_bench.py [--runs N (7)] [--capacity-only] [--json] [--update BENCHMARKS.md]
(``python benchmarks/run_all.py --only plan_bench.py`` rewrites its section of BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._common import BYTECODE_ENV, children_cpu_s, spread, update_section  # noqa: E402

TITLE = "`tokenplane plan --capacity-only` on the three stacks (plan_bench.py)"
STACKS = ("byteion", "dev", "minimal")
CAPACITY_TARGET_S = 0.5
FULL_TARGET_S = 5.0
BARE = "python -c pass"
JOBS_ONE = "byteion, cold cache, --jobs 1"
WHEEL_COLD = "byteion, cold cache, installed wheel"
WHEEL_WARM = "byteion, warm cache, installed wheel"

ENV = BYTECODE_ENV  # bytecode cached, as a normal install has it


def _time(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``argv``."""
    cpu, start = children_cpu_s(), time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return elapsed, children_cpu_s() - cpu


# One warm capacity plan's phases in a fresh interpreter (CPU seconds, so that first-import costs count).
_BREAKDOWN = """
import contextlib, io, json, sys, time
cpu = [time.process_time()]
import typer, pydantic.main, yaml
cpu.append(time.process_time())
from tokenplane.commands.process import import_numpy_with_one_blas_thread
import_numpy_with_one_blas_thread()  # as the command imports it, after the spec's models (tokenplane.runtime_env)
from tokenplane.commands.plan_report import print_plan
from tokenplane.load import load_spec
from tokenplane.model.planner import plan
from tokenplane.model.pricing_cache import PricingCache
cpu.append(time.process_time())
spec = load_spec(sys.argv[1]); cpu.append(time.process_time())
result = plan(spec, cache=PricingCache(__import__("pathlib").Path(sys.argv[2]))); cpu.append(time.process_time())
with contextlib.redirect_stdout(io.StringIO()):  # a pipe's page, as the command prints it (no rich)
    print_plan(result)
cpu.append(time.process_time())
print(json.dumps([b - a for a, b in zip(cpu, cpu[1:])]))
"""
_PHASES = (
    "import typer, pydantic, PyYAML",
    "import tokenplane's spec models, numpy (one BLAS thread), planner and views",
    "load and validate the spec",
    "plan (warm pricing cache)",
    "print the tables",
)


def _breakdown(spec: Path, cache_dir: str) -> list[tuple[str, float]]:
    code = [sys.executable, "-c", _BREAKDOWN, str(spec), cache_dir]
    out = subprocess.run(code, cwd=ROOT, env=ENV, capture_output=True, text=True, check=True).stdout
    runs = [json.loads(out)]
    for _ in range(2):  # three runs, the median of each phase: one run is noise on a shared machine
        out = subprocess.run(code, cwd=ROOT, env=ENV, capture_output=True, text=True, check=True).stdout
        runs.append(json.loads(out))
    return [(name, statistics.median(r[i] for r in runs)) for i, name in enumerate(_PHASES)]


def _installed_wheel(scratch: Path) -> Path:
    """The ``tokenplane`` script of the built wheel, installed (bytecode compiled, as pip does) in a venv of its own.

    Its dependencies are this environment's, put on its path by a ``.pth`` file: the same versions,
    without a second install of them.
    """
    import sysconfig

    def uv(*args: str) -> None:
        subprocess.run([sys.executable, "-m", "uv", *args], check=True, capture_output=True, text=True)

    uv("build", "--wheel", "--quiet", "--out-dir", str(scratch / "dist"), str(ROOT))
    venv = scratch / "venv"
    uv("venv", "--quiet", "--python", sys.executable, str(venv))
    python = venv / "bin" / "python"
    wheel = next((scratch / "dist").glob("*.whl"))
    uv("pip", "install", "--quiet", "--no-deps", "--compile-bytecode", "--python", str(python), str(wheel))
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(purelib, "tokenplane-bench-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return venv / "bin" / "tokenplane"


def _cases(
    warm_dirs: dict[str, str], no_pyc_dir: str, full: bool, wheel_script: Path
) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Each case's argv and environment; a cold case's cache folder is replaced before each run (``_fresh``)."""
    tp = [sys.executable, "-m", "tokenplane"]
    script = str(Path(sys.executable).with_name("tokenplane"))
    cases: dict[str, tuple[list[str], dict[str, str]]] = {BARE: ([sys.executable, "-c", "pass"], ENV)}
    for stack in STACKS:
        argv = [*tp, "plan", f"stacks/{stack}.yaml", "--capacity-only"]
        cases[f"{stack}, cold cache"] = (argv, ENV | {"TOKENPLANE_CACHE_DIR": "<fresh>"})
        cases[f"{stack}, warm cache"] = (argv, ENV | {"TOKENPLANE_CACHE_DIR": warm_dirs[stack]})
    byteion = ["plan", "stacks/byteion.yaml", "--capacity-only"]
    warm = ENV | {"TOKENPLANE_CACHE_DIR": warm_dirs["byteion"]}
    cases["byteion, warm, --json"] = ([*tp, *byteion, "--json"], warm)
    cases["byteion, warm, `tokenplane` script"] = ([script, *byteion], warm)
    no_pyc = warm | {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": no_pyc_dir}
    cases["byteion, warm, no bytecode cache"] = ([*tp, *byteion], no_pyc)
    cases[JOBS_ONE] = ([*tp, *byteion, "--jobs", "1"], ENV | {"TOKENPLANE_CACHE_DIR": "<fresh>"})
    # A console script's path starts at its own folder, not the working one: only the installed package imports.
    installed = [str(wheel_script), *byteion]
    user = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}
    cases[WHEEL_COLD] = (installed, user | {"TOKENPLANE_CACHE_DIR": "<fresh>"})
    cases[WHEEL_WARM] = (installed, user | {"TOKENPLANE_CACHE_DIR": warm_dirs["byteion"]})
    if full:
        cases["byteion, full plan (render + validate)"] = ([*tp, "plan", "stacks/byteion.yaml"], warm)
    return cases


def _fresh(env: dict[str, str], scratch: str) -> dict[str, str]:
    if env.get("TOKENPLANE_CACHE_DIR") != "<fresh>":
        return env
    return env | {"TOKENPLANE_CACHE_DIR": tempfile.mkdtemp(prefix="cold-", dir=scratch)}


def run(runs: int, *, full: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tokenplane-plan-bench-") as scratch:
        warm_dirs = {stack: str(Path(scratch) / f"warm-{stack}") for stack in STACKS}
        no_pyc_dir = str(Path(scratch) / "no-pycache")  # stays empty: nothing is written under DONTWRITEBYTECODE
        cases = _cases(warm_dirs, no_pyc_dir, full, _installed_wheel(Path(scratch)))
        for argv, env in cases.values():  # warm-up: bytecode caches, the OS page cache, the warm pricing caches
            _time(argv, _fresh(env, scratch))
        load_before = os.getloadavg()
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for _ in range(runs):
            for name, (argv, env) in cases.items():
                samples[name].append(_time(argv, _fresh(env, scratch)))
        load_after = os.getloadavg()
        breakdown = _breakdown(ROOT / "stacks" / "byteion.yaml", warm_dirs["byteion"])
    return {
        "runs": runs,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in load_after],
        "cores": os.cpu_count(),
        "cases": [
            {
                "case": name,
                "command": " ".join(Path(a).name if a == sys.executable else a for a in cases[name][0]),
                "wall_s": spread([w for w, _ in values]),
                "cpu_s": spread([c for _, c in values]),
            }
            for name, values in samples.items()
        ],
        "breakdown_cpu_s": dict(breakdown),
        "capacity_target_s": CAPACITY_TARGET_S,
        "full_target_s": FULL_TARGET_S,
    }


def _range(s: dict[str, float]) -> str:
    return f"{s['min']:.2f}-{s['max']:.2f}"


def lines(r: dict[str, Any]) -> list[str]:
    bare = next(c for c in r["cases"] if c["case"] == BARE)
    load = f"load average {r['load_before'][0]:.1f} before, {r['load_after'][0]:.1f} after"
    out = [
        f"Each case a fresh process, {r['runs']} runs interleaved, after one warm-up run each; {r['cores']} cores, "
        f"{load} (1-minute). Wall time measures the other tenants too; the CPU seconds (the child's user + system",
        "time) are the figure that holds across machines' load. Cold cache: an empty `TOKENPLANE_CACHE_DIR` each run",
        "(a first plan). No bytecode cache: `PYTHONDONTWRITEBYTECODE=1` with an empty `PYTHONPYCACHEPREFIX`, every",
        "module compiled on every run, the standard library's too: the worst case of an install that never wrote its",
        "`.pyc` files (uv without `--compile-bytecode` under `PYTHONDONTWRITEBYTECODE`; pip compiles at install).",
        f"Target (issue 28): byteion's capacity plan under {r['capacity_target_s']} s wall on a quiet two-core machine.",
        "",
        "| case | wall s, median | wall s, range | CPU s, median | CPU s, range | x bare (wall) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for c in r["cases"]:
        wall, cpu = c["wall_s"], c["cpu_s"]
        out.append(
            f"| {c['case']} | {wall['median']:.2f} | {_range(wall)} | {cpu['median']:.2f} | {_range(cpu)} | "
            f"{wall['median'] / bare['wall_s']['median']:.1f} |"
        )
    by_name = {c["case"]: c for c in r["cases"]}
    out.append("")
    for name in (WHEEL_COLD, WHEEL_WARM, "byteion, cold cache", "byteion, warm cache"):
        case = by_name[name]
        verdict = "meets" if case["wall_s"]["median"] < r["capacity_target_s"] else "misses"
        out.append(
            f"- {name}: {case['wall_s']['median']:.2f} s wall, median (min {case['wall_s']['min']:.2f}; {verdict} the "
            f"{r['capacity_target_s']} s target at this load), {case['cpu_s']['median']:.2f} CPU s "
            f"(min {case['cpu_s']['min']:.2f})."
        )
    one, cold = by_name[JOBS_ONE], by_name["byteion, cold cache"]
    out += [
        "",
        f"The pools sized in forked workers (one per core) against one process (`--jobs 1`), both a first plan: "
        f"{cold['wall_s']['median']:.2f} s against {one['wall_s']['median']:.2f} s wall, median "
        f"({one['wall_s']['median'] / cold['wall_s']['median']:.2f}x), for {cold['cpu_s']['median']:.2f} CPU s "
        f"against {one['cpu_s']['median']:.2f}.",
        "",
        "Where one warm byteion capacity plan's CPU goes (in process, fresh interpreter, median of three):",
        "",
        "| phase | CPU s |",
        "| --- | --- |",
        *(f"| {name} | {value:.3f} |" for name, value in r["breakdown_cpu_s"].items()),
    ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--capacity-only", action="store_true", help="leave out the full plan (tens of seconds)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--update", type=Path, help="rewrite this section of that Markdown file (BENCHMARKS.md)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error(f"--runs {args.runs} must be at least 1")
    result = run(args.runs, full=not args.capacity_only)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print("\n".join(lines(result)))
    if args.update:
        update_section(args.update, TITLE, lines(result))


if __name__ == "__main__":
    main()
