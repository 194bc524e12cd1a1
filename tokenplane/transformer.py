"""Transformer architectures: the shape facts that the capacity model needs.

An architecture is either a catalog preset (``tokenplane.catalog.MODEL_PRESETS``)
or read from a Hugging Face ``config.json``, which is the source of truth a real
user has on disk. Parameter counts are derived from the shapes rather than typed
in, so that a preset and the config it came from cannot disagree.

No ``from __future__ import annotations``: pydantic would compile ``Architecture``'s string annotations on
every import (see ``tokenplane.spec``).
"""

import json
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tokenplane.errors import SpecError


class ModelKind(StrEnum):
    """Decoders generate and keep a KV cache; encoders embed and keep none."""

    DECODER = "decoder"
    ENCODER = "encoder"


class Architecture(BaseModel):
    """The shapes of one transformer, as in its Hugging Face config.

    Mixture-of-experts fields stay at their defaults for dense models, and the
    MLA fields (multi-head latent attention, DeepSeek-V2/V3) stay ``None`` for
    models with ordinary grouped-query attention.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ModelKind = ModelKind.DECODER
    hidden_size: int = Field(gt=0)
    num_layers: int = Field(gt=0)
    num_attention_heads: int = Field(gt=0)
    num_kv_heads: int = Field(gt=0)
    head_dim: int | None = Field(default=None, gt=0)
    intermediate_size: int = Field(gt=0)
    vocab_size: int = Field(gt=0)
    max_position_embeddings: int = Field(gt=0)
    tie_word_embeddings: bool = False
    # Mixture of experts. num_experts=0 means a dense MLP.
    num_experts: int = Field(default=0, ge=0)
    experts_per_token: int = Field(default=0, ge=0)
    moe_intermediate_size: int | None = Field(default=None, gt=0)
    num_shared_experts: int = Field(default=0, ge=0)
    first_dense_layers: int = Field(default=0, ge=0)
    # Multi-head latent attention: the KV cache holds one compressed latent.
    kv_lora_rank: int | None = Field(default=None, gt=0)
    q_lora_rank: int | None = Field(default=None, gt=0)
    qk_rope_head_dim: int | None = Field(default=None, gt=0)
    qk_nope_head_dim: int | None = Field(default=None, gt=0)
    v_head_dim: int | None = Field(default=None, gt=0)
    # Features of the checkpoint that the capacity model does not cover (sliding-window or
    # hybrid attention, multimodal encoders...): the size is then a warning, not a promise.
    uncovered: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _shapes_agree(self) -> "Architecture":
        if self.num_attention_heads % self.num_kv_heads:
            raise ValueError(
                f"num_kv_heads={self.num_kv_heads} must divide num_attention_heads="
                f"{self.num_attention_heads} (grouped-query attention shares each KV head "
                "across an equal group of query heads)"
            )
        if self.num_experts and not self.experts_per_token:
            raise ValueError(f"num_experts={self.num_experts} needs experts_per_token >= 1 (the router's top-k)")
        if self.experts_per_token > self.num_experts:
            raise ValueError(f"experts_per_token={self.experts_per_token} exceeds num_experts={self.num_experts}")
        mla = (self.kv_lora_rank, self.qk_rope_head_dim, self.qk_nope_head_dim, self.v_head_dim)
        if any(v is not None for v in mla) and any(v is None for v in mla):
            raise ValueError("MLA needs all of kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim and v_head_dim")
        return self

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    @property
    def attention_head_dim(self) -> int:
        return self.head_dim or self.hidden_size // self.num_attention_heads

    @property
    def attention_width(self) -> int:
        """Width of the attention scores' inner product, summed over heads."""
        if self.is_mla:
            return self.num_attention_heads * (_req(self.qk_nope_head_dim) + _req(self.qk_rope_head_dim))
        return self.num_attention_heads * self.attention_head_dim

    @cached_property
    def embedding_params(self) -> int:
        """Input embedding plus an untied LM head; kept at 16 bits by weight-only quantizers."""
        if self.kind is ModelKind.ENCODER:
            return self.vocab_size * self.hidden_size + self.max_position_embeddings * self.hidden_size
        heads = 1 if self.tie_word_embeddings else 2
        return heads * self.vocab_size * self.hidden_size

    @cached_property
    def param_groups(self) -> "ParamGroups":
        """Every weight by the kind of module that holds it, all experts included.

        Quantizers treat the kinds differently: the linear layers (attention, MLP,
        experts) take the quantized format, while embeddings, the LM head, norms and
        the MoE router usually stay at 16 bits.
        """
        h = self.hidden_size
        dense_layers = self.num_layers if not self.is_moe else min(self.first_dense_layers, self.num_layers)
        moe_layers = self.num_layers - dense_layers
        heads = 1 if self.tie_word_embeddings or self.kind is ModelKind.ENCODER else 2
        embedding = self.embedding_params - (self.vocab_size * h if heads == 2 else 0)
        expert = 3 * h * (self.moe_intermediate_size or self.intermediate_size)
        return ParamGroups(
            embedding=embedding,
            lm_head=self.vocab_size * h if heads == 2 else 0,
            attention=self.num_layers * self._attention_params(),
            dense_mlp=dense_layers * self._mlp_params(moe_layer=False, active_only=False),
            routed_experts=moe_layers * self.num_experts * expert,
            shared_experts=moe_layers * self.num_shared_experts * expert,
            router=moe_layers * h * self.num_experts,
            norms=self.num_layers * 2 * h + h,
        )

    @cached_property
    def params_total(self) -> int:
        """Every weight, all experts included."""
        return self.embedding_params + self._body_params(active_only=False)

    @cached_property
    def params_active(self) -> int:
        """Weights one token touches: the routed top-k experts, not all of them."""
        return self.embedding_params + self._body_params(active_only=True)

    def _attention_params(self) -> int:
        h = self.hidden_size
        if self.kind is ModelKind.ENCODER:
            return 4 * h * h + 4 * h
        if self.is_mla:
            nope, rope, v = _req(self.qk_nope_head_dim), _req(self.qk_rope_head_dim), _req(self.v_head_dim)
            heads, kv_rank = self.num_attention_heads, _req(self.kv_lora_rank)
            q_out = heads * (nope + rope)
            q = h * self.q_lora_rank + self.q_lora_rank * q_out if self.q_lora_rank else h * q_out
            return q + h * (kv_rank + rope) + kv_rank * heads * (nope + v) + heads * v * h
        hd = self.attention_head_dim
        return h * self.num_attention_heads * hd * 2 + 2 * h * self.num_kv_heads * hd

    def _mlp_params(self, *, moe_layer: bool, active_only: bool) -> int:
        h = self.hidden_size
        if self.kind is ModelKind.ENCODER:
            return 2 * h * self.intermediate_size
        if not moe_layer:
            return 3 * h * self.intermediate_size  # gate, up and down projections
        expert = 3 * h * (self.moe_intermediate_size or self.intermediate_size)
        routed = self.experts_per_token if active_only else self.num_experts
        return (routed + self.num_shared_experts) * expert + h * self.num_experts

    def _body_params(self, *, active_only: bool) -> int:
        dense_layers = self.num_layers if not self.is_moe else min(self.first_dense_layers, self.num_layers)
        moe_layers = self.num_layers - dense_layers
        per_layer_common = self._attention_params() + 2 * self.hidden_size  # two norms
        body = self.num_layers * per_layer_common
        body += dense_layers * self._mlp_params(moe_layer=False, active_only=active_only)
        body += moe_layers * self._mlp_params(moe_layer=True, active_only=active_only)
        return body + self.hidden_size  # final norm


@dataclass(frozen=True)
class ParamGroups:
    """Parameter counts by module kind; they sum to ``Architecture.params_total``."""

    embedding: int  # input embedding (plus learned positions for encoders)
    lm_head: int  # 0 when tied to the embedding
    attention: int
    dense_mlp: int
    routed_experts: int
    shared_experts: int
    router: int  # the MoE gate: hidden x experts per MoE layer
    norms: int

    def by_kind(self) -> dict[str, int]:
        return {f.name: int(getattr(self, f.name)) for f in dataclass_fields(self)}

    @property
    def total(self) -> int:
        return sum(self.by_kind().values())


def _req(value: int | None) -> int:
    """Narrow an MLA field that the validator has already proven present."""
    if value is None:
        raise TypeError("MLA field missing on a model that validated as MLA")
    return value


# Hugging Face config keys -> our names. Several families spell the same fact
# differently; the first key present wins.
_HF_KEYS: dict[str, tuple[str, ...]] = {
    "hidden_size": ("hidden_size", "d_model", "n_embd"),
    "num_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "num_attention_heads": ("num_attention_heads", "n_head"),
    "intermediate_size": ("intermediate_size", "ffn_dim", "n_inner"),
    "vocab_size": ("vocab_size",),
    "max_position_embeddings": ("max_position_embeddings", "n_positions", "max_seq_len"),
}
_ENCODER_TYPES = {"bert", "roberta", "xlm-roberta", "mpnet", "nomic_bert", "distilbert"}


def from_hf_config(path: Path) -> Architecture:
    """Read an architecture from a Hugging Face ``config.json``.

    Raises:
        SpecError: the file is missing, is not JSON, or lacks a required key;
            the message names the file and the key.
    """
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise SpecError(f"{path}: no such file (pass the config.json of the model)") from e
    except json.JSONDecodeError as e:
        raise SpecError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from e
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: expected a JSON object, got {type(raw).__name__}")
    # Multimodal configs nest the language model's config.
    cfg: dict[str, Any] = raw.get("text_config", raw) if isinstance(raw.get("text_config"), dict) else raw
    fields: dict[str, Any] = {}
    for ours, keys in _HF_KEYS.items():
        for key in keys:
            if key in cfg:
                fields[ours] = cfg[key]
                break
        else:
            raise SpecError(f"{path}: missing key {keys[0]!r} (needed for {ours}); is this a transformer config.json?")
    model_type = str(cfg.get("model_type", ""))
    fields["kind"] = ModelKind.ENCODER if model_type in _ENCODER_TYPES else ModelKind.DECODER
    fields["num_kv_heads"] = cfg.get("num_key_value_heads") or fields["num_attention_heads"]
    if cfg.get("head_dim"):
        fields["head_dim"] = cfg["head_dim"]
    fields["tie_word_embeddings"] = bool(cfg.get("tie_word_embeddings", False))
    experts = cfg.get("num_local_experts") or cfg.get("n_routed_experts") or cfg.get("num_experts") or 0
    if experts:
        fields["num_experts"] = experts
        fields["experts_per_token"] = cfg.get("num_experts_per_tok", 2)
        if cfg.get("moe_intermediate_size"):
            fields["moe_intermediate_size"] = cfg["moe_intermediate_size"]
        fields["num_shared_experts"] = cfg.get("n_shared_experts") or 0
        fields["first_dense_layers"] = cfg.get("first_k_dense_replace") or 0
        shared = cfg.get("shared_expert_intermediate_size")
        if shared and fields.get("moe_intermediate_size"):
            # Qwen-MoE writes its one shared expert as a wider MLP; count it in expert-sized units.
            fields["num_shared_experts"] = max(1, round(shared / fields["moe_intermediate_size"]))
    for key in ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
        if cfg.get(key):
            fields[key] = cfg[key]
    fields["uncovered"] = uncovered_features(raw, cfg)
    try:
        return Architecture(**fields)
    except ValueError as e:
        raise SpecError(f"{path}: {e}") from e


# Model types whose layers are not all full attention: state-space (Mamba) or linear-attention
# layers keep a fixed-size state instead of a KV cache, so vLLM sizes them differently.
_HYBRID_TYPES = {
    "jamba",
    "mamba",
    "mamba2",
    "nemotron_h",
    "falcon_h1",
    "zamba2",
    "granitemoehybrid",
    "qwen3_next",
    "lfm2",
    "minimax_text_01",
    "kimi_linear",
}


def uncovered_features(raw: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, ...]:
    """What in a ``config.json`` the capacity model does not cover, in words for a warning.

    The model sizes every layer as full attention with one KV entry per token, the way
    vLLM sizes a Llama. Checkpoints that break that get a warning rather than a confident
    number (issue 15: "out-of-range inputs get a warning").
    """
    notes: list[str] = []
    model_type = str(cfg.get("model_type", ""))
    layer_types = cfg.get("layer_types")
    window = cfg.get("sliding_window")
    if isinstance(layer_types, list) and any(t != "full_attention" for t in layer_types):
        kinds = sorted({str(t) for t in layer_types})
        notes.append(f"mixed layer types {', '.join(kinds)} (vLLM sizes non-full-attention layers differently)")
    elif window and cfg.get("use_sliding_window", True) and window < cfg.get("max_position_embeddings", 0):
        notes.append(
            f"sliding-window attention (window {window}): sized as full attention, which is how vLLM 0.19 logs "
            "Gemma 2 (within 1 %), but the window's effect on concurrency is not modeled"
        )
    if model_type in _HYBRID_TYPES or any(k in cfg for k in ("layers_block_type", "hybrid_override_pattern")):
        notes.append(f"hybrid attention/state-space model ({model_type or 'unknown type'})")
    if cfg.get("attention_chunk_size"):
        notes.append(f"chunked local attention (chunk {cfg['attention_chunk_size']})")
    if isinstance(raw.get("vision_config"), dict):
        notes.append("multimodal: the vision encoder's weights and its profiling pass are not modeled")
    return tuple(notes)
