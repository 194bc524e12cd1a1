"""The memory model against vLLM's own startup logs.

Each point is one vLLM v0.19.0 (V1 engine) startup on an H100 SXM (79.19 GiB as
CUDA reports it) at ``gpu_memory_utilization=0.95``, ``max_num_batched_tokens=8192``
and ``max_num_seqs=1024`` (the v0.19 ``vllm serve`` defaults on H100). The figures
are per GPU (rank 0), copied from the log lines "Model loading took X GiB",
"torch peak memory increase", "non-torch forward increase memory", "Available KV
cache memory: Y GiB" and "GPU KV cache size: N tokens". The 70B points are
RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic, which has Llama-3.1-70B's shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tokenplane import capacity as cap
from tokenplane.catalog import GIB, KvCacheDtype, Quantization, gpu, model_preset

TOKENS_TOLERANCE = 0.015  # KV tokens: what VllmOverheads promises
WEIGHTS_TOLERANCE = 0.025  # "Model loading took" also counts buffers we do not model (rotary caches)
ACTIVATION_TOLERANCE_GIB = 0.1
NON_TORCH_TOLERANCE_GIB = 0.15

LLM_D_REPORT = "https://github.com/llm-d-incubation/llm-d-planner/blob/main/accuracy/accuracy_report.md"
LLM_D_LOGS = "https://github.com/llm-d-incubation/llm-d-planner/tree/main/accuracy/results/v0.19.0/logs"


@dataclass(frozen=True)
class Point:
    """One logged vLLM startup. ``None`` where the log did not print the figure."""

    label: str
    model: str
    quantization: Quantization
    kv_cache_dtype: KvCacheDtype
    tp: int
    weights_gib: float
    kv_gib: float
    kv_tokens: int | None
    activation_gib: float | None
    non_torch_gib: float | None
    max_model_len: int = 8192
    concurrency: float | None = None


BF16, FP8 = Quantization.BF16, Quantization.FP8
AUTO, FP8_KV = KvCacheDtype.AUTO, KvCacheDtype.FP8

POINTS = [
    # Row 7. LLM_D_REPORT: Llama-3.1-8B-Instruct bf16, TP1; "476,000 tokens", 58.11x at 8,192.
    Point("llama-8b-bf16-tp1", "llama-3.1-8b", BF16, AUTO, 1, 14.99, 58.11, 476_000, 1.89, 0.25, concurrency=58.11),
    # Row 8. LLM_D_REPORT: the same with --kv-cache-dtype fp8; the pool in GiB is unchanged, tokens double.
    Point("llama-8b-bf16-fp8kv-tp1", "llama-3.1-8b", BF16, FP8_KV, 1, 14.99, 58.11, 952_032, 1.89, 0.25),
    # Row 9. LLM_D_REPORT: runtime --quantization fp8; the log printed weights and the KV GiB, not the tokens.
    Point("llama-8b-fp8-tp1", "llama-3.1-8b", FP8, AUTO, 1, 8.49, 64.61, None, None, None),
    # Row 11. LLM_D_REPORT: Qwen/Qwen2.5-7B-Instruct bf16, TP1; "1,096,000 tokens".
    Point("qwen-7b-bf16-tp1", "qwen2.5-7b", BF16, AUTO, 1, 14.25, 58.53, 1_096_000, 2.21, 0.24),
    # Row 12. LLM_D_LOGS fp8dyn-llama-3-3-70b--h100-80gb--tp2pp1dp1--8192.log: 244,304 tokens, 29.82x.
    Point("llama-70b-fp8-tp2", "llama-3.1-70b", FP8, AUTO, 2, 33.88, 37.28, 244_304, 1.96, 2.10, concurrency=29.82),
    # Row 13. LLM_D_LOGS fp8dyn-llama-3-3-70b--h100-80gb--tp4pp1dp1--8192.log: 708,992 tokens, 86.55x.
    Point("llama-70b-fp8-tp4", "llama-3.1-70b", FP8, AUTO, 4, 16.96, 54.09, 708_992, 1.97, 2.21, concurrency=86.55),
]


def _plan(point: Point) -> cap.MemoryPlan:
    return cap.replica_memory(
        model_preset(point.model).architecture,
        gpu("H100"),
        tp=point.tp,
        quantization=point.quantization,
        kv_cache_dtype=point.kv_cache_dtype,
        gpu_memory_utilization=0.95,
        max_num_batched_tokens=8192,
        max_num_seqs=1024,
    )


def _ids(point: Point) -> str:
    return point.label


@pytest.mark.parametrize("point", [p for p in POINTS if p.kv_tokens is not None], ids=_ids)
def test_kv_tokens_match_vllm_startup_log(point: Point) -> None:
    ours = _plan(point).kv_tokens
    assert ours == pytest.approx(point.kv_tokens, rel=TOKENS_TOLERANCE), (
        f"{point.label}: {ours:,} tokens vs vLLM's {point.kv_tokens:,}"
    )


@pytest.mark.parametrize("point", POINTS, ids=_ids)
def test_available_kv_memory_matches_vllm_startup_log(point: Point) -> None:
    ours = _plan(point).kv_available / GIB
    assert ours == pytest.approx(point.kv_gib, rel=TOKENS_TOLERANCE), f"{point.label}: {ours:.2f} GiB"


@pytest.mark.parametrize("point", POINTS, ids=_ids)
def test_weights_per_gpu_match_vllm_model_loading(point: Point) -> None:
    ours = _plan(point).weights / GIB
    assert ours == pytest.approx(point.weights_gib, rel=WEIGHTS_TOLERANCE), f"{point.label}: {ours:.2f} GiB"


@pytest.mark.parametrize("point", [p for p in POINTS if p.activation_gib is not None], ids=_ids)
def test_activation_peak_matches_vllm_profiling(point: Point) -> None:
    ours = _plan(point).activation / GIB
    assert ours == pytest.approx(point.activation_gib, abs=ACTIVATION_TOLERANCE_GIB), f"{point.label}: {ours:.2f} GiB"


@pytest.mark.parametrize("point", [p for p in POINTS if p.non_torch_gib is not None], ids=_ids)
def test_non_torch_memory_matches_vllm_profiling(point: Point) -> None:
    ours = _plan(point).non_torch / GIB
    assert ours == pytest.approx(point.non_torch_gib, abs=NON_TORCH_TOLERANCE_GIB), f"{point.label}: {ours:.2f} GiB"


@pytest.mark.parametrize("point", [p for p in POINTS if p.concurrency is not None], ids=_ids)
def test_max_concurrency_matches_vllm_startup_log(point: Point) -> None:
    ours = cap.max_concurrency(_plan(point).kv_tokens, point.max_model_len)
    assert ours == pytest.approx(point.concurrency, rel=TOKENS_TOLERANCE), f"{point.label}: {ours:.2f}x"


def test_fp8_kv_cache_doubles_the_logged_tokens_in_the_same_pool() -> None:
    bf16_kv, fp8_kv = (_plan(p) for p in POINTS[:2])
    assert fp8_kv.kv_available == bf16_kv.kv_available
    # Whole 16-token blocks: doubling the blocks can add at most one block's rounding.
    assert fp8_kv.kv_tokens - 2 * bf16_kv.kv_tokens in (0, cap.BLOCK_SIZE)
