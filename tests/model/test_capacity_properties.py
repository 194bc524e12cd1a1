"""Invariants of the capacity model and its queueing maths, checked with hypothesis."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenplane.catalog import GPUS, MODEL_PRESETS, Gpu, KvCacheDtype, Quantization
from tokenplane.model import capacity as cap
from tokenplane.transformer import Architecture, ModelKind

# Time-based deadlines would make these tests depend on the machine; examples are cheap anyway.
PROPERTY = settings(deadline=None, max_examples=150)

DECODERS = sorted(n for n, p in MODEL_PRESETS.items() if p.architecture.kind is ModelKind.DECODER)
decoders = st.sampled_from(DECODERS).map(lambda name: MODEL_PRESETS[name].architecture)
gpus = st.sampled_from(sorted(GPUS)).map(GPUS.__getitem__)
quantizations = st.sampled_from(list(Quantization))
kv_dtypes = st.sampled_from(list(KvCacheDtype))
tps = st.sampled_from([1, 2, 4, 8])


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
@given(st.integers(0, 16), st.floats(0.0, 0.999), st.floats(0.0, 0.999))
def test_speculation_yields_between_one_and_k_plus_one_tokens_rising_with_acceptance(
    k: int, a1: float, a2: float
) -> None:
    low, high = sorted((a1, a2))
    worse, better = (cap.Speculation(k, a, 0.05).tokens_per_step for a in (low, high))
    assert 1.0 <= worse <= better * (1 + 1e-12) <= (k + 1) * (1 + 1e-12)


# --- queueing ---------------------------------------------------------------------------------


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
