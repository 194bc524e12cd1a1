"""``tokenplane size``: one replica's VRAM and KV cache, as vLLM reports it at startup.

The reference's "calculate GPU VRAM and KV cache capacity" as a function: the
CLI parses flags into a ``SizeRequest``, ``size_replica`` computes, and the
report module prints.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from tokenplane.catalog import GIB, Gpu, Interconnect, KvCacheDtype, Quantization, gpu, model_preset
from tokenplane.errors import SpecError
from tokenplane.model import capacity as cap
from tokenplane.model.vllm_memory import overheads_for_version, parse_version, version_warning
from tokenplane.quantization import WeightFormat, default_format, read_weight_format
from tokenplane.transformer import Architecture, ModelKind, from_hf_config

# The release the deployed image runs (components/pins.py's VLLM_IMAGE, which the core may not import;
# tests/model/test_host_calibration.py checks they agree): what a pool serves with unless engine.vllm_version says,
# and so the release whose memory accounting sizes it (vllm_memory.overheads_for_version).
IMAGE_VLLM = "0.32.0"
# The release the memory model's startup logs come from (tokenplane.model.calibration.VLLM_VERSION): its accounting
# is modelled too, for a pool or a `size --vllm-version` that names it.
LOGGED_VLLM = "0.19.0"

# The first release whose startup log prints "total consumed (from mem_get_info)" in place of the non-torch increase
# (the 0.32 profiler vllm_memory.py describes; 0.20-0.32 follow that source).
TOTAL_CONSUMED_LOGGED_FROM = (0, 20)

E = TypeVar("E", Quantization, KvCacheDtype)


@dataclass(frozen=True)
class SizeRequest:
    model_name: str
    arch: Architecture
    gpu: Gpu
    tp: int
    pp: int
    quantization: Quantization
    kv_cache_dtype: KvCacheDtype
    gpu_memory_utilization: float
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    weight_format: WeightFormat | None = None  # from the checkpoint's quantization_config
    vllm_version: str = IMAGE_VLLM
    p2p: bool = True  # whether the TP ranks reach each other's memory (vllm_memory.non_torch_bytes)

    @classmethod
    def from_cli(
        cls,
        *,
        model: str | None,
        hf_config: Path | None,
        gpu: str | None,
        gpu_memory_gib: float | None,
        tp: int,
        pp: int,
        quantization: str | None,
        kv_cache_dtype: str,
        gpu_memory_utilization: float,
        max_model_len: int | None,
        max_num_batched_tokens: int,
        max_num_seqs: int,
        vllm_version: str = IMAGE_VLLM,
        p2p: bool = True,
    ) -> SizeRequest:
        """Validate flags; every error names the flag, the value and what is allowed."""
        if (model is None) == (hf_config is None):
            raise SpecError("give exactly one of --model PRESET or --hf-config PATH")
        checkpoint: WeightFormat | None = None
        if hf_config is not None:
            arch, name = from_hf_config(hf_config), str(hf_config)
            checkpoint = read_weight_format(hf_config)
        else:
            preset = model_preset(model or "")
            arch, name = preset.architecture, preset.name
        scheme = _scheme(quantization, checkpoint, name)
        device = _device(gpu, gpu_memory_gib)
        for flag, value in (
            ("--tp", tp),
            ("--pp", pp),
            ("--max-num-batched-tokens", max_num_batched_tokens),
            ("--max-num-seqs", max_num_seqs),
        ):
            if value < 1:
                raise SpecError(f"{flag}={value} must be at least 1")
        try:
            parse_version(vllm_version)
        except ValueError as e:
            raise SpecError(f"--vllm-version: {e}") from e
        if not 0.05 < gpu_memory_utilization <= 0.99:
            raise SpecError(f"--gpu-memory-utilization={gpu_memory_utilization} must be in (0.05, 0.99]")
        if arch.num_attention_heads % tp:
            raise SpecError(f"--tp={tp} must divide num_attention_heads={arch.num_attention_heads} of {name}")
        length = max_model_len or arch.max_position_embeddings
        if length < 1 or length > arch.max_position_embeddings:
            raise SpecError(
                f"--max-model-len={length} must be between 1 and {name}'s max_position_embeddings="
                f"{arch.max_position_embeddings}"
            )
        return cls(
            model_name=name,
            arch=arch,
            gpu=device,
            tp=tp,
            pp=pp,
            quantization=scheme,
            kv_cache_dtype=_enum(KvCacheDtype, kv_cache_dtype, "--kv-cache-dtype"),
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=length,
            max_num_batched_tokens=max_num_batched_tokens,
            max_num_seqs=max_num_seqs,
            weight_format=checkpoint,
            vllm_version=vllm_version,
            p2p=p2p,
        )

    @property
    def weights(self) -> WeightFormat:
        return self.weight_format or default_format(self.quantization)


def _scheme(flag: str | None, checkpoint: WeightFormat | None, name: str) -> Quantization:
    """The weight format: the checkpoint's ``quantization_config`` wins, as in vLLM.

    vLLM refuses a ``--quantization`` that contradicts the checkpoint; so does ``size``.
    """
    if flag is None:
        return checkpoint.scheme if checkpoint else Quantization.BF16
    chosen = _enum(Quantization, flag, "--quantization")
    if checkpoint is not None and chosen is not checkpoint.scheme:
        raise SpecError(
            f"--quantization={flag} contradicts {name}'s quantization_config ({checkpoint.description}); "
            f"drop --quantization or pass --quantization {checkpoint.scheme.value}"
        )
    return chosen


def _device(name: str | None, memory_gib: float | None) -> Gpu:
    if (name is None) == (memory_gib is None):
        raise SpecError("give exactly one of --gpu NAME or --gpu-memory-gib X")
    if name is not None:
        return gpu(name)
    if memory_gib is None or memory_gib <= 0:
        raise SpecError(f"--gpu-memory-gib={memory_gib} must be positive")
    # A GPU known only by its memory: rates are unknown, and size reports memory alone. It is not one of the
    # catalog's NVSwitch cards (those are named), so its TP ranks are priced as PCIe: NCCL's ring buffers, not
    # the ~2 GiB of NVLS buffers (taking the NVLS figure put TP2 pairs 6-16% short of the KV vLLM gave).
    return Gpu(f"{memory_gib:g} GiB GPU", memory_gib, 0.0, 0.0, None, Interconnect.PCIE)


def _enum(kind: type[E], value: str, flag: str) -> E:
    try:
        return kind(value.lower())
    except ValueError as e:
        allowed = ", ".join(m.value for m in kind)
        raise SpecError(f"{flag}={value!r} is not one of {allowed}") from e


@dataclass(frozen=True)
class SizeResult:
    request: SizeRequest
    memory: cap.MemoryPlan
    kv_bytes_per_token: int  # the model's, unsharded
    max_concurrency: float
    fits: bool
    reason: str | None

    def to_json(self) -> dict[str, Any]:
        r, m = self.request, self.memory
        out: dict[str, Any] = {
            "model": r.model_name,
            "gpu": r.gpu.name,
            "tp": r.tp,
            "pp": r.pp,
            "quantization": r.quantization.value,
            "kv_cache_dtype": r.kv_cache_dtype.value,
            "vllm_version": r.vllm_version,  # the release whose memory accounting the figures follow
            "params_billion": round(r.arch.params_total / 1e9, 3),
            "gpu_total_gib": round(m.gpu_total / GIB, 3),
            "budget_gib": round(m.budget / GIB, 3),
            "weights_gib": round(m.weights * r.tp * r.pp / GIB, 3),
            "weights_per_gpu_gib": round(m.weights / GIB, 3),
            "activation_gib": round(m.activation / GIB, 3),
            "non_torch_gib": round(m.non_torch / GIB, 3),
            "weight_format": r.weights.description,
            "cuda_graphs_gib": round(m.cuda_graphs / GIB, 3),
            "cuda_graphs_in_budget": m.cuda_graphs_in_budget,
            "peak_use_gib": round(m.peak_use / GIB, 3),
            "kv_cache_gib_per_gpu": round(max(m.kv_available, 0.0) / GIB, 3),
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "kv_bytes_per_token_per_gpu": m.kv_bytes_per_token,
            "kv_cache_blocks": m.kv_blocks,
            "kv_cache_tokens": m.kv_tokens,
            "max_model_len": r.max_model_len,
            "max_concurrency": round(self.max_concurrency, 3),
            "fits": self.fits,
        }
        out["vllm_log"] = {
            line.key: int(line.value) if line.unit == "tokens" else round(line.value, 3)
            for line in self.vllm_log_lines()
        }
        if m.warnings:
            out["warnings"] = list(m.warnings)
        if self.reason:
            out["reason"] = self.reason
        return out

    def vllm_log_lines(self) -> list[LogLine]:
        """The figures vLLM (0.19 to 0.32) logs at startup on rank 0, predicted, in the order it logs them.

        A user compares these line by line with their own log ("Model loading took",
        "Memory profiling takes ... torch peak memory increase ...", "Available KV cache
        memory", "GPU KV cache size", "Maximum concurrency").
        """
        r, m = self.request, self.memory
        non_kv = m.weights + m.activation + m.non_torch
        lines = [
            LogLine("model_loading_gib", "Model loading took", m.weights / GIB, "GiB", "weights per GPU"),
            LogLine(
                "torch_peak_increase_gib",
                "torch peak memory increase",
                m.activation / GIB,
                "GiB",
                f"activation peak: {r.max_num_batched_tokens:,} tokens, sampler over "
                f"{min(r.max_num_seqs, r.max_num_batched_tokens):,} requests",
            ),
            # 0.19 logs the non-torch increase on its own; from 0.20 `memory_profiling` logs only the free-memory
            # difference ("total consumed (from mem_get_info)", vllm/utils/mem_utils.py), weights included.
            LogLine(
                "non_torch_increase_gib",
                "non-torch forward increase memory",
                m.non_torch / GIB,
                "GiB",
                f"NCCL and CUDA workspaces ({r.gpu.interconnect.value}, TP={r.tp}, PP={r.pp})",
            )
            if parse_version(r.vllm_version) < TOTAL_CONSUMED_LOGGED_FROM
            else LogLine(
                "total_consumed_gib",
                "total consumed (from mem_get_info)",
                (m.weights + m.non_torch) / GIB,
                "GiB",
                f"weights and {m.non_torch / GIB:.2f} GiB of NCCL and CUDA workspaces "
                f"({r.gpu.interconnect.value}, TP={r.tp}, PP={r.pp})",
            ),
            LogLine(
                "non_kv_cache_gib",
                "Total non KV cache memory",
                non_kv / GIB,
                "GiB",
                "weights, torch peak and non-torch",
            ),
            LogLine(
                "cuda_graphs_gib",
                "Estimated CUDA graph memory",
                m.cuda_graphs / GIB,
                "GiB",
                "inside the budget (0.21+ default)" if m.cuda_graphs_in_budget else "on top of the budget (0.17-0.20)",
            ),
            LogLine(
                "available_kv_cache_gib",
                "Available KV cache memory",
                m.kv_available / GIB,
                "GiB",
                f"{r.gpu_memory_utilization} x {m.gpu_total / GIB:.2f} GiB minus the non-KV total"
                + (" and the CUDA graphs" if m.cuda_graphs_in_budget else ""),
            ),
        ]
        if r.arch.kind is not ModelKind.ENCODER:
            lines += [
                LogLine("kv_cache_tokens", "GPU KV cache size", m.kv_tokens, "tokens", f"{m.kv_blocks:,} blocks of 16"),
                LogLine(
                    "max_concurrency",
                    f"Maximum concurrency for {r.max_model_len:,} tokens per request",
                    self.max_concurrency,
                    "x",
                    "",
                ),
            ]
        return lines


@dataclass(frozen=True)
class LogLine:
    """One predicted figure under the words vLLM's startup log prints it with."""

    key: str
    label: str
    value: float
    unit: str
    note: str

    def text(self) -> str:
        if self.unit == "tokens":
            return f"{self.value:,.0f} tokens"
        if self.unit == "x":
            return f"{self.value:.2f}x"
        return f"{self.value:.2f} {self.unit}"


def size_replica(request: SizeRequest) -> SizeResult:
    r = request
    mem = cap.replica_memory(
        r.arch,
        r.gpu,
        tp=r.tp,
        pp=r.pp,
        quantization=r.quantization,
        kv_cache_dtype=r.kv_cache_dtype,
        gpu_memory_utilization=r.gpu_memory_utilization,
        max_num_batched_tokens=r.max_num_batched_tokens,
        max_num_seqs=r.max_num_seqs,
        weight_format=r.weight_format,
        overheads=overheads_for_version(r.vllm_version),
        p2p=r.p2p,
    )
    version_note = version_warning(r.vllm_version)
    if version_note:
        mem = replace(mem, warnings=(*mem.warnings, version_note))
    encoder = r.arch.kind is ModelKind.ENCODER
    fits = mem.fits if encoder else mem.fits_sequence(r.max_model_len)
    reason = None
    if not fits:
        missing = -mem.kv_available if encoder else mem.missing_bytes_for(r.max_model_len)
        reason = (
            f"weights {mem.weights / GIB:.2f} GiB + activations {mem.activation / GIB:.2f} GiB + overhead "
            f"{mem.non_torch / GIB:.2f} GiB per GPU leave {mem.kv_available / GIB:.2f} GiB of the {mem.budget / GIB:.2f} "
            f"GiB budget; one {r.max_model_len}-token sequence needs {missing / GIB:.2f} GiB more per GPU "
            "(raise --tp, use a larger GPU, quantize, or lower --max-model-len)"
        )
    concurrency = cap.max_concurrency(mem.kv_tokens, r.max_model_len) if not encoder else float(r.max_num_seqs)
    return SizeResult(
        request=r,
        memory=mem,
        kv_bytes_per_token=cap.kv_bytes_per_token(r.arch, r.kv_cache_dtype),
        max_concurrency=concurrency,
        fits=fits,
        reason=reason,
    )
