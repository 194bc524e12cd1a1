"""Architecture shapes, their validators, and reading Hugging Face config.json files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tokenplane.catalog import model_preset
from tokenplane.errors import SpecError
from tokenplane.transformer import Architecture, ModelKind, from_hf_config

# Abridged from huggingface.co/<repo>/config.json: the keys we read, plus a few we must ignore.
LLAMA_3_1_8B_CONFIG: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
MIXTRAL_8X7B_CONFIG: dict[str, Any] = {
    "architectures": ["MixtralForCausalLM"],
    "model_type": "mixtral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "vocab_size": 32000,
    "max_position_embeddings": 32768,
    "sliding_window": None,
    "tie_word_embeddings": False,
}
DEEPSEEK_V3_CONFIG: dict[str, Any] = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
    "num_nextn_predict_layers": 1,
    "vocab_size": 129280,
    "max_position_embeddings": 163840,
    "tie_word_embeddings": False,
}
BGE_LARGE_CONFIG: dict[str, Any] = {
    "architectures": ["BertModel"],
    "model_type": "bert",
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "vocab_size": 30522,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
}


def _write(tmp_path: Path, config: Any, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    return path


def _small(**overrides: Any) -> Architecture:
    fields: dict[str, Any] = {
        "hidden_size": 256,
        "num_layers": 2,
        "num_attention_heads": 8,
        "num_kv_heads": 2,
        "intermediate_size": 512,
        "vocab_size": 1000,
        "max_position_embeddings": 2048,
    }
    return Architecture(**(fields | overrides))


# --- shapes and validators ---------------------------------------------------------------------


def test_kv_heads_must_divide_attention_heads() -> None:
    with pytest.raises(ValidationError, match="num_kv_heads=3 must divide num_attention_heads=8"):
        _small(num_kv_heads=3)


def test_experts_without_a_router_top_k_are_rejected() -> None:
    with pytest.raises(ValidationError, match="experts_per_token"):
        _small(num_experts=8)


def test_router_top_k_cannot_exceed_the_experts() -> None:
    with pytest.raises(ValidationError, match="experts_per_token=4 exceeds num_experts=2"):
        _small(num_experts=2, experts_per_token=4)


def test_partial_mla_fields_are_rejected() -> None:
    with pytest.raises(ValidationError, match="MLA needs all of"):
        _small(kv_lora_rank=64)


def test_unknown_fields_are_rejected() -> None:
    with pytest.raises(ValidationError):
        _small(num_kv_head=2)


def test_head_dim_defaults_to_hidden_size_over_heads() -> None:
    assert _small().attention_head_dim == 256 // 8


def test_explicit_head_dim_overrides_the_default() -> None:
    assert _small(head_dim=64).attention_head_dim == 64


def test_dense_model_touches_every_weight_per_token() -> None:
    arch = model_preset("llama-3.1-70b").architecture
    assert not arch.is_moe
    assert arch.params_active == arch.params_total


def test_moe_model_touches_only_its_routed_experts() -> None:
    arch = model_preset("mixtral-8x7b").architecture
    assert arch.is_moe
    assert arch.params_active < arch.params_total / 3


def test_llama_3_1_8b_parameter_count_is_exact() -> None:
    # Embedding + LM head: 2 x 128,256 x 4,096. Per layer: q,o 4096x4096 each; k,v 4096x1024 each;
    # gate, up, down 4096x14,336 each; two norms. Plus the final norm. HF reports 8,030,261,248.
    embeddings = 2 * 128_256 * 4096
    layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14_336 + 2 * 4096
    assert model_preset("llama-3.1-8b").architecture.params_total == embeddings + 32 * layer + 4096 == 8_030_261_248


def test_tied_embeddings_are_counted_once() -> None:
    untied, tied = _small(), _small(tie_word_embeddings=True)
    assert untied.params_total - tied.params_total == 1000 * 256


def test_mla_attention_width_uses_nope_plus_rope_dims() -> None:
    arch = model_preset("deepseek-v3").architecture
    assert arch.is_mla
    assert arch.attention_width == 128 * (128 + 64)


# --- from_hf_config ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "preset"),
    [
        (LLAMA_3_1_8B_CONFIG, "llama-3.1-8b"),
        (MIXTRAL_8X7B_CONFIG, "mixtral-8x7b"),
        (DEEPSEEK_V3_CONFIG, "deepseek-v3"),
    ],
)
def test_hf_config_reads_back_the_preset_architecture(tmp_path: Path, config: dict[str, Any], preset: str) -> None:
    arch = from_hf_config(_write(tmp_path, config))
    expected = model_preset(preset).architecture
    assert arch == expected
    assert (arch.params_total, arch.params_active) == (expected.params_total, expected.params_active)


def test_hf_config_of_a_bert_model_is_an_encoder_with_the_preset_params(tmp_path: Path) -> None:
    arch = from_hf_config(_write(tmp_path, BGE_LARGE_CONFIG))
    assert arch.kind is ModelKind.ENCODER
    assert arch.params_total == model_preset("bge-large-en-v1.5").architecture.params_total


def test_hf_config_without_kv_heads_means_multi_head_attention(tmp_path: Path) -> None:
    config = {k: v for k, v in LLAMA_3_1_8B_CONFIG.items() if k != "num_key_value_heads"}
    assert from_hf_config(_write(tmp_path, config)).num_kv_heads == 32


def test_hf_config_reads_the_text_config_of_a_multimodal_model(tmp_path: Path) -> None:
    config = {"model_type": "llava", "vision_config": {"hidden_size": 1024}, "text_config": LLAMA_3_1_8B_CONFIG}
    arch = from_hf_config(_write(tmp_path, config))
    assert arch.model_copy(update={"uncovered": ()}) == model_preset("llama-3.1-8b").architecture
    assert any("vision encoder" in note for note in arch.uncovered)


def test_missing_hf_config_raises_spec_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "absent" / "config.json"
    with pytest.raises(SpecError, match="no such file") as info:
        from_hf_config(path)
    assert str(path) in str(info.value)


def test_invalid_json_raises_spec_error_with_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{\n  "hidden_size": 4096,\n  oops\n}\n', encoding="utf-8")
    with pytest.raises(SpecError, match="not valid JSON") as info:
        from_hf_config(path)
    assert f"{path}:3:3:" in str(info.value)


def test_hf_config_that_is_not_an_object_raises_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="expected a JSON object, got list"):
        from_hf_config(_write(tmp_path, [LLAMA_3_1_8B_CONFIG]))


def test_hf_config_missing_a_key_names_the_key(tmp_path: Path) -> None:
    config = {k: v for k, v in LLAMA_3_1_8B_CONFIG.items() if k != "vocab_size"}
    with pytest.raises(SpecError, match="missing key 'vocab_size'"):
        from_hf_config(_write(tmp_path, config))


def test_hf_config_with_inconsistent_shapes_raises_spec_error(tmp_path: Path) -> None:
    config = LLAMA_3_1_8B_CONFIG | {"num_key_value_heads": 5}
    with pytest.raises(SpecError, match="num_kv_heads=5 must divide num_attention_heads=32") as info:
        from_hf_config(_write(tmp_path, config))
    assert isinstance(info.value.__cause__, ValueError)


def test_param_groups_add_up_to_the_total() -> None:
    for name in ("llama-3.1-8b", "mixtral-8x7b", "deepseek-v3", "bge-large-en-v1.5"):
        arch = model_preset(name).architecture
        assert arch.param_groups.total == arch.params_total, name


def test_a_plain_llama_config_has_nothing_uncovered(tmp_path: Path) -> None:
    assert from_hf_config(_write(tmp_path, LLAMA_3_1_8B_CONFIG)).uncovered == ()


def test_qwen2_sliding_window_left_off_is_not_flagged(tmp_path: Path) -> None:
    config = {**LLAMA_3_1_8B_CONFIG, "sliding_window": 4096, "use_sliding_window": False}
    assert from_hf_config(_write(tmp_path, config)).uncovered == ()


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ({"sliding_window": 4096}, "sliding-window"),
        ({"layer_types": ["sliding_attention", "full_attention"]}, "mixed layer types"),
        ({"model_type": "jamba"}, "hybrid"),
        ({"attention_chunk_size": 8192}, "chunked local attention"),
    ],
)
def test_attention_the_model_does_not_cover_is_flagged(tmp_path: Path, extra: dict[str, Any], words: str) -> None:
    arch = from_hf_config(_write(tmp_path, {**LLAMA_3_1_8B_CONFIG, **extra}))
    assert any(words in note for note in arch.uncovered), arch.uncovered
