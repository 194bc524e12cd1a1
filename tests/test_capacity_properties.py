"""Invariants of the capacity model and its queueing maths, checked with hypothesis."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tokenplane import capacity as cap
from tokenplane.catalog import GPUS, MODEL_PRESETS, Gpu, KvCacheDtype, Quantization
from tokenplane.transformer import Architecture, ModelKind

# Time-based deadlines would make these tests depend on the machine; examples are cheap anyway.
PROPERTY = settings(deadline=None, max_examples=150)

DECODERS = sorted(n for n, p in MODEL_PRESETS.items() if p.architecture.kind is ModelKind.DECODER)
decoders = st.sampled_from(DECODERS).map(lambda name: MODEL_PRESETS[name].architecture)
gpus = st.sampled_from(sorted(GPUS)).map(GPUS.__getitem__)
quantizations = st.sampled_from(list(Quantization))
kv_dtypes = st.sampled_from(list(KvCacheDtype))
tps = st.sampled_from([1, 2, 4, 8])
shapes = st.builds(cap.RequestShape, st.integers(1, 32_768).map(float), st.integers(1, 4096).map(float))


def erlang_c_reference(c: int, a: float) -> float:
    """Erlang C by the textbook Erlang B recursion: B(0)=1, B(k) = a B(k-1) / (k + a B(k-1))."""
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return c * b / (c - a * (1 - b))


def _memory(arch: Architecture, gpu: Gpu, tp: int, quantization: Quantization, **knobs: Any) -> cap.MemoryPlan:
    return cap.replica_memory(arch, gpu, tp=tp, quantization=quantization, **knobs)


# --- memory -----------------------------------------------------------------------------------


@PROPERTY
@given(decoders, gpus, tps, st.integers(1, 4), quantizations, kv_dtypes, st.floats(0.5, 0.99))
def test_replica_memory_conserves_the_budget_and_fills_whole_blocks(
    arch: Architecture,
    gpu: Gpu,
    tp: int,
    pp: int,
    quantization: Quantization,
    kv_dtype: KvCacheDtype,
    util: float,
) -> None:
    plan = cap.replica_memory(
        arch, gpu, tp=tp, pp=pp, quantization=quantization, kv_cache_dtype=kv_dtype, gpu_memory_utilization=util
    )
    assert plan.budget == pytest.approx(plan.weights + plan.activation + plan.non_torch + plan.kv_available, rel=1e-12)
    assert plan.kv_tokens % cap.BLOCK_SIZE == 0
    assert plan.kv_tokens == plan.kv_blocks * cap.BLOCK_SIZE >= 0
    assert plan.kv_tokens * plan.kv_bytes_per_token <= max(plan.kv_available, 0.0)
    # Whole blocks: one more would not fit.
    if plan.fits:
        assert (plan.kv_tokens + cap.BLOCK_SIZE) * plan.kv_bytes_per_token > plan.kv_available


@PROPERTY
@given(decoders, kv_dtypes, tps, st.integers(0, 200_000), st.integers(1, 200_000))
def test_a_request_needs_more_kv_bytes_the_more_tokens_it_holds(
    arch: Architecture, kv_dtype: KvCacheDtype, tp: int, tokens: int, more: int
) -> None:
    per_token = cap.kv_bytes_per_token(arch, kv_dtype, tp=tp)
    assert per_token > 0
    assert per_token * tokens < per_token * (tokens + more)


@PROPERTY
@given(decoders, gpus, tps, quantizations, st.integers(16, 65_536), st.integers(16, 65_536))
def test_kv_tokens_never_grow_with_max_num_batched_tokens(
    arch: Architecture, gpu: Gpu, tp: int, quantization: Quantization, low: int, high: int
) -> None:
    low, high = sorted((low, high))
    small = _memory(arch, gpu, tp, quantization, max_num_batched_tokens=low)
    large = _memory(arch, gpu, tp, quantization, max_num_batched_tokens=high)
    assert large.kv_tokens <= small.kv_tokens


@PROPERTY
@given(decoders, gpus, tps, quantizations, st.integers(1, 4096), st.integers(1, 4096))
def test_kv_tokens_never_grow_with_max_num_seqs(
    arch: Architecture, gpu: Gpu, tp: int, quantization: Quantization, low: int, high: int
) -> None:
    low, high = sorted((low, high))
    few = _memory(arch, gpu, tp, quantization, max_num_seqs=low)
    many = _memory(arch, gpu, tp, quantization, max_num_seqs=high)
    assert many.kv_tokens <= few.kv_tokens


@PROPERTY
@given(decoders, gpus, tps, quantizations, st.floats(0.06, 0.99), st.floats(0.06, 0.99))
def test_kv_tokens_never_shrink_with_gpu_memory_utilization(
    arch: Architecture, gpu: Gpu, tp: int, quantization: Quantization, low: float, high: float
) -> None:
    low, high = sorted((low, high))
    less = _memory(arch, gpu, tp, quantization, gpu_memory_utilization=low)
    more = _memory(arch, gpu, tp, quantization, gpu_memory_utilization=high)
    assert more.kv_tokens >= less.kv_tokens


@PROPERTY
@given(decoders, gpus, quantizations)
def test_each_gpu_holds_fewer_weight_bytes_at_higher_tp(
    arch: Architecture, gpu: Gpu, quantization: Quantization
) -> None:
    per_gpu = [cap.replica_memory(arch, gpu, tp=tp, quantization=quantization).weights for tp in (1, 2, 4, 8)]
    assert all(a > b for a, b in itertools.pairwise(per_gpu)), per_gpu


# --- time -------------------------------------------------------------------------------------


@PROPERTY
@given(decoders, gpus, tps, quantizations, st.integers(1, 2048), st.integers(1, 2048), st.integers(0, 131_072))
def test_decode_step_time_never_falls_as_the_batch_grows(
    arch: Architecture, gpu: Gpu, tp: int, quantization: Quantization, b1: int, b2: int, context: int
) -> None:
    small, large = sorted((b1, b2))
    model = cap.ReplicaModel(arch, gpu, tp=tp, quantization=quantization)
    assert cap.decode_step_seconds(model, small, mean_context=context) <= cap.decode_step_seconds(
        model, large, mean_context=context
    )


@PROPERTY
@given(decoders, gpus, tps, st.integers(1, 65_536), st.integers(1, 65_536))
def test_prefill_time_grows_with_the_prompt(arch: Architecture, gpu: Gpu, tp: int, t1: int, t2: int) -> None:
    short, long = sorted((t1, t2))
    model = cap.ReplicaModel(arch, gpu, tp=tp)
    assert cap.prefill_seconds(model, short) <= cap.prefill_seconds(model, long)


@PROPERTY
@given(decoders, gpus, tps, shapes, st.integers(1, 1024))
def test_replica_throughput_is_positive_and_finite(
    arch: Architecture, gpu: Gpu, tp: int, shape: cap.RequestShape, batch: int
) -> None:
    mu = cap.replica_throughput(cap.ReplicaModel(arch, gpu, tp=tp), shape, batch=batch)
    assert 0 < mu < math.inf


@PROPERTY
@given(st.integers(1, 4096), st.integers(0, 5_000_000), shapes)
def test_batch_slots_stay_within_the_scheduler_cap(max_num_seqs: int, kv_tokens: int, shape: cap.RequestShape) -> None:
    slots = cap.batch_slots(max_num_seqs, kv_tokens, shape)
    assert 1 <= slots <= max_num_seqs


@PROPERTY
@given(st.integers(0, 16), st.floats(0.0, 0.999), st.floats(0.0, 0.999))
def test_speculation_yields_between_one_and_k_plus_one_tokens_rising_with_acceptance(
    k: int, a1: float, a2: float
) -> None:
    low, high = sorted((a1, a2))
    worse, better = (cap.Speculation(k, a, 0.05).tokens_per_step for a in (low, high))
    assert 1.0 <= worse <= better * (1 + 1e-12) <= (k + 1) * (1 + 1e-12)


# --- queueing ---------------------------------------------------------------------------------


@PROPERTY
@given(st.integers(1, 5000), st.floats(1e-4, 0.9999))
@example(5000, 0.98)
@example(5000, 0.9999)
@example(5000, 0.5)
@example(1, 0.5)
def test_erlang_c_matches_the_erlang_b_recursion(servers: int, load_fraction: float) -> None:
    offered = servers * load_fraction
    assert math.isclose(
        cap.erlang_c(servers, offered), erlang_c_reference(servers, offered), rel_tol=1e-9, abs_tol=1e-12
    )


@PROPERTY
@given(st.integers(1, 5000), st.floats(1.0, 10.0))
def test_erlang_c_is_one_when_load_reaches_the_servers(servers: int, overload: float) -> None:
    assert cap.erlang_c(servers, servers * overload) == 1.0


@PROPERTY
@given(st.integers(1, 2000), st.floats(0.01, 100.0), st.floats(1e-3, 0.999))
def test_queue_wait_quantiles_are_ordered_and_the_mean_is_c_over_the_drain(
    servers: int, server_rate: float, load_fraction: float
) -> None:
    arrival_rate = servers * server_rate * load_fraction
    wait = cap.queue_wait(arrival_rate, server_rate, servers)
    p_wait = cap.erlang_c(servers, arrival_rate / server_rate)
    assert wait.probability == p_wait
    assert wait.p95_s >= wait.p50_s >= 0.0
    assert wait.mean_s == pytest.approx(p_wait / (servers * server_rate - arrival_rate), rel=1e-12)


@PROPERTY
@given(st.integers(1, 2000), st.floats(0.01, 100.0), st.floats(1.0, 10.0))
def test_queue_wait_is_infinite_when_the_pool_is_unstable(servers: int, server_rate: float, overload: float) -> None:
    wait = cap.queue_wait(servers * server_rate * overload, server_rate, servers)
    assert (wait.probability, wait.mean_s, wait.p50_s, wait.p95_s) == (1.0, math.inf, math.inf, math.inf)


def test_erlang_c_of_two_servers_at_half_load_is_one_third() -> None:
    # Erlang B: B1 = 1/2, B2 = 0.5 / (2 + 0.5) = 0.2; C = 2 x 0.2 / (2 - 1 x 0.8) = 1/3.
    assert cap.erlang_c(2, 1.0) == pytest.approx(1 / 3, rel=1e-12)


def test_erlang_c_is_near_zero_for_a_vanishing_load() -> None:
    # 20 servers offered 1e-20 Erlangs: the Erlang B numerator a^20/20! is ~1e-418, so C is ~0.
    assert cap.erlang_c(20, 1e-20) < 1e-100


def test_queue_wait_of_two_servers_at_half_load() -> None:
    wait = cap.queue_wait(1.0, 1.0, 2)  # C = 1/3, drain c*mu - lambda = 1/s
    assert wait.probability == pytest.approx(1 / 3)
    assert wait.mean_s == pytest.approx(1 / 3)
    assert wait.p50_s == 0.0  # two thirds of arrivals never wait
    assert wait.p95_s == pytest.approx(math.log((1 / 3) / 0.05))


def test_utilization_is_arrivals_over_service() -> None:
    assert cap.utilization(75, 100) == 0.75
    assert cap.utilization(1, 0) == math.inf


# --- cost -------------------------------------------------------------------------------------


@PROPERTY
@given(st.integers(0, 10_000), st.integers(1, 8), st.sampled_from([1, 2, 4, 8]))
def test_nodes_needed_holds_every_replica_with_no_spare_node(replicas: int, per_replica: int, per_node: int) -> None:
    if per_replica > per_node:
        per_replica, per_node = per_node, per_replica
    nodes = cap.nodes_needed(replicas, per_replica, per_node)
    fit = per_node // per_replica
    assert nodes * fit >= replicas
    assert (nodes - 1) * fit < replicas or nodes == 0
