"""The catalog: model presets against their published sizes, GPUs, instance types."""

from __future__ import annotations

import pytest

from tokenplane import catalog
from tokenplane.errors import CatalogError, SpecError
from tokenplane.transformer import ModelKind

# Published parameter totals (model cards on huggingface.co), and the active share for MoE.
PUBLISHED_PARAMS: dict[str, float] = {
    "llama-3.1-8b": 8.03e9,
    "llama-3.1-70b": 70.6e9,
    "llama-3.1-405b": 405.9e9,
    "qwen2.5-7b": 7.62e9,
    "qwen2.5-32b": 32.8e9,
    "qwen2.5-72b": 72.7e9,
    "mixtral-8x7b": 46.7e9,
    "deepseek-v3": 671e9,
    "deepseek-r1": 671e9,
    "llama-3.3-70b": 70.6e9,
    "qwen3-8b": 8.19e9,
    "qwen3-32b": 32.8e9,
    "qwen3-30b-a3b": 30.5e9,
    "qwen3-235b-a22b": 235e9,
    "mistral-7b": 7.25e9,
    "mistral-small-24b": 23.6e9,
    "gpt-oss-20b": 20.9e9,
    "gpt-oss-120b": 116.8e9,
    "all-minilm-l6-v2": 22.7e6,
    "bge-large-en-v1.5": 335e6,
}
PUBLISHED_ACTIVE_PARAMS: dict[str, float] = {
    "mixtral-8x7b": 12.9e9,
    "deepseek-v3": 37e9,
    "deepseek-r1": 37e9,
    "qwen3-235b-a22b": 22e9,
    "gpt-oss-20b": 3.61e9,
    "gpt-oss-120b": 5.13e9,
}
# OpenAI's gpt-oss card counts active parameters without the input embedding table (the unembedding is counted).
# Qwen3-30B-A3B's "3.3B activated" is left out: derived 3.35B, and one decimal cannot tell 1.5% apart.
ACTIVE_WITHOUT_EMBEDDING = {"gpt-oss-20b", "gpt-oss-120b"}
TOLERANCE = 0.015


def test_every_preset_has_a_published_total() -> None:
    assert set(PUBLISHED_PARAMS) == set(catalog.MODEL_PRESETS)


@pytest.mark.parametrize(("name", "published"), sorted(PUBLISHED_PARAMS.items()))
def test_preset_parameter_count_matches_the_published_total(name: str, published: float) -> None:
    derived = catalog.MODEL_PRESETS[name].architecture.params_total
    assert derived == pytest.approx(published, rel=TOLERANCE), f"{name}: {derived / 1e9:.3f}B"


@pytest.mark.parametrize(("name", "published"), sorted(PUBLISHED_ACTIVE_PARAMS.items()))
def test_moe_preset_active_parameters_match_the_published_count(name: str, published: float) -> None:
    arch = catalog.MODEL_PRESETS[name].architecture
    derived = arch.params_active - (arch.vocab_size * arch.hidden_size if name in ACTIVE_WITHOUT_EMBEDDING else 0)
    assert derived == pytest.approx(published, rel=TOLERANCE), f"{name}: {derived / 1e9:.3f}B active"


def test_embedding_presets_are_encoders_and_the_rest_decoders() -> None:
    encoders = {n for n, p in catalog.MODEL_PRESETS.items() if p.architecture.kind is ModelKind.ENCODER}
    assert encoders == {"all-minilm-l6-v2", "bge-large-en-v1.5"}


def test_preset_names_match_their_keys_and_name_a_hf_repo() -> None:
    for key, preset in catalog.MODEL_PRESETS.items():
        assert preset.name == key
        assert preset.hf_repo.count("/") == 1, preset.hf_repo


def test_model_preset_lookup_ignores_case() -> None:
    assert catalog.model_preset("Llama-3.1-8B").name == "llama-3.1-8b"


def test_unknown_model_preset_lists_the_known_ones() -> None:
    with pytest.raises(CatalogError, match="unknown model preset 'llama-4'") as info:
        catalog.model_preset("llama-4")
    assert all(name in str(info.value) for name in catalog.MODEL_PRESETS)


def test_catalog_errors_are_spec_errors() -> None:
    assert issubclass(CatalogError, SpecError)


@pytest.mark.parametrize(("alias", "name"), sorted(catalog.GPU_ALIASES.items()))
def test_gpu_alias_resolves_to_a_catalog_gpu(alias: str, name: str) -> None:
    assert catalog.gpu(alias) is catalog.GPUS[name]
    assert catalog.canonical_gpu_name(alias) == name


def test_unknown_gpu_lists_the_known_gpus() -> None:
    with pytest.raises(CatalogError, match="unknown GPU 'MI300X'") as info:
        catalog.gpu("MI300X")
    assert all(name in str(info.value) for name in catalog.GPUS)


def test_h100_total_memory_is_what_cuda_reports_not_the_marketing_80_gb() -> None:
    # vLLM v0.19 logs "total_gpu_memory (79.19GiB)" on an H100 SXM (calibration row 7).
    h100 = catalog.gpu("H100")
    assert h100.hbm_gib == 79.19
    assert h100.hbm_bytes == 79.19 * 1024**3


def test_gpu_without_fp8_tensor_cores_falls_back_to_bf16_rate() -> None:
    a100 = catalog.gpu("A100")
    assert a100.flops(fp8=True) == a100.flops(fp8=False) == 312e12


def test_hopper_fp8_rate_is_twice_its_bf16_rate() -> None:
    h100 = catalog.gpu("H100")
    assert h100.flops(fp8=True) == pytest.approx(2 * h100.flops(fp8=False), rel=0.001)


def test_every_instance_type_names_a_catalog_gpu() -> None:
    for it in catalog.INSTANCE_TYPES.values():
        assert it.gpu in catalog.GPUS, it.name
        assert it.gpus >= 1
        assert it.usd_per_hour > 0


def test_every_gpu_has_a_default_instance_holding_that_gpu() -> None:
    assert set(catalog.DEFAULT_INSTANCE) == set(catalog.GPUS)
    for name in catalog.GPUS:
        assert catalog.default_instance(name).gpu == name


def test_h100_defaults_to_the_eight_gpu_p5_node() -> None:
    node = catalog.default_instance("H100")
    assert (node.name, node.gpus) == ("p5.48xlarge", 8)


def test_unknown_instance_type_raises_catalog_error() -> None:
    with pytest.raises(CatalogError, match=r"unknown instance type 'p9\.48xlarge'"):
        catalog.instance_type("p9.48xlarge")


@pytest.mark.parametrize("name", ["h100", "H100", "H100-SXM", "h100-80gb", "H100_80GB", " h100 80gb "])
def test_gpu_names_ignore_case_spaces_and_underscores(name: str) -> None:
    assert catalog.gpu(name).name == "H100-80GB"


def test_unknown_gpu_error_also_names_some_aliases() -> None:
    with pytest.raises(CatalogError, match=r"\(any case; aliases such as .*H100"):
        catalog.gpu("h300")


def test_pcie_only_nodes_are_marked_so() -> None:
    pcie = {name for name, g in catalog.GPUS.items() if g.interconnect is catalog.Interconnect.PCIE}
    assert pcie == {"A10G", "L4", "L40S"}
