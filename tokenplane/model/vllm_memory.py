"""What vLLM subtracts from a GPU's memory before the KV cache, term by term.

Read first from vLLM 0.19.0's source, whose logs the constants were fit on:
``vllm/v1/worker/gpu_worker.py`` ``determine_available_memory`` computes::

    available_kv = total x gpu_memory_utilization
                   - weights            ("Model loading took X GiB")
                   - torch peak increase of profile_run   (activation peak)
                   - non-torch increase since the worker started (NCCL, cuBLAS, ...)
                   - CUDA-graph estimate, only if VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1

``profile_run`` (``vllm/v1/worker/gpu_model_runner.py``) runs one forward pass of
``max_num_batched_tokens`` tokens spread over ``min(max_num_seqs,
max_num_batched_tokens)`` requests, then ``_dummy_sampler_run`` on one row of
logits per request with top-k and top-p on (a full-vocabulary sort). Its torch
peak is the larger of the two passes. In 0.19 the CUDA-graph estimate is logged
("Estimated CUDA graph memory") but not subtracted by default: the graphs are
captured after the KV cache is allocated and sit *outside* the budget, so they
are shown as their own term, and a ``gpu_memory_utilization`` close to 1 must
leave room for them.

The release-keyed accounting: ``overheads_for_version`` gives each release its terms, and a pool
is sized as the release its image runs (0.32.0; ``sizing.IMAGE_VLLM``) unless its
``engine.vllm_version`` names another. 0.19's accounting stays modelled: its startup logs
(``tokenplane.model.calibration``) are what the constants were read from and validated on.

What changed from 0.19.0 to 0.32.0, read from 0.32.0's source (the CPU build ships the same
Python), each with where it is and what this module does with it:

1. ``vllm/envs.py`` ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` defaults to 1 (since 0.21), and
   ``vllm/v1/worker/gpu_worker.py`` ``determine_available_memory`` subtracts the estimate from the
   requested memory: CUDA graphs sit *inside* the KV budget. Modelled (``subtract_cuda_graphs``
   from 0.21). Public 0.2x startup logs print "CUDA graph memory profiling is enabled (default since
   v0.21.0)".
2. ``vllm/v1/worker/gpu_model_runner.py`` ``profile_cudagraph_memory`` measures that estimate by
   capturing the first graphs of each mode into a scratch pool, the same "Estimated CUDA graph
   memory" 0.19 logged; capture sizes go up to ``min(2 x max_num_seqs, 512)`` (``vllm/config/vllm.py``).
   Modelled with the fit on the 0.19 logs (``cuda_graph_gib_base`` + per layer); not modelled: a
   smaller estimate when ``max_num_seqs`` < 256 (the model then promises less KV, the safe side).
3. ``vllm/utils/mem_utils.py`` ``memory_profiling``: ``non_kv = total_consumed`` (free memory at the
   instance's start minus after the profile: weights, persistent torch allocations such as the MoE
   workspace, non-torch memory) ``+ transient_peak_headroom`` (the profile's torch peak less what is
   still allocated). Term by term the sum 0.19 took; a persistent workspace counts once. Unchanged here.
4. ``gpu_worker.py`` ``_scoped_allocator_max_split`` runs ``profile_run`` with
   ``max_split_size_mb=20`` so that a small allocation cannot pin a freed multi-GiB workspace block
   past ``empty_cache`` (earlier releases could count an MoE workspace twice). Modelled by counting
   the workspace once, as before.
5. ``vllm/model_executor/layers/fused_moe/modular_kernel.py`` ``_allocate_buffers`` with
   ``experts/triton_moe.py`` ``TritonExperts.workspace_shapes`` (CUTLASS alike): ``M x topk x
   (max(N/2, K) + max(N, K))`` activations, ``M`` = the batch's tokens *unchunked* (``M_chunk ==
   M_full``), ``N`` = the gate/up width per rank, ``K`` = hidden; 0.19 sized ``3 x width + hidden``.
   Where the hidden size exceeds the per-rank expert width (Qwen3-235B-A22B at TP4) that is up to
   56% more. Modelled (``moe_workspace_kernel_shapes`` from 0.20). These are the shapes of the
   FP8 experts too: ``fused_moe/oracle/fp8.py`` ``_get_priority_backends`` puts ``TRITON``
   (``TritonExperts``) first for block-FP8 experts on Hopper without expert parallelism, and
   FlashInfer CUTLASS first with it (not modelled: tokenplane does not plan expert parallelism).
   ``experts/deep_gemm_moe.py`` ``DeepGemmExperts.workspace_shapes`` applies only when
   ``VLLM_USE_DEEP_GEMM`` is set: FP8 bytes for the first buffer, rows padded per local expert; for
   Qwen3-235B-A22B-FP8 at TP4 and 8,192 tokens it is 0.94 GiB a rank against the Triton shapes'
   1.00 GiB, under 1% of that replica's KV cache.
6. ``vllm/v1/worker/utils.py`` ``request_memory``: ``ceil(total x gpu_memory_utilization)`` of the
   device's *total* memory, as in 0.19. Unchanged.
7. ``gpu_model_runner.py`` ``profile_run`` / ``_dummy_sampler_run``: one pass of
   ``max_num_batched_tokens`` tokens over ``min(max_num_seqs, max_num_batched_tokens)`` requests, then
   the sampler with top-k and top-p over the full vocabulary. Unchanged.
8. ``gpu_worker.py`` ``maybe_apply_startup_plan`` (``VLLM_ENABLE_STARTUP_PLAN``, off by default)
   reuses a stored profile; ``cache_config.kv_cache_memory_bytes`` skips the profile and takes the
   KV size as given. Neither changes a default deployment's sizing; neither is modelled.
9. Outside PyTorch: ``vllm/distributed/device_communicators/all_reduce_utils.py`` sizes the new
   symmetric-memory and FlashInfer all-reduce buffers (``VLLM_ALLREDUCE_USE_SYMM_MEM`` and
   ``VLLM_ALLREDUCE_USE_FLASHINFER`` default to 1) at 64 MiB a rank at most on Hopper, small beside
   NCCL's ~2 GiB of NVLink SHARP buffers; ``custom_all_reduce.py`` ``CustomAllreduce.__init__`` still
   turns the custom all-reduce off without P2P (``_can_p2p``: "GPU P2P capability or P2P test
   failed") and on more than two PCIe-only GPUs. The non-torch term keeps its 0.19 measurement, by
   interconnect and P2P (``non_torch_bytes``).

The startup logs the constants come from are 0.17-0.19; 0.20-0.32 follow the source above
(``BENCHMARKS.md`` says what the move from 0.19's accounting does to each example pool). One
0.31.0 log of a catalog model was found after the model was frozen (Llama-3.1-8B on an A100,
``tokenplane.model.calibration_heldout``): this accounting puts it within 0.1 %.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tokenplane.catalog import GIB, Interconnect
from tokenplane.transformer import Architecture, ModelKind

ACTIVATION_BYTES = 2  # bf16 / fp16 activations


@dataclass(frozen=True)
class VllmOverheads:
    """Constants of vLLM's non-KV memory (vLLM V1, 0.17-0.19), each with where it comes from.

    The sampler and forward constants were read from the six ``FIT`` points of
    ``tokenplane.model.calibration``; the ``VALIDATION`` points were not used to set them.
    """

    # Forward pass: per token, the MLP's gate/up output and the activation (3 x the
    # intermediate width per rank) plus a few hidden-size buffers (residual, norm output,
    # attention output, QKV). The PP2 log of Llama-3.1-8B (no sampler on rank 0) shows the
    # forward alone: 1.10 GiB at 8,192 tokens = 3 x 14,336 + 6 x 4,096 bf16 values per token.
    mlp_buffers: float = 3.0
    hidden_buffers: float = 6.0
    # Fused-MoE workspace (``fused_moe.py``, ``intermediate_cache1..3``): per token and routed
    # expert, the gate/up output (2 x moe_intermediate / tp), its activation (moe_intermediate / tp)
    # and the down output (hidden), in bf16. It stays allocated by the workspace manager, so it
    # adds to the sampler's peak instead of competing with it.
    moe_workspace: bool = True
    # From 0.20 (read from 0.32's modular kernel): the workspace is the experts kernel's two buffers, each
    # per routed token at least the hidden size wide, instead of 0.19's 3 x width + hidden.
    moe_workspace_kernel_shapes: bool = False
    # Sampler dummy run: rows x vocab x this many bytes. Logits arrive in bf16 (2), are cast to
    # fp32 (4), then top-k/top-p sorts them (values 4 + int64 indices 8) -- 18 bytes if all were
    # live at once; the logs show 15.6 (1.89 GiB for Llama-3's 128,256 vocab x 1,024 rows,
    # 2.21 GiB for Qwen2.5's 152,064).
    sampler_bytes_per_logit: float = 15.6
    # Outside PyTorch, per rank. TP=1: the CUDA context's cuBLAS/cuDNN workspaces, 0.24-0.27 GiB.
    non_torch_gib_single: float = 0.25
    # TP over NVSwitch with NVLS (H100/H200/B200): NCCL's NVLink SHARP buffers plus vLLM's custom
    # all-reduce, 2.06-2.21 GiB, growing slowly with the ranks (TP2 2.06-2.10, TP4 2.13-2.21).
    non_torch_gib_nvls: float = 2.0
    non_torch_gib_nvls_per_rank: float = 0.04
    # TP over NVSwitch without NVLS (A100): NCCL without SHARP buffers. No v0.19 log found; the
    # NVLS figure is kept as the conservative bound.
    non_torch_gib_nvlink: float = 2.0
    # TP over PCIe (g5/g6/g6e): no NVLS, custom all-reduce off beyond two GPUs; NCCL's ring
    # buffers only. Issue 15 measured about 0.25 GiB on PCIe pairs; the ranks of a TP group of
    # 24 GiB PCIe cards log "non_torch_memory takes 0.20GiB" in vLLM PR 14447 (0.8.x, same
    # measurement). No 0.19 log on an AWS PCIe node was found, so this term is not validated there.
    non_torch_gib_pcie: float = 0.3
    # Pipeline-only ranks (TP=1, PP>1): 0.07 GiB on rank 0 of Llama-3.1-8B PP2 and PP4 -- the
    # P2P send/recv buffers are allocated through PyTorch, so little remains outside it.
    non_torch_gib_pipeline: float = 0.07
    # CUDA graphs (not subtracted in 0.19 unless VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1):
    # "Estimated CUDA graph memory" is 0.5-1.9 GiB on the logs, growing with the layers (each
    # piecewise graph holds its layer's outputs). Fit: 0.3 GiB + 17 MiB per layer on the rank.
    cuda_graph_gib_base: float = 0.3
    cuda_graph_gib_per_layer: float = 0.017
    subtract_cuda_graphs: bool = False
    # A fixed CUDA-graph reservation, for vLLM versions that subtract it (v0.21+): added to the
    # non-torch term as before.
    cuda_graph_gib: float = 0.0


DEFAULT_OVERHEADS = VllmOverheads()


def sampler_rows(max_num_seqs: int, max_num_batched_tokens: int) -> int:
    """Requests in the profiling batch: ``_dummy_run`` spreads the tokens over at most max_num_seqs."""
    return min(max_num_seqs, max_num_batched_tokens)


def sampler_peak_bytes(
    arch: Architecture, *, max_num_seqs: int, max_num_batched_tokens: int, overheads: VllmOverheads
) -> float:
    """Peak of ``_dummy_sampler_run``: full-vocabulary logits per request (gathered on every TP rank)."""
    if arch.kind is ModelKind.ENCODER:
        return 0.0
    rows = sampler_rows(max_num_seqs, max_num_batched_tokens)
    return rows * arch.vocab_size * overheads.sampler_bytes_per_logit


def moe_workspace_bytes(arch: Architecture, *, tp: int, max_num_batched_tokens: int, overheads: VllmOverheads) -> float:
    """The fused-MoE kernel's intermediate caches for one chunk of tokens (they persist)."""
    if not arch.is_moe or not overheads.moe_workspace:
        return 0.0
    width = (arch.moe_intermediate_size or arch.intermediate_size) / tp
    if overheads.moe_workspace_kernel_shapes:
        # workspace13 (the activation's output, later reused for the output) and workspace2 (the gate/up output).
        gate_up = 2 * width
        per_routed_token = max(width, arch.hidden_size) + max(gate_up, arch.hidden_size)
    else:
        per_routed_token = 3 * width + arch.hidden_size
    return max_num_batched_tokens * arch.experts_per_token * per_routed_token * ACTIVATION_BYTES


def forward_peak_bytes(arch: Architecture, *, tp: int, max_num_batched_tokens: int, overheads: VllmOverheads) -> float:
    """Peak activations of ``_dummy_run(max_num_batched_tokens)`` on one rank (MoE workspace apart)."""
    if arch.is_moe:
        # Routed experts run in the fused kernel's workspace; the shared experts (if any) and
        # the dense first layers run as an ordinary MLP.
        dense = max(arch.num_shared_experts * (arch.moe_intermediate_size or arch.intermediate_size), 0)
        if arch.first_dense_layers:
            dense = max(dense, arch.intermediate_size)
        mlp_width = dense
    else:
        mlp_width = arch.intermediate_size
    per_token = overheads.mlp_buffers * mlp_width / tp + overheads.hidden_buffers * arch.hidden_size
    return max_num_batched_tokens * per_token * ACTIVATION_BYTES


def activation_peak_bytes(
    arch: Architecture,
    *,
    tp: int,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    overheads: VllmOverheads = DEFAULT_OVERHEADS,
) -> float:
    """Torch peak increase of ``profile_run`` on the rank that runs the sampler (the last stage)."""
    forward = forward_peak_bytes(arch, tp=tp, max_num_batched_tokens=max_num_batched_tokens, overheads=overheads)
    workspace = moe_workspace_bytes(arch, tp=tp, max_num_batched_tokens=max_num_batched_tokens, overheads=overheads)
    sampler = sampler_peak_bytes(
        arch, max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens, overheads=overheads
    )
    return workspace + max(forward, sampler)


def non_torch_bytes(
    *,
    tp: int,
    pp: int,
    interconnect: Interconnect = Interconnect.NVLINK_NVLS,
    p2p: bool = True,
    overheads: VllmOverheads = DEFAULT_OVERHEADS,
) -> float:
    """Memory a rank holds outside PyTorch's allocator, by the GPU count and how the GPUs connect.

    ``p2p``: whether the GPUs can reach each other's memory. Without it NCCL runs over host
    memory (no NVLink or NVLS buffers) and vLLM turns its custom all-reduce off
    (0.32's ``custom_all_reduce.py`` ``CustomAllreduce.__init__``: "GPU P2P capability or P2P test
    failed"), which leaves NCCL's ring buffers: the PCIe figure, whatever the card.
    """
    o = overheads
    if tp > 1 and not p2p:
        gib = o.non_torch_gib_pcie
    elif tp > 1:
        gib = {
            Interconnect.NVLINK_NVLS: o.non_torch_gib_nvls + o.non_torch_gib_nvls_per_rank * tp,
            Interconnect.NVLINK: o.non_torch_gib_nvlink,
            Interconnect.PCIE: o.non_torch_gib_pcie,
        }[interconnect]
    elif pp > 1:
        gib = o.non_torch_gib_pipeline
    else:
        gib = o.non_torch_gib_single
    return (gib + o.cuda_graph_gib) * GIB


def cuda_graph_bytes(arch: Architecture, *, pp: int, overheads: VllmOverheads = DEFAULT_OVERHEADS) -> float:
    """vLLM's "Estimated CUDA graph memory" per rank: captured after the KV cache, outside the budget in 0.19."""
    if arch.kind is ModelKind.ENCODER:
        return 0.0
    layers = -(-arch.num_layers // pp)
    return (overheads.cuda_graph_gib_base + overheads.cuda_graph_gib_per_layer * layers) * GIB


# The releases whose accounting this module follows (V1 engine, torch peak + non-torch +
# weights, CUDA graphs outside the budget). tokenplane.model.calibration holds the 0.19.0 logs.
# 0.17-0.19 are checked against startup logs; 0.20-0.32 follow 0.32.0's source (the module's docstring), with
# one held-out 0.31.0 log (calibration_heldout) to check them.
COVERED_VERSIONS = ((0, 17), (0, 32))
VALIDATED_VERSIONS = ((0, 17), (0, 19))
# From here vLLM subtracts its CUDA-graph estimate from the KV budget by default.
CUDA_GRAPHS_SUBTRACTED_FROM = (0, 21)
# From here the MoE workspace is the experts kernel's workspace_shapes (read from 0.32.0).
MOE_KERNEL_SHAPES_FROM = (0, 20)


def parse_version(version: str) -> tuple[int, int]:
    """``"0.19.0"`` / ``"v0.19.1rc2"`` -> ``(0, 19)``; raises ValueError on anything else."""
    parts = version.strip().lstrip("v").split(".")
    if len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit():
        raise ValueError(f"vLLM version {version!r} is not of the form MAJOR.MINOR[.PATCH] (e.g. 0.19.0)")
    return int(parts[0]), int(parts[1])


def version_warning(version: str) -> str | None:
    """A warning when ``version``'s memory accounting is not the one this model was validated on."""
    v = parse_version(version)
    low, high = COVERED_VERSIONS
    if low <= v <= high:
        return None
    covered = f"{low[0]}.{low[1]}-{high[0]}.{high[1]}"
    if v < low:
        return (
            f"vLLM {version} predates the V1 memory profiling this model follows (it covers {covered}); its KV "
            "cache may differ by a third or more: run a covered release or check the engine's startup log"
        )
    return (
        f"vLLM {version} is newer than the releases this model covers ({covered}, read from their source); "
        "its memory accounting may have changed: check the engine's startup log"
    )


def overheads_for_version(version: str, base: VllmOverheads = DEFAULT_OVERHEADS) -> VllmOverheads:
    """The constants for ``version``: from 0.20 the MoE workspace by kernel shapes, from 0.21 CUDA graphs in the budget."""
    v = parse_version(version)
    return replace(
        base,
        subtract_cuda_graphs=base.subtract_cuda_graphs or v >= CUDA_GRAPHS_SUBTRACTED_FROM,
        moe_workspace_kernel_shapes=base.moe_workspace_kernel_shapes or v >= MOE_KERNEL_SHAPES_FROM,
    )
