"""The OpenAI server's per-request work under load (issue 28, item 3): fitted on public points, shared by every path."""

from __future__ import annotations

import dataclasses
import statistics

import pytest

from tokenplane.catalog import gpu
from tokenplane.model import calibration as cal
from tokenplane.model import capacity as cap
from tokenplane.model.pool_performance import ClassMix, ReplicaPerformance
from tokenplane.pool_model import PoolTiming


def test_the_constant_is_the_fit_on_the_named_loaded_points() -> None:
    assert cap.DEFAULT_EFFICIENCY.api_per_request_s == pytest.approx(cal.fit_api_per_request(), abs=1e-12)


def loaded_ttft_errors(labels: tuple[str, ...], api_s: float) -> list[float]:
    eff = dataclasses.replace(cap.DEFAULT_EFFICIENCY, api_per_request_s=api_s)
    points = [dataclasses.replace(p, efficiency=eff) for p in cal.LATENCY if p.label in labels]
    return [abs(((p.predicted_ttft_ms() or 0.0) - (p.ttft_ms or 0.0)) / (p.ttft_ms or 1.0)) for p in points]


def test_without_the_term_the_loaded_fit_points_are_far_more_optimistic() -> None:
    """The defect put back (no per-request work): the L4 waves, far more optimistic than with the term."""
    without = statistics.median(loaded_ttft_errors(cal.API_TERM_FIT, 0.0))
    with_term = statistics.median(loaded_ttft_errors(cal.API_TERM_FIT, cap.DEFAULT_EFFICIENCY.api_per_request_s))
    assert without > 0.3 and with_term < 0.15, (without, with_term)


def test_a_lone_request_pays_no_server_term() -> None:
    point = next(p for p in cal.LATENCY if p.label == "qwen2.5-0.5b L4 c=1")
    eff = dataclasses.replace(cap.DEFAULT_EFFICIENCY, api_per_request_s=1.0)
    assert dataclasses.replace(point, efficiency=eff).predicted_ttft_ms() == point.predicted_ttft_ms()


def test_the_planner_adds_it_per_request_decoding_beside() -> None:
    model = cap.ReplicaModel(cal.QWEN3_8B, gpu("H100-80GB"))
    mix = [ClassMix("A", 1.0, (200, 200), (400, 400), 10.0, 0.99)]

    def p50(api_s: float) -> tuple[float, float]:
        timing = dataclasses.replace(
            PoolTiming.build(model, max_num_seqs=64, token_budget=8192, kv_tokens=400_000.0), api_per_stream_s=api_s
        )
        perf = ReplicaPerformance(timing, mix, prefix_kept=1.0)
        health = perf.health(8.0)
        return health.classes["A"].ttft_p50_s, health.operating.batch

    base, batch = p50(0.0)
    shifted, _ = p50(0.01)
    assert batch > 10
    assert shifted - base == pytest.approx(0.01 * batch, rel=0.3)  # the chains' batches spread about the mean


def test_the_simulator_adds_it_per_sequence_decoding_beside() -> None:
    import math

    import numpy as np

    from tokenplane.sim.engine import Engine, RequestState

    model = cap.ReplicaModel(cal.QWEN3_8B, gpu("H100-80GB"))

    def second_ttft(api_s: float) -> float:
        timing = dataclasses.replace(
            PoolTiming.build(model, max_num_seqs=8, token_budget=8192, kv_tokens=400_000.0), api_per_stream_s=api_s
        )
        state = RequestState(
            arrival=[0.0, 0.2], priority=[1, 1], context=[100, 100], prefill=[100, 100], cached=[0, 0],
            tokens=[400, 4], max_wait=[math.inf, math.inf],
        )  # fmt: skip
        engine = Engine([timing], [1], state, np.array(state.arrival))
        engine.start(0, 0.0)
        engine.dispatch(0, np.arange(2), np.zeros(2, dtype=np.int64))
        engine.run_until(1e9)
        return state.first[1] - state.arrival[1]

    # The second request's prompt is prefilled beside the first one's decode: one sequence in flight.
    assert second_ttft(0.01) - second_ttft(0.0) == pytest.approx(0.01, rel=1e-6)


def test_spec_built_pools_carry_the_fitted_term() -> None:
    # It was zero for spec-built pools until the planner drew the batch at a first token as wide as the simulator.
    model = cap.ReplicaModel(cal.QWEN3_8B, gpu("H100-80GB"))
    timing = PoolTiming.build(model, max_num_seqs=8, token_budget=8192, kv_tokens=400_000.0)
    assert timing.api_per_stream_s == cap.DEFAULT_EFFICIENCY.api_per_stream_s > 0
    assert timing.first_token_server_s(10.0) == pytest.approx(timing.ttft_floor_s + 10 * timing.api_per_stream_s)


def test_the_planner_and_the_engine_take_the_server_term_from_one_function(monkeypatch: pytest.MonkeyPatch) -> None:
    # Shift the one function by a second: both sides move by exactly that, so neither prices the term on its own.
    import math

    import numpy as np

    from tokenplane.sim.engine import Engine, RequestState

    model = cap.ReplicaModel(cal.QWEN3_8B, gpu("H100-80GB"))
    timing = PoolTiming.build(model, max_num_seqs=8, token_budget=8192, kv_tokens=400_000.0)
    mix = [ClassMix("A", 1.0, (200, 200), (400, 400), 10.0, 0.99)]

    def planner_p50() -> float:
        return ReplicaPerformance(timing, mix, prefix_kept=1.0).health(1.0).classes["A"].ttft_p50_s

    def engine_ttft() -> float:
        state = RequestState(
            arrival=[0.0, 0.2], priority=[1, 1], context=[100, 100], prefill=[100, 100], cached=[0, 0],
            tokens=[400, 4], max_wait=[math.inf, math.inf],
        )  # fmt: skip
        engine = Engine([timing], [1], state, np.array(state.arrival))
        engine.start(0, 0.0)
        engine.dispatch(0, np.arange(2), np.zeros(2, dtype=np.int64))
        engine.run_until(1e9)
        return state.first[1] - state.arrival[1]

    before = planner_p50(), engine_ttft()
    original = PoolTiming.first_token_server_s
    monkeypatch.setattr(PoolTiming, "first_token_server_s", lambda self, batch: original(self, batch) + 1.0)
    after = planner_p50(), engine_ttft()
    assert after[0] - before[0] == pytest.approx(1.0, abs=1e-9), (before, after)
    assert after[1] - before[1] == pytest.approx(1.0, abs=1e-9)


def _shift(point: cal.LatencyPoint, **terms: float) -> float:
    """How much ``point``'s predicted TTFT (ms) moves when the named server terms rise by the given seconds."""
    eff = dataclasses.replace(
        cap.DEFAULT_EFFICIENCY, **{k: getattr(cap.DEFAULT_EFFICIENCY, k) + v for k, v in terms.items()}
    )
    return (dataclasses.replace(point, efficiency=eff).predicted_ttft_ms() or 0.0) - (point.predicted_ttft_ms() or 0.0)


def test_a_wave_pays_per_arrival_and_a_staggered_request_per_stream() -> None:
    """The two kinds of other request are priced apart, as the real engine shows (``benchmarks/server_arrivals.py``).

    Put back the single term (a staggered request paying the arrival rate for each stream) and the
    staggered point moves with ``api_per_request_s``.
    """
    wave = next(p for p in cal.LATENCY if p.label == "qwen2.5-0.5b L4 c=32")
    staggered = next(p for p in cal.LATENCY if p.label == "qwen3-8b H100 ShareGPT c=8")
    assert wave.load is cal.Load.WAVES and staggered.load is cal.Load.STAGGERED
    assert _shift(wave, api_per_request_s=0.001) == pytest.approx(wave.batch - 1)
    assert _shift(wave, api_per_stream_s=0.001) == pytest.approx(0.0)
    assert _shift(staggered, api_per_request_s=0.001) == pytest.approx(0.0)
    assert _shift(staggered, api_per_stream_s=0.001) == pytest.approx(staggered.batch - 1)


def test_the_default_stream_term_is_several_times_under_the_arrival_term() -> None:
    # Read from the real engine (one arrival costs its server 5 to 12 streams' work); equal terms are the old defect.
    assert 0 < cap.API_PER_STREAM_S * 3 <= cap.API_PER_REQUEST_S
