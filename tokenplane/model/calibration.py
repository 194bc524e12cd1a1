"""Public vLLM startup logs and serving benchmarks that the capacity model is calibrated and validated against.

The latency points (``LATENCY``, at the end) are public ``vllm bench serve`` results, each
predicted for the load its benchmark offered (``Load``); the memory points follow.

Each point is one logged vLLM startup, with the figures vLLM prints per GPU (rank 0):
"Model loading took X GiB", "torch peak memory increase", "non-torch forward
increase memory", "Estimated CUDA graph memory", "Available KV cache memory" and
"GPU KV cache size: N tokens". Every point names the URL of the log it was copied
from. The points are split in two:

- ``FIT``: the six points the constants of ``VllmOverheads`` were read from.
- ``VALIDATION``: points the constants were *not* tuned on (other models, MoE,
  quantized checkpoints, TP 2-4, PP). Their error is what ``BENCHMARKS.md``
  reports (``benchmarks/capacity_validation.py``) and what the tests bound.

All points are vLLM v0.19.0 (two Qwen3-14B points: 0.17.0 and 0.18.0; V1 engine) on an H100 SXM (79.19 GiB as CUDA reports
it), ``gpu_memory_utilization=0.95`` and the v0.19 ``vllm serve`` defaults on a
>= 70 GiB GPU (``max_num_batched_tokens=8192``, ``max_num_seqs=1024``;
``vllm/engine/arg_utils.py``, ``get_batch_defaults``), from the logs that
llm-d-planner committed. Points on other GPUs (L4, A10G, L40S, PCIe TP) could not
be found as v0.19 logs with every figure printed; ``OTHER_GPUS`` holds the one older
log that does (an L40S pair over PCIe, vLLM 0.7.1); see ``BENCHMARKS.md``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace
from enum import StrEnum

from tokenplane.catalog import GB, TERA, Gpu, Interconnect, KvCacheDtype, Quantization, gpu, model_preset
from tokenplane.model import capacity as cap
from tokenplane.model.vllm_memory import overheads_for_version
from tokenplane.quantization import WeightFormat, default_format
from tokenplane.transformer import Architecture

LLM_D_LOGS = (
    "https://github.com/llm-d-incubation/llm-d-planner/blob/d3121e059da88662db39a926a3ead964be97359b/"
    "accuracy/results/v0.19.0/logs/"
)
VLLM_VERSION = "0.19.0"
LLM_D_SWEEP = (
    "https://github.com/llm-d-incubation/llm-d-planner/blob/d3121e059da88662db39a926a3ead964be97359b/"
    "accuracy/results/version-sweep/runs/"
)


def _arch(**fields: int | bool | tuple[str, ...]) -> Architecture:
    return Architecture.model_validate(fields)


# Shapes from each model's config.json on huggingface.co/<repo>; the weights they imply are
# checked against "Model loading took" by the tests (within 2.5 %), so a wrong shape shows.
QWEN3_8B = _arch(
    hidden_size=4096, num_layers=36, num_attention_heads=32, num_kv_heads=8, head_dim=128,
    intermediate_size=12288, vocab_size=151936, max_position_embeddings=40960,
)  # fmt: skip
QWEN3_30B_A3B = _arch(
    hidden_size=2048, num_layers=48, num_attention_heads=32, num_kv_heads=4, head_dim=128,
    intermediate_size=6144, vocab_size=151936, max_position_embeddings=40960,
    num_experts=128, experts_per_token=8, moe_intermediate_size=768,
)  # fmt: skip
QWEN1_5_MOE_A2_7B = _arch(
    hidden_size=2048, num_layers=24, num_attention_heads=16, num_kv_heads=16,
    intermediate_size=5632, vocab_size=151936, max_position_embeddings=8192,
    num_experts=60, experts_per_token=4, moe_intermediate_size=1408, num_shared_experts=4,
)  # fmt: skip
DEEPSEEK_V2_LITE = _arch(
    hidden_size=2048, num_layers=27, num_attention_heads=16, num_kv_heads=16,
    intermediate_size=10944, vocab_size=102400, max_position_embeddings=163840,
    num_experts=64, experts_per_token=6, moe_intermediate_size=1408, num_shared_experts=2,
    first_dense_layers=1, kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128,
)  # fmt: skip
PHI_4 = _arch(
    hidden_size=5120, num_layers=40, num_attention_heads=40, num_kv_heads=10,
    intermediate_size=17920, vocab_size=100352, max_position_embeddings=16384,
)  # fmt: skip
CODELLAMA_7B = _arch(
    hidden_size=4096, num_layers=32, num_attention_heads=32, num_kv_heads=32,
    intermediate_size=11008, vocab_size=32016, max_position_embeddings=16384,
)  # fmt: skip
QWEN3_14B = _arch(
    hidden_size=5120, num_layers=40, num_attention_heads=40, num_kv_heads=8, head_dim=128,
    intermediate_size=17408, vocab_size=151936, max_position_embeddings=40960,
)  # fmt: skip
GRANITE_3_1_8B = _arch(
    hidden_size=4096, num_layers=40, num_attention_heads=32, num_kv_heads=8,
    intermediate_size=12800, vocab_size=49155, max_position_embeddings=131072, tie_word_embeddings=True,
)  # fmt: skip
# Gemma 2: sliding-window attention on every other layer (window 4,096). vLLM 0.19 logs its KV
# cache in full-attention tokens, which is how tokenplane sizes it too (with a warning).
GEMMA_2_2B = _arch(
    hidden_size=2304, num_layers=26, num_attention_heads=8, num_kv_heads=4, head_dim=256,
    intermediate_size=9216, vocab_size=256000, max_position_embeddings=8192, tie_word_embeddings=True,
    uncovered=("sliding-window attention (window 4096)",),
)  # fmt: skip
GEMMA_2_9B = _arch(
    hidden_size=3584, num_layers=42, num_attention_heads=16, num_kv_heads=8, head_dim=256,
    intermediate_size=14336, vocab_size=256000, max_position_embeddings=8192, tie_word_embeddings=True,
    uncovered=("sliding-window attention (window 4096)",),
)  # fmt: skip
GEMMA_2_27B = _arch(
    hidden_size=4608, num_layers=46, num_attention_heads=32, num_kv_heads=16, head_dim=128,
    intermediate_size=36864, vocab_size=256000, max_position_embeddings=8192, tie_word_embeddings=True,
    uncovered=("sliding-window attention (window 4096)",),
)  # fmt: skip
QWEN3_235B_A22B = _arch(
    hidden_size=4096, num_layers=94, num_attention_heads=64, num_kv_heads=4, head_dim=128,
    intermediate_size=12288, vocab_size=151936, max_position_embeddings=40960,
    num_experts=128, experts_per_token=8, moe_intermediate_size=1536,
)  # fmt: skip

BF16, FP8 = default_format(Quantization.BF16), default_format(Quantization.FP8)
INT8_CHANNEL = default_format(Quantization.INT8)
# RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16: GPTQ 4-bit, group 128 (vLLM: gptq_marlin).
GPTQ_4BIT = default_format(Quantization.GPTQ)


@dataclass(frozen=True)
class Point:
    """One logged vLLM startup; ``None`` where the log did not print the figure."""

    label: str
    arch: Architecture
    weights: WeightFormat
    source: str
    tp: int = 1
    pp: int = 1
    kv_cache_dtype: KvCacheDtype = KvCacheDtype.AUTO
    gpu_name: str = "H100-80GB"
    gpu_memory_utilization: float = 0.95
    max_num_batched_tokens: int = 8192
    max_num_seqs: int = 1024
    max_model_len: int = 8192
    weights_gib: float | None = None
    activation_gib: float | None = None
    non_torch_gib: float | None = None
    cuda_graph_gib: float | None = None
    kv_gib: float | None = None
    kv_tokens: int | None = None
    tags: tuple[str, ...] = field(default=())
    vllm_version: str = VLLM_VERSION

    def plan(self) -> cap.MemoryPlan:
        return cap.replica_memory(
            self.arch,
            gpu(self.gpu_name),
            tp=self.tp,
            pp=self.pp,
            quantization=self.weights.scheme,
            weight_format=self.weights,
            kv_cache_dtype=self.kv_cache_dtype,
            gpu_memory_utilization=self.gpu_memory_utilization,
            max_num_batched_tokens=self.max_num_batched_tokens,
            max_num_seqs=self.max_num_seqs,
            # Each log is predicted with its own release's accounting (0.19's for the fit and validation sets).
            overheads=overheads_for_version(self.vllm_version),
        )


def _log(name: str) -> str:
    return LLM_D_LOGS + name


L8, Q7, L70 = (model_preset(n).architecture for n in ("llama-3.1-8b", "qwen2.5-7b", "llama-3.1-70b"))
Q72, MIXTRAL = (model_preset(n).architecture for n in ("qwen2.5-72b", "mixtral-8x7b"))

FIT: tuple[Point, ...] = (
    Point("llama-3.1-8b bf16 TP1", L8, BF16, _log("meta-llama-llama---h100-80gb--tp1pp1dp1--8192-dtbf16.log"),
          weights_gib=14.99, activation_gib=1.89, non_torch_gib=0.25, cuda_graph_gib=0.84, kv_gib=58.11,
          kv_tokens=476_000),
    Point("llama-3.1-8b bf16 fp8-KV TP1", L8, BF16, _log("meta-llama---h100-80gb--tp1pp1dp1--8192-dtbf16-kvfp8.log"),
          kv_cache_dtype=KvCacheDtype.FP8, weights_gib=14.99, activation_gib=1.89, non_torch_gib=0.25,
          kv_gib=58.11, kv_tokens=952_032),
    Point("llama-3.1-8b fp8 (runtime) TP1", L8, FP8, _log("meta-llama-llama-3---h100-80gb--tp1pp1dp1--8192-qfp8.log"),
          weights_gib=8.49, activation_gib=1.89, non_torch_gib=0.25, kv_gib=64.61, kv_tokens=529_248,
          tags=("quantized",)),
    Point("qwen2.5-7b bf16 TP1", Q7, BF16, _log("qwen-qwen2-5-7b-instruct--h100-80gb--tp1pp1dp1--8192.log"),
          weights_gib=14.25, activation_gib=2.21, non_torch_gib=0.24, cuda_graph_gib=0.61, kv_gib=58.53,
          kv_tokens=1_096_000),
    Point("llama-3.3-70b fp8-dynamic TP2", L70, FP8, _log("fp8dyn-llama-3-3-70b--h100-80gb--tp2pp1dp1--8192.log"),
          tp=2, weights_gib=33.88, activation_gib=1.96, non_torch_gib=2.10, cuda_graph_gib=1.82, kv_gib=37.28,
          kv_tokens=244_304, tags=("quantized",)),
    Point("llama-3.3-70b fp8-dynamic TP4", L70, FP8, _log("fp8dyn-llama-3-3-70b--h100-80gb--tp4pp1dp1--8192.log"),
          tp=4, weights_gib=16.96, activation_gib=1.97, non_torch_gib=2.21, cuda_graph_gib=1.70, kv_gib=54.09,
          kv_tokens=708_992, tags=("quantized",)),
)  # fmt: skip

VALIDATION: tuple[Point, ...] = (
    Point("llama-3.1-8b bf16 TP2", L8, BF16, _log("meta-llama-llama-3-1-8b---h100-80gb--tp2pp1dp1--8192.log"),
          tp=2, weights_gib=7.51, activation_gib=1.89, non_torch_gib=2.07, cuda_graph_gib=1.69, kv_gib=63.76,
          kv_tokens=1_044_688),
    Point("llama-3.1-8b bf16 TP4", L8, BF16, _log("meta-llama-llama-3-1-8b---h100-80gb--tp4pp1dp1--8192.log"),
          tp=4, weights_gib=3.77, activation_gib=1.89, non_torch_gib=2.13, cuda_graph_gib=0.57, kv_gib=67.44,
          kv_tokens=2_209_792),
    Point("llama-3.1-8b bf16 PP2", L8, BF16, _log("meta-llama-llama-3-1-8b---h100-80gb--tp1pp2dp1--8192.log"),
          pp=2, weights_gib=7.51, activation_gib=1.10, non_torch_gib=0.07, cuda_graph_gib=0.54, kv_gib=66.54,
          kv_tokens=1_075_312),
    Point("qwen2.5-7b bf16 TP2", Q7, BF16, _log("qwen-qwen2-5-7b-instruct--h100-80gb--tp2pp1dp1--8192.log"),
          tp=2, weights_gib=7.12, activation_gib=2.21, non_torch_gib=2.06, cuda_graph_gib=0.61, kv_gib=63.84,
          kv_tokens=2_390_592),
    Point("qwen2.5-7b bf16 TP4", Q7, BF16, _log("qwen-qwen2-5-7b-instruct--h100-80gb--tp4pp1dp1--8192.log"),
          tp=4, weights_gib=3.55, activation_gib=2.21, non_torch_gib=2.13, cuda_graph_gib=0.69, kv_gib=67.34,
          kv_tokens=5_043_280),
    Point("qwen2.5-72b bf16 TP2", Q72, BF16, _log("qwen-qwen2-5-72b-instruc--h100-80gb--tp2pp1dp1--8192.log"),
          tp=2, weights_gib=67.80, activation_gib=2.29, non_torch_gib=2.09, cuda_graph_gib=1.63, kv_gib=3.04,
          kv_tokens=19_920, tags=("tight",)),
    Point("kimi-dev-72b (qwen2.5-72b shapes) bf16 TP4", Q72, BF16,
          _log("moonshotai-kimi-dev-72b--h100-80gb--tp4pp1dp1--8192.log"),
          tp=4, weights_gib=34.01, activation_gib=2.29, non_torch_gib=2.21, cuda_graph_gib=1.51, kv_gib=36.72,
          kv_tokens=481_296),
    Point("qwen3-8b bf16 TP1", QWEN3_8B, BF16, _log("qwen-qwen3-8b--h100-80gb--tp1pp1dp1--8192.log"),
          weights_gib=15.27, activation_gib=2.21, non_torch_gib=0.25, cuda_graph_gib=0.84, kv_gib=57.50,
          kv_tokens=418_688),
    Point("phi-4 bf16 TP1", PHI_4, BF16, _log("microsoft-phi-4--h100-80gb--tp1pp1dp1--8192.log"),
          weights_gib=27.39, activation_gib=1.52, non_torch_gib=0.25, cuda_graph_gib=0.81, kv_gib=46.08,
          kv_tokens=241_568),
    Point("codellama-7b bf16 TP1", CODELLAMA_7B, BF16, _log("codellama-codellama-7b-h--h100-80gb--tp1pp1dp1--8192.log"),
          weights_gib=12.56, activation_gib=0.77, non_torch_gib=0.25, cuda_graph_gib=0.84, kv_gib=61.66,
          kv_tokens=126_256),
    Point("granite-3.1-8b bf16 TP1", GRANITE_3_1_8B, BF16, _log("granite-3-1-8b--h100-80gb--tp1pp1dp1--8192.log"),
          weights_gib=15.25, activation_gib=0.85, non_torch_gib=0.46, cuda_graph_gib=0.74, kv_gib=58.66,
          kv_tokens=384_432),
    Point("mixtral-8x7b bf16 TP2", MIXTRAL, BF16, _log("mistralai-mixtral-8x7b-i--h100-80gb--tp2pp1dp1--8192.log"),
          tp=2, weights_gib=43.51, activation_gib=1.21, non_torch_gib=2.07, cuda_graph_gib=0.82, kv_gib=28.44,
          kv_tokens=465_936, tags=("moe",)),
    Point("qwen3-30b-a3b bf16 TP1", QWEN3_30B_A3B, BF16, _log("qwen-qwen3-30b-a3b--h100-80gb--tp1pp1dp1--8192.log"),
          weights_gib=56.88, activation_gib=2.68, non_torch_gib=0.27, cuda_graph_gib=1.24, kv_gib=15.41,
          kv_tokens=168_288, tags=("moe",)),
    Point("qwen1.5-moe-a2.7b bf16 TP1", QWEN1_5_MOE_A2_7B, BF16,
          _log("qwen-qwen1-5-moe-a2-7b--h100-80gb--tp1pp1dp1--8192.log"),
          weights_gib=26.67, activation_gib=2.47, non_torch_gib=0.25, cuda_graph_gib=0.82, kv_gib=45.83,
          kv_tokens=250_304, tags=("moe",)),
    Point("deepseek-v2-lite bf16 TP1 (MLA)", DEEPSEEK_V2_LITE, BF16,
          _log("deepseek-ai-deepseek-v2---h100-80gb--tp1pp1dp1--8192.log"),
          weights_gib=29.43, activation_gib=1.93, non_torch_gib=0.26, cuda_graph_gib=1.39, kv_gib=43.61,
          kv_tokens=1_505_552, tags=("moe",)),
    Point("gemma-2-2b bf16 TP1 (sliding window)", GEMMA_2_2B, BF16, _log("google-gemma-2-2b-it--h100-80gb--tp1pp1dp1--8192.log"),
          weights_gib=4.90, activation_gib=3.62, non_torch_gib=0.24, cuda_graph_gib=0.52, kv_gib=66.47,
          kv_tokens=670_160, tags=("sliding-window",)),
    Point("gemma-2-9b bf16 TP1 (sliding window)", GEMMA_2_9B, BF16, _log("google-gemma-2-9b-it--h100-80gb--tp1pp1dp1--8192.log"),
          weights_gib=17.22, activation_gib=3.65, non_torch_gib=0.25, cuda_graph_gib=0.84, kv_gib=54.12,
          kv_tokens=168_880, tags=("sliding-window",)),
    Point("gemma-2-27b bf16 TP1 (sliding window)", GEMMA_2_27B, BF16, _log("google-gemma-2-27b-it--h100-80gb--tp1pp1dp1--8192.log"),
          weights_gib=50.72, activation_gib=3.66, non_torch_gib=0.26, cuda_graph_gib=1.13, kv_gib=20.59,
          kv_tokens=58_672, tags=("sliding-window",)),
    Point("qwen3-14b bf16 TP1 (vLLM 0.17.0)", QWEN3_14B, BF16,
          LLM_D_SWEEP + "qwen3-14b-vllm-v0-17-0--h100-80gb--tp1pp1dp1--8192.json",
          weights_gib=27.52, activation_gib=2.23, kv_gib=45.34, kv_tokens=297_152, vllm_version="0.17.0"),
    Point("qwen3-14b bf16 TP1 (vLLM 0.18.0)", QWEN3_14B, BF16,
          LLM_D_SWEEP + "qwen3-14b-vllm-v0-18-0--h100-80gb--tp1pp1dp1--8192.json",
          weights_gib=27.52, activation_gib=2.23, non_torch_gib=0.25, cuda_graph_gib=0.90, kv_gib=45.23,
          kv_tokens=296_400, vllm_version="0.18.0"),
    Point("llama-3.1-8b w4a16 (GPTQ) TP1", L8, GPTQ_4BIT,
          _log("w4a16-redhatai-lla--h100-80gb--tp1pp1dp1--8192-dtf16.log"),
          weights_gib=5.38, activation_gib=1.89, non_torch_gib=0.25, cuda_graph_gib=0.84, kv_gib=67.71,
          kv_tokens=554_704, tags=("quantized",)),
    Point("llama-3.1-8b w8a8 (INT8) TP1", L8, INT8_CHANNEL,
          _log("w8a8-redhatai-llam--h100-80gb--tp1pp1dp1--8192-dtf16.log"),
          weights_gib=8.49, activation_gib=1.89, non_torch_gib=0.25, cuda_graph_gib=0.84, kv_gib=64.60,
          kv_tokens=529_200, tags=("quantized",)),
    Point("qwen2.5-7b fp8-dynamic TP1", Q7, FP8, _log("fp8dyn-redhatai-qwen2-5---h100-80gb--tp1pp1dp1--8192.log"),
          weights_gib=8.14, activation_gib=2.21, non_torch_gib=0.24, cuda_graph_gib=0.71, kv_gib=64.64,
          kv_tokens=1_210_304, tags=("quantized",)),
    Point("qwen2.5-7b w8a8 (INT8) TP1", Q7, INT8_CHANNEL,
          _log("w8a8-redhatai-qwen2-5-7b--h100-80gb--tp1pp1dp1--8192.log"),
          weights_gib=8.14, activation_gib=2.21, non_torch_gib=0.25, cuda_graph_gib=0.81, kv_gib=64.64,
          kv_tokens=1_210_272, tags=("quantized",)),
    Point("llama-3.3-70b w8a8 (INT8) TP2", L70, INT8_CHANNEL,
          _log("redhatai-llama-3-3-70b-i--h100-80gb--tp2pp1dp1--8192.log"),
          tp=2, weights_gib=33.88, activation_gib=1.96, non_torch_gib=2.11, cuda_graph_gib=1.92, kv_gib=37.28,
          kv_tokens=244_304, tags=("quantized",)),
)  # fmt: skip


# Releases outside the validated 0.17-0.19: not bounded by the tests, reported in BENCHMARKS.md to
# show why ``tokenplane size`` warns there (0.15-0.16 profiled a 2.5x larger activation peak).
OTHER_VERSIONS: tuple[Point, ...] = (
    Point("qwen3-14b bf16 TP1 (vLLM 0.15.0)", QWEN3_14B, BF16,
          LLM_D_SWEEP + "qwen3-14b-vllm-v0-15-0--h100-80gb--tp1pp1dp1--8192.json",
          weights_gib=27.52, activation_gib=5.64, kv_gib=41.94, kv_tokens=274_848, vllm_version="0.15.0"),
    Point("qwen3-14b bf16 TP1 (vLLM 0.16.0)", QWEN3_14B, BF16,
          LLM_D_SWEEP + "qwen3-14b-vllm-v0-16-0--h100-80gb--tp1pp1dp1--8192.json",
          weights_gib=27.52, activation_gib=5.64, kv_gib=41.94, kv_tokens=274_848, vllm_version="0.16.0"),
    # The release is not stated; the issue was filed on 2025-07-22, when 0.9.2 was the latest. vLLM's defaults on
    # an H100 (gpu_memory_utilization 0.90, 8,192 batched tokens, 1,024 sequences). With 0.19's accounting the
    # model gives 39% more KV than this log; with 0.32.0's (the MoE workspace by kernel shapes, CUDA graphs in
    # the budget) 11% more. It is not a 0.32 log, so neither number validates 0.32.
    Point("qwen3-235b-a22b fp8 TP4 (vLLM ~0.9.2, 2025-07)", QWEN3_235B_A22B, FP8,
          "https://github.com/vllm-project/vllm/issues/21348", tp=4, gpu_memory_utilization=0.90,
          max_model_len=40960, kv_gib=8.11, kv_tokens=178_880, vllm_version="0.9.2", tags=("moe", "quantized")),
)  # fmt: skip

Q32 = model_preset("qwen2.5-32b").architecture

# Other GPUs, from other releases: the only public startup logs found on an L4, A10G, L40S or a PCIe
# tensor-parallel pair that print every term. Reported in BENCHMARKS.md and bounded by the tests on the
# term each one tests (non-torch memory by interconnect), not on the release-specific activation profile.
OTHER_GPUS: tuple[Point, ...] = (
    # vLLM 0.7.1 (V0 engine), 2x L40S over PCIe, --max-model-len 10000, chunked prefill off (so the profile
    # runs max_model_len tokens, 256 sequences), gpu_memory_utilization 0.90; "# CUDA blocks: 3947".
    Point("qwen2.5-32b bf16 TP2, 2x L40S over PCIe (vLLM 0.7.1)", Q32, BF16,
          "https://github.com/vllm-project/vllm/issues/15815", tp=2, gpu_name="L40S", gpu_memory_utilization=0.90,
          max_num_batched_tokens=10_000, max_num_seqs=256, max_model_len=10_000, weights_gib=30.71,
          activation_gib=1.26, non_torch_gib=0.30, kv_gib=7.71, kv_tokens=3947 * 16, vllm_version="0.7.1",
          tags=("pcie",)),
)  # fmt: skip


@dataclass(frozen=True)
class Residual:
    point: Point
    predicted_tokens: int
    predicted_kv_gib: float

    @property
    def error(self) -> float:
        """Relative error of the predicted KV tokens: positive means we promise more than vLLM gives."""
        logged = self.point.kv_tokens or 0
        return (self.predicted_tokens - logged) / logged


def residuals(points: tuple[Point, ...]) -> list[Residual]:
    out = []
    for p in points:
        if p.kv_tokens is None:
            continue
        plan = p.plan()
        out.append(Residual(p, plan.kv_tokens, plan.kv_available / 2**30))
    return out


@dataclass(frozen=True)
class ErrorSummary:
    count: int
    median_abs: float
    max_abs: float


def summarize(rows: list[Residual]) -> ErrorSummary:
    errors = [abs(r.error) for r in rows]
    return ErrorSummary(len(errors), statistics.median(errors), max(errors))


# --- latency ------------------------------------------------------------------------------------

QWEN2_5_0_5B = _arch(
    hidden_size=896, num_layers=24, num_attention_heads=14, num_kv_heads=2,
    intermediate_size=4864, vocab_size=151936, max_position_embeddings=32768, tie_word_embeddings=True,
)  # fmt: skip
QWEN3_0_6B = _arch(
    hidden_size=1024, num_layers=28, num_attention_heads=16, num_kv_heads=8, head_dim=128,
    intermediate_size=3072, vocab_size=151936, max_position_embeddings=40960, tie_word_embeddings=True,
)  # fmt: skip
QWEN3_1_7B = _arch(
    hidden_size=2048, num_layers=28, num_attention_heads=16, num_kv_heads=8, head_dim=128,
    intermediate_size=6144, vocab_size=151936, max_position_embeddings=40960, tie_word_embeddings=True,
)  # fmt: skip


class Load(StrEnum):
    """How a public benchmark offered its requests: the TTFT it measured depends on it.

    - ``LONE``: one request at a time (``--max-concurrency 1``): the server's floor plus the prefill.
    - ``WAVES``: a closed loop at ``--max-concurrency c`` with fixed lengths (``--ignore-eos``). The c
      requests finish on the same iteration, so the next c arrive together and are prefilled together,
      ``max_num_batched_tokens`` per iteration; each request's first token comes out of the iteration
      that finishes its prompt.
    - ``STAGGERED``: arrivals at a random phase of a busy engine: a Poisson ``--request-rate``, or a closed
      loop whose lengths vary (ShareGPT). A request waits for the iteration in progress (half of one on
      average: iterations are near-constant), then its prompt is prefilled in the next, alongside the
      batch's decode, as ``tokenplane.sim`` prices such an iteration.
    """

    LONE = "lone"
    WAVES = "waves"
    STAGGERED = "staggered"


# GPUs a public latency point ran on that no AWS instance offers. The catalog sizes AWS node groups, so it
# does not hold them (a spec cannot name one); a point may still be read on one.
# NVIDIA H100 PCIe product brief (PB-11133-001) and datasheet: 80 GB HBM2e at 2,000 GB/s, 756 TFLOPS BF16 /
# 1,513 FP8 dense (half the sparse figures), 114 SMs, a PCIe Gen5 card. Its memory total is the SXM part's
# (both 80 GB); no latency term reads it.
OFF_CATALOG_GPUS: dict[str, Gpu] = {
    g.name: g for g in (Gpu("H100-PCIe", 79.19, 2000 * GB, 756 * TERA, 1513 * TERA, Interconnect.PCIE),)
}


def point_gpu(name: str) -> Gpu:
    """The GPU a latency point ran on: a catalog GPU, or one of ``OFF_CATALOG_GPUS``."""
    return OFF_CATALOG_GPUS[name] if name in OFF_CATALOG_GPUS else gpu(name)


def vllm_default_token_budget(gpu_name: str) -> int:
    """``max_num_batched_tokens`` that ``vllm serve`` picks by default on ``gpu_name``.

    ``vllm/engine/arg_utils.py`` (``get_batch_defaults``, v0.19): 8,192 on GPUs of at least
    70 GiB other than the A100 (vLLM PR 17885), 2,048 elsewhere (A100, L4, L40S, A10G).
    """
    device = point_gpu(gpu_name)
    return 8192 if device.hbm_bytes >= 70 * 2**30 and not device.name.startswith("A100") else 2048


@dataclass(frozen=True)
class LatencyPoint:
    """One public ``vllm bench serve`` (or ``benchmark_serving.py``) result: TPOT, and TTFT where comparable.

    ``batch`` is the requests decoding together: the closed-loop concurrency, or for an open-loop
    rate, arrivals x end-to-end latency (Little's law), as noted per point. ``context`` is the mean
    tokens in the KV cache while decoding (prompt + half the output).
    """

    label: str
    arch: Architecture
    gpu_name: str
    source: str
    vllm_version: str
    batch: int
    context: int
    tpot_ms: float
    prompt_tokens: int | None = None
    ttft_ms: float | None = None
    note: str = ""
    fit: bool = False  # the Efficiency floors were read from this point
    tp: int = 1
    load: Load = Load.LONE
    output_tokens: int | None = None
    rate_rps: float | None = None  # STAGGERED at an open-loop rate; a closed loop's rate follows from its latency
    cached_tokens: int = 0  # of the prompt, served from vLLM's prefix cache (a LONE request's earlier twin)
    tags: tuple[str, ...] = ()
    # The constants predicted with: BENCHMARKS.md sweeps the TTFT floor with ``dataclasses.replace``.
    efficiency: cap.Efficiency = field(default=cap.DEFAULT_EFFICIENCY, compare=False)

    def model(self) -> cap.ReplicaModel:
        return cap.ReplicaModel(self.arch, point_gpu(self.gpu_name), tp=self.tp, efficiency=self.efficiency)

    @property
    def token_budget(self) -> int:
        return vllm_default_token_budget(self.gpu_name)

    def _decode_ms(self) -> float:
        return cap.inter_token_seconds(self.model(), self.batch, mean_context=self.context) * 1e3

    def _arrivals_per_s(self, tpot_ms: float) -> float:
        """Requests per second the engine takes in: the open-loop rate, or a closed loop's c / end-to-end."""
        if self.rate_rps is not None:
            return self.rate_rps
        # The end-to-end time from the model alone (a lone TTFT, then the tokens): never the measured figures.
        first_s = cap.ttft_seconds(self.model(), self.prompt_tokens or 0)
        e2e_s = first_s + max((self.output_tokens or 1) - 1, 0) * tpot_ms / 1e3
        return self.batch / e2e_s if e2e_s > 0 else 0.0

    def predicted_tpot_ms(self) -> float:
        """One decode step at the batch, plus the prefill work the harness puts between a request's steps.

        Waves: the rest of the wave's prefill iterations, spread over the request's tokens. Staggered
        arrivals: ``pool_performance``'s fixed point, an iteration being the decode plus the prefill
        seconds that arrive per iteration, ``tau = D / (1 - lambda x E[prefill seconds])``.
        """
        decode = self._decode_ms()
        if self.prompt_tokens is None or self.load is Load.LONE:
            return decode
        if self.load is Load.WAVES:
            stall = wave(self.model(), self.prompt_tokens, self.batch, self.token_budget).stall_s * 1e3
            return decode + stall / max((self.output_tokens or 2) - 1, 1)
        prefill_s = cap.prefill_compute_seconds(self.model(), self.prompt_tokens)
        busy = self._arrivals_per_s(decode) * prefill_s
        return decode / (1.0 - busy) if busy < 1.0 else float("inf")

    def predicted_ttft_ms(self) -> float | None:
        if self.prompt_tokens is None:
            return None
        model = self.model()
        if self.load is Load.LONE:
            fresh = self.prompt_tokens - self.cached_tokens
            return cap.ttft_seconds(model, fresh, context_before=self.cached_tokens) * 1e3
        if self.load is Load.WAVES:
            first = wave(model, self.prompt_tokens, self.batch, self.token_budget).first_token_s
            # The wave's other c - 1 requests are in flight at the server as each one's first token leaves.
            server = cap.server_wait_seconds(model, arriving=self.batch - 1)
            return (server + first) * 1e3
        tpot = self.predicted_tpot_ms()
        cost = cap.prefill_cost(model)
        prefill = cost.in_iteration(cost.seconds(self.prompt_tokens), float(self.prompt_tokens), float(self.batch))
        joined = cap.decode_step_seconds(model, self.batch, mean_context=self.context) + prefill
        server = cap.server_wait_seconds(model, streaming=self.batch - 1)
        return server * 1e3 + tpot / 2 + joined * 1e3


@dataclass(frozen=True)
class Wave:
    """A closed-loop wave's prefill, as the scheduler runs it (``wave``)."""

    first_token_s: float  # mean, from the wave's arrival to each request's first token, engine side
    stall_s: float  # mean time a request, once prefilled, waits for the rest of the wave's prefill iterations


def wave(model: cap.ReplicaModel, prompt_tokens: int, concurrency: int, token_budget: int) -> Wave:
    """``concurrency`` prompts that arrive together at an idle engine (a closed-loop wave).

    The scheduler takes the waiting prompts first come, first served, ``token_budget`` tokens per
    iteration, splitting a prompt across iterations where the budget ends (chunked prefill). Each
    iteration is one forward pass: the roofline of its FLOPs (each prompt attends to its own tokens)
    and its weight reads, plus the step overhead. A request's first token leaves with the iteration
    that finishes its prompt; its next tokens wait for the wave's remaining prefill iterations, which
    its TPOT then carries.
    """
    if prompt_tokens <= 0 or concurrency <= 0 or token_budget <= 0:
        raise ValueError(f"wave({prompt_tokens=}, {concurrency=}, {token_budget=}) needs positive sizes")
    cost = cap.prefill_cost(model)
    total = prompt_tokens * concurrency
    finished_at: list[float] = []
    clock, start = 0.0, 0
    while start < total:
        end = min(start + token_budget, total)
        pairs = 0.0
        for r in range(start // prompt_tokens, (end - 1) // prompt_tokens + 1):
            lo, hi = max(start, r * prompt_tokens), min(end, (r + 1) * prompt_tokens)
            pairs += cap.causal_pairs(hi - lo, lo - r * prompt_tokens)
        compute = cost.per_token_s * (end - start) + cost.per_pair_s * pairs
        clock += cost.in_iteration(compute, float(end - start), 0.0) + cap.step_overhead_seconds(model)
        finished_at += [clock] * (end // prompt_tokens - len(finished_at))
        start = end
    mean = sum(finished_at) / len(finished_at)
    return Wave(first_token_s=mean, stall_s=clock - mean)


YOBITEL = "https://yobitelcomm.github.io/bench/recipes/concurrency-sweep/"
MUSGRAVE = "https://johnmusgrave.com/p/vllm-throughput-latency-sweep-on"
WMX = "https://ai.wmx.dev/benchmarks"
# Found at a mirror of the pull request's files (http://172.245.126.119:8080/ovg-project/kvcached/pull/331/files).
KVCACHED = "https://github.com/ovg-project/kvcached/pull/331"
# tenstorrent's reference runs of vLLM on NVIDIA GPUs (its own sweep harness over ``benchmark_serving``,
# random prompts at --max-concurrency 1). The vLLM release is not stated; the dates are given instead.
# Only the first run of each prompt length is used: later runs reuse the same seeded random prompts,
# so vLLM's prefix cache serves part of them (their TTFT drops, e.g. 52.5 -> 32.8 ms for 128 tokens).
# The 1,024-token runs follow the 128-token ones, whose prompts are their first 128 tokens (the random
# dataset's tokens are ``offset + i + j`` from the same seed): those 8 blocks come from the cache.
TT_CACHED = 128
TT_QWEN3 = "https://github.com/tenstorrent/tt-inference-server/issues/340"
TT_QWEN25_72B = "https://github.com/tenstorrent/tt-inference-server/issues/143"
GPUSTACK_QWEN3_8B = (
    "https://github.com/gpustack/gpustack/blob/1dbc3b8130da92d31539404545a1aff5c3992f8c/"
    "docs/performance-lab/qwen3-8b/h100-latency.md"
)
# gpustack's ShareGPT run: 100 prompts, 23,260 input and 22,061 output tokens (means 233 and 221).
SHAREGPT_IN, SHAREGPT_OUT = 233, 221

LATENCY: tuple[LatencyPoint, ...] = (
    LatencyPoint("llama-3.1-8b H100 c=1", L8, "H100-80GB", YOBITEL, "0.21.0", 1, 1000, 6.48, fit=True,
                 note="chatbot-short prompts of unstated length: context taken as 1,000 tokens"),
    LatencyPoint("llama-3.1-8b H100 c=4", L8, "H100-80GB", YOBITEL, "0.21.0", 4, 1000, 6.59, load=Load.STAGGERED,
                 note="as above, closed loop at 4"),
    LatencyPoint("llama-3.1-8b A100-40GB c=1", L8, "A100-40GB", MUSGRAVE, "0.23.0", 1, 1088, 1000 / 75,
                 note="1,024 in / 128 out; 'about 75 tokens/sec' at one request"),
    LatencyPoint("qwen2.5-0.5b L4 c=1", QWEN2_5_0_5B, "L4", WMX, "0.23.0", 1, 320, 5.1, 256, 27.0, fit=True,
                 note="256 in / 128 out, --ignore-eos; p50 figures"),
    *(
        LatencyPoint(f"qwen2.5-0.5b L4 c={c}", QWEN2_5_0_5B, "L4", WMX, "0.23.0", c, 320, itl, 256, ttft,
                     load=Load.WAVES, output_tokens=128, note="closed loop, 256 in / 128 out, --ignore-eos; p50")
        for c, itl, ttft in ((2, 5.2, 37.8), (4, 5.3, 50.1), (8, 5.5, 60.9), (16, 6.0, 103.8), (32, 7.1, 135.3))
    ),
    LatencyPoint("qwen3-0.6b H100 16 req/s", QWEN3_0_6B, "H100-80GB", KVCACHED, "0.19.0", 5, 576, 2.39, 512, 38.9,
                 fit=True, load=Load.STAGGERED, output_tokens=128, rate_rps=16.0,
                 note="512 in / 128 out, Poisson 16 req/s: about 5 requests decode together (16/s x 0.34 s)"),
    # tenstorrent, 2025-06/07, an A100 80 GB (the 61 GB Qwen3-30B-A3B runs on one), 128 in / 128 out unless noted.
    LatencyPoint("qwen3-1.7b A100 c=1", QWEN3_1_7B, "A100-80GB", TT_QWEN3, "unstated (2025-06)", 1, 192, 4.6, 128,
                 11.4),
    LatencyPoint("qwen3-1.7b A100 c=1, 1,024 in", QWEN3_1_7B, "A100-80GB", TT_QWEN3, "unstated (2025-06)", 1, 1088,
                 4.8, 1024, 26.4, cached_tokens=TT_CACHED),
    LatencyPoint("qwen3-14b A100 c=1", QWEN3_14B, "A100-80GB", TT_QWEN3, "unstated (2025-07)", 1, 192, 24.3, 128,
                 52.5),
    LatencyPoint("qwen3-30b-a3b A100 c=1 (MoE)", QWEN3_30B_A3B, "A100-80GB", TT_QWEN3, "unstated (2025-07)", 1, 192,
                 9.6, 128, 35.7, tags=("moe",)),
    LatencyPoint("qwen3-30b-a3b A100 c=1, 1,024 in (MoE)", QWEN3_30B_A3B, "A100-80GB", TT_QWEN3, "unstated (2025-07)",
                 1, 1088, 9.8, 1024, 70.3, tags=("moe",), cached_tokens=TT_CACHED),
    # tenstorrent, 2025-04, Qwen2.5-72B-Instruct bf16 on 2x H100 (TP2).
    LatencyPoint("qwen2.5-72b 2xH100 TP2 c=1", Q72, "H100-80GB", TT_QWEN25_72B, "unstated (2025-04)", 1, 192, 30.9,
                 128, 41.1, tp=2),
    LatencyPoint("qwen2.5-72b 2xH100 TP2 c=1, 1,024 in", Q72, "H100-80GB", TT_QWEN25_72B, "unstated (2025-04)", 1,
                 1088, 31.0, 1024, 129.2, tp=2, cached_tokens=TT_CACHED),
    # gpustack's vLLM baseline: Qwen3-8B bf16 on one H100 SXM, ShareGPT through /v1/chat/completions, mean figures.
    LatencyPoint("qwen3-8b H100 ShareGPT c=1", QWEN3_8B, "H100-80GB", GPUSTACK_QWEN3_8B, "0.11.0", 1, 343, 7.28,
                 SHAREGPT_IN, 59.0, output_tokens=SHAREGPT_OUT, note="chat endpoint; means of 100 ShareGPT prompts"),
    *(
        LatencyPoint(f"qwen3-8b H100 ShareGPT c={c}", QWEN3_8B, "H100-80GB", GPUSTACK_QWEN3_8B, "0.11.0", c, 343,
                     tpot, SHAREGPT_IN, ttft, load=Load.STAGGERED, output_tokens=SHAREGPT_OUT,
                     note="closed loop over ShareGPT's varied lengths: arrivals land at random phases")
        for c, tpot, ttft in ((2, 7.37, 63.78), (4, 7.38, 64.00), (8, 7.71, 74.57))
    ),
)  # fmt: skip


@dataclass(frozen=True)
class LatencyError:
    point: LatencyPoint
    tpot: float
    ttft: float | None


def latency_errors(points: tuple[LatencyPoint, ...] = LATENCY) -> list[LatencyError]:
    out = []
    for p in points:
        ttft_pred = p.predicted_ttft_ms()
        ttft = None if ttft_pred is None or p.ttft_ms is None else (ttft_pred - p.ttft_ms) / p.ttft_ms
        out.append(LatencyError(p, (p.predicted_tpot_ms() - p.tpot_ms) / p.tpot_ms, ttft))
    return out


# --- the server's per-request term --------------------------------------------------------------

# The loaded points ``Efficiency.api_per_request_s`` (the server's work per request arriving with a first
# token's) is fitted on: the L4's closed-loop waves, where the c prompts arrive together and TTFT grows
# with c beyond the GPU work. A staggered point's others stream rather than arrive with it, which the
# real engine prices apart (``Efficiency.api_per_stream_s``, ``benchmarks/server_arrivals.py``), so none
# is a fit point: until the two were split the H100 at 16 req/s was one. Every other loaded point is
# held out from it.
API_TERM_FIT = tuple(f"qwen2.5-0.5b L4 c={c}" for c in (2, 4, 8, 16, 32))
API_FIT_GRID_S = 1e-4  # the fit's resolution: 0.1 ms per request in flight


def fit_api_per_request(points: tuple[LatencyPoint, ...] = LATENCY, *, labels: tuple[str, ...] = API_TERM_FIT) -> float:
    """The per-request server term that minimizes the squared relative TTFT error over ``labels``' points."""
    chosen = [p for p in points if p.label in labels and p.ttft_ms is not None]
    if len(chosen) != len(labels):
        raise ValueError(f"fit points missing: {sorted(set(labels) - {p.label for p in chosen})}")

    def loss(api_s: float) -> float:
        eff = replace(cap.DEFAULT_EFFICIENCY, api_per_request_s=api_s)
        total = 0.0
        for p in chosen:
            predicted = replace(p, efficiency=eff).predicted_ttft_ms() or 0.0
            total += ((predicted - (p.ttft_ms or 0.0)) / (p.ttft_ms or 1.0)) ** 2
        return total

    grid = [i * API_FIT_GRID_S for i in range(101)]  # 0-10 ms
    return min(grid, key=loss)
