"""Weight formats read from a checkpoint's quantization_config, module kind by module kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenplane.catalog import Quantization, model_preset
from tokenplane.errors import SpecError
from tokenplane.quantization import (
    DEFAULT_FORMATS,
    LINEAR_KINDS,
    WeightFormat,
    from_quantization_config,
    read_weight_format,
)

LLAMA_8B = model_preset("llama-3.1-8b").architecture
MIXTRAL = model_preset("mixtral-8x7b").architecture


def test_awq_group_128_with_zero_points_costs_4_plus_20_128_bits() -> None:
    fmt = from_quantization_config({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True})
    assert fmt.scheme is Quantization.AWQ
    assert fmt.quantized_bytes == pytest.approx((4 + 20 / 128) / 8)


def test_gptq_keeps_its_packed_zero_points_even_when_symmetric() -> None:
    fmt = from_quantization_config({"quant_method": "gptq", "bits": 4, "group_size": 64, "sym": True})
    assert fmt.quantized_bytes == pytest.approx(0.5 + 2 / 64 + 0.5 / 64)


def test_block_fp8_carries_one_fp32_scale_per_block() -> None:
    fmt = from_quantization_config({"quant_method": "fp8", "weight_block_size": [128, 128]})
    assert fmt.quantized_bytes == pytest.approx(1 + 4 / 16384)
    assert from_quantization_config({"quant_method": "fp8"}).quantized_bytes == 1.0


def test_compressed_tensors_w4a16_and_fp8_block() -> None:
    w4 = {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 4, "group_size": 128}}}}
    assert from_quantization_config(w4).quantized_bytes == pytest.approx(0.5 + 2 / 128)
    fp8 = {
        "quant_method": "compressed-tensors",
        "config_groups": {
            "g": {"weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]}}
        },
        "ignore": ["lm_head"],
    }
    fmt = from_quantization_config(fp8)
    assert fmt.scheme is Quantization.FP8 and fmt.quantized_bytes == pytest.approx(1 + 4 / 16384)


def test_embeddings_norms_router_and_lm_head_stay_at_16_bits() -> None:
    fmt = DEFAULT_FORMATS[Quantization.FP8]
    groups = MIXTRAL.param_groups
    expected = sum(getattr(groups, k) for k in LINEAR_KINDS) * 1.0 + 2.0 * (
        groups.embedding + groups.lm_head + groups.norms + groups.router
    )
    assert fmt.weight_bytes(groups) == pytest.approx(expected)


def test_ignore_lists_keep_whole_module_kinds_unquantized() -> None:
    fmt = from_quantization_config(
        {"quant_method": "awq", "bits": 4, "group_size": 128, "modules_to_not_convert": ["self_attn", "mlp.gate"]}
    )
    assert fmt.bytes_per_weight("attention") == 2.0
    assert fmt.bytes_per_weight("router") == 2.0
    assert fmt.bytes_per_weight("routed_experts") < 1.0


def test_a_layer_indexed_ignore_entry_leaves_the_kind_quantized() -> None:
    fmt = from_quantization_config({"quant_method": "fp8", "ignored_layers": ["model.layers.0.mlp"]})
    assert fmt.bytes_per_weight("dense_mlp") == 1.0


def test_an_unknown_method_names_the_file_and_the_known_ones() -> None:
    with pytest.raises(SpecError, match=r"m/config.json: quantization_config.quant_method='bitsandbytes'.*known: awq"):
        from_quantization_config({"quant_method": "bitsandbytes"}, source="m/config.json")


def test_an_unquantized_config_has_no_weight_format(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama"}), encoding="utf-8")
    assert read_weight_format(path) is None


def test_a_multimodal_config_reads_the_text_models_quantization(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    text: dict[str, Any] = {"quantization_config": {"quant_method": "fp8"}}
    path.write_text(json.dumps({"text_config": text}), encoding="utf-8")
    fmt = read_weight_format(path)
    assert fmt is not None and fmt.scheme is Quantization.FP8


@given(bits=st.sampled_from([2, 3, 4, 8]), group=st.sampled_from([32, 64, 128, 256]))
def test_quantized_weights_never_outweigh_bf16(bits: int, group: int) -> None:
    fmt = from_quantization_config({"quant_method": "gptq", "bits": bits, "group_size": group})
    assert fmt.weight_bytes(LLAMA_8B.param_groups) < DEFAULT_FORMATS[Quantization.BF16].weight_bytes(
        LLAMA_8B.param_groups
    )


@given(kept=st.sets(st.sampled_from([*LINEAR_KINDS, "lm_head"])))
def test_keeping_more_kinds_at_16_bits_never_shrinks_the_weights(kept: set[str]) -> None:
    base = DEFAULT_FORMATS[Quantization.AWQ]
    more = WeightFormat(base.scheme, base.quantized_bytes, frozenset(kept))
    assert more.weight_bytes(MIXTRAL.param_groups) >= base.weight_bytes(MIXTRAL.param_groups)
