"""Wall and CPU time of ``tokenplane check`` on the three stacks, and where one check's time goes.

``check`` renders the Pulumi program under Pulumi's mocks, runs the policy pack over the graph, then every
deployability check (AWS API replays, cfn-lint's schemas, the cluster's controllers...). CI runs it on every
push, so its time is a cost a team pays each time. Cases, each a fresh process as CI starts it, interleaved
round by round so that machine noise hits them alike:

- ``python -c pass``, the floor any command pays;
- ``tokenplane plan STACK`` (the full plan: the same render, then every Kubernetes object schema-checked),
  the baseline ``check`` adds its checks to;
- ``tokenplane check STACK`` on minimal, dev and byteion.

Each case's CPU seconds (user + system, from the child's rusage) are reported beside its wall time, with the
median and range over ``--runs``: on a shared machine the wall time measures the other tenants too. A
breakdown of one check of each stack, measured in process in a fresh interpreter, says where the time goes:
the render, the policies, and the slowest deployability checks by name.

Run: ``python benchmarks/check_bench.py [--runs N (3)] [--json] [--update BENCHMARKS.md]``
(``python benchmarks/run_all.py --only check_bench.py`` rewrites its section of BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._common import BYTECODE_ENV, children_cpu_s, spread, update_section  # noqa: E402

TITLE = "`tokenplane check` on the three stacks (check_bench.py)"
STACKS = ("minimal", "dev", "byteion")
BARE = "python -c pass"
SLOWEST = 8  # deployability checks named in the breakdown
ENV = BYTECODE_ENV  # bytecode cached, as a normal install has it

# One check in process, timed by phase: the spec's load and render, the policy pack, and each deployability check.
_BREAKDOWN = """
import json, sys, time
t0 = time.process_time()
from tokenplane.load import load_spec
from tokenplane.policies import ALL
from tokenplane.proof import deployability as deploy
from tokenplane.proof.check import run_checks
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import render
phases = {"imports": time.process_time() - t0}
t = time.process_time(); spec = load_spec(sys.argv[1]); rendered = render(spec)
phases["load and render"] = time.process_time() - t
t = time.process_time(); run_checks(rendered, ALL)
phases["policy pack"] = time.process_time() - t
graph = Graph(spec, rendered, deploy.Assumptions())
checks = {}
for rule, check in deploy.CHECKS.items():
    t = time.process_time(); list(check(graph)); checks[rule] = time.process_time() - t
phases["deployability checks"] = sum(checks.values())
print(json.dumps({"phases": phases, "checks": checks}))
"""


def _time(argv: list[str]) -> tuple[float, float]:
    """One fresh process: (wall s, CPU s). A failing check still takes its time; only a crash is refused."""
    cpu0, t0 = children_cpu_s(), time.perf_counter()
    done = subprocess.run(argv, check=False, cwd=ROOT, env=ENV, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, children_cpu_s() - cpu0
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-800:]}")
    return wall, cpu


def _cases() -> dict[str, list[str]]:
    tp = [sys.executable, "-m", "tokenplane"]
    cases = {BARE: [sys.executable, "-c", "pass"], "dev, full plan (baseline)": [*tp, "plan", "stacks/dev.yaml"]}
    for stack in STACKS:
        cases[f"{stack}, check"] = [*tp, "check", f"stacks/{stack}.yaml"]
    return cases


def breakdown(stack: str) -> dict[str, Any]:
    code = [sys.executable, "-c", _BREAKDOWN, f"stacks/{stack}.yaml"]
    out = subprocess.run(code, cwd=ROOT, env=ENV, capture_output=True, text=True, check=True).stdout
    r: dict[str, Any] = json.loads(out)
    return r


def run(runs: int) -> dict[str, Any]:
    cases = _cases()
    for argv in cases.values():  # warm-up: bytecode caches, the OS page cache
        _time(argv)
    load_before = os.getloadavg()
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, argv in cases.items():
            samples[name].append(_time(argv))
    load_after = os.getloadavg()
    return {
        "runs": runs,
        "cores": os.cpu_count(),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in load_after],
        "cases": [
            {
                "case": name,
                "wall_s": spread([w for w, _ in values]),
                "cpu_s": spread([c for _, c in values]),
            }
            for name, values in samples.items()
        ],
        "breakdown": {stack: breakdown(stack) for stack in ("dev", "byteion")},
    }


def _range(s: dict[str, float]) -> str:
    return f"{s['min']:.1f}-{s['max']:.1f}"


def lines(r: dict[str, Any]) -> list[str]:
    bare = next(c for c in r["cases"] if c["case"] == BARE)
    base = next(c for c in r["cases"] if c["case"] == "dev, full plan (baseline)")
    out = [
        f"Each case a fresh process, {r['runs']} runs interleaved, after one warm-up run each; {r['cores']} cores, "
        f"load average {r['load_before'][0]:.1f} before, {r['load_after'][0]:.1f} after (1-minute). The CPU seconds",
        "(the child's user + system time) are the figure that holds across machines' load.",
        "",
        "| case | wall s, median | wall s, range | CPU s, median | CPU s, range | x bare (wall) | x dev's full plan (wall) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in r["cases"]:
        wall, cpu = c["wall_s"], c["cpu_s"]
        out.append(
            f"| {c['case']} | {wall['median']:.2f} | {_range(wall)} | {cpu['median']:.2f} | {_range(cpu)} | "
            f"{wall['median'] / bare['wall_s']['median']:.0f} | {wall['median'] / base['wall_s']['median']:.2f} |"
        )
    for stack, b in r["breakdown"].items():
        slowest = sorted(b["checks"].items(), key=lambda kv: -kv[1])[:SLOWEST]
        out += [
            "",
            f"Where one check of {stack} spends its CPU (in process, a fresh interpreter; {len(b['checks'])}"
            " deployability checks):",
            "",
            "| phase | CPU s |",
            "| --- | --- |",
            *(f"| {name} | {value:.2f} |" for name, value in b["phases"].items()),
            *(f"| - {rule} | {value:.2f} |" for rule, value in slowest),
        ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--update", type=Path, help="rewrite this section of that Markdown file (BENCHMARKS.md)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error(f"--runs {args.runs} must be at least 1")
    result = run(args.runs)
    print(json.dumps(result, indent=2) if args.json else "\n".join(lines(result)))
    if args.update:
        update_section(args.update, TITLE, lines(result))


if __name__ == "__main__":
    main()
