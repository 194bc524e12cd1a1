"""``tokenplane.model.kv_stall``: how long an arrival waits for KV room below saturation."""

from __future__ import annotations

import numpy as np
import pytest

from tests.paths import REPO_ROOT
from tests.sim.test_plan_verify import RAG_POOL
from tokenplane.load import load_spec, load_spec_text
from tokenplane.model import kv_stall
from tokenplane.model.capacity import PrefillCost
from tokenplane.model.planner import sizing_target
from tokenplane.model.pool_performance import ReplicaPerformance, for_pool
from tokenplane.model.traffic import route

STEP_S = 0.0099  # a decode iteration: arrivals a second apart are 101 iterations apart (floor 101.01)
PROMPT = 1000
DECODE = 250  # iterations: the arrivals 101 and 202 iterations ago are still decoding, the one 303 ago is done
SAMPLES = 64


def _steady(kv_tokens: float) -> kv_stall.BatchStates:
    """A replica fed one prompt a second, evenly (a balancer over a billion replicas), with no prefill cost.

    Every draw then finds the same batch: the arrivals 101 and 202 iterations ago, holding
    1,102 and 1,203 tokens, with 149 and 48 iterations left.
    """
    shape = kv_stall.ClassShape(1.0, (PROMPT, PROMPT), (DECODE, DECODE))
    replica = kv_stall.Replica(
        rps=1.0,
        replicas=10**9,
        decode_s=STEP_S,
        iteration_s=STEP_S,
        kv_tokens=kv_tokens,
        waste=7.5,
        prefix_kept=1.0,
        prefill=PrefillCost(0.0, 0.0),
    )
    return kv_stall.draw([shape], replica, samples=SAMPLES, decode_s=lambda batch, kv: np.full(len(batch), STEP_S))


def test_an_arrival_waits_for_the_first_finish_after_which_it_fits() -> None:
    states = _steady(3000.0)
    # On arrival: 3,000 - 1,102 - 1,203 - 2 x 8.5 = 678 free; after the older one's finish at iteration 48,
    # the younger holds 1,150: 1,841.5 free; after both (149), the whole cache.
    assert np.allclose(states.room0, 678.0)
    assert np.allclose(states.stall_s(np.full(SAMPLES, 678.0)), 0.0)
    assert np.allclose(states.stall_s(np.full(SAMPLES, 1000.0)), 48 * STEP_S)
    # 1,860 would fit beside the younger one as it was on arrival (1,889.5 free) but not as it has grown since.
    assert np.allclose(states.stall_s(np.full(SAMPLES, 1860.0)), 149 * STEP_S)
    assert np.allclose(states.stall_s(np.full(SAMPLES, 2500.0)), 149 * STEP_S)
    assert np.allclose(states.stall_s(np.full(SAMPLES, 9000.0)), 149 * STEP_S)  # past the cache: all must finish


def test_what_the_cache_cannot_hold_waits_ahead_of_the_arrival() -> None:
    # 2,000 tokens hold the older sequence (1,211.5 with its block and growth) but not both: the younger one
    # waits in the queue with its whole prompt, and any arrival waits behind it for the older one's finish.
    states = _steady(2000.0)
    assert np.allclose(states.queued, PROMPT + 1 + 7.5)
    assert np.allclose(states.room0, 2000.0 - 1203 - 8.5)
    assert np.allclose(states.stall_s(np.zeros(SAMPLES)), 48 * STEP_S)


def test_a_cache_that_holds_every_batch_never_stalls() -> None:
    states = _steady(1e9)
    assert not states.stall_s(np.full(SAMPLES, 50_000.0)).any()


def _rag() -> ReplicaPerformance:
    spec = load_spec_text(RAG_POOL, filename="rag.yaml")
    perf = for_pool(spec, "us", spec.pools[0], route(spec).loads[("us", "rag")].per_class)
    assert perf is not None
    return perf


def test_the_rag_pool_prices_the_stall_at_the_count_it_used_to_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    # At 30 replicas the simulator gives class A 98.15% (mean of six seeds, sd 0.26; 99.01% before prefill paid
    # its all-reduces and BF16 attention, issue 28 item 4): priced with the stall the model says 98.32%, under the
    # sizing target; without it, more than the target.
    target = sizing_target(0.99)
    with_stall = _rag().health(40 / 30, replicas=30).classes["A"].attainment
    monkeypatch.setattr(ReplicaPerformance, "_stall_states", lambda *_: None)
    without = _rag().health(40 / 30, replicas=30).classes["A"].attainment
    assert with_stall is not None and without is not None
    assert with_stall < target < without, (with_stall, without)
    assert abs(with_stall - 0.9815) <= 0.003, with_stall


def test_a_pool_whose_cache_never_binds_draws_no_stall() -> None:
    # The gate keeps the example specs' pools (mean KV 5-8 M/G/inf sds and two longest prompts under the
    # cache) off the draws: their plans are the numbers they were, and as fast.
    spec = load_spec(REPO_ROOT / "stacks" / "minimal.yaml")
    pool = spec.pools[0]
    perf = for_pool(spec, spec.regions[0].name, pool, route(spec).loads[(spec.regions[0].name, pool.name)].per_class)
    assert perf is not None
    op = perf.operating(perf.saturation_rps() * 0.7)
    assert perf._stall_states(op, 1024, 3) is None
