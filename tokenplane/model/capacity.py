"""The performance model: memory, per-step latency, traffic and cost.

Pure functions over plain numbers and catalog records, shared by the planner,
the workbench simulator and the simulated engine, so that all three agree. How a
replica behaves under a request mix (its throughput, concurrency and TTFT) is
built on these in ``tokenplane.model.pool_performance``.

Memory follows vLLM's own accounting (``vllm/v1/worker/gpu_worker.py``,
``determine_available_memory``)::

    kv_budget = total_gpu_memory * gpu_memory_utilization
                - weights - peak activation of a profiling pass - non-torch memory

then divided into blocks of 16 tokens; each term is derived in ``vllm_memory`` and
each weight format in ``quantization``. Time follows the roofline: prefill is
bounded by FLOPs (a short prompt alone, by the weights its pass reads) and decode
by the bytes each step reads (weights + KV), with
floors below which real kernels do not go (per-layer kernel latency, the sampler,
the server's time to first token). Real kernels reach only part of the peak, so
both carry an efficiency factor (``Efficiency``), documented with its sources
where it is defined; ``tokenplane.model.calibration`` holds the public points behind them.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import overload

import numpy as np
import numpy.typing as npt

from tokenplane.catalog import Gpu, Interconnect, KvCacheDtype, Quantization
from tokenplane.model.interconnect import Link, allreduce_latency_seconds, allreduce_seconds_per_row, link_for
from tokenplane.model.moe_kernels import layer_cost as moe_layer_cost
from tokenplane.model.vllm_memory import (
    DEFAULT_OVERHEADS,
    VllmOverheads,
    activation_peak_bytes,
    cuda_graph_bytes,
    non_torch_bytes,
)
from tokenplane.quantization import WeightFormat, default_format
from tokenplane.transformer import Architecture, ModelKind

__all__ = [  # the memory terms are defined in vllm_memory and are part of this interface too
    "API_CPU_PER_REQUEST_S",
    "API_CPU_PER_STEP_S",
    "API_CPU_PER_TOKEN_S",
    "API_SERVER_BUSY_MAX",
    "BLOCK_SIZE",
    "DEFAULT_EFFICIENCY",
    "DEFAULT_OVERHEADS",
    "DecodeStepTerms",
    "Efficiency",
    "MemoryPlan",
    "PrefillBeside",
    "PrefillCost",
    "ReplicaModel",
    "RequestShape",
    "Speculation",
    "VllmOverheads",
    "activation_peak_bytes",
    "api_server_busy",
    "api_servers_needed",
    "backlog",
    "blended_price_per_million",
    "bytes_per_weight",
    "causal_pairs",
    "cuda_graph_bytes",
    "decode_step_seconds",
    "decode_step_table",
    "decode_step_terms",
    "e2e_seconds",
    "inter_token_seconds",
    "kv_bytes_per_token",
    "kv_dtype_bytes",
    "kv_heads_per_shard",
    "layers_per_stage",
    "max_concurrency",
    "mean_shape",
    "model_weight_bytes",
    "nodes_needed",
    "non_torch_bytes",
    "prefill_compute_seconds",
    "prefill_cost",
    "prefill_flops",
    "prefill_seconds",
    "prefill_seconds_per_token",
    "replica_memory",
    "sampling_seconds",
    "server_seconds",
    "server_wait_seconds",
    "speculation_factor",
    "step_overhead_seconds",
    "token_throughput",
    "ttft_seconds",
    "usd_per_million_tokens",
    "utilization",
    "weight_bytes",
    "weight_read_seconds",
]

F64 = npt.NDArray[np.float64]
# The OpenAI server's work for the other requests it handles while a first token waits (``server_seconds``).
# Per request arriving with it (a burst: a closed-loop wave's c prompts): fitted on the public closed-loop
# waves (``calibration.API_TERM_FIT``) by ``benchmarks/capacity_validation.py --fit-api``.
API_PER_REQUEST_S = 0.0023
# Per request streaming beside it (arrivals at random phases: Poisson, the planner's load): measured on the
# real engine by ``benchmarks/server_arrivals.py`` (vLLM 0.32's CPU build: 0.00 to 0.29 ms over six runs,
# against 1.4 to 2.4 ms per arrival; the top of the spread, rounded up, since under-pricing it promises a
# TTFT the pool misses), which ``tests/engine/test_server_arrivals.py`` re-measures. A price below the server's
# saturation only: beside 12 streams on a two-core CI machine (the engine on the other core) a first token waited
# 1.3 s, a queue this linear term does not model.
API_PER_STREAM_S = 0.0003
# The OpenAI server's CPU, which caps what one server process streams (``api_server_busy``): per request
# (parsing, tokenization, the hand-off), per engine step (receiving the step's outputs) and per streamed token
# (detokenizing it, writing its chunk). Read from the API server process's own CPU seconds on the real engine
# by ``benchmarks/server_cpu.py`` (vLLM 0.32's CPU build); ``tests/engine/test_server_cpu.py`` re-measures them.
# Fitted there at 2.2 ms, 0.23 ms and 46 us; priced at the fit rounded up, as ``API_PER_STREAM_S`` is, since
# under-pricing it plans a server that cannot keep up. A host's CPU may be faster or slower than this one's.
API_CPU_PER_REQUEST_S = 0.0025
API_CPU_PER_STEP_S = 0.00025
API_CPU_PER_TOKEN_S = 60e-6
# The busiest a server process may be at the planned peak: an M/D/1 queue at 0.7 keeps a first token's and a
# chunk's wait for the loop under about one step's output work (u / (2 (1 - u)) = 1.2 of it); at 0.9 it is 4.5.
API_SERVER_BUSY_MAX = 0.7
# GPUs whose attention kernels run FP8 with an FP8 KV cache: FlashAttention 3 is Hopper's (H100, H200).
FP8_ATTENTION_GPUS = frozenset({"H100-80GB", "H200-141GB"})
BLOCK_SIZE = 16  # vLLM's default KV block size, in tokens


def bytes_per_weight(quantization: Quantization) -> float:
    """Bytes per weight of a quantized linear layer in ``quantization``'s usual format, scales included."""
    return default_format(quantization).quantized_bytes


def kv_dtype_bytes(kv_cache_dtype: KvCacheDtype) -> int:
    return 2 if kv_cache_dtype is KvCacheDtype.AUTO else 1


def weight_bytes(params: float, quantization: Quantization, *, embedding_params: float = 0.0) -> float:
    """Bytes of weights. Quantizers leave the embeddings and LM head at 16 bits.

    >>> weight_bytes(70e9, Quantization.FP16)  # the reference's 70B FP16 = 140 GB
    140000000000.0
    """
    if embedding_params > params:
        raise ValueError(f"embedding_params={embedding_params} exceeds params={params}")
    body = params - embedding_params
    return body * bytes_per_weight(quantization) + embedding_params * 2.0


def model_weight_bytes(
    arch: Architecture, quantization: Quantization, *, weight_format: WeightFormat | None = None
) -> float:
    """Bytes of the whole model, each module kind in its own format.

    Quantizers convert the linear layers only: embeddings, the LM head, norms and the MoE
    router stay at 16 bits (``tokenplane.quantization``). ``weight_format`` is what a
    checkpoint's ``quantization_config`` says; without it, ``quantization``'s usual format.
    """
    fmt = weight_format or default_format(quantization)
    return fmt.weight_bytes(arch.param_groups)


def kv_heads_per_shard(arch: Architecture, tp: int) -> int:
    """KV heads each tensor-parallel rank stores.

    When TP exceeds the KV heads, vLLM replicates each KV head across
    ``tp / num_kv_heads`` ranks, so every rank still holds one whole head.
    """
    return max(1, math.ceil(arch.num_kv_heads / tp))


def kv_bytes_per_token(arch: Architecture, kv_cache_dtype: KvCacheDtype, *, tp: int = 1) -> int:
    """KV bytes one token costs on one tensor-parallel rank, over all layers.

    GQA: 2 (K and V) x layers x kv_heads_per_shard x head_dim x dtype bytes.
    MLA stores one latent of ``kv_lora_rank + qk_rope_head_dim`` per layer and
    vLLM replicates it on every rank, so TP does not shrink it. With ``tp=1`` this
    is the model's KV bytes per token.
    """
    if arch.kind is ModelKind.ENCODER:
        return 0
    width = kv_dtype_bytes(kv_cache_dtype)
    if arch.is_mla:
        latent = (arch.kv_lora_rank or 0) + (arch.qk_rope_head_dim or 0)
        return arch.num_layers * latent * width
    return 2 * arch.num_layers * kv_heads_per_shard(arch, tp) * arch.attention_head_dim * width


def layers_per_stage(arch: Architecture, pp: int) -> int:
    """Layers on the largest pipeline stage, which bounds the KV capacity."""
    return math.ceil(arch.num_layers / pp)


@dataclass(frozen=True)
class MemoryPlan:
    """One replica's memory, per GPU, as vLLM would account it at startup."""

    gpu_total: float
    budget: float  # gpu_memory_utilization x total
    weights: float  # the largest rank's weight shard
    activation: float
    non_torch: float
    kv_bytes_per_token: int  # on one GPU of the largest stage
    kv_available: float  # may be negative: that is how much is missing
    kv_blocks: int
    kv_tokens: int  # tokens of KV cache per replica (every rank holds the same tokens)
    # vLLM 0.19's "Estimated CUDA graph memory": captured after the KV cache, so it sits on top
    # of the budget unless ``VllmOverheads.subtract_cuda_graphs`` (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1).
    cuda_graphs: float = 0.0
    cuda_graphs_in_budget: bool = False
    # Features of the model that the accounting does not cover: a warning, not a promise.
    warnings: tuple[str, ...] = ()

    @property
    def peak_use(self) -> float:
        """What the GPU holds once serving: the budget, plus CUDA graphs where they sit outside it."""
        return self.budget + (0.0 if self.cuda_graphs_in_budget else self.cuda_graphs)

    @property
    def fits(self) -> bool:
        return self.kv_available > 0

    def fits_sequence(self, tokens: int) -> bool:
        return self.kv_tokens >= _round_up(tokens, BLOCK_SIZE) if self.kv_bytes_per_token else self.fits

    def missing_bytes_for(self, tokens: int) -> float:
        """Bytes per GPU still needed to hold one sequence of ``tokens``."""
        need = _round_up(tokens, BLOCK_SIZE) * self.kv_bytes_per_token
        return max(0.0, need - self.kv_available)


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def replica_memory(
    arch: Architecture,
    gpu: Gpu,
    *,
    tp: int = 1,
    pp: int = 1,
    quantization: Quantization = Quantization.BF16,
    kv_cache_dtype: KvCacheDtype = KvCacheDtype.AUTO,
    gpu_memory_utilization: float = 0.9,
    max_num_batched_tokens: int = 8192,
    max_num_seqs: int = 256,
    overheads: VllmOverheads = DEFAULT_OVERHEADS,
    weight_format: WeightFormat | None = None,
    interconnect: Interconnect | None = None,
    p2p: bool = True,
) -> MemoryPlan:
    """The KV cache a replica gets, following vLLM's startup accounting.

    Weights shard evenly over ``tp x pp`` ranks (the embedding and LM head sit on
    the first and last stage; spreading them evenly is within a few percent). The
    activation term is the last stage's, which runs the sampler: vLLM sizes every
    rank's cache to the smallest, and that rank is the one with the most to hold.
    ``interconnect`` defaults to the GPU's (PCIe for A10G/L4/L40S); ``p2p=False`` for GPUs that
    cannot reach each other's memory (``vllm_memory.non_torch_bytes``).
    """
    budget = gpu.hbm_bytes * gpu_memory_utilization
    weights = model_weight_bytes(arch, quantization, weight_format=weight_format) / (tp * pp)
    activation = activation_peak_bytes(
        arch, tp=tp, max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs, overheads=overheads
    )
    non_torch = non_torch_bytes(
        tp=tp, pp=pp, interconnect=interconnect or gpu.interconnect, p2p=p2p, overheads=overheads
    )
    graphs = cuda_graph_bytes(arch, pp=pp, overheads=overheads)
    available = budget - weights - activation - non_torch - (graphs if overheads.subtract_cuda_graphs else 0.0)
    per_token = kv_bytes_per_token(arch, kv_cache_dtype, tp=tp) * layers_per_stage(arch, pp) // arch.num_layers
    blocks = int(available // (per_token * BLOCK_SIZE)) if per_token and available > 0 else 0
    return MemoryPlan(
        gpu_total=gpu.hbm_bytes,
        budget=budget,
        weights=weights,
        activation=activation,
        non_torch=non_torch,
        kv_bytes_per_token=per_token,
        kv_available=available,
        kv_blocks=blocks,
        kv_tokens=blocks * BLOCK_SIZE,
        cuda_graphs=graphs,
        cuda_graphs_in_budget=overheads.subtract_cuda_graphs,
        warnings=arch.uncovered,
    )


def max_concurrency(kv_tokens: int, context_tokens: int) -> float:
    """Sequences of ``context_tokens`` that fit at once, as vLLM logs at startup."""
    if context_tokens <= 0:
        raise ValueError(f"context_tokens={context_tokens} must be positive")
    return kv_tokens / _round_up(context_tokens, BLOCK_SIZE)


# --- time -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Efficiency:
    """How much of the roofline real serving kernels reach, and the floors below which they do not go.

    Each factor and its public source (``tokenplane/model/calibration.py`` holds the latency
    points, ``BENCHMARKS.md`` their errors):

    ===================  =======  ===========================================================
    factor               value    source
    ===================  =======  ===========================================================
    mfu_prefill          0.5      vLLM on H100 reaches 40-60 % of peak on long prefills
                                  (FlashAttention-3 paper, Shah et al. 2024; vLLM's
                                  published benchmarks)
    mfu_decode           0.5      the same kernels at decode batch sizes
    mbu_decode           0.8      70-85 % of HBM bandwidth in decode (Databricks, "LLM
                                  inference performance engineering"); 77 % measured for
                                  Llama-3.1-8B at batch 1 on an A100 (johnmusgrave.com sweep)
    step_overhead_s      1.0 ms   per iteration: scheduling, input preparation, sampling
                                  launch. Single-stream TPOT minus the weight-read time on
                                  the fit points: 0.9 ms (H100, 8B), 1.0 ms (L4, 0.5B)
    layer_floor_s        50 us    a decoder layer's kernels (norm, QKV, RoPE, attention, O,
                                  norm, gate/up, activation, down) cannot finish faster
                                  than their launch-to-completion latency even under CUDA
                                  graphs: Qwen3-0.6B on an H100 decodes at 2.39 ms/token
                                  where its weights take 0.45 ms to read (28 layers)
    sampler_bytes_       16       bytes of HBM traffic per logit of the sampled rows: bf16
      per_logit                   logits cast to fp32, softmax and the top-k/top-p sort
                                  (``vllm/v1/sample/sampler.py``, ``topk_topp_sampler.py``)
    ttft_floor_s         20 ms    tokenization, the first scheduling step, detokenization
                                  and the first streamed chunk of the OpenAI server: a
                                  short prompt's TTFT minus its prefill is 22 ms on an L4
                                  (ai.wmx.dev) and 37 ms on an H100 at 16 req/s (kvcached
                                  PR 331); under 13 ms on a fast H100 host (yobitel).
                                  Held-out hosts spread it from 6 ms (tenstorrent's A100)
                                  to 51 ms (vLLM 0.11's chat endpoint, gpustack), which
                                  is most of the TTFT error in ``BENCHMARKS.md``
    allreduce_s          None     one tensor-parallel all-reduce's fixed cost, two per layer;
                                  None: the interconnect's (``interconnect.LINKS``: 8 us over
                                  NVLink with vLLM's custom all-reduce, 3 us a ring hop over
                                  PCIe). Each row's bytes are priced by the link's bandwidth,
                                  in decode and in prefill (``interconnect``)
    api_per_request_s    2.3 ms   the OpenAI server's work for each other request arriving
                                  with a first token's (a burst, a closed-loop wave), fitted
                                  on the public waves (``server_seconds``)
    api_per_stream_s     see      its work for each request streaming beside a first token,
                         above    measured on the real engine (``API_PER_STREAM_S``)
    moe_kernels          True     routed experts priced as vLLM's fused-MoE block runs them on
                                  the GPU's generation: a fixed time per MoE layer and pass
                                  plus the touched experts' weights at a bandwidth fraction,
                                  fitted to ``benchmark_moe.py`` tables in vLLM pull requests
                                  (``moe_kernels``: A100 56 us and 89 %, PR 19049; B200 27 us
                                  and 74 %, PR 31448). No Hopper or Ada table was found: those
                                  GPUs keep the dense roofline. False: every GPU keeps it
    ===================  =======  ===========================================================

    Attention runs at the precision vLLM's kernels run it (``ReplicaModel.attention_flops``):
    FP8 only where FlashAttention 3 runs it in FP8, on Hopper with an FP8 KV cache (vLLM docs,
    "Quantized KV Cache": "When using the Flash Attention 3 backend with FP8 KV cache, attention
    operations are also performed in the quantized (FP8) domain"; FlashAttention 3 is Hopper's,
    Shah et al. 2024); BF16 everywhere else, whatever the weights' format.
    """

    mfu_prefill: float = 0.5
    mfu_decode: float = 0.5
    mbu_decode: float = 0.8
    step_overhead_s: float = 0.001
    allreduce_s: float | None = None
    layer_floor_s: float = 50e-6
    sampler_bytes_per_logit: float = 16.0
    ttft_floor_s: float = 0.020
    api_per_request_s: float = API_PER_REQUEST_S
    api_per_stream_s: float = API_PER_STREAM_S
    moe_kernels: bool = True


DEFAULT_EFFICIENCY = Efficiency()


@overload
def server_seconds(floor_s: float, per_request_s: float, others_in_flight: float) -> float: ...
@overload
def server_seconds(floor_s: float, per_request_s: float, others_in_flight: F64) -> F64: ...
def server_seconds(floor_s: float, per_request_s: float, others_in_flight: float | F64) -> float | F64:
    """The OpenAI server's part of a first token: its floor, and ``per_request_s`` for each of ``others_in_flight``.

    vLLM's API server is one Python process: it parses and tokenizes each arrival, and detokenizes
    and streams every running request's tokens, so a new request's first chunk waits behind work
    that grows with the other requests. The two kinds cost it differently, and the real engine
    shows it (``benchmarks/server_arrivals.py``): a request that arrives with others waits behind
    each one's whole admission (``Efficiency.api_per_request_s``, fitted on the public closed-loop
    waves, ``calibration.API_TERM_FIT``: on the L4 the TTFT rises 108 ms from c = 1 to 32 where
    the GPU work rises 59 ms), while a request that arrives beside others already streaming waits
    only on their per-iteration streaming (``Efficiency.api_per_stream_s``, several times less).
    This is the one TTFT server term: the validation table (``server_wait_seconds``), the
    planner's pool model and the simulated engine (both through ``PoolTiming.first_token_server_s``,
    per the batch a first token leaves beside, at the per-stream rate: their arrivals land at
    random phases) all add it here. Takes a float or an array of batches (the planner's chains).
    """
    if isinstance(others_in_flight, np.ndarray):
        return floor_s + per_request_s * np.maximum(others_in_flight, 0.0)
    return floor_s + per_request_s * max(others_in_flight, 0.0)


def server_wait_seconds(model: ReplicaModel, *, arriving: float = 0.0, streaming: float = 0.0) -> float:
    """What the OpenAI server adds to a first token with ``arriving`` others sent with it and ``streaming`` decoding.

    Poisson arrivals rarely meet at the server (at 16 req/s and 2.4 ms each it is busy with arrivals
    4 % of the time, an M/D/1 wait of 0.05 ms), so a staggered request counts only the streams.
    """
    eff = model.efficiency
    return server_seconds(eff.ttft_floor_s, eff.api_per_request_s, arriving) + eff.api_per_stream_s * max(
        streaming, 0.0
    )


def api_server_busy(*, arrivals_per_s: float, iteration_s: float, batch: float, servers: int = 1) -> float:
    """The busy fraction of each of a replica's ``servers`` API server processes (``--api-server-count``).

    vLLM deals requests to its server processes in turn; each takes its requests' admission
    (``API_CPU_PER_REQUEST_S``), receives the engine's outputs once a step (``API_CPU_PER_STEP_S``, paid by
    every process) and detokenizes and streams its requests' new tokens (``API_CPU_PER_TOKEN_S``, one a
    sequence a step; a speculative step's several tokens go out in one chunk and are priced as one).
    ``iteration_s`` is the replica's mean step, ``batch`` the sequences decoding in it.
    """
    if iteration_s <= 0:
        return 0.0
    per_step = API_CPU_PER_STEP_S + API_CPU_PER_TOKEN_S * batch / servers
    return per_step / iteration_s + API_CPU_PER_REQUEST_S * arrivals_per_s / servers


def api_servers_needed(*, arrivals_per_s: float, iteration_s: float, batch: float, most: int = 64) -> int | None:
    """The fewest server processes that each stay under ``API_SERVER_BUSY_MAX``; None when ``most`` do not."""
    for servers in range(1, most + 1):
        if api_server_busy(arrivals_per_s=arrivals_per_s, iteration_s=iteration_s, batch=batch, servers=servers) <= (
            API_SERVER_BUSY_MAX
        ):
            return servers
    return None


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding: k drafted tokens, accepted independently with probability alpha."""

    num_tokens: int
    acceptance_rate: float
    draft_cost_ratio: float  # one draft step's cost relative to one target step

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens per target forward: (1 - a^(k+1)) / (1 - a) (Leviathan et al., 2023)."""
        a, k = self.acceptance_rate, self.num_tokens
        if a >= 1.0:
            return float(k + 1)
        return (1 - a ** (k + 1)) / (1 - a)


@dataclass(frozen=True)
class ReplicaModel:
    """What the time model needs to know about one replica."""

    arch: Architecture
    gpu: Gpu
    tp: int = 1
    pp: int = 1
    quantization: Quantization = Quantization.BF16
    kv_cache_dtype: KvCacheDtype = KvCacheDtype.AUTO
    efficiency: Efficiency = field(default=DEFAULT_EFFICIENCY)
    speculation: Speculation | None = None
    # The link its tensor-parallel ranks all-reduce over; None: the GPU's (``interconnect.link_for``).
    link: Link | None = None

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    @property
    def peak_flops(self) -> float:
        """The linear layers' peak: FP8 (or INT8) GEMMs for those weight formats where the chip has them."""
        fp8 = self.quantization in (Quantization.FP8, Quantization.INT8)
        return self.gpu.flops(fp8=fp8) * self.tp

    @property
    def attention_flops(self) -> float:
        """Attention's peak: FP8 only on Hopper with an FP8 KV cache (FlashAttention 3), BF16 elsewhere."""
        fp8 = self.kv_cache_dtype is not KvCacheDtype.AUTO and self.gpu.name in FP8_ATTENTION_GPUS
        return self.gpu.flops(fp8=fp8) * self.tp

    @property
    def interconnect(self) -> Link:
        return self.link or link_for(self.gpu)

    def allreduce_per_row_s(self) -> float:
        """What one more row (a decode sequence, a prefill token) adds to a pass's tensor-parallel all-reduces."""
        return allreduce_seconds_per_row(self.interconnect, self.tp, self.arch.hidden_size, self.arch.num_layers)

    @property
    def bandwidth(self) -> float:
        return self.gpu.hbm_bandwidth * self.tp


def prefill_flops(arch: Architecture, tokens: int, *, context_before: int = 0) -> float:
    """FLOPs to prefill ``tokens`` new tokens after ``context_before`` cached ones.

    Linear layers: 2 x active params (minus the input embedding, a lookup) per
    token. Attention: QK^T and AV over the causal triangle, 4 x width per
    query-key pair per layer.
    """
    return _linear_flops_per_token(arch) * tokens + _attention_flops_per_pair(arch) * causal_pairs(
        tokens, context_before
    )


def _linear_flops_per_token(arch: Architecture) -> float:
    return 2.0 * (arch.params_active - arch.vocab_size * arch.hidden_size)


def _attention_flops_per_pair(arch: Architecture) -> float:
    return 4.0 * arch.num_layers * arch.attention_width


def causal_pairs(tokens: float, context_before: float = 0.0) -> float:
    """Query-key pairs that prefilling ``tokens`` after ``context_before`` cached ones attends over."""
    return tokens * context_before + tokens * tokens / 2


@dataclass(frozen=True)
class PrefillCost:
    """Prefill's cost in one replica's iteration: the one function every path prices prefill with.

    ``seconds(t, c)`` is the chunk's compute time, ``prefill_compute_seconds(model, t, context_before=c)``:
    two rates, so that a simulator can price chunks cheaply. Chunked prefill costs the same compute in
    total as one pass: the chunks' causal triangles add up to the whole one.

    ``in_iteration`` is what prefilling adds to an iteration (the roofline): the chunks' compute, or
    the weight bytes their rows read that the iteration's decode batch did not, whichever is longer.
    The lone-prompt TTFT (``prefill_seconds``), a closed-loop wave (``calibration.wave``), the
    planner's backlog chains (``pool_performance``) and both simulators (``sim.engine``,
    ``serving.engine.scheduler``) all go through it (``tests/model/test_one_prefill_cost.py``).
    A calibrated host (``pool_model.PoolTiming.calibrated``) leaves the read terms at zero: its
    measured prefill rates already hold whatever bound it.
    """

    per_token_s: float
    per_pair_s: float
    # One forward pass's weight reads over ``rows`` tokens: what every row reads (attention, dense MLPs,
    # the LM head) plus the routed experts the rows touch, ``1 - expert_miss ** rows`` of them, never
    # under the layers' kernel latency (``read_floor_s``). ``weight_read_seconds`` is this.
    read_fixed_s: float = 0.0
    read_experts_s: float = 0.0
    expert_miss: float = 1.0  # the chance that one row does not route to a given expert: 1 - top_k / experts
    read_floor_s: float = 0.0
    # The MoE layers' fused-expert blocks' fixed time, paid once by any pass that routes a row (``moe_kernels``).
    read_moe_fixed_s: float = 0.0

    def seconds(self, tokens: float, context_before: float = 0.0) -> float:
        return self.per_token_s * tokens + self.per_pair_s * causal_pairs(tokens, context_before)

    @overload
    def read_seconds(self, rows: float) -> float: ...
    @overload
    def read_seconds(self, rows: F64) -> F64: ...
    def read_seconds(self, rows: float | F64) -> float | F64:
        """The weight reads of one pass over ``rows`` tokens (a float, or numpy arrays element by element)."""
        if isinstance(rows, np.ndarray):
            spread: F64 = self.read_fixed_s + self.read_experts_s * (1.0 - np.power(self.expert_miss, rows))
            spread = spread + np.where(rows > 0, self.read_moe_fixed_s, 0.0)
            return np.maximum(spread, self.read_floor_s)
        moe_fixed = self.read_moe_fixed_s if rows > 0 else 0.0
        return max(
            self.read_fixed_s + self.read_experts_s * (1.0 - math.pow(self.expert_miss, rows)) + moe_fixed,
            self.read_floor_s,
        )

    @overload
    def in_iteration(self, compute_s: float, rows: float, decode_rows: float) -> float: ...
    @overload
    def in_iteration(self, compute_s: F64, rows: F64 | float, decode_rows: F64 | float) -> F64: ...
    def in_iteration(self, compute_s: float | F64, rows: float | F64, decode_rows: float | F64) -> float | F64:
        """Seconds that prefilling ``rows`` tokens (``compute_s`` of compute) adds to an iteration decoding ``decode_rows``.

        With nothing decoding this is the pass's roofline, ``max(compute, weight reads)``: a short
        prompt alone cannot finish faster than its weights are read. A decode batch has already read
        the dense weights, so a dense model's prefill then costs its compute; an MoE's prompt still
        reads the experts the batch did not touch (a 128-token prompt touches all of them).
        """
        if isinstance(compute_s, np.ndarray) or isinstance(rows, np.ndarray) or isinstance(decode_rows, np.ndarray):
            beside = self.beside(np.asarray(decode_rows, dtype=np.float64))
            return beside.at(np.asarray(compute_s, dtype=np.float64), np.asarray(rows, dtype=np.float64))
        done = self.read_seconds(decode_rows) if decode_rows > 0 else 0.0
        return max(compute_s, self.read_seconds(decode_rows + rows) - done)

    def beside(self, decode_rows: F64) -> PrefillBeside:
        """``in_iteration`` beside fixed decode batches (a backlog chain's each): what they read, priced once."""
        return PrefillBeside(self, decode_rows)


class PrefillBeside:
    """``PrefillCost.in_iteration`` for element ``i`` decoding ``decode_rows[i]``, asked many times over.

    The planner's backlog chains ask it once per iteration of each chain for a batch that does not
    change, so the batch's own reads are priced once here. A dense model reads the same bytes
    whatever the rows (``read_seconds`` is a constant ``R``), so what a prefill adds is known up
    front: ``R`` on an idle replica, nothing beside a batch. The answers are the same doubles as
    ``in_iteration``'s (the same operations on each element, ``R - R`` and ``R - 0`` exact).
    """

    def __init__(self, cost: PrefillCost, decode_rows: F64) -> None:
        self._cost = cost
        self._rows = decode_rows
        self._already: F64 = np.where(decode_rows > 0, cost.read_seconds(decode_rows), 0.0)
        # What a prefill adds when the reads do not grow with the rows: a dense model's, or a calibrated host's (0).
        flat = cost.read_experts_s == 0.0 and cost.read_moe_fixed_s == 0.0
        self._flat: F64 | None = cost.read_seconds(0.0) - self._already if flat else None

    def at(self, compute_s: F64, rows: F64, index: npt.NDArray[np.intp] | None = None) -> F64:
        """Prefill seconds for ``rows`` tokens of ``compute_s`` compute beside the batches at ``index`` (all: None)."""
        if self._flat is not None:
            return np.maximum(compute_s, self._flat if index is None else self._flat[index])
        rows_there, already = (
            (self._rows, self._already) if index is None else (self._rows[index], self._already[index])
        )
        return np.maximum(compute_s, self._cost.read_seconds(np.asarray(rows_there + rows, dtype=np.float64)) - already)


@functools.lru_cache(maxsize=256)
def prefill_cost(model: ReplicaModel) -> PrefillCost:
    """One replica's prefill rates and weight-read terms (cached: a pool's timing table asks once per batch size)."""
    eff = model.efficiency
    rate = model.peak_flops * eff.mfu_prefill
    read_rate = model.bandwidth * eff.mbu_decode
    arch = model.arch
    total = model_weight_bytes(arch, model.quantization)
    # The input embedding is a lookup, not a read of the whole table; when it is tied to the LM
    # head, the head reads it in full every pass anyway.
    read = total if arch.tie_word_embeddings else total - arch.vocab_size * arch.hidden_size * 2.0
    experts, miss, expert_rate, moe_fixed = 0.0, 1.0, read_rate, 0.0
    if arch.is_moe:
        expert_params = 3 * arch.hidden_size * (arch.moe_intermediate_size or arch.intermediate_size)
        moe_layers = arch.num_layers - min(arch.first_dense_layers, arch.num_layers)
        experts = moe_layers * arch.num_experts * expert_params * bytes_per_weight(model.quantization)
        miss = 1 - arch.experts_per_token / arch.num_experts
        # vLLM's fused-MoE block on this GPU's generation, where a public kernel table exists (``moe_kernels``).
        kernel = moe_layer_cost(model.gpu.name) if eff.moe_kernels else None
        if kernel is not None:
            expert_rate, moe_fixed = model.bandwidth * kernel.efficiency, moe_layers * kernel.fixed_s
    attention_rate = model.attention_flops * eff.mfu_prefill
    return PrefillCost(
        # Each token's linear FLOPs, and its hidden state through the ranks' all-reduces (in line, not overlapped).
        per_token_s=_linear_flops_per_token(arch) / rate + model.allreduce_per_row_s(),
        per_pair_s=_attention_flops_per_pair(arch) / attention_rate,
        read_fixed_s=(read - experts) / read_rate,
        read_experts_s=experts / expert_rate,
        expert_miss=miss,
        read_floor_s=arch.num_layers * eff.layer_floor_s,
        read_moe_fixed_s=moe_fixed,
    )


def prefill_compute_seconds(model: ReplicaModel, tokens: int, *, context_before: int = 0) -> float:
    """Prefill's compute time without the per-iteration overhead: what a chunk's FLOPs take."""
    return prefill_cost(model).seconds(tokens, context_before)


def prefill_seconds(model: ReplicaModel, tokens: int, *, context_before: int = 0) -> float:
    """Time to prefill a prompt alone: one iteration, the roofline of its compute and its weight reads.

    The prompt's forward pass reads every weight once, as a decode step does, so a short
    prompt cannot finish faster than the weight read (``weight_read_seconds``):
    Qwen2.5-72B at TP2 on H100s answers a 128-token prompt in 41 ms where one decode step
    takes 31 ms, and Qwen3-30B-A3B's 128-token prompt routes to all 128 experts and reads
    all 61 GB of them (36 ms on an A100), where its FLOPs alone take 6 ms (tenstorrent's GPU
    references, ``tokenplane/model/calibration.py``). Long prompts are compute-bound, as before.
    Pipeline stages run one after another for one request.
    """
    if tokens <= 0:
        return 0.0
    cost = prefill_cost(model)
    return cost.in_iteration(cost.seconds(tokens, context_before), float(tokens), 0.0) + step_overhead_seconds(model)


def prefill_seconds_per_token(model: ReplicaModel, *, context: int) -> float:
    """Marginal prefill cost of one token at a typical context, used for throughput."""
    return prefill_compute_seconds(model, 1, context_before=context)


def step_overhead_seconds(model: ReplicaModel) -> float:
    """Per-iteration scheduling, sampling and launch cost, plus the tensor-parallel all-reduces."""
    eff = model.efficiency
    layers = model.arch.num_layers
    if model.tp <= 1:
        allreduce = 0.0
    elif eff.allreduce_s is not None:
        allreduce = 2 * layers * eff.allreduce_s
    else:
        allreduce = allreduce_latency_seconds(model.interconnect, model.tp, layers)
    return eff.step_overhead_s + allreduce


@dataclass(frozen=True)
class DecodeStepTerms:
    """One decode iteration's cost at a given batch, split so that the context can vary freely.

    ``decode_step_seconds(model, b, mean_context=c)`` equals
    ``max(memory_s + kv_s_per_token * b * c, compute_s) + overhead_s``: the simulator tabulates the
    terms once per batch size and then prices millions of iterations with array arithmetic.
    """

    memory_s: float  # reading the weights (only the experts the batch touches, for MoE)
    kv_s_per_token: float  # reading one token of KV cache, summed over the TP ranks
    compute_s: float
    overhead_s: float

    def seconds(self, total_context: float) -> float:
        """The step's time when the batch holds ``total_context`` tokens of KV cache in all."""
        return max(self.memory_s + self.kv_s_per_token * total_context, self.compute_s) + self.overhead_s


def decode_step_terms(model: ReplicaModel, batch: int) -> DecodeStepTerms:
    """One decode iteration's terms at ``batch``, floors included.

    The weight read cannot beat the layers' kernel latency (``layer_floor_s`` per layer),
    which is what bounds small models and small batches. Sampling adds its logits
    traffic to both the memory and the compute path, so the step pays it either way.
    """
    return _DecodeStepPricer(model).terms(batch)


def decode_step_table(model: ReplicaModel, max_batch: int) -> list[DecodeStepTerms]:
    """``decode_step_terms(model, b)`` for every ``b`` from 0 to ``max_batch``, the same doubles.

    A pool's timing table asks for hundreds of batch sizes; what does not depend on the batch
    (the prefill cost, the KV read rate, the step overhead) is priced once instead of once a row,
    which was most of a warm ``plan --capacity-only``.
    """
    pricer = _DecodeStepPricer(model)
    return [pricer.terms(b) for b in range(max_batch + 1)]


class _DecodeStepPricer:
    """The batch-independent parts of ``decode_step_terms``, computed once per replica model."""

    def __init__(self, model: ReplicaModel) -> None:
        eff = model.efficiency
        rate = model.bandwidth * eff.mbu_decode
        self.model = model
        self.cost = prefill_cost(model)
        self.kv_s_per_token = kv_bytes_per_token(model.arch, model.kv_cache_dtype, tp=model.tp) * model.tp / rate
        self.per_row_s = model.allreduce_per_row_s()
        self.compute_rate = model.peak_flops * eff.mfu_decode
        self.overhead_s = step_overhead_seconds(model)

    def terms(self, batch: int) -> DecodeStepTerms:
        # The batch's rows through the ranks' all-reduces: like the sampler, paid on either side of the roofline.
        serial = sampling_seconds(self.model, batch) + batch * self.per_row_s
        return DecodeStepTerms(
            memory_s=self.cost.read_seconds(float(batch)) + serial,
            kv_s_per_token=self.kv_s_per_token,
            compute_s=prefill_flops(self.model.arch, batch) / self.compute_rate + serial,
            overhead_s=self.overhead_s,
        )


def weight_read_seconds(model: ReplicaModel, rows: int) -> float:
    """One forward pass's weight reads for ``rows`` tokens, never under the layers' kernel latency.

    Dense models read all of their weights; an MoE reads the experts its rows route to, which for
    more than a few dozen tokens (a prompt) is all of them, and for a small decode batch a few
    (``PrefillCost.read_seconds``, the terms prefill's roofline uses too).
    """
    return prefill_cost(model).read_seconds(float(rows))


def sampling_seconds(model: ReplicaModel, batch: int) -> float:
    """The sampler's pass over ``batch`` rows of full-vocabulary logits (on one rank's bandwidth)."""
    if batch <= 0:
        return 0.0
    traffic = batch * model.arch.vocab_size * model.efficiency.sampler_bytes_per_logit
    return traffic / (model.gpu.hbm_bandwidth * model.efficiency.mbu_decode)


def ttft_seconds(model: ReplicaModel, prompt_tokens: int, *, context_before: int = 0) -> float:
    """Time to first token of a lone request: the server's floor plus the prompt's prefill.

    ``prefill_seconds`` is the engine's share; the floor (``Efficiency.ttft_floor_s``) is
    the OpenAI server's tokenization, first scheduling step, detokenization and first
    streamed chunk, which a short prompt cannot go below.
    """
    return model.efficiency.ttft_floor_s + prefill_seconds(model, prompt_tokens, context_before=context_before)


def decode_step_seconds(model: ReplicaModel, batch: int, *, mean_context: float) -> float:
    """One decode iteration for ``batch`` sequences of ``mean_context`` tokens each.

    The larger of the memory time (weights + KV read at HBM bandwidth x MBU) and
    the compute time (2 x active params x batch at peak x MFU), plus overhead.
    """
    if batch <= 0:
        return 0.0
    return decode_step_terms(model, batch).seconds(batch * mean_context)


def speculation_factor(model: ReplicaModel) -> float:
    """Expected time per streamed token over time per target step: 1 without speculative decoding."""
    spec = model.speculation
    if spec is None:
        return 1.0
    return (1 + spec.num_tokens * spec.draft_cost_ratio) / spec.tokens_per_step


def inter_token_seconds(model: ReplicaModel, batch: int, *, mean_context: float) -> float:
    """Time between streamed tokens, with speculative decoding's expected speed-up."""
    return decode_step_seconds(model, batch, mean_context=mean_context) * speculation_factor(model)


def e2e_seconds(ttft: float, itl: float, output_tokens: int) -> float:
    """End-to-end latency: first token, then one ITL per further token."""
    return ttft + max(output_tokens - 1, 0) * itl


@dataclass(frozen=True)
class RequestShape:
    """A request class by its mean prompt and output tokens, with its share of traffic."""

    prompt_tokens: float
    output_tokens: float
    weight: float = 1.0


def mean_shape(shapes: list[RequestShape]) -> RequestShape:
    total = sum(s.weight for s in shapes)
    if total <= 0:
        raise ValueError("request mix has no weight")
    prompt = sum(s.prompt_tokens * s.weight for s in shapes) / total
    output = sum(s.output_tokens * s.weight for s in shapes) / total
    return RequestShape(prompt, output, total)


# --- traffic and queues -----------------------------------------------------------------------


def token_throughput(rps: float, tokens_per_request: float) -> float:
    """Tokens per second: the reference's 100 RPS x 1,500 tokens = 150,000 tokens/s."""
    return rps * tokens_per_request


def backlog(arrival_rate: float, service_rate: float, seconds: float) -> float:
    """Requests queued after ``seconds`` at a constant overload: (lambda - mu) x t, never negative."""
    return max(0.0, arrival_rate - service_rate) * seconds


def utilization(arrival_rate: float, service_rate: float) -> float:
    """rho = lambda / mu. At or above 1 the queue grows without bound."""
    if service_rate <= 0:
        return math.inf
    return arrival_rate / service_rate


# --- cost -------------------------------------------------------------------------------------


def nodes_needed(replicas: int, gpus_per_replica: int, gpus_per_node: int) -> int:
    """Nodes to host the replicas. A replica never spans nodes (TP needs NVLink)."""
    if gpus_per_replica > gpus_per_node:
        raise ValueError(f"a {gpus_per_replica}-GPU replica does not fit a {gpus_per_node}-GPU node")
    per_node = gpus_per_node // gpus_per_replica
    return -(-replicas // per_node)


def usd_per_million_tokens(usd_per_hour: float, tokens_per_second: float) -> float:
    """Effective price at the throughput actually served: idle GPUs still bill."""
    if tokens_per_second <= 0:
        return math.inf
    return usd_per_hour / (tokens_per_second * 3600) * 1e6


def blended_price_per_million(input_usd: float, output_usd: float, shape: RequestShape) -> float:
    """A provider's $ per 1M tokens for this prompt/output mix."""
    total = shape.prompt_tokens + shape.output_tokens
    return (input_usd * shape.prompt_tokens + output_usd * shape.output_tokens) / total
