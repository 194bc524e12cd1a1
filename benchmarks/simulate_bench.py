"""Wall time of simulating byteion at 10,000 RPS for 60 s, against a bare Python loop over the same arrivals.

The issue's target is under 10 s wall for the 600,000 platform requests (the run also
simulates one embedding call per semantic-cached request on the embedding pools). The
baseline, in the same process, is the least a pure-Python event loop must do per
request: pop an arrival, look at a replica, push a completion. Nothing is asserted;
the numbers are printed. Run: python benchmarks/simulate_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import heapq
import statistics
import time
from pathlib import Path

import numpy as np

from tokenplane.load import load_spec
from tokenplane.sim.simulate import SimConfig, simulate

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "stacks" / "byteion.yaml"
RPS = 10_000
DURATION_S = 60.0
TARGET_S = 10.0


def _bare_loop(arrivals: list[float], replicas: int) -> float:
    """A minimal event loop: each arrival goes to the least-busy replica and schedules a completion."""
    start = time.perf_counter()
    free_at = [(0.0, r) for r in range(replicas)]
    heapq.heapify(free_at)
    done: list[float] = []
    for a in arrivals:
        t, r = heapq.heappop(free_at)
        finish = max(t, a) + 0.05
        done.append(finish)
        heapq.heappush(free_at, (finish, r))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    spec = load_spec(SPEC)
    config = SimConfig(rps=RPS, duration_s=DURATION_S, seed=0)
    walls: list[float] = []
    bare: list[float] = []
    requests = platform = iterations = 0
    for run in range(args.runs):
        result = simulate(spec, config)
        walls.append(result.wall_seconds)
        summary = result.summary()
        requests = summary["requests"]["simulated"]
        platform = summary["requests"]["platform"]
        iterations = result.replica_iterations
        # The run keeps no per-request trace (memory stays bounded): the bare loop gets as many
        # arrivals, uniform over the run as a flat Poisson process's are.
        arrivals = np.sort(np.random.default_rng(run).uniform(0.0, DURATION_S, requests)).tolist()
        bare.append(_bare_loop(arrivals, replicas=1_400))
        print(f"run {run + 1}: simulate {walls[-1]:.2f} s, bare loop {bare[-1]:.2f} s")
    wall, base = statistics.median(walls), statistics.median(bare)
    print(
        f"\nbyteion at {RPS:,} RPS for {DURATION_S:.0f} s: {platform:,} platform requests + "
        f"{requests - platform:,} embedding calls = {requests:,} simulated, {iterations:,} replica iterations"
    )
    print(
        f"simulate median {wall:.2f} s wall: {requests / wall:,.0f} requests/s ({platform / wall:,.0f} platform requests/s)"
    )
    print(f"bare Python loop over the same arrivals {base:.2f} s: simulate costs {wall / base:.1f}x the bare loop")
    verdict = "meets" if wall < TARGET_S else "misses"
    print(f"{verdict} the {TARGET_S:.0f} s target")


if __name__ == "__main__":
    main()
