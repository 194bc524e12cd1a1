"""Weight formats per module kind, read from a checkpoint's ``quantization_config``.

A quantized checkpoint does not store every weight the same way. vLLM's loaders
(``vllm/model_executor/layers/quantization/{awq,gptq,fp8,compressed_tensors}``)
quantize the linear layers (attention projections, MLP, experts) and keep the
input embedding, the LM head, the norms and the MoE router at the model's 16-bit
dtype, as do the modules a config lists in ``modules_to_not_convert`` /
``ignored_layers`` / ``ignore``. Each quantized weight also carries its scales
(and zero points), whose size depends on the scheme:

============================  =======================================================
scheme                        bytes per quantized weight
============================  =======================================================
AWQ / GPTQ 4-bit, group g     (4 + 16/g + 4/g) / 8: the weight, an fp16 scale and a
                              packed 4-bit zero point per group of g
compressed-tensors wNa16      bits/8 + 2/g (bf16 scale per group; symmetric: no zeros)
FP8 block [bn, bk]            1 + 4/(bn x bk): one fp32 scale per block (DeepSeek-V3,
                              Qwen3-FP8)
FP8 / INT8 per tensor         1 (one fp32 scale per tensor, negligible)
FP8 / INT8 per channel        1 (one scale per output row: under 0.1 % of the bytes)
============================  =======================================================
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenplane.catalog import Quantization
from tokenplane.errors import SpecError
from tokenplane.transformer import ParamGroups

# Module kinds of ``ParamGroups`` that a quantizer may convert.
LINEAR_KINDS = ("attention", "dense_mlp", "routed_experts", "shared_experts")
# What stays at 16 bits in every scheme vLLM loads (the router is a plain ReplicatedLinear
# that all four loaders above skip; embeddings and norms are never quantized).
ALWAYS_16_BIT = ("embedding", "norms", "router")


@dataclass(frozen=True)
class WeightFormat:
    """How a checkpoint stores its weights: bytes per weight of each module kind."""

    scheme: Quantization
    quantized_bytes: float  # per weight of a quantized linear layer, scales included
    kept_16_bit: frozenset[str] = frozenset()  # linear kinds (and "lm_head") left unquantized
    dense_bytes: float = 2.0  # the model's dtype: bf16 / fp16
    description: str = ""

    def bytes_per_weight(self, kind: str) -> float:
        if kind in ALWAYS_16_BIT or kind in self.kept_16_bit:
            return self.dense_bytes
        if kind == "lm_head":
            return self.dense_bytes  # no vLLM loader quantizes the LM head unless asked to
        return self.quantized_bytes

    def weight_bytes(self, groups: ParamGroups) -> float:
        """Bytes of all the weights, every module kind at its own format."""
        return sum(count * self.bytes_per_weight(kind) for kind, count in groups.by_kind().items())


def _bits_group(bits: int, group: int, *, zero_points: bool) -> float:
    scale = 2.0 / group if group > 0 else 0.0
    zeros = bits / 8 / group if zero_points and group > 0 else 0.0
    return bits / 8 + scale + zeros


# The formats ``--quantization`` names when no checkpoint config says more: vLLM's runtime
# FP8 is per-tensor dynamic; AWQ/GPTQ checkpoints are nearly all 4-bit, group 128.
DEFAULT_FORMATS: dict[Quantization, WeightFormat] = {
    Quantization.BF16: WeightFormat(Quantization.BF16, 2.0, description="16-bit weights"),
    Quantization.FP16: WeightFormat(Quantization.FP16, 2.0, description="16-bit weights"),
    Quantization.FP8: WeightFormat(Quantization.FP8, 1.0, description="FP8 per-tensor, LM head at 16 bits"),
    Quantization.INT8: WeightFormat(Quantization.INT8, 1.0, description="INT8 per-channel, LM head at 16 bits"),
    Quantization.AWQ: WeightFormat(
        Quantization.AWQ, _bits_group(4, 128, zero_points=True), description="AWQ 4-bit, group 128"
    ),
    Quantization.GPTQ: WeightFormat(
        Quantization.GPTQ, _bits_group(4, 128, zero_points=True), description="GPTQ 4-bit, group 128"
    ),
}


def default_format(quantization: Quantization) -> WeightFormat:
    return DEFAULT_FORMATS[quantization]


# Substrings of a module name in an ignore list -> the module kind it keeps at 16 bits.
_IGNORE_KINDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"lm_head"), "lm_head"),
    (re.compile(r"shared_expert"), "shared_experts"),
    (re.compile(r"(^|\.)(gate|router)$|mlp\.gate$|block_sparse_moe\.gate$"), "router"),
    (re.compile(r"experts"), "routed_experts"),
    (re.compile(r"self_attn|attention|q_proj|k_proj|v_proj|o_proj|qkv"), "attention"),
    (re.compile(r"(^|\.)mlp(\.|$)|gate_proj|up_proj|down_proj"), "dense_mlp"),
)


def _kept_kinds(names: list[Any]) -> frozenset[str]:
    """Module kinds that an ignore list keeps at 16 bits.

    A name that holds a layer index (``model.layers.0.mlp``) keeps one layer of many; the
    capacity model sizes kinds, not layers, so such names are left quantized (the error is
    that one layer's share, under 2 % for any model of 60 layers or more).
    """
    kept: set[str] = set()
    for raw in names:
        name = str(raw).removeprefix("re:")
        if re.search(r"layers\.\d+\.", name):
            continue
        for pattern, kind in _IGNORE_KINDS:
            if pattern.search(name):
                kept.add(kind)
                break
    return frozenset(kept)


def from_quantization_config(config: dict[str, Any], *, source: str = "config.json") -> WeightFormat:
    """Read the weight format of a Hugging Face ``quantization_config``.

    Raises:
        SpecError: the method is not one the capacity model knows; the message names the
            file, the method and the methods it knows.
    """
    method = str(config.get("quant_method", "")).lower()
    bits = int(config.get("bits") or config.get("w_bit") or 4)
    group = int(config.get("group_size") or config.get("q_group_size") or 128)
    if method == "awq":
        kept = _kept_kinds(list(config.get("modules_to_not_convert") or []))
        zero = bool(config.get("zero_point", True))
        return WeightFormat(
            Quantization.AWQ,
            _bits_group(bits, group, zero_points=zero),
            kept,
            description=f"AWQ {bits}-bit, group {group}",
        )
    if method == "gptq":
        kept = _kept_kinds(list(config.get("modules_to_not_convert") or []))
        # GPTQ packs zero points for symmetric checkpoints too (the qzeros tensor is always there).
        return WeightFormat(
            Quantization.GPTQ,
            _bits_group(bits, group, zero_points=True),
            kept,
            description=f"GPTQ {bits}-bit, group {group}",
        )
    if method == "fp8":
        kept = _kept_kinds(list(config.get("ignored_layers") or config.get("modules_to_not_convert") or []))
        block = config.get("weight_block_size")
        if isinstance(block, list) and len(block) == 2 and all(int(b) > 0 for b in block):
            per_weight = 1.0 + 4.0 / (int(block[0]) * int(block[1]))
            return WeightFormat(Quantization.FP8, per_weight, kept, description=f"FP8 block {block[0]}x{block[1]}")
        return WeightFormat(Quantization.FP8, 1.0, kept, description="FP8 per-tensor")
    if method == "compressed-tensors":
        return _compressed_tensors(config, source)
    known = "awq, gptq, fp8, compressed-tensors"
    raise SpecError(
        f"{source}: quantization_config.quant_method={method!r} is not one tokenplane sizes (known: {known}); "
        "pass --quantization to size it as one of those, and expect the weights to differ"
    )


def _compressed_tensors(config: dict[str, Any], source: str) -> WeightFormat:
    groups = config.get("config_groups") or {}
    weights = next(
        (g.get("weights") for g in groups.values() if isinstance(g, dict) and isinstance(g.get("weights"), dict)),
        None,
    )
    if not isinstance(weights, dict):
        raise SpecError(f"{source}: compressed-tensors quantization_config has no config_groups[*].weights")
    bits = int(weights.get("num_bits", 8))
    kind = str(weights.get("type", "int"))
    strategy = str(weights.get("strategy", "tensor"))
    kept = _kept_kinds(list(config.get("ignore") or []))
    if bits == 8:
        scheme = Quantization.FP8 if kind == "float" else Quantization.INT8
        if strategy == "block" and isinstance(weights.get("block_structure"), list):
            bn, bk = (int(b) for b in weights["block_structure"])
            return WeightFormat(scheme, 1.0 + 4.0 / (bn * bk), kept, description=f"{scheme.value} block {bn}x{bk}")
        return WeightFormat(scheme, 1.0, kept, description=f"{scheme.value} {strategy}")
    if bits == 4:
        group = int(weights.get("group_size") or 128)
        zero = not bool(weights.get("symmetric", True))
        return WeightFormat(
            Quantization.GPTQ,
            _bits_group(bits, group, zero_points=zero),
            kept,
            description=f"compressed-tensors w{bits}a16, group {group}",
        )
    raise SpecError(f"{source}: compressed-tensors weights of {bits} bits are not sized (known: 4 and 8)")


def read_weight_format(path: Path) -> WeightFormat | None:
    """The ``quantization_config`` of a ``config.json``, or ``None`` for an unquantized checkpoint."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None  # ``from_hf_config`` reports unreadable files with their line and column
    cfg = raw.get("quantization_config") if isinstance(raw, dict) else None
    if cfg is None and isinstance(raw, dict) and isinstance(raw.get("text_config"), dict):
        cfg = raw["text_config"].get("quantization_config")
    if not isinstance(cfg, dict):
        return None
    return from_quantization_config(cfg, source=str(path))
