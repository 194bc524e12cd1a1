"""One prefill cost function (issue 28, item 3): the planner, both simulators and the validation table share it.

``PrefillCost.in_iteration`` is what prefilling adds to an iteration: the chunks' compute, or the
weight reads the decode batch has not already paid (the roofline). Every path that prices prefill
calls it; the sentinel test below adds a second to it and checks that every path's first token moves
by that second, so a path that priced prefill another way (as the planner's backlog chains and the
simulator did before, without the weight reads) fails it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math

import numpy as np
import pytest

from tests.conftest import DEV_SPEC
from tokenplane.catalog import gpu
from tokenplane.load import load_spec
from tokenplane.model import calibration as cal
from tokenplane.model import capacity as cap
from tokenplane.model.pool_performance import ClassMix, ReplicaPerformance
from tokenplane.pool_model import PoolTiming, timing
from tokenplane.serving.engine.config import EngineConfig
from tokenplane.serving.engine.metrics import EngineMetrics
from tokenplane.serving.engine.scheduler import Scheduler, Sequence
from tokenplane.sim.engine import Engine, RequestState

SENTINEL_S = 1.0  # added to every prefill: far above any iteration these small cases run


def moe_model() -> cap.ReplicaModel:
    """Qwen3-30B-A3B on one A100: 128 experts, so a short prompt reads all 61 GB where its FLOPs take 6 ms."""
    return cap.ReplicaModel(cal.QWEN3_30B_A3B, gpu("A100-80GB"))


def moe_timing() -> PoolTiming:
    return PoolTiming.build(moe_model(), max_num_seqs=64, token_budget=2048, kv_tokens=200_000.0)


# --- the function itself ------------------------------------------------------------------------


def test_the_weight_reads_are_the_prefill_costs_own_terms() -> None:
    model = moe_model()
    cost = cap.prefill_cost(model)
    for rows in (0, 1, 4, 32, 128, 2048):
        assert cap.weight_read_seconds(model, rows) == cost.read_seconds(float(rows))
    arrays = cost.read_seconds(np.array([1.0, 32.0, 128.0]))
    assert list(arrays) == [cost.read_seconds(1.0), cost.read_seconds(32.0), cost.read_seconds(128.0)]


def test_a_lone_short_moe_prompt_is_bound_by_its_weight_reads_and_a_long_one_by_its_flops() -> None:
    model = moe_model()
    cost = cap.prefill_cost(model)
    short, long = cost.seconds(128), cost.seconds(8192)
    assert cost.in_iteration(short, 128.0, 0.0) == pytest.approx(cap.weight_read_seconds(model, 128))
    assert cost.in_iteration(short, 128.0, 0.0) > 4 * short  # 36 ms of reads against 6 ms of FLOPs
    assert cost.in_iteration(long, 8192.0, 0.0) == long
    # Beside a decode batch, only the experts the batch has not touched are still to read.
    assert cost.in_iteration(short, 128.0, 4.0) < cost.in_iteration(short, 128.0, 0.0)


def test_beside_a_decode_batch_a_dense_prompt_costs_its_compute() -> None:
    model = cap.ReplicaModel(cal.QWEN3_8B, gpu("H100-80GB"))
    cost = cap.prefill_cost(model)
    short = cost.seconds(64)
    assert cost.in_iteration(short, 64.0, 8.0) == short  # the batch already read every dense weight
    assert cost.in_iteration(short, 64.0, 0.0) == cap.weight_read_seconds(model, 64)  # alone: the reads bind


def test_a_calibrated_host_keeps_its_measured_prefill() -> None:
    """A measured host's prefill rates already hold whatever bound it: no read terms are added to them."""
    cost = cap.PrefillCost(1e-5, 1e-9)
    assert cost.in_iteration(cost.seconds(128), 128.0, 0.0) == cost.seconds(128)


@pytest.mark.parametrize(
    "cost",
    [
        cap.prefill_cost(moe_model()),
        cap.prefill_cost(cap.ReplicaModel(cal.QWEN3_8B, gpu("H100-80GB"))),
        cap.PrefillCost(1e-5, 1e-9),
    ],
    ids=["moe", "dense", "calibrated"],
)
def test_a_chains_fixed_batch_prices_prefill_as_in_iteration_does_bit_for_bit(cost: cap.PrefillCost) -> None:
    """``PrefillBeside`` (the planner's chains) prices its batch's reads once: the same doubles as ``in_iteration``."""
    rng = np.random.default_rng(7)
    batch = np.concatenate([np.zeros(8), rng.integers(1, 256, 56).astype(np.float64)])  # idle replicas too
    rows = np.concatenate([rng.integers(0, 4096, 60).astype(np.float64), np.zeros(4)])  # and nothing to prefill
    compute = rows * cost.per_token_s * rng.uniform(0.5, 2.0, len(rows))
    beside = cost.beside(batch)
    one_by_one = [cost.in_iteration(float(c), float(r), float(b)) for c, r, b in zip(compute, rows, batch, strict=True)]
    assert list(beside.at(compute, rows)) == pytest.approx(one_by_one, rel=1e-12)
    assert np.array_equal(beside.at(compute, rows), cost.in_iteration(compute, rows, batch))
    some = np.array([3, 0, 41, 63, 8])
    assert np.array_equal(
        beside.at(compute[some], rows[some], some), cost.in_iteration(compute[some], rows[some], batch[some])
    )


# --- every path goes through it ------------------------------------------------------------------


def lone_requests(prompt: int) -> RequestState:
    return RequestState(
        arrival=[0.0], priority=[1], context=[prompt], prefill=[prompt], cached=[0], tokens=[4], max_wait=[math.inf]
    )


def sim_ttft(pool_timing: PoolTiming, prompt: int) -> float:
    state = lone_requests(prompt)
    engine = Engine([pool_timing], [1], state, np.array(state.arrival))
    engine.start(0, 0.0)
    engine.dispatch(0, np.arange(1), np.zeros(1, dtype=np.int64))
    engine.run_until(1e9)
    return state.first[0] - state.arrival[0]


def planner_ttft(pool_timing: PoolTiming, prompt: int) -> float:
    mix = [ClassMix("A", 0.01, (prompt, prompt), (4, 4), 10.0, 0.99)]
    return ReplicaPerformance(pool_timing, mix, prefix_kept=1.0).health(0.01).classes["A"].ttft_p50_s


def serving_ttft(prompt: int) -> float:
    spec = load_spec(DEV_SPEC)
    config = dataclasses.replace(EngineConfig.from_spec(spec, "small", speed=math.inf), max_num_seqs=4)
    scheduler = Scheduler(config, EngineMetrics(config.model_name))
    seq = Sequence("r", [i % 1000 for i in range(prompt)], 2, stream=False)

    async def go() -> None:
        scheduler.start()
        scheduler.add(seq)
        try:
            while not seq.finished:
                seq.event.clear()
                await asyncio.wait_for(seq.event.wait(), timeout=30)
        finally:
            await scheduler.stop()

    asyncio.run(go())
    assert seq.first_token_at is not None
    return seq.first_token_at - seq.arrival


def validation_ttfts() -> list[float]:
    """One point of each load the validation table predicts: lone, closed-loop waves and staggered arrivals."""
    picks = [next(p for p in cal.LATENCY if p.load is load and p.ttft_ms is not None) for load in cal.Load]
    return [p.predicted_ttft_ms() or 0.0 for p in picks]


def every_path() -> dict[str, float]:
    """The first-token seconds each path gives (the validation table's in ms, scaled)."""
    pool_timing = moe_timing()
    lone, waves, staggered = validation_ttfts()
    return {
        "planner (backlog chains)": planner_ttft(pool_timing, 128),
        "workbench simulator": sim_ttft(pool_timing, 128),
        "simulated engine (serving)": serving_ttft(64),
        "validation table, lone": lone / 1e3,
        "validation table, waves": waves / 1e3,
        "validation table, staggered": staggered / 1e3,
        "capacity.ttft_seconds": cap.ttft_seconds(moe_model(), 128),
    }


def test_every_path_prices_prefill_with_the_one_function(monkeypatch: pytest.MonkeyPatch) -> None:
    before = every_path()
    original = cap.PrefillCost.in_iteration

    def shifted(self: cap.PrefillCost, compute_s: object, rows: object, decode_rows: object) -> object:
        base = original(self, compute_s, rows, decode_rows)  # type: ignore[call-overload]
        if isinstance(base, np.ndarray):
            return base + np.where(np.asarray(rows) > 0, SENTINEL_S, 0.0)
        return base + (SENTINEL_S if float(rows) > 0 else 0.0)  # type: ignore[arg-type]

    def shifted_beside(self: cap.PrefillBeside, compute_s: object, rows: object, index: object = None) -> object:
        base = original_beside(self, compute_s, rows, index)  # type: ignore[arg-type]
        return base + np.where(np.asarray(rows) > 0, SENTINEL_S, 0.0)

    # The planner's chains price through ``PrefillBeside`` (its equality with ``in_iteration`` is checked above);
    # an array asked of ``in_iteration`` goes through both and moves twice, which the bound below allows.
    original_beside = cap.PrefillBeside.at
    monkeypatch.setattr(cap.PrefillCost, "in_iteration", shifted)
    monkeypatch.setattr(cap.PrefillBeside, "at", shifted_beside)
    after = every_path()
    # Each path's first token waits for at least one priced prefill iteration (a wave, several).
    moved = {path: after[path] - before[path] for path in before}
    assert all(shift >= 0.99 * SENTINEL_S for shift in moved.values()), moved


def test_the_planner_and_the_simulator_give_a_lone_moe_prompt_the_validated_ttft() -> None:
    """Issue 28: Qwen3-30B-A3B at 128 tokens was 58 ms validated and 26 ms on the planning path."""
    pool_timing = moe_timing()
    lone = cap.ttft_seconds(moe_model(), 128)
    assert planner_ttft(pool_timing, 128) == pytest.approx(lone, rel=0.02)
    assert sim_ttft(pool_timing, 128) == pytest.approx(lone, rel=1e-9)


def test_timing_from_a_spec_carries_the_read_terms() -> None:
    spec = load_spec(DEV_SPEC)
    pool = spec.pool("small")
    costs = timing(spec, pool).prefill
    assert costs.read_fixed_s > 0 and costs.read_floor_s > 0
