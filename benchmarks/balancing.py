"""The model gateway's balancing rules on byteion's pools at peak, at the planned replica count.

Issue 28 (deployed dynamics): the planner and ``plan --verify`` price each replica's arrivals as
dealt round-robin, while the model gateway chooses per request (``tokenplane.model.balancing.choose``).
This runs the same ``choose`` in the simulator's gateway (``SimConfig.balance``), per request on
the replicas' state at each arrival, for each policy, and reports each class's TTFT/E2E SLO
attainment after the warm-up, with its spread over seeds.

Each pool runs alone in its byteion region (eu-west) with byteion's interactive classes A and B,
at the arrival rate that the planner sizes to ``REPLICAS`` replicas (byteion's own counts, 60-413,
would take an hour per policy on two cores: a per-request choice reads every replica). The
per-replica load is the plan's, so it is the regularity of each replica's arrivals that differs.

With several model gateway processes it runs each way of sharing the replicas among them
(``--sharing``: ``tokenplane.model.balancing.Sharing``) with the requests spread over the processes
evenly or in shares drawn from a Dirichlet (``--skew``: ``SimConfig.gateway_skew``).

About 15 minutes on two shared cores for the table in BENCHMARKS.md. Run: python benchmarks/balancing.py
[--seeds 0 1 2] [--replicas 32 128] [--gateways 1 3] [--sharing spill stride] [--skew even 30]
[--duration 120] [--update BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._common import update_section  # noqa: E402
from tokenplane.load import load_spec_text  # noqa: E402
from tokenplane.model.balancing import BalancePolicy, Sharing  # noqa: E402
from tokenplane.model.planner import plan  # noqa: E402
from tokenplane.sim.engine import SERVED  # noqa: E402
from tokenplane.sim.simulate import SimConfig, simulate  # noqa: E402
from tokenplane.sim.workload import Fidelity, Kind  # noqa: E402
from tokenplane.spec import PlatformSpec  # noqa: E402

TITLE = "Balancing rules at the planned count (balancing.py)"
POOLS = ("medium-rag", "large-reasoning")  # byteion's eu-west pools that serve the interactive classes
REGION = "eu-west"
REPLICAS = 32  # planned replicas per pool: enough for the rule to matter, minutes to simulate
DEALT = "dealt"  # --skew dealt: each request to the next process in turn (SimConfig.gateway_dealt)
WARMUP_S = 30.0  # the replicas start empty; judged from here, as `plan --verify` judges after its warm-up


def pool_alone(pool_name: str, replicas: int = REPLICAS) -> PlatformSpec:
    """byteion's ``pool_name`` alone in eu-west with classes A and B, at the rate planned to ``replicas``."""
    data: dict[str, Any] = yaml.safe_load((ROOT / "stacks" / "byteion.yaml").read_text())
    region = next(r for r in data["regions"] if r["name"] == REGION)
    region.update(traffic_share=1.0, pools=[{"pool": pool_name, "min_replicas": 1, "max_replicas": 4 * replicas}])
    pool = next(p for p in data["pools"] if p["name"] == pool_name)
    pool["critical"] = False  # alone, it has no DR region
    pool["autoscaling"].pop("predictive", None)
    classes = data["workload_classes"]
    tenant = next(t for t in data["tenants"] if t["name"] == "acme-eu")
    tenant["allowed_tiers"] = [pool["tier"]]
    share = classes["A"]["share"] + classes["B"]["share"]
    data.update(
        budget={"max_usd_per_hour": 1_000_000},
        regions=[region],
        pools=[pool],
        workload_classes={name: {**classes[name], "share": classes[name]["share"] / share} for name in ("A", "B")},
        routing={"mix": {pool["tier"]: 1.0}},
        tenants=[tenant],
    )
    for key in ("providers", "dr", "cache", "queues"):
        data.pop(key, None)

    def at(rps: float) -> PlatformSpec:
        data["platform"] = {**data["platform"], "peak_rps": rps}
        return load_spec_text(yaml.safe_dump(data), filename=f"{pool_name}-alone.yaml")

    # The planned count grows with the rate: take the rate whose count is ``replicas`` (secant steps).
    rps = 100.0
    for _ in range(8):
        got = plan(at(rps)).pools[0].replicas_needed
        if got == replicas:
            break
        rps *= replicas / got
    return at(rps)


def attainment(
    spec: PlatformSpec,
    policy: BalancePolicy,
    seed: int,
    duration_s: float,
    gateways: int = 1,
    sharing: Sharing = Sharing.INDEPENDENT,
    skew: Skew = None,
) -> dict[str, float]:
    """Each class's share of requests (arrived after the warm-up, resolved) that met TTFT and E2E SLOs."""
    config = SimConfig(
        duration_s=duration_s,
        seed=seed,
        fidelity=Fidelity.REQUEST,
        trace=True,
        balance=policy,
        model_gateways=gateways,
        sharing=sharing,
        gateway_skew=None if isinstance(skew, str) else skew,
        gateway_dealt=skew == DEALT,
    )
    result = simulate(spec, config)
    reqs, out = result.requests, result.outcome
    met_by_class: dict[str, float] = {}
    for index, (cls, cls_spec) in enumerate(spec.workload_classes.items()):
        rows = (reqs.kind == int(Kind.POOL)) & (reqs.cls == index) & (reqs.arrival >= WARMUP_S)
        resolved = rows & ((out.shed != SERVED) | np.isfinite(out.done))
        ttft_s = (cls_spec.ttft_p95_ms or math.inf) / 1000
        e2e_s = (cls_spec.e2e_p95_ms or math.inf) / 1000
        with np.errstate(invalid="ignore"):
            met = (
                resolved
                & (out.shed == SERVED)
                & (out.first - reqs.arrival <= ttft_s)
                & (out.done - reqs.arrival <= e2e_s)
            )
        met_by_class[cls.value] = float(met.sum() / max(1, int(resolved.sum())))
    return met_by_class


Skew = float | str | None  # a Dirichlet concentration, None for even at random, or DEALT
Case = tuple[int, Sharing, Skew, BalancePolicy]


def _cases(
    gateways: list[int], policies: list[BalancePolicy], sharings: list[Sharing], skews: list[Skew]
) -> list[Case]:
    """(processes, sharing, skew, policy) to run: the retired rule, and round-robin, with one process only."""
    cases: list[Case] = []
    for k in gateways:
        if k == 1:
            cases += [(1, Sharing.INDEPENDENT, None, p) for p in policies]
            continue
        multi = [p for p in policies if p is BalancePolicy.PENDING_PREFILL] or policies[:1]
        cases += [(k, sharing, skew, p) for skew in skews for sharing in sharings for p in multi]
    return cases


def _skew(text: str) -> Skew:
    return None if text == "even" else DEALT if text == DEALT else float(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--duration", type=float, default=120.0)
    parser.add_argument("--pools", nargs="+", default=list(POOLS))
    parser.add_argument("--replicas", type=int, nargs="+", default=[REPLICAS], help="planned counts to size to")
    parser.add_argument("--gateways", type=int, nargs="+", default=[1, 3], help="model gateway processes")
    parser.add_argument("--policies", nargs="+", default=[p.value for p in BalancePolicy])
    parser.add_argument("--sharing", nargs="+", default=[s.value for s in Sharing], help="with several processes")
    parser.add_argument(
        "--skew", nargs="+", default=["even", "1"], help="'even', 'dealt', or a Dirichlet concentration"
    )
    parser.add_argument("--update", type=Path, help="write the table into this Markdown file's section")
    args = parser.parse_args()
    rows = [
        "| policy | pool | replicas | model gateways | sharing | shares | class | target | attainment (mean) "
        "| spread over seeds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for replicas in args.replicas:
        for pool_name in args.pools:
            spec = pool_alone(pool_name, replicas)
            planned = plan(spec).pools[0]
            print(f"# {pool_name}: {planned.arrival_rps:.1f} req/s planned to {planned.replicas_needed}", flush=True)
            policies = [BalancePolicy(p) for p in args.policies]
            skews = [_skew(s) for s in args.skew]
            for gateways, sharing, skew, policy in _cases(
                args.gateways, policies, list(map(Sharing, args.sharing)), skews
            ):
                started = time.perf_counter()
                runs = [attainment(spec, policy, seed, args.duration, gateways, sharing, skew) for seed in args.seeds]
                wall = time.perf_counter() - started
                how = "-" if gateways == 1 else sharing.value
                shares = (
                    "-"
                    if gateways == 1
                    else "even"
                    if skew is None
                    else "dealt in turn"
                    if skew == DEALT
                    else f"Dirichlet({skew:g})"
                )
                for cls, cls_spec in spec.workload_classes.items():
                    values = [r[cls.value] for r in runs]
                    line = (
                        f"| {policy.value} | {pool_name} | {planned.replicas_needed} | {gateways} | {how} | {shares} "
                        f"| {cls.value} "
                        f"| {cls_spec.slo_attainment:.0%} | {statistics.mean(values):.2%} "
                        f"| {min(values):.2%}-{max(values):.2%} |"
                    )
                    rows.append(line)
                    print(line, f"({wall:.0f} s)", flush=True)
    print("\n".join(rows))
    if args.update:
        section = [
            "byteion's eu-west pools alone with classes A and B (its interactive classes), each at the rate the",
            f"planner sizes to the given count, {args.duration:g} s simulated from that count, judged after",
            f"{WARMUP_S:g} s; attainment: TTFT and E2E within the class's SLO; spread: min-max over seeds {args.seeds}.",
            "`round-robin` is what the planner prices; `pending-prefill` is what the model gateway runs",
            "(`tokenplane.model.balancing.DEPLOYED`); `least-tokens` was its rule before. `model gateways`:",
            "model gateway processes, each choosing on what it sent itself (prod runs at least three);",
            "`sharing`: how they share the replicas (`tokenplane.model.balancing.Sharing`; `spill` is deployed);",
            "`shares`: the requests reach them at random evenly, or in shares drawn from a Dirichlet per run.",
            "With several processes only `pending-prefill` is run, and `least-tokens` with one process only.",
            "",
            *rows,
        ]
        update_section(args.update, TITLE, section)


if __name__ == "__main__":
    main()
