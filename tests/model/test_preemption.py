"""Preemption at saturation: the renewal model's closed forms, and its agreement with the engine's saturated replica."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.paths import REPO_ROOT
from tokenplane.load import load_spec
from tokenplane.model import preemption
from tokenplane.model.planner import plan
from tokenplane.model.pool_performance import WASTE_TOKENS, for_pool
from tokenplane.model.traffic import route
from tokenplane.sim.verify import verify

ROOT = REPO_ROOT


@given(q=st.floats(0.01, 0.99), span=st.floats(1.0, 5000.0), step=st.floats(1.0, 600.0))
def test_the_leftovers_power_is_its_expectation_over_a_uniform_leftover(q: float, span: float, step: float) -> None:
    # E[q ** floor(L / step)] for L uniform on [0, span): integrate the step function on a fine grid.
    points = (np.arange(20_000) + 0.5) / 20_000 * span
    brute = float(np.mean(q ** np.floor(points / step)))
    [closed] = preemption._uniform_power(q, np.array([span]), step)
    assert closed == pytest.approx(brute, rel=2e-3, abs=1e-4)


@given(q=st.floats(0.01, 0.99), held=st.floats(1.0, 5000.0), step=st.floats(1.0, 600.0))
def test_the_shortfalls_power_is_its_expectation_over_a_uniform_shortfall(q: float, held: float, step: float) -> None:
    d = (np.arange(20_000) + 0.5) / 20_000 * step
    brute = float(np.mean(np.minimum(1.0, q ** np.floor((held - d) / step))))
    [closed] = preemption._shortfall_power(q, np.array([held]), step)
    assert closed == pytest.approx(brute, rel=2e-3, abs=1e-4)


def test_a_replica_whose_prompts_dwarf_its_growth_rarely_preempts() -> None:
    # Growth between finishes is E[n] tokens; a leftover worth a whole prompt absorbs it.
    weights = np.full(5, 0.2)
    short = preemption.per_request(100, 200, np.linspace(300, 700, 5), weights, waste=WASTE_TOKENS)
    long = preemption.per_request(100, 200, np.linspace(30_000, 70_000, 5), weights, waste=WASTE_TOKENS)
    assert 0 <= long < short / 10
    assert preemption.per_request(0.5, 200, np.linspace(300, 700, 5), weights, waste=WASTE_TOKENS) == 0.0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stack", "region", "pool"),
    [("minimal", "us", "chat"), ("byteion", "eu-west", "batch-catalog"), ("byteion", "us-east", "medium-rag")],
)
def test_the_saturated_engine_completes_what_the_model_says_and_not_the_fluid_rate(
    stack: str, region: str, pool: str
) -> None:
    # The engine's saturated mu (20,000 completions, seed spread under 1%) against the model's. The fluid fixed
    # point alone (no preemption: the planner before this model) was 6-10% above the engine on these pools.
    spec = load_spec(ROOT / "stacks" / f"{stack}.yaml")
    [checked] = verify(spec, plan(spec), only={(region, pool)}).pools
    perf = for_pool(spec, region, spec.pool(pool), route(spec).loads[(region, pool)].per_class)
    assert perf is not None
    assert perf.saturation_preemptions() > 0
    assert checked.mu == pytest.approx(perf.saturation_rps(), rel=0.03)
    assert perf.fluid_saturation_rps() / checked.mu - 1 > 0.05  # the defect put back: the check would fire
    assert math.isclose(checked.planned_mu, perf.saturation_rps())


def _level(share: float, decode: float, lo: int, hi: int) -> tuple[float, float, np.ndarray, np.ndarray]:
    held = np.linspace(lo, hi, 5) + 1
    return share, decode, held, np.full(5, 0.2)


NONE = (0.0, 0.0, np.zeros(0), np.zeros(0))


def test_the_priority_victim_is_the_lowest_levels_sequence_with_what_it_has_decoded() -> None:
    # A critical chat level and a batch level with a tenth of the arrivals: at a batch of 60 the batch level has
    # about 6 x 3 = 18 sequences running, so it is nearly always there to be preempted.
    levels = [_level(0.9, 100, 50, 1000), NONE, NONE, _level(0.1, 300, 3000, 7000)]
    held, weights = preemption.priority_victims(60, 120, levels)
    assert weights.sum() == pytest.approx(1.0)
    assert float(weights[held < 3001].sum()) < 1e-6  # none from the critical level's prompts
    # its latest arrival came 1 / (c x w) = 20 iterations ago (c = 60 / 120), less with the cap at its life
    age = 1 / (0.5 * 0.1 + 2 / 300)
    assert float(np.sum(weights * held)) == pytest.approx(5001 + age)


def test_a_rare_lowest_level_is_often_absent_and_the_next_level_is_preempted() -> None:
    # One batch request in a thousand: at a batch of 60 it is running in about 2% of the cases.
    levels = [_level(0.999, 100, 50, 1000), NONE, NONE, _level(0.001, 100, 3000, 7000)]
    held, weights = preemption.priority_victims(60, 100, levels)
    assert float(weights[held > 3000].sum()) == pytest.approx(1 - math.exp(-60 * 0.001), rel=0.01)
    # a lone running sequence of a level is, on average, halfway through its decode
    lone = preemption.priority_victims(1e-6, 100, [_level(1.0, 100, 500, 500), NONE, NONE, NONE])
    assert float(np.sum(lone[1] * lone[0])) == pytest.approx(501 + 50, rel=1e-3)


def test_the_newest_victim_is_what_fcfs_preempts_and_the_priority_victim_changes_the_count() -> None:
    held, weights = np.linspace(300, 700, 5), np.full(5, 0.2)
    fcfs = preemption.per_request(60, 200, held, weights, waste=WASTE_TOKENS)
    assert preemption.per_request(60, 200, held, weights, waste=WASTE_TOKENS, victims=(held, weights)) == fcfs
    # a victim that holds more frees more room: fewer preemptions follow it
    older = preemption.per_request(60, 200, held, weights, waste=WASTE_TOKENS, victims=(held + 400, weights))
    assert older < fcfs


def test_the_planner_prices_the_batch_levels_victims_on_the_mixed_pool() -> None:
    # The mixed batch-plus-interactive pool of tests/sim/test_plan_verify.py renders the priority policy: the
    # saturated replica's victims are class D's (3,000-7,000-token prompts), so each recompute costs more and
    # mu is below FCFS's (the simulator: 0.93 against 1.02 a second; the planner 0.944 against 1.028).
    import dataclasses

    from tests.sim.test_plan_verify import MIXED_POOL
    from tokenplane.load import load_spec_text

    spec = load_spec_text(MIXED_POOL, filename="mixed.yaml")
    pool = spec.pool("chat")
    load = route(spec).loads[("us", "chat")].per_class
    priority = for_pool(spec, "us", pool, load)
    assert priority is not None and priority.timing.priority_scheduling
    fcfs = for_pool(spec, "us", pool, load, pool_timing=dataclasses.replace(priority.timing, priority_scheduling=False))
    assert fcfs is not None
    held, weights = priority._victims(priority.operating(priority.fluid_saturation_rps()).batch)
    assert float(weights[held < 3001].sum()) < 0.01
    assert priority._recompute_s() > 3 * fcfs._recompute_s()
    assert priority.saturation_rps() < 0.95 * fcfs.saturation_rps()
