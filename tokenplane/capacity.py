"""The performance model: memory, per-step latency, traffic and cost.

Pure functions over plain numbers and catalog records, shared by the planner,
the workbench simulator and the simulated engine, so that all three agree. How a
replica behaves under a request mix (its throughput, concurrency and TTFT) is
built on these in ``tokenplane.pool_performance``.

Memory follows vLLM's own accounting (``vllm/v1/worker/gpu_worker.py``,
``determine_available_memory``)::

    kv_budget = total_gpu_memory * gpu_memory_utilization
                - weights - peak activation of a profiling pass - non-torch memory

then divided into blocks of 16 tokens. Time follows the roofline: prefill is
bounded by FLOPs and decode by the bytes each step reads (weights + KV).
Real kernels reach only part of the peak, so both carry an efficiency factor
(``Efficiency``), documented where it is defined.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tokenplane.catalog import GIB, Gpu, KvCacheDtype, Quantization
from tokenplane.transformer import Architecture, ModelKind

BLOCK_SIZE = 16  # vLLM's default KV block size, in tokens


# Bytes per weight. 4-bit formats carry one fp16 scale and a 4-bit zero point per
# group of 128 weights: (4 + 20/128) / 8 bytes.
_WEIGHT_BYTES: dict[Quantization, float] = {
    Quantization.BF16: 2.0,
    Quantization.FP16: 2.0,
    Quantization.FP8: 1.0,
    Quantization.INT8: 1.0,
    Quantization.AWQ: (4 + 20 / 128) / 8,
    Quantization.GPTQ: (4 + 20 / 128) / 8,
}


def bytes_per_weight(quantization: Quantization) -> float:
    return _WEIGHT_BYTES[quantization]


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


def model_weight_bytes(arch: Architecture, quantization: Quantization) -> float:
    return weight_bytes(arch.params_total, quantization, embedding_params=arch.embedding_params)


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
class VllmOverheads:
    """Calibrated constants for vLLM's non-KV memory (vLLM V1, v0.17-v0.19).

    Calibrated against startup logs of vLLM v0.19.0 on H100 committed by
    llm-d-planner (github.com/llm-d-incubation/llm-d-planner, accuracy/), and
    checked against the logs users paste into vLLM's issues (#10511, #21429).
    ``tests/test_capacity_calibration.py`` holds the data points; the residual is
    under 1.5% of KV tokens on every one of them.

    From v0.21 vLLM also subtracts an estimate of CUDA-graph memory (0.5-1.9 GiB);
    set ``cuda_graph_gib`` to model those versions.
    """

    # The profiling forward pass runs max_num_batched_tokens through the model; its
    # peak is the MLP's gate/up output plus a few hidden-size buffers per token.
    mlp_buffers: float = 3.0
    hidden_buffers: float = 6.0
    # The sampler's dummy run holds max_num_seqs rows of fp32 logits several times
    # over (logits, softmax, top-k/top-p sort values and indices). This is the peak
    # on every logged dense model: 1.89-1.97 GiB for Llama-3 (vocab 128,256) and
    # 2.21 GiB for Qwen2.5 (vocab 152,064) at max_num_seqs=1024, i.e. 3.8-4.0 copies.
    sampler_logit_copies: float = 3.9
    # Memory outside PyTorch's allocator: 0.24-0.27 GiB at TP=1 and 2.06-2.21 GiB at
    # TP>=2 (NCCL and custom all-reduce buffers), flat from 7B to 70B and TP2 to TP4.
    non_torch_gib_single: float = 0.25
    non_torch_gib_distributed: float = 2.1
    cuda_graph_gib: float = 0.0


DEFAULT_OVERHEADS = VllmOverheads()


def activation_peak_bytes(
    arch: Architecture,
    *,
    tp: int,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    overheads: VllmOverheads = DEFAULT_OVERHEADS,
) -> float:
    """Peak activation memory of vLLM's profiling pass on one rank."""
    mlp_width = (
        (arch.moe_intermediate_size or arch.intermediate_size) * max(arch.experts_per_token, 1)
        if arch.is_moe
        else arch.intermediate_size
    )
    per_token = overheads.mlp_buffers * mlp_width / tp + overheads.hidden_buffers * arch.hidden_size
    forward = max_num_batched_tokens * per_token * 2  # 16-bit activations
    if arch.kind is ModelKind.ENCODER:
        return forward
    sampler = max_num_seqs * arch.vocab_size * 4 * overheads.sampler_logit_copies
    return max(forward, sampler)


def non_torch_bytes(*, tp: int, pp: int, overheads: VllmOverheads = DEFAULT_OVERHEADS) -> float:
    # Pipeline stages exchange activations point to point; only TP allocates all-reduce buffers.
    gib = overheads.non_torch_gib_distributed if tp > 1 else overheads.non_torch_gib_single
    return (gib + overheads.cuda_graph_gib) * GIB


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
) -> MemoryPlan:
    """The KV cache a replica gets, following vLLM's startup accounting.

    Weights shard evenly over ``tp x pp`` ranks (the embedding and LM head sit on
    the first and last stage; spreading them evenly is within a few percent).
    """
    budget = gpu.hbm_bytes * gpu_memory_utilization
    weights = model_weight_bytes(arch, quantization) / (tp * pp)
    activation = activation_peak_bytes(
        arch, tp=tp, max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs, overheads=overheads
    )
    non_torch = non_torch_bytes(tp=tp, pp=pp, overheads=overheads)
    available = budget - weights - activation - non_torch
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
    )


def max_concurrency(kv_tokens: int, context_tokens: int) -> float:
    """Sequences of ``context_tokens`` that fit at once, as vLLM logs at startup."""
    if context_tokens <= 0:
        raise ValueError(f"context_tokens={context_tokens} must be positive")
    return kv_tokens / _round_up(context_tokens, BLOCK_SIZE)


# --- time -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Efficiency:
    """How much of the roofline real serving kernels reach.

    mfu_prefill: share of peak FLOP/s in prefill. vLLM on H100 reaches 40-60% on
        long prefills (FlashAttention-3 paper; vLLM's published benchmarks).
    mbu_decode: share of HBM bandwidth in decode; 70-85% is typical of vLLM and
        TensorRT-LLM (Databricks' "LLM inference performance engineering").
    step_overhead_s: per-iteration scheduling, sampling and launch cost.
    allreduce_s: one tensor-parallel all-reduce over NVLink at decode sizes; two
        per layer.
    """

    mfu_prefill: float = 0.5
    mfu_decode: float = 0.5
    mbu_decode: float = 0.8
    step_overhead_s: float = 0.0015
    allreduce_s: float = 8e-6


DEFAULT_EFFICIENCY = Efficiency()


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

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    @property
    def peak_flops(self) -> float:
        fp8 = self.quantization in (Quantization.FP8, Quantization.INT8)
        return self.gpu.flops(fp8=fp8) * self.tp

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
    """Prefill compute time of one replica as two rates, so that a simulator can price chunks cheaply.

    ``seconds(t, c)`` equals ``prefill_compute_seconds(model, t, context_before=c)``. Chunked prefill
    costs the same in total as one pass: the chunks' causal triangles add up to the whole one.
    """

    per_token_s: float
    per_pair_s: float

    def seconds(self, tokens: float, context_before: float = 0.0) -> float:
        return self.per_token_s * tokens + self.per_pair_s * causal_pairs(tokens, context_before)


def prefill_cost(model: ReplicaModel) -> PrefillCost:
    rate = model.peak_flops * model.efficiency.mfu_prefill
    return PrefillCost(_linear_flops_per_token(model.arch) / rate, _attention_flops_per_pair(model.arch) / rate)


def prefill_compute_seconds(model: ReplicaModel, tokens: int, *, context_before: int = 0) -> float:
    """Prefill's compute time without the per-iteration overhead: what a chunk adds to a running iteration."""
    return prefill_flops(model.arch, tokens, context_before=context_before) / (
        model.peak_flops * model.efficiency.mfu_prefill
    )


def prefill_seconds(model: ReplicaModel, tokens: int, *, context_before: int = 0) -> float:
    """Time to prefill a prompt alone. Pipeline stages run one after another for one request."""
    if tokens <= 0:
        return 0.0
    return prefill_compute_seconds(model, tokens, context_before=context_before) + step_overhead_seconds(model)


def prefill_seconds_per_token(model: ReplicaModel, *, context: int) -> float:
    """Marginal prefill cost of one token at a typical context, used for throughput."""
    return prefill_compute_seconds(model, 1, context_before=context)


def step_overhead_seconds(model: ReplicaModel) -> float:
    """Per-iteration scheduling, sampling and launch cost, plus the tensor-parallel all-reduces."""
    eff = model.efficiency
    allreduce = 2 * model.arch.num_layers * eff.allreduce_s if model.tp > 1 else 0.0
    return eff.step_overhead_s + allreduce


def _weight_bytes_read(model: ReplicaModel, batch: int) -> float:
    """Weights one decode step reads. MoE reads only the experts the batch routed to."""
    arch = model.arch
    total = model_weight_bytes(arch, model.quantization)
    read = total - arch.vocab_size * arch.hidden_size * 2.0  # the input embedding is a lookup
    if arch.is_moe:
        expert_params = 3 * arch.hidden_size * (arch.moe_intermediate_size or arch.intermediate_size)
        moe_layers = arch.num_layers - min(arch.first_dense_layers, arch.num_layers)
        all_experts = moe_layers * arch.num_experts * expert_params * bytes_per_weight(model.quantization)
        touched = arch.num_experts * (1 - (1 - arch.experts_per_token / arch.num_experts) ** batch)
        read -= all_experts * (1 - touched / arch.num_experts)
    return read


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
    eff = model.efficiency
    rate = model.bandwidth * eff.mbu_decode
    kv_per_token = kv_bytes_per_token(model.arch, model.kv_cache_dtype, tp=model.tp) * model.tp
    return DecodeStepTerms(
        memory_s=_weight_bytes_read(model, batch) / rate,
        kv_s_per_token=kv_per_token / rate,
        compute_s=prefill_flops(model.arch, batch) / (model.peak_flops * eff.mfu_decode),
        overhead_s=step_overhead_seconds(model),
    )


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
