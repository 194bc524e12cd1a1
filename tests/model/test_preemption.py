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
