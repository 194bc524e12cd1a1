"""``simulate`` and ``plan --verify`` schedule each pool as its replicas are rendered (issue 26 item 3).

A pool that serves several priority levels renders ``--scheduling-policy priority``
(``tests/test_vllm_args.py`` holds the render to ``serves_several_levels``); its simulated
replicas must then preempt by vLLM's priority rule, and an FCFS pool's by FCFS. Both engines are
caught as they are built, so these tests run no simulation.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.paths import REPO_ROOT
from tests.sim.test_plan_verify import MIXED_POOL
from tokenplane.load import load_spec, load_spec_text
from tokenplane.model.planner import plan
from tokenplane.model.scheduling import serves_several_levels
from tokenplane.pool_model import PoolTiming, timing
from tokenplane.sim import simulate as simulate_module
from tokenplane.sim import verify as verify_module
from tokenplane.sim.workload import SimConfig, placements
from tokenplane.spec import PlatformSpec

STACKS = sorted((REPO_ROOT / "stacks").glob("*.yaml"))


class _Built(Exception):
    """Raised by the engine stand-in once it has what it was given."""


def _catch_engines(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[list[PoolTiming]]:
    """Replace ``module.Engine`` with one that records the pools' timings it is built with, then stops the run."""
    built: list[list[PoolTiming]] = []

    def engine(pools: list[PoolTiming], *_: Any, **__: Any) -> None:
        built.append(list(pools))
        raise _Built

    monkeypatch.setattr(module, "Engine", engine)
    return built


def _specs() -> list[tuple[str, PlatformSpec]]:
    return [(p.name, load_spec(p)) for p in STACKS] + [("mixed", load_spec_text(MIXED_POOL, filename="mixed.yaml"))]


def _small_specs() -> list[tuple[str, PlatformSpec]]:
    """The specs quick to plan, with pools of both policies (byteion's 22 pools take seconds, and add neither)."""
    return [(name, spec) for name, spec in _specs() if name != "byteion.yaml"]


def test_the_specs_checked_have_pools_of_both_policies() -> None:
    # Otherwise the checks below could not tell a policy applied everywhere from the rendered one.
    for specs in (_specs(), _small_specs()):
        assert {serves_several_levels(spec, pool) for _, spec in specs for pool in spec.pools} == {True, False}


@pytest.mark.parametrize(("name", "spec"), _specs(), ids=lambda v: v if isinstance(v, str) else "")
def test_the_pool_timing_carries_the_rendered_policy(name: str, spec: PlatformSpec) -> None:
    for pool in spec.pools:
        assert timing(spec, pool).priority_scheduling == serves_several_levels(spec, pool), f"{name} {pool.name}"


def test_plan_verify_steps_every_pool_by_its_rendered_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    built = _catch_engines(monkeypatch, verify_module)
    checked = 0
    for name, spec in _small_specs():
        planned = plan(spec)
        for pp in planned.pools:
            if pp.arrival_rps <= 0:
                continue
            with pytest.raises(_Built):
                verify_module.verify(spec, planned, only={(pp.region, pp.name)})
            [pool_timing] = built.pop()
            expected = serves_several_levels(spec, spec.pool(pp.name))
            assert pool_timing.priority_scheduling == expected, f"{name} {pp.region}/{pp.name}"
            checked += 1
    assert checked >= 5


def test_simulate_steps_every_pool_by_its_rendered_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    built = _catch_engines(monkeypatch, simulate_module)
    for name, spec in _small_specs():
        with pytest.raises(_Built):
            simulate_module.simulate(spec, SimConfig(duration_s=60.0))
        [pools] = built
        built.clear()
        # ``simulate`` builds one engine slot group per (region, pool) placement, in ``placements`` order
        for (_, pool_name), pool_timing in zip(placements(spec), pools, strict=True):
            expected = serves_several_levels(spec, spec.pool(pool_name))
            assert pool_timing.priority_scheduling == expected, f"{name} {pool_name}"
