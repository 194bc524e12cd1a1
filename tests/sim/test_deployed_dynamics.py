"""Issue 28's target in the deployed dynamics: every class the plan passes reaches its target in `simulate`.

`tokenplane simulate stacks/byteion.yaml` at peak from the planned replicas (gateway shedding,
balancing, the autoscaler) measured class A at 97.5% against its 99% while `plan --verify`
and every pool met it: 2% of class A (APAC's large tier, which has no pool there) goes to anthropic,
whose 600 ms TTFT is over A's 500 ms SLO. The plan now fails such a class over the platform
(``tokenplane.model.platform_attainment``) and byteion puts openai (450 ms) first; this runs the deployed
dynamics and holds the plan to its word for the interactive classes.

Class C (long-context, requests that live ~50 s) cannot be judged in a minute, and class D has no TTFT SLO.
"""

from __future__ import annotations

import math

import pytest

from tests.paths import REPO_ROOT
from tokenplane.load import load_spec
from tokenplane.model.planner import plan
from tokenplane.sim.simulate import SimConfig, simulate
from tokenplane.sim.workload import Fidelity

JUDGED = ("A", "B")  # interactive classes: a minute at 10,000 req/s judges ~300,000 of them


def _tolerance(target: float, requests: float) -> float:
    """Two standard errors at the target, as `plan --verify` allows (``ClassCheck.tolerance``)."""
    return 2 * math.sqrt(target * (1 - target) / requests)


@pytest.mark.slow
def test_byteion_deployed_dynamics_meet_every_class_the_plan_passes() -> None:
    spec = load_spec(REPO_ROOT / "stacks" / "byteion.yaml")
    # The classes the plan fails over the platform (its `slo` violation): what providers serve too slowly.
    failed = {cls.value for cls, over in plan(spec).platform_attainment.items() if not over.met}
    summary = simulate(spec, SimConfig(duration_s=60.0, seed=0, fidelity=Fidelity.REQUEST)).summary()
    for name in JUDGED:
        cls = next(c for c in spec.workload_classes if c.value == name)
        target = spec.workload_classes[cls].slo_attainment
        platform = summary["classes"][name]
        resolved = platform["requests"] - platform["in_flight"]
        # Served by the pools: the part of the class that replicas decide, at the planned count.
        pooled = [
            p["classes"][name]
            for p in summary["pools"]
            if not p["embedding"] and p["classes"].get(name, {}).get("requests")
        ]
        judged = sum(c["requests"] - c["in_flight"] for c in pooled)
        met = sum(c["slo_attainment"] * (c["requests"] - c["in_flight"]) for c in pooled)
        assert met / judged >= target - _tolerance(target, judged), (name, met / judged, target)
        # And pool by pool, as `plan --verify` passes them (the balancer's herding once sank one pool alone).
        for p in summary["pools"]:
            own = p["classes"].get(name, {})
            if p["embedding"] or not own.get("requests"):
                continue
            count = own["requests"] - own["in_flight"]
            assert own["slo_attainment"] >= target - _tolerance(target, count), (
                f"{p['region']}/{p['pool']} class {name}: {own['slo_attainment']:.4f} over {count} against {target}"
            )
        if name in failed:
            # The plan said the class cannot reach its target; the simulation agrees it does not.
            assert platform["slo_attainment"] < target, (name, platform["slo_attainment"])
        else:
            assert platform["slo_attainment"] >= target - _tolerance(target, resolved), (
                f"class {name}: {platform['slo_attainment']:.4f} in simulation against {target} that the plan passes"
            )
