"""Startup logs added after the memory model was frozen: held out from every fit, by construction.

``tokenplane.model.calibration`` holds the logs the constants of ``VllmOverheads`` were read
from (``FIT``) and those they were checked on when they were set (``VALIDATION``). This module
holds the logs found afterwards, for issue 28's held-out memory target (median <= 5 %, max
<= 15 % on current releases, other GPUs, MoE FP8, tensor parallelism without P2P). The model was
frozen at ``FROZEN_AT`` before any of them was read, and ``FROZEN_ERRORS`` records what that
model gave on each before anything changed; ``benchmarks/capacity_validation.py`` prints both.
A point here must never enter a fit (``tests/model/test_calibration_heldout.py`` guards it): a
change to the model that these points motivate must come from vLLM's source, not from them.

What was found, and what was not (issue 28 item 5): public startup logs of vLLM >= 0.20 that
print every term are mostly of hybrid attention models (Qwen3.5+, GLM-5.x) on consumer or AMD
cards, which the model warns about instead of sizing. The one found on a catalog model and GPU
is an A100 under vLLM 0.31.0. A public write-up of vLLM 0.19.1 on an A100 40 GB adds two more,
at the A100's serving token budget and at four times it, and two logs of llm-d-planner's 0.19
sweep that the constants never saw are held out with them. No 0.2x/0.3x log of an MoE FP8 model
on H100s, or of tensor parallelism over PCIe without P2P (L40S, A100 PCIe), that prints the KV
cache and the settings was found; the Qwen3-235B-A22B FP8 TP4 log stays in
``calibration.OTHER_VERSIONS`` (vLLM ~0.9.2).
"""

from __future__ import annotations

from tokenplane.catalog import model_preset
from tokenplane.model.calibration import BF16, INT8_CHANNEL, L8, LLM_D_LOGS, QWEN3_8B, Point

# The commit the model was frozen at (integ10, 2026-12-04): every point below was added after it.
FROZEN_AT = "69068e8"

# Not a GitHub URL: the file was found through a code-search index that does not give its
# repository. It is a public set of notes ("Session 2") with the verbatim startup lines of
# ``docker run vllm/vllm-openai:v0.31.0-ubuntu2404 --model meta-llama/Llama-3.1-8B-Instruct`` on
# one A100 80 GB (79.25 GiB as CUDA reports it), all defaults.
A100_V031_NOTES = "public notes, code-search index file 70682754770 (vllm-openai v0.31.0 on one A100 80GB)"

# dariustanrd/tokenkaki: Qwen3-8B under vLLM 0.19.1 on one A100-SXM4-40GB of a DGX Station (39.39 GiB),
# all defaults: ``vllm serve`` (2,048 batched tokens, 256 sequences on an A100) and ``vllm bench latency``
# (the LLM class: 8,192 batched tokens, 256 sequences), so the same GPU at two token budgets.
TOKENKAKI = "https://github.com/dariustanrd/tokenkaki/blob/02862f7eed9088742d6e24cc413c3bcb9e97ba58/"

# Mistral-Small-3.1-24B is the catalog's Mistral-Small-24B text model plus a Pixtral vision tower
# (about 0.4 B parameters, kept in bf16 by the w8a8 checkpoint) that tokenplane does not size:
# "Model loading took" is 0.9 GiB (TP1) above the model's weights, so the KV cache it promises is
# that much too large. Kept as logged, not corrected.
MISTRAL_SMALL_24B = model_preset("mistral-small-24b").architecture

HELD_OUT: tuple[Point, ...] = (
    # vLLM 0.31.0 defaults on an A100: gpu_memory_utilization 0.92 (config/cache.py), 2,048 batched
    # tokens and 256 sequences (arg_utils.py get_batch_defaults: the A100 is excluded from the larger
    # defaults), CUDA-graph profiling on (its estimate is inside the logged 1.44 GiB "peak activation").
    Point("llama-3.1-8b bf16 TP1, A100-80GB (vLLM 0.31.0)", L8, BF16, A100_V031_NOTES, gpu_name="A100-80GB",
          gpu_memory_utilization=0.92, max_num_batched_tokens=2048, max_num_seqs=256, max_model_len=131_072,
          weights_gib=15.0, non_torch_gib=0.26, kv_gib=56.21, kv_tokens=460_496, vllm_version="0.31.0",
          tags=("current-release", "a100")),
    # 0.19 logs "Estimated CUDA graph memory" but does not subtract it; 2.35 GiB on the A100 (2.44 captured).
    Point("qwen3-8b bf16 TP1, A100-40GB serve (vLLM 0.19.1)", QWEN3_8B, BF16,
          TOKENKAKI + "blogposts/content/1_vllm/yy-mm-dd-behind-the-api-1-vllm-draft.md", gpu_name="A100-40GB",
          gpu_memory_utilization=0.90, max_num_batched_tokens=2048, max_num_seqs=256, max_model_len=40_960,
          weights_gib=15.27, cuda_graph_gib=2.35, kv_gib=19.36, kv_tokens=140_960, vllm_version="0.19.1",
          tags=("a100",)),
    Point("qwen3-8b bf16 TP1, A100-40GB, 8,192 batched tokens (vLLM 0.19.1)", QWEN3_8B, BF16,
          TOKENKAKI + "experiments/1_vllm_v0.19.1_Qwen3-8B/1_latency/out.log", gpu_name="A100-40GB",
          gpu_memory_utilization=0.90, max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=40_960,
          weights_gib=15.27, cuda_graph_gib=2.35, kv_gib=19.20, kv_tokens=139_792, vllm_version="0.19.1",
          tags=("a100", "large-batch")),
    Point("mistral-small-3.1-24b w8a8 (INT8) TP1 (vision tower unsized)", MISTRAL_SMALL_24B, INT8_CHANNEL,
          LLM_D_LOGS + "w8a8-mistral-small-24b--h100-80gb--tp1pp1dp1--8192.log",
          weights_gib=24.07, activation_gib=2.18, non_torch_gib=0.26, cuda_graph_gib=1.04, kv_gib=48.73,
          kv_tokens=319_344, tags=("quantized", "multimodal")),
    Point("mistral-small-3.1-24b w8a8 (INT8) TP2 (vision tower unsized)", MISTRAL_SMALL_24B, INT8_CHANNEL,
          LLM_D_LOGS + "w8a8-mistral-small-24b--h100-80gb--tp2pp1dp1--8192.log", tp=2,
          weights_gib=12.11, activation_gib=2.03, non_torch_gib=2.07, cuda_graph_gib=1.60, kv_gib=59.02,
          kv_tokens=773_584, tags=("quantized", "multimodal")),
)  # fmt: skip

# The error in KV tokens (positive: more than vLLM gave) of the model frozen at FROZEN_AT on each
# point, measured before any change to the model; a later change is judged against these.
FROZEN_ERRORS: dict[str, float] = {
    "llama-3.1-8b bf16 TP1, A100-80GB (vLLM 0.31.0)": 0.0014,
    "qwen3-8b bf16 TP1, A100-40GB serve (vLLM 0.19.1)": 0.0010,
    "qwen3-8b bf16 TP1, A100-40GB, 8,192 batched tokens (vLLM 0.19.1)": -0.0100,
    "mistral-small-3.1-24b w8a8 (INT8) TP1 (vision tower unsized)": 0.0221,
    "mistral-small-3.1-24b w8a8 (INT8) TP2 (vision tower unsized)": 0.0098,
}
