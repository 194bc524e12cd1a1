"""The capacity model's worked figures: memory, KV cache, latency, queueing, cost, and `size`."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from tokenplane import catalog
from tokenplane.catalog import GIB, Interconnect, KvCacheDtype, Quantization, gpu, model_preset
from tokenplane.errors import CatalogError, SpecError
from tokenplane.model import capacity as cap
from tokenplane.model.sizing import SizeRequest, size_replica
from tokenplane.transformer import Architecture

H100 = gpu("H100")
AUTO, FP8_KV = KvCacheDtype.AUTO, KvCacheDtype.FP8
NO_OVERHEAD = cap.Efficiency(step_overhead_s=0.0, allreduce_s=0.0, layer_floor_s=0.0, sampler_bytes_per_logit=0.0)


def arch(name: str) -> Architecture:
    return model_preset(name).architecture


# --- the reference architecture's worked figures ----------------------------------------------


def test_70b_fp16_weights_take_140_gb() -> None:
    assert cap.weight_bytes(70e9, Quantization.FP16) == 140e9


def test_405b_fp16_weights_take_810_gb() -> None:
    assert cap.weight_bytes(405e9, Quantization.FP16) == 810e9


def test_quantizers_keep_embeddings_at_16_bits() -> None:
    assert cap.weight_bytes(10e9, Quantization.FP8, embedding_params=1e9) == 9e9 * 1 + 1e9 * 2


def test_embedding_params_beyond_the_total_are_rejected() -> None:
    with pytest.raises(ValueError, match="exceeds params"):
        cap.weight_bytes(1e9, Quantization.FP8, embedding_params=2e9)


def test_100_rps_of_1500_tokens_is_150k_tokens_per_second() -> None:
    assert cap.token_throughput(100, 1500) == 150_000


def test_backlog_grows_by_the_overload_each_second() -> None:
    assert cap.backlog(500, 300, 1) == 200
    assert cap.backlog(500, 300, 30) == 6000


def test_backlog_is_zero_when_service_outpaces_arrivals() -> None:
    assert cap.backlog(300, 500, 30) == 0


def test_long_context_workload_needs_over_24x_the_kv_of_a_chat_turn() -> None:
    per_token = cap.kv_bytes_per_token(arch("llama-3.1-70b"), AUTO)
    workload_a = per_token * (500 + 200)
    workload_b = per_token * (16_000 + 1_000)
    assert workload_b > 24 * workload_a


# --- KV bytes per token -----------------------------------------------------------------------


def test_llama_8b_bf16_kv_is_128_kib_per_token() -> None:
    assert cap.kv_bytes_per_token(arch("llama-3.1-8b"), AUTO) == 2 * 32 * 8 * 128 * 2 == 131_072


def test_fp8_kv_cache_halves_the_bytes_per_token() -> None:
    assert cap.kv_bytes_per_token(arch("llama-3.1-8b"), FP8_KV) == 131_072 // 2


def test_tp2_halves_the_kv_bytes_each_gpu_holds() -> None:
    assert cap.kv_bytes_per_token(arch("llama-3.1-8b"), AUTO, tp=2) == 131_072 // 2


def test_kv_heads_are_replicated_when_tp_exceeds_them() -> None:
    llama_70b = arch("llama-3.1-70b")  # 8 KV heads
    assert cap.kv_heads_per_shard(llama_70b, 16) == 1
    assert cap.kv_bytes_per_token(llama_70b, AUTO, tp=16) == 2 * 80 * 1 * 128 * 2
    assert cap.kv_bytes_per_token(llama_70b, AUTO, tp=16) == cap.kv_bytes_per_token(llama_70b, AUTO, tp=8)


def test_mla_caches_one_latent_per_layer_that_tp_does_not_shrink() -> None:
    deepseek = arch("deepseek-v3")
    expected = 61 * (512 + 64) * 2
    assert [cap.kv_bytes_per_token(deepseek, AUTO, tp=tp) for tp in (1, 2, 8)] == [expected] * 3


@pytest.mark.parametrize("name", ["all-minilm-l6-v2", "bge-large-en-v1.5"])
def test_encoders_keep_no_kv_cache(name: str) -> None:
    assert cap.kv_bytes_per_token(arch(name), AUTO) == 0


# --- replica memory ---------------------------------------------------------------------------


def test_llama_8b_on_one_h100_has_the_hand_computed_kv_cache() -> None:
    plan = cap.replica_memory(arch("llama-3.1-8b"), H100)  # util 0.9, 8,192 batched tokens, 256 seqs
    weights = 8_030_261_248 * 2
    # Profiling pass: 8,192 tokens x (3 x 14,336 MLP + 6 x 4,096 hidden) x 2 bytes; it beats the
    # sampler's 256 x 128,256 x 4 bytes x 3.9 copies.
    activation = 8192 * (3 * 14_336 + 6 * 4096) * 2
    available = 79.19 * GIB * 0.9 - weights - activation - 0.25 * GIB
    assert (plan.weights, plan.activation, plan.non_torch) == (weights, activation, 0.25 * GIB)
    assert plan.kv_available == pytest.approx(available, rel=1e-12)
    assert plan.kv_blocks == int(available // (131_072 * 16)) == 28_176
    assert plan.kv_tokens == 28_176 * 16 == 450_816


def test_replica_memory_is_conserved() -> None:
    plan = cap.replica_memory(arch("qwen2.5-32b"), H100, tp=2, quantization=Quantization.FP8)
    total = plan.weights + plan.activation + plan.non_torch + plan.kv_available
    assert total == pytest.approx(plan.budget, rel=1e-12)
    assert plan.kv_tokens % cap.BLOCK_SIZE == 0
    assert plan.kv_tokens * plan.kv_bytes_per_token <= plan.kv_available


def test_tensor_parallel_ranks_pay_for_all_reduce_buffers() -> None:
    assert cap.non_torch_bytes(tp=1, pp=1) == 0.25 * GIB
    # H100 over NVSwitch with NVLS: NCCL's SHARP buffers, 2.06-2.21 GiB on the logs.
    assert 2.05 * GIB <= cap.non_torch_bytes(tp=2, pp=1) <= cap.non_torch_bytes(tp=4, pp=1) <= 2.25 * GIB


def test_pcie_tensor_parallel_ranks_hold_no_nvls_buffers() -> None:
    pcie = cap.non_torch_bytes(tp=2, pp=1, interconnect=Interconnect.PCIE)
    assert pcie < 0.5 * GIB < cap.non_torch_bytes(tp=2, pp=1, interconnect=Interconnect.NVLINK_NVLS)


def test_a_tp2_pcie_pair_fits_what_an_nvswitch_pair_would_not() -> None:
    # Qwen2.5-32B in bf16 on two L40S (g6e): 30.5 GiB of weights per GPU under a 42.2 GiB budget.
    l40s = catalog.gpu("L40S")
    on_pcie = cap.replica_memory(arch("qwen2.5-32b"), l40s, tp=2, gpu_memory_utilization=0.95)
    as_nvls = cap.replica_memory(
        arch("qwen2.5-32b"), l40s, tp=2, gpu_memory_utilization=0.95, interconnect=Interconnect.NVLINK_NVLS
    )
    assert on_pcie.kv_available - as_nvls.kv_available > 1.5 * GIB


def test_sampler_rows_are_capped_by_the_batched_tokens() -> None:
    # _dummy_run spreads max_num_batched_tokens over min(max_num_seqs, tokens) requests.
    few_tokens = cap.activation_peak_bytes(arch("llama-3.1-8b"), tp=1, max_num_batched_tokens=256, max_num_seqs=1024)
    many_seqs = cap.activation_peak_bytes(arch("llama-3.1-8b"), tp=1, max_num_batched_tokens=8192, max_num_seqs=1024)
    assert few_tokens == pytest.approx(many_seqs / 4, rel=0.01)


def test_70b_bf16_does_not_fit_one_h100() -> None:
    plan = cap.replica_memory(arch("llama-3.1-70b"), H100)
    assert not plan.fits
    assert plan.kv_tokens == 0
    assert not plan.fits_sequence(1)
    assert plan.missing_bytes_for(8192) > -plan.kv_available


def test_max_concurrency_divides_kv_tokens_by_the_context() -> None:
    assert cap.max_concurrency(476_000, 8192) == pytest.approx(58.11, abs=0.005)
    with pytest.raises(ValueError, match="must be positive"):
        cap.max_concurrency(476_000, 0)


# --- latency ----------------------------------------------------------------------------------


def _replica(name: str, *, tp: int = 1, **kwargs: Any) -> cap.ReplicaModel:
    return cap.ReplicaModel(arch(name), H100, tp=tp, **kwargs)


def test_prefill_takes_longer_for_longer_prompts() -> None:
    model = _replica("llama-3.1-8b")
    times = [cap.prefill_seconds(model, n) for n in (128, 1024, 8192, 32_768)]
    assert times == sorted(times)
    assert len(set(times)) == len(times)


def test_prefill_of_nothing_takes_no_time() -> None:
    assert cap.prefill_seconds(_replica("llama-3.1-8b"), 0) == 0.0


@pytest.mark.parametrize(("name", "tp"), [("llama-3.1-8b", 1), ("llama-3.1-70b", 4), ("qwen3-30b-a3b", 2)])
def test_a_timing_table_holds_each_batchs_decode_terms_to_the_bit(name: str, tp: int) -> None:
    # The table prices the batch-independent terms once; every row must still be the same doubles.
    model = _replica(name, tp=tp)
    table = cap.decode_step_table(model, 300)
    assert table == [cap.decode_step_terms(model, b) for b in range(301)]


def test_decode_step_grows_with_batch_and_context() -> None:
    model = _replica("llama-3.1-8b")
    assert cap.decode_step_seconds(model, 1, mean_context=2000) < cap.decode_step_seconds(model, 64, mean_context=2000)
    assert cap.decode_step_seconds(model, 8, mean_context=1000) < cap.decode_step_seconds(model, 8, mean_context=8000)


def test_tp2_makes_a_single_stream_70b_decode_step_faster() -> None:
    tp1 = cap.decode_step_seconds(_replica("llama-3.1-70b"), 1, mean_context=2000)
    tp2 = cap.decode_step_seconds(_replica("llama-3.1-70b", tp=2), 1, mean_context=2000)
    assert tp2 < tp1


def test_speculation_yields_the_leviathan_expected_tokens_per_step() -> None:
    spec = cap.Speculation(num_tokens=4, acceptance_rate=0.7, draft_cost_ratio=0.05)
    assert spec.tokens_per_step == pytest.approx((1 - 0.7**5) / (1 - 0.7))
    assert cap.Speculation(4, 1.0, 0.05).tokens_per_step == 5.0


def test_speculation_divides_the_inter_token_time_by_tokens_per_step() -> None:
    spec = cap.Speculation(num_tokens=4, acceptance_rate=0.7, draft_cost_ratio=0.05)
    plain = _replica("llama-3.1-70b", tp=4)
    step = cap.decode_step_seconds(plain, 16, mean_context=2000)
    itl = cap.inter_token_seconds(_replica("llama-3.1-70b", tp=4, speculation=spec), 16, mean_context=2000)
    assert itl == pytest.approx(step * (1 + 4 * 0.05) / spec.tokens_per_step)


def test_mixtral_reads_only_its_routed_experts_at_batch_one() -> None:
    model = _replica("mixtral-8x7b", efficiency=NO_OVERHEAD)
    mixtral = model.arch
    # With no overhead and no KV the step is pure memory time, so it gives back the bytes read.
    read = cap.decode_step_seconds(model, 1, mean_context=0) * H100.hbm_bandwidth * NO_OVERHEAD.mbu_decode
    total = cap.model_weight_bytes(mixtral, Quantization.BF16)
    assert read < 0.35 * total
    assert read == pytest.approx(2 * (mixtral.params_active - mixtral.vocab_size * mixtral.hidden_size), rel=1e-9)


def test_a_large_mixtral_batch_reads_nearly_every_expert() -> None:
    model = _replica("mixtral-8x7b", efficiency=NO_OVERHEAD)
    mixtral = model.arch
    # 256 sequences each route to 2 of 8 experts: all but (6/8)^256 of the experts are touched.
    read = cap.decode_step_seconds(model, 256, mean_context=0) * H100.hbm_bandwidth * NO_OVERHEAD.mbu_decode
    assert read == pytest.approx(2 * (mixtral.params_total - mixtral.vocab_size * mixtral.hidden_size), rel=1e-6)


def test_end_to_end_latency_is_ttft_plus_one_itl_per_further_token() -> None:
    assert cap.e2e_seconds(0.25, 0.02, 101) == pytest.approx(0.25 + 100 * 0.02)
    assert cap.e2e_seconds(0.25, 0.02, 0) == 0.25


# --- cost -------------------------------------------------------------------------------------


def test_nodes_needed_packs_whole_replicas_per_node() -> None:
    assert cap.nodes_needed(5, 2, 8) == 2  # 4 TP2 replicas per 8-GPU node
    assert cap.nodes_needed(9, 2, 8) == 3
    assert cap.nodes_needed(3, 8, 8) == 3
    assert cap.nodes_needed(2, 3, 8) == 1  # 2 TP3 replicas per node; the other 2 GPUs idle


def test_usd_per_million_tokens_at_a_million_tokens_per_second() -> None:
    # $100/h over 1e6 tok/s x 3,600 s = 3.6e9 tokens/h -> $100 / 3,600 per million = $0.0278.
    assert cap.usd_per_million_tokens(100, 1_000_000) == pytest.approx(100 / 3600)
    assert cap.usd_per_million_tokens(3.6, 1000) == pytest.approx(1.0)  # 3.6M tokens per hour


def test_idle_capacity_has_an_infinite_price_per_token() -> None:
    assert cap.usd_per_million_tokens(55.04, 0) == math.inf


def test_blended_price_weights_input_and_output_by_the_mix() -> None:
    # 3,000 prompt at $1/M + 1,000 output at $4/M over 4,000 tokens = $1.75/M.
    assert cap.blended_price_per_million(1.0, 4.0, cap.RequestShape(3000, 1000)) == pytest.approx(1.75)


def test_mean_shape_weights_each_class_by_its_traffic_share() -> None:
    mean = cap.mean_shape([cap.RequestShape(500, 200, 3.0), cap.RequestShape(16_000, 1_000, 1.0)])
    assert (mean.prompt_tokens, mean.output_tokens, mean.weight) == (4375.0, 400.0, 4.0)
    with pytest.raises(ValueError, match="no weight"):
        cap.mean_shape([])


# --- `tokenplane size` ------------------------------------------------------------------------


def _flags(**overrides: Any) -> dict[str, Any]:
    flags: dict[str, Any] = {
        "model": "llama-3.1-8b",
        "hf_config": None,
        "gpu": "H100",
        "gpu_memory_gib": None,
        "tp": 1,
        "pp": 1,
        "quantization": "bf16",
        "kv_cache_dtype": "auto",
        "gpu_memory_utilization": 0.9,
        "max_model_len": None,
        "max_num_batched_tokens": 8192,
        "max_num_seqs": 256,
    }
    return flags | overrides


@pytest.mark.parametrize("overrides", [{"model": None}, {"hf_config": Path("config.json")}], ids=["neither", "both"])
def test_size_needs_exactly_one_of_model_or_hf_config(overrides: dict[str, Any]) -> None:
    with pytest.raises(SpecError, match="exactly one of --model PRESET or --hf-config PATH"):
        SizeRequest.from_cli(**_flags(**overrides))


def test_size_with_an_unknown_gpu_lists_the_known_ones() -> None:
    with pytest.raises(CatalogError, match=r"unknown GPU 'H300'; known: .*H100-80GB"):
        SizeRequest.from_cli(**_flags(gpu="H300"))


def test_size_with_a_bad_quantization_lists_the_allowed_values() -> None:
    allowed = ", ".join(q.value for q in Quantization)
    with pytest.raises(SpecError, match=f"--quantization='int3' is not one of {allowed}"):
        SizeRequest.from_cli(**_flags(quantization="int3"))


def test_size_rejects_a_tp_that_does_not_divide_the_heads() -> None:
    with pytest.raises(SpecError, match=re.escape("--tp=3 must divide num_attention_heads=32 of llama-3.1-8b")):
        SizeRequest.from_cli(**_flags(tp=3))


def test_size_reports_70b_bf16_does_not_fit_one_h100_in_gib() -> None:
    result = size_replica(SizeRequest.from_cli(**_flags(model="llama-3.1-70b")))
    assert not result.fits
    assert result.reason is not None
    assert "GiB" in result.reason
    assert result.to_json()["reason"] == result.reason


def test_size_json_carries_the_headline_figures() -> None:
    out = size_replica(SizeRequest.from_cli(**_flags(max_model_len=8192))).to_json()
    assert {"weights_gib", "kv_bytes_per_token", "kv_cache_tokens", "max_concurrency", "fits"} <= out.keys()
    # vLLM 0.32's accounting (the image's): 450,816 tokens less the 0.84 GiB CUDA-graph estimate (6,912 tokens).
    assert (out["kv_bytes_per_token"], out["kv_cache_tokens"], out["fits"]) == (131_072, 443_904, True)
    assert out["weights_gib"] == round(8_030_261_248 * 2 / GIB, 3)
    assert out["max_concurrency"] == round(443_904 / 8192, 3)


def test_nodes_needed_rejects_a_replica_larger_than_a_node() -> None:
    with pytest.raises(ValueError, match="16-GPU replica does not fit a 8-GPU node"):
        cap.nodes_needed(1, 16, 8)


QWEN_32B_CONFIG: dict[str, Any] = {
    "model_type": "qwen2",
    "hidden_size": 5120,
    "intermediate_size": 27648,
    "num_hidden_layers": 64,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "vocab_size": 152064,
    "max_position_embeddings": 32768,
    "sliding_window": 131072,
    "use_sliding_window": False,
    "tie_word_embeddings": False,
}
AWQ_CONFIG = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}


def _hf(tmp_path: Path, **extra: Any) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**QWEN_32B_CONFIG, **extra}), encoding="utf-8")
    return path


def test_size_honours_the_checkpoint_quantization_config(tmp_path: Path) -> None:
    # Qwen2.5-32B-Instruct-AWQ on one L40S: 65 GB in bf16 cannot fit 44 GiB; 4-bit AWQ does.
    flags = _flags(model=None, gpu="l40s", quantization=None, max_model_len=32768)
    awq = size_replica(SizeRequest.from_cli(**flags | {"hf_config": _hf(tmp_path, quantization_config=AWQ_CONFIG)}))
    assert awq.request.quantization is Quantization.AWQ
    assert awq.fits and awq.memory.weights / GIB == pytest.approx(17.9, abs=0.3)
    bf16 = size_replica(SizeRequest.from_cli(**flags | {"hf_config": _hf(tmp_path)}))
    assert not bf16.fits


def test_size_rejects_a_quantization_flag_that_contradicts_the_checkpoint(tmp_path: Path) -> None:
    flags = _flags(model=None, hf_config=_hf(tmp_path, quantization_config=AWQ_CONFIG), quantization="fp8")
    with pytest.raises(SpecError, match=r"--quantization=fp8 contradicts .*AWQ 4-bit.*--quantization awq"):
        SizeRequest.from_cli(**flags)


def test_size_reads_block_fp8_and_keeps_the_router_at_16_bits(tmp_path: Path) -> None:
    fp8 = {"quant_method": "fp8", "weight_block_size": [128, 128], "ignored_layers": ["lm_head"]}
    moe = {"num_experts": 64, "num_experts_per_tok": 8, "moe_intermediate_size": 1024, "quantization_config": fp8}
    result = size_replica(SizeRequest.from_cli(**_flags(model=None, hf_config=_hf(tmp_path, **moe), quantization=None)))
    groups = result.request.arch.param_groups
    expected = (groups.attention + groups.routed_experts) * (1 + 4 / 128**2) + (
        groups.embedding + groups.lm_head + groups.router + groups.norms
    ) * 2
    assert result.memory.weights == pytest.approx(expected)


@pytest.mark.parametrize("name", ["h100", "H100-SXM", "h100-80gb", "H100_80GB"])
def test_size_accepts_gpu_names_in_any_case_and_alias(name: str) -> None:
    assert SizeRequest.from_cli(**_flags(gpu=name)).gpu.name == "H100-80GB"


def test_size_prints_vllm_startup_log_lines_in_json() -> None:
    out = size_replica(
        SizeRequest.from_cli(
            **_flags(gpu_memory_utilization=0.95, max_num_seqs=1024, max_model_len=8192, vllm_version="0.19.0")
        )
    ).to_json()
    log = out["vllm_log"]
    assert list(log)[:6] == [
        "model_loading_gib",
        "torch_peak_increase_gib",
        "non_torch_increase_gib",
        "non_kv_cache_gib",
        "cuda_graphs_gib",
        "available_kv_cache_gib",
    ]
    total = log["model_loading_gib"] + log["torch_peak_increase_gib"] + log["non_torch_increase_gib"]
    assert log["non_kv_cache_gib"] == pytest.approx(total)
    # The first FIT point of tokenplane.model.calibration (a 0.19.0 log): vLLM logged 58.11 GiB and 476,000 tokens.
    assert log["available_kv_cache_gib"] == pytest.approx(58.11, abs=0.05)
    assert log["kv_cache_tokens"] == pytest.approx(476_000, rel=0.005)


def test_size_names_the_line_a_current_release_logs_in_place_of_the_non_torch_increase() -> None:
    """0.32's profiler logs "total consumed (from mem_get_info)" (weights and non-torch), not the non-torch increase."""
    flags = _flags(gpu_memory_utilization=0.95, max_num_seqs=1024, max_model_len=8192)
    old = size_replica(SizeRequest.from_cli(**flags, vllm_version="0.19.0")).to_json()["vllm_log"]
    new = size_replica(SizeRequest.from_cli(**flags, vllm_version="0.32.0")).to_json()["vllm_log"]
    assert "total_consumed_gib" not in old
    assert "non_torch_increase_gib" not in new
    assert new["total_consumed_gib"] == pytest.approx(
        new["model_loading_gib"] + old["non_torch_increase_gib"], abs=0.002
    )
    assert new["non_kv_cache_gib"] == pytest.approx(
        new["total_consumed_gib"] + new["torch_peak_increase_gib"], abs=0.002
    )


def test_size_warns_on_sliding_window_attention(tmp_path: Path) -> None:
    config = _hf(tmp_path, sliding_window=4096, use_sliding_window=True)
    result = size_replica(SizeRequest.from_cli(**_flags(model=None, hf_config=config, quantization=None)))
    assert any("sliding-window" in w for w in result.to_json()["warnings"])


# --- latency floors ---------------------------------------------------------------------------


def test_single_stream_decode_of_a_small_model_is_bound_by_the_layer_floor() -> None:
    tiny = Architecture(
        hidden_size=1024,
        num_layers=28,
        num_attention_heads=16,
        num_kv_heads=8,
        intermediate_size=3072,
        vocab_size=32000,
        max_position_embeddings=4096,
    )
    terms = cap.decode_step_terms(cap.ReplicaModel(tiny, H100), 1)
    assert terms.memory_s == pytest.approx(
        28 * cap.Efficiency().layer_floor_s + cap.sampling_seconds(cap.ReplicaModel(tiny, H100), 1)
    )


def test_a_large_model_at_batch_one_is_bound_by_its_weight_reads_not_the_floor() -> None:
    model = cap.ReplicaModel(arch("llama-3.1-70b"), H100, tp=4)
    assert cap.decode_step_terms(model, 1).memory_s > 80 * cap.Efficiency().layer_floor_s


def test_sampling_cost_grows_with_the_vocabulary_and_the_batch() -> None:
    llama, mixtral = cap.ReplicaModel(arch("llama-3.1-8b"), H100), cap.ReplicaModel(arch("mixtral-8x7b"), H100)
    assert cap.sampling_seconds(llama, 256) == pytest.approx(cap.sampling_seconds(mixtral, 256) * 128256 / 32000)
    assert cap.sampling_seconds(llama, 256) == pytest.approx(256 * cap.sampling_seconds(llama, 1))


def test_a_short_prompt_alone_cannot_prefill_faster_than_its_weights_are_read() -> None:
    """Puts the FLOPs-only prefill back: 16 tokens on Llama-3.1-70B at TP4 would take a fifth of one read."""
    model = cap.ReplicaModel(arch("llama-3.1-70b"), H100, tp=4)
    read = cap.weight_read_seconds(model, 16)
    assert cap.prefill_compute_seconds(model, 16) < read / 5
    assert cap.prefill_seconds(model, 16) == pytest.approx(read + cap.step_overhead_seconds(model))


def test_a_long_prompt_prefills_at_its_compute_as_before() -> None:
    model = cap.ReplicaModel(arch("llama-3.1-8b"), H100)
    assert cap.prefill_seconds(model, 8192) == pytest.approx(
        cap.prefill_compute_seconds(model, 8192) + cap.step_overhead_seconds(model)
    )


def test_a_moe_prompt_reads_every_expert_where_a_single_decode_row_reads_a_few() -> None:
    model = cap.ReplicaModel(arch("mixtral-8x7b"), H100, tp=2)
    assert cap.weight_read_seconds(model, 512) > 2.5 * cap.weight_read_seconds(model, 1)


def test_a_one_token_prompt_still_pays_the_ttft_floor() -> None:
    model = cap.ReplicaModel(arch("llama-3.1-8b"), H100)
    assert cap.ttft_seconds(model, 1) >= cap.Efficiency().ttft_floor_s + cap.step_overhead_seconds(model)
    assert cap.ttft_seconds(model, 4096) - cap.ttft_seconds(model, 1) == pytest.approx(
        cap.prefill_seconds(model, 4096) - cap.prefill_seconds(model, 1)
    )


def test_a_tied_lm_head_reads_the_embedding_table_every_step() -> None:
    untied = arch("llama-3.1-8b")
    tied = Architecture(**{**untied.model_dump(), "tie_word_embeddings": True})
    # Tying drops the separate head (1.05 GB of bf16) but the step still reads the table once.
    read_untied = cap.decode_step_terms(cap.ReplicaModel(untied, H100), 1).memory_s
    read_tied = cap.decode_step_terms(cap.ReplicaModel(tied, H100), 1).memory_s
    assert read_tied == pytest.approx(read_untied, rel=1e-9)


def test_size_warns_outside_the_validated_vllm_releases_and_not_inside() -> None:
    assert "warnings" not in size_replica(SizeRequest.from_cli(**_flags(vllm_version="0.19.1"))).to_json()
    old = size_replica(SizeRequest.from_cli(**_flags(vllm_version="0.10.2"))).to_json()
    assert any("predates" in w for w in old["warnings"])


def test_size_subtracts_cuda_graphs_for_releases_that_do() -> None:
    pinned = size_replica(SizeRequest.from_cli(**_flags(vllm_version="0.19.0")))
    later = size_replica(SizeRequest.from_cli(**_flags(vllm_version="v0.21.0")))
    assert later.memory.cuda_graphs_in_budget and not pinned.memory.cuda_graphs_in_budget
    # With no release named, size accounts as the image's 0.32.0: graphs inside the budget.
    assert size_replica(SizeRequest.from_cli(**_flags())).memory == later.memory
    assert pinned.memory.kv_available - later.memory.kv_available == pytest.approx(later.memory.cuda_graphs)
    assert "warnings" not in later.to_json()  # 0.20-0.32 are covered, read from 0.32.0's source
    newer = size_replica(SizeRequest.from_cli(**_flags(vllm_version="0.40.0"))).to_json()
    assert any("newer" in w for w in newer["warnings"])


def test_size_rejects_a_malformed_vllm_version() -> None:
    with pytest.raises(SpecError, match=r"--vllm-version: vLLM version 'latest' is not of the form MAJOR.MINOR"):
        SizeRequest.from_cli(**_flags(vllm_version="latest"))
