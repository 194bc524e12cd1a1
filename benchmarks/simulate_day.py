"""A business day of byteion in the workbench: wall time and peak memory, against request level.

The day: byteion at 10,000 RPS peak, 24 h of the diurnal profile with a 3x burst at
09:00 for 15 minutes, at aggregate fidelity (the issue's targets: under 60 s wall and
2 GiB peak RSS on the 2-core machine). The baseline, in the same run: request level
over one simulated minute at the burst's peak, whose wall time, scaled by the day's
arrivals over that minute's, is what a request-level day would take. Also timed: 60 s at
10,000 RPS flat at request level (target under 10 s), and with ``--two-hours`` the
2 h scenario at request level (08:00-10:00 with the burst; target under 4 GiB).

Each run is its own process, so its peak RSS (``ru_maxrss``) is its own. Nothing is
asserted; the numbers are printed. Run: python benchmarks/simulate_day.py [--runs N]
[--two-hours] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "stacks" / "byteion.yaml"

# One run in a child process: the simulation, its wall time and the child's peak RSS.
CHILD = """
import json, resource, sys
from tokenplane.load import load_spec
from tokenplane.sim.workload import Burst, Profile
from tokenplane.sim.simulate import Fidelity, SimConfig, simulate
a = json.loads(sys.argv[1])
config = SimConfig(
    rps=a["rps"], duration_s=a["duration_s"], start_s=a["start_s"], profile=Profile(a["profile"]),
    bursts=tuple(Burst.parse(b) for b in a["bursts"]), fidelity=Fidelity(a["fidelity"]), seed=a.get("seed", 0),
)
result = simulate(load_spec(a["spec"]), config)
s = result.summary()
print(json.dumps({
    "wall_s": result.wall_seconds,
    "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "simulated": s["requests"]["simulated"],
    "requests": s["requests"]["total"],
    "platform_requests": s["requests"]["platform"],
    "periods_simulated": s["fidelity"]["periods_simulated"],
    "periods": s["fidelity"]["periods"],
    "ttft_p95_ms": {c: v["ttft_p95_ms"] for c, v in s["classes"].items()},
    "usd": s["cost"]["usd"],
}))
"""


def run(**config: Any) -> dict[str, Any]:
    args = {"spec": str(SPEC), "bursts": [], "start_s": 0.0, "profile": "flat", **config}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(args)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=2, help="runs of the day, for the spread")
    parser.add_argument("--two-hours", action="store_true", help="also the 2 h scenario at request level (slow)")
    parser.add_argument("--quick", action="store_true", help="2 h instead of 24 h, one run")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    burst = ["09:00x3/15m"]
    hours = 2.0 if args.quick else 24.0
    start = 8 * 3600.0 if args.quick else 0.0
    day = [
        run(rps=10_000, duration_s=hours * 3600, start_s=start, profile="diurnal", bursts=burst, fidelity="aggregate")
        for _ in range(1 if args.quick else max(1, args.runs))
    ]
    # The baseline: one minute at request level at the burst's peak (09:05), scaled to the day's arrivals.
    minute = run(rps=10_000, duration_s=60, start_s=9 * 3600 + 300, profile="diurnal", bursts=burst, fidelity="request")
    flat = run(rps=10_000, duration_s=60, fidelity="request")
    results: dict[str, Any] = {
        "day_hours": hours,
        "day": day,
        "minute": minute,
        "flat_60s": flat,
        "request_level_day_s": minute["wall_s"] * day[0]["requests"] / minute["requests"],
    }
    if args.two_hours:
        results["two_hours"] = run(
            rps=10_000, duration_s=7200, start_s=8 * 3600, profile="diurnal", bursts=burst, fidelity="request"
        )
    walls = [d["wall_s"] for d in day]
    results["day_wall_median_s"] = statistics.median(walls)
    results["day_wall_spread_s"] = [min(walls), max(walls)]
    results["day_peak_rss_mib_max"] = max(d["peak_rss_mib"] for d in day)
    results["speedup"] = results["request_level_day_s"] / results["day_wall_median_s"]
    if args.json:
        print(json.dumps(results))
        return
    for line in lines(results):
        print(line)


def lines(r: dict[str, Any]) -> list[str]:
    """The results as Markdown lines: what BENCHMARKS.md shows (``run_all.py`` renders them the same way)."""
    d0 = r["day"][0]
    out = [
        f"byteion, {r['day_hours']:.0f} h diurnal at 10,000 RPS peak with a 3x burst at 09:00 for 15 min, "
        f"aggregate fidelity ({d0['periods_simulated']} of {d0['periods']} periods simulated on 2 sampled "
        f"replicas per pool; the rest replayed): {d0['requests']:,} requests accounted, "
        f"{d0['simulated']:,} simulated.",
        "",
        "| run | wall (s) | peak RSS (MiB) | simulated requests | target |",
        "| --- | --- | --- | --- | --- |",
        *(
            f"| day, run {i + 1} | {d['wall_s']:.1f} | {d['peak_rss_mib']:.0f} | {d['simulated']:,} | "
            "< 60 s, < 2048 MiB |"
            for i, d in enumerate(r["day"])
        ),
        f"| 60 s flat at 10,000 RPS, request level | {r['flat_60s']['wall_s']:.1f} | "
        f"{r['flat_60s']['peak_rss_mib']:.0f} | {r['flat_60s']['simulated']:,} | < 10 s |",
        f"| 1 min at the burst's peak (09:05), request level | {r['minute']['wall_s']:.1f} | "
        f"{r['minute']['peak_rss_mib']:.0f} | {r['minute']['simulated']:,} | baseline |",
    ]
    if "two_hours" in r:
        t = r["two_hours"]
        out.append(
            f"| 2 h 08:00-10:00 with the burst, request level | {t['wall_s']:.1f} | {t['peak_rss_mib']:.0f} | "
            f"{t['simulated']:,} | < 4096 MiB |"
        )
    out += [
        "",
        f"Day: median {r['day_wall_median_s']:.1f} s (spread {r['day_wall_spread_s'][0]:.1f}-"
        f"{r['day_wall_spread_s'][1]:.1f} s), peak RSS {r['day_peak_rss_mib_max']:.0f} MiB. A request-level day, "
        f"from the burst minute's wall time scaled to the day's arrivals, would take about "
        f"{r['request_level_day_s']:,.0f} s: aggregate is {r['speedup']:.0f}x faster. "
        "Agreement with request level (within 10% on TTFT P95, ρ, replicas and cost) is checked by "
        "`tests/sim/test_simulate_streaming.py` on a burst window both can run.",
    ]
    return out


if __name__ == "__main__":
    main()
